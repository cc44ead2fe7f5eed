// Package installer puts the agent's components on a management cluster
// and takes them off: it applies them as `install` does, grants the agent
// the installed infrastructure providers' kinds, waits for the agent to
// admit, and removes it all for `uninstall`. It knows no cobra: the
// plugin's install, grant and uninstall commands turn flags into its calls.
package installer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/shard"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// FieldManager owns what `install` applies.
const FieldManager = "kubectl-topology-install"

// Installer installs into, and uninstalls from, one management cluster,
// saying each object it applies on Out.
type Installer struct {
	Cluster *live.Cluster
	Out     io.Writer
}

// Apply server-side applies objs in order, owned by FieldManager.
func (i Installer) Apply(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		if err := i.Cluster.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), live.Explain(err, i.Cluster))
		}
		fmt.Fprintf(i.Out, "%s/%s applied\n", strings.ToLower(obj.GetKind()), obj.GetName())
	}
	return nil
}

// GrantProviders lets the agent manage the kinds of every infrastructure
// provider installed now (by their CRDs' provider label), one ClusterRole
// each, aggregated into the agent's role: explicit resources, never a whole
// API group. A provider installed later is granted by `grant` (or install).
func (i Installer) GrantProviders(ctx context.Context) error {
	crds := &metav1.PartialObjectMetadataList{}
	crds.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinitionList"})
	if err := i.Cluster.Client.List(ctx, crds, client.HasLabels{live.ProviderLabel}); err != nil {
		return fmt.Errorf("finding installed providers: %w", live.Explain(err, i.Cluster))
	}
	byProvider := map[string]map[string][]string{} // provider -> group -> resources
	for _, crd := range crds.Items {
		provider := crd.Labels[live.ProviderLabel]
		if !strings.HasPrefix(provider, "infrastructure-") {
			continue // core is in the agent's own rules, kubeadm in its own role
		}
		plural, group, ok := strings.Cut(crd.Name, ".")
		if !ok {
			continue
		}
		if byProvider[provider] == nil {
			byProvider[provider] = map[string][]string{}
		}
		byProvider[provider][group] = append(byProvider[provider][group], plural)
	}
	for _, provider := range slices.Sorted(maps.Keys(byProvider)) {
		var kinds []components.ProviderKinds
		for _, group := range slices.Sorted(maps.Keys(byProvider[provider])) {
			kinds = append(kinds, components.ProviderKinds{Group: group, Resources: slices.Sorted(slices.Values(byProvider[provider][group]))})
		}
		role := components.ProviderRole(strings.TrimPrefix(provider, "infrastructure-"), kinds)
		// Not clusterctl's: its upgrade deletes whatever carries the agent's
		// provider label and installs the components, which hold no grant.
		delete(role.Labels, live.ProviderLabel)
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(role)
		if err != nil {
			return fmt.Errorf("ClusterRole %s: %w", role.Name, err)
		}
		u := &unstructured.Unstructured{Object: obj}
		if err := i.Cluster.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("granting the agent provider %s: %w", provider, live.Explain(err, i.Cluster))
		}
		fmt.Fprintf(i.Out, "clusterrole/%s applied (provider %s)\n", role.Name, provider)
	}
	return nil
}

// WaitReady waits up to timeout until the agent's Deployment in namespace
// has a ready replica and its webhooks are registered.
func (i Installer) WaitReady(ctx context.Context, namespace string, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := i.Cluster.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: components.DeploymentName}, d); err != nil {
			return false, nil //nolint:nilerr // keep waiting until the deadline
		}
		return d.Status.ReadyReplicas > 0 && live.WebhooksRegistered(ctx, i.Cluster.Client), nil
	})
	if err != nil {
		return fmt.Errorf("the agent did not become ready within %s: look at `kubectl -n %s describe deployment %s` and its logs", timeout, namespace, components.DeploymentName)
	}
	return nil
}

