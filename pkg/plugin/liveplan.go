package plugin

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine/names"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine/plan"
	"github.com/kubectl-topology/kubectl-topology/pkg/extension"
)

// agentFieldManager is the agent's server-side apply field manager; a live
// plan dry-runs as the agent, so field ownership is what the agent would see.
const agentFieldManager = "kubectl-topology"

// livePlan computes what the agent would change now for t: the desired state
// from the live class, templates and objects, each object sent as a
// server-side-apply dry run so defaulting, webhooks and field ownership are
// accounted for, compared with what exists.
// The warnings name external patches that could not be run from here.
func (ca *clusterAccess) livePlan(ctx context.Context, t *v1alpha1.Topology) (*plan.Plan, []string, error) {
	class, templates, current, err := ca.readBlueprint(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	cat, err := engine.CompileClass(ctx, class)
	if err != nil {
		return nil, nil, err
	}
	external, err := ca.externalPatches(ctx, class)
	if err != nil {
		return nil, nil, err
	}
	in := engine.Input{
		Topology: t, Class: class, Templates: templates,
		Current: engine.StateFromObjects(t.Name, t.Namespace, current),
		Names:   names.NewGenerator(nil), Dialect: engine.DialectTopology, Catalog: cat,
	}
	if external != nil {
		in.External = external
	}
	res, err := engine.Compute(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	if external != nil {
		for _, s := range external.Skipped() {
			warnings = append(warnings, s.String())
		}
	}
	for _, obj := range res.Desired.Objects() {
		dry := obj.DeepCopy()
		if err := ca.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(dry), client.FieldOwner(agentFieldManager), client.ForceOwnership, client.DryRunAll); err != nil {
			return nil, nil, fmt.Errorf("the API server refused %s %s in a dry run: %w", obj.GetKind(), obj.GetName(), explain(err, ca))
		}
		stripServerFields(dry)
		*obj = *dry
	}
	for _, o := range current {
		stripServerFields(o)
	}
	p, err := plan.Compute(plan.Input{Desired: res.Desired, Current: current, Cluster: t.Name, Namespace: t.Namespace})
	return p, warnings, err
}

// externalPatches runs the class's external patches from here, with the
// handlers the agent discovered (TopologyExtension status). Handlers this
// machine cannot reach, typically behind a Service, are skipped and named.
// It is nil for a class without external patches.
func (ca *clusterAccess) externalPatches(ctx context.Context, class *v1alpha1.TopologyClass) (*extension.Patcher, error) {
	if !engine.HasExternalPatches(class) {
		return nil, nil
	}
	c := &extension.Client{Registry: extension.NewRegistry(), BestEffort: true}
	list := &v1alpha1.TopologyExtensionList{}
	if err := ca.client.List(ctx, list); err != nil && !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("reading the TopologyExtensions of TopologyClass %s's external patches: %w", class.Name, explain(err, ca))
	}
	for i := range list.Items {
		_ = c.Registry.FromStatus(&list.Items[i]) // one that cannot be used is skipped by name when called
	}
	return extension.NewPatcher(ctx, c, class), nil
}

// readBlueprint reads what the engine needs for t from the cluster: its class,
// the class's templates, and the objects generated for it.
func (ca *clusterAccess) readBlueprint(ctx context.Context, t *v1alpha1.Topology) (*v1alpha1.TopologyClass, *engine.TemplateIndex, []*unstructured.Unstructured, error) {
	class := &v1alpha1.TopologyClass{}
	if err := ca.client.Get(ctx, t.GetClassKey(), class); err != nil {
		return nil, nil, nil, fmt.Errorf("spec.class: reading TopologyClass %s: %w", t.GetClassKey(), explain(err, ca))
	}
	templates := engine.NewTemplateIndex()
	for _, ref := range engine.ClassTemplateRefs(class) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(ref.APIVersion)
		u.SetKind(ref.Kind)
		if err := ca.client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
			return nil, nil, nil, fmt.Errorf("TopologyClass %s %s: reading %s %s/%s: %w", class.Name, ref.Field, ref.Kind, ref.Namespace, ref.Name, explain(err, ca))
		}
		templates.Add(u)
	}
	current, err := ca.generatedObjects(ctx, t, class)
	if err != nil {
		return nil, nil, nil, err
	}
	return class, templates, current, nil
}

// generatedObjects lists the Cluster and every object labelled for it.
func (ca *clusterAccess) generatedObjects(ctx context.Context, t *v1alpha1.Topology, class *v1alpha1.TopologyClass) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	cluster := &unstructured.Unstructured{}
	cluster.SetAPIVersion(engine.ClusterAPIVersion)
	cluster.SetKind("Cluster")
	if err := ca.client.Get(ctx, client.ObjectKeyFromObject(t), cluster); err == nil {
		out = append(out, cluster)
	} else if client.IgnoreNotFound(err) != nil {
		return nil, explain(err, ca)
	}
	for _, gvk := range engine.GeneratedKinds(class) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind + "List"})
		if err := ca.client.List(ctx, list, client.InNamespace(t.Namespace), client.MatchingLabels{engine.ClusterNameLabel: t.Name}); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, explain(err, ca)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// stripServerFields drops what the server adds and a plan should not show.
func stripServerFields(o *unstructured.Unstructured) {
	o.SetManagedFields(nil)
	o.SetResourceVersion("")
	o.SetUID("")
	o.SetGeneration(0)
	unstructured.RemoveNestedField(o.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(o.Object, "status")
}