// Topologies names every Topology the shard owns, sorted: while one exists,
// uninstalling its agent would leave its cluster unmanaged. None when the
// API is not installed.
func (i Installer) Topologies(ctx context.Context, of shard.Shard) ([]string, error) {
	list := &v1alpha2.TopologyList{}
	if err := i.Cluster.Client.List(ctx, list); err != nil {
		if live.IsTopologyAPIMissing(err) || meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, live.Explain(err, i.Cluster)
	}
	names := make([]string, 0, len(list.Items))
	for _, t := range list.Items {
		if of.Owns(&t) {
			names = append(names, t.Namespace+"/"+t.Name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// Remove deletes the agent installed in namespace from its components
// objs: the Deployment first, waited for (the agent restores its webhook
// configurations when they are deleted under it), then the webhook
// configurations, the rest of the components, the provider grants and,
// with crds, the CRDs.
//
// With lastAgent false, other agents (shards) remain: only this agent's own
// objects go, and what every agent uses (the webhook configurations, served
// by another, the provider grants and the CRDs) stays.
func (i Installer) Remove(ctx context.Context, objs []*unstructured.Unstructured, crds, lastAgent bool) error {
	var deployment, rest []*unstructured.Unstructured
	for _, obj := range slices.Backward(objs) {
		if obj.GetKind() == "Deployment" {
			deployment = append(deployment, obj)
		} else {
			rest = append(rest, obj)
		}
	}
	if err := i.deleteAndWait(ctx, deployment); err != nil {
		return err
	}
	if !lastAgent {
		return i.delete(ctx, rest)
	}
	var webhooks []*unstructured.Unstructured
	for _, k := range []struct{ kind, name string }{{"ValidatingWebhookConfiguration", components.ValidatingWebhookName}, {"MutatingWebhookConfiguration", components.MutatingWebhookName}} {
		webhooks = append(webhooks, named("admissionregistration.k8s.io/v1", k.kind, k.name))
	}
	roles := &unstructured.UnstructuredList{}
	roles.SetAPIVersion("rbac.authorization.k8s.io/v1")
	roles.SetKind("ClusterRoleList")
	if err := i.Cluster.Client.List(ctx, roles, client.MatchingLabels{components.AggregateLabel: "true"}); err != nil {
		return fmt.Errorf("listing the agent's provider roles: %w", live.Explain(err, i.Cluster))
	}
	for j := range roles.Items {
		if strings.HasPrefix(roles.Items[j].GetName(), components.ProviderRolePrefix) {
			rest = append(rest, &roles.Items[j])
		}
	}
	if crds {
		for _, name := range components.CRDNames {
			rest = append(rest, named("apiextensions.k8s.io/v1", "CustomResourceDefinition", name))
		}
	}
	return i.delete(ctx, append(webhooks, rest...))
}

// ForgetHeartbeat deletes the heartbeat Lease of the agent in namespace, once
// it is removed: out of cluster the namespace stays, and the Lease must not
// speak for an agent that is gone.
func (i Installer) ForgetHeartbeat(ctx context.Context, namespace string) error {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: components.HeartbeatLease}}
	if err := i.Cluster.Client.Delete(ctx, lease); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the agent's heartbeat Lease %s/%s: %w", namespace, components.HeartbeatLease, live.Explain(err, i.Cluster))
	}
	return nil
}

func (i Installer) delete(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		if err := i.Cluster.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			return fmt.Errorf("deleting %s %s: %w", obj.GetKind(), obj.GetName(), live.Explain(err, i.Cluster))
		}
	}
	return nil
}

// deleteAndWait deletes objs with foreground propagation and waits until
// they are gone, so that the agent's Pods have stopped.
func (i Installer) deleteAndWait(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		err := i.Cluster.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationForeground))
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("deleting %s %s: %w", obj.GetKind(), obj.GetName(), live.Explain(err, i.Cluster))
		}
		err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			err := i.Cluster.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopy())
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			return fmt.Errorf("%s %s/%s is still there after 2m; nothing else was removed: look at `kubectl -n %s get pods`", obj.GetKind(), obj.GetNamespace(), obj.GetName(), obj.GetNamespace())
		}
	}
	return nil
}

// named is an object of kind known by its name alone, to delete.
func named(apiVersion, kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	return u
}

// ClaimShard writes the heartbeat Lease of the agent about to run in
// namespace before it runs, holding for hold, with the shard it will watch.
// Agents are found by their heartbeats, and an agent beats only once it
// runs: without the claim, a second install in that time would not see
// this shard and could place an overlapping one. The agent takes the Lease
// over with its first beat. A Lease that is current already (this shard's
// agent runs, or another install claimed it) is left alone, and claimed is
// false.
func (i Installer) ClaimShard(ctx context.Context, namespace string, s shard.Shard, holder string, now time.Time, hold time.Duration) (claimed bool, err error) {
	switch err := components.EnsureNamespace(ctx, i.Cluster.Client, namespace, hold); {
	case errors.Is(err, components.ErrNamespaceTerminating):
		return false, fmt.Errorf("%w, then install again", err)
	case err != nil:
		return false, fmt.Errorf("making namespace %s for the agent: %w", namespace, live.Explain(err, i.Cluster))
	}
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: namespace, Name: components.HeartbeatLease}
	switch err := i.Cluster.Client.Get(ctx, key, lease); {
	case apierrors.IsNotFound(err):
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: components.HeartbeatLease}}
	case err != nil:
		return false, fmt.Errorf("reading the heartbeat Lease %s: %w", key, live.Explain(err, i.Cluster))
	case live.LeaseCurrent(lease, now):
		return false, nil
	}
	components.BeatHeartbeat(lease, s, holder, now, hold)
	if lease.ResourceVersion == "" {
		err = i.Cluster.Client.Create(ctx, lease)
	} else {
		err = i.Cluster.Client.Update(ctx, lease)
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		return false, fmt.Errorf("claiming shard %s in %s: another install wrote its heartbeat Lease at the same moment; run install again once it is done", s, namespace)
	}
	if err != nil {
		return false, fmt.Errorf("claiming shard %s in %s (heartbeat Lease %s): %w", s, namespace, key, live.Explain(err, i.Cluster))
	}
	return true, nil
}

// ReleaseShard deletes the claim ClaimShard wrote as holder, if the agent
// has not taken the Lease over: the install that claimed it stopped short.
func (i Installer) ReleaseShard(ctx context.Context, namespace, holder string) error {
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: namespace, Name: components.HeartbeatLease}
	if err := i.Cluster.Client.Get(ctx, key, lease); err != nil {
		return client.IgnoreNotFound(err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != holder {
		return nil
	}
	uid, rv := lease.UID, lease.ResourceVersion
	if err := i.Cluster.Client.Delete(ctx, lease, &client.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting this install's claim %s: %w", key, live.Explain(err, i.Cluster))
	}
	return nil
}
