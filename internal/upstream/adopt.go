package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Handover moves one Cluster with spec.topology from Cluster API's topology
// controller to the agent without touching a Machine. Upstream's webhook
// forbids removing spec.topology, so the Cluster object itself is replaced:
// paused, deleted with its dependents orphaned (Cluster API's finalizer
// removed once the deletion is set, so its controller cannot delete what the
// Cluster owns), and made again by the agent from a Topology of the same
// name, which finds the objects upstream made by their names, labels and
// references. clusterctl move replaces Clusters the same way.
type Handover struct {
	Client client.Client
	// Cluster is the Cluster as read; its UID and resourceVersion guard
	// the pause and the deletion.
	Cluster *unstructured.Unstructured
	// Class is the TopologyClass to create, nil when it exists already.
	Class *v1alpha2.TopologyClass
	// Topology is the Topology to create; it is created paused and left
	// as Paused says once it owns what upstream made.
	Topology *v1alpha2.Topology
	// Paused is whether the Topology stays paused at the end: the Cluster's own.
	Paused bool
	// Interval and Timeout bound each wait.
	Interval, Timeout time.Duration
	// Progress is told each step as it is done.
	Progress func(string)
}

// isClusterAPIFinalizer tells a finalizer of Cluster API's controllers
// (cluster.cluster.x-k8s.io and the like): with the core one, deleting a
// Cluster deletes everything it owns.
func isClusterAPIFinalizer(f string) bool {
	return strings.HasSuffix(f, ".x-k8s.io") || strings.Contains(f, ".x-k8s.io/")
}

// ForeignFinalizers are the finalizers on u that are not Cluster API's: a
// handover would wait on their owners, so it is refused while they are there.
func ForeignFinalizers(u *unstructured.Unstructured) []string {
	return slices.DeleteFunc(nonClusterAPIFinalizers(u.GetFinalizers()), func(f string) bool { return f == metav1.FinalizerOrphanDependents })
}

// Run does the handover, step by step; an error names the step and what is
// left to do.
func (h *Handover) Run(ctx context.Context) error {
	ns, name := h.Cluster.GetNamespace(), h.Cluster.GetName()
	infraRef, cpRef, err := h.references()
	if err != nil {
		return err
	}
	if h.Class != nil {
		if err := h.createClass(ctx); err != nil {
			return err
		}
	}
	if err := h.pause(ctx); err != nil {
		return fmt.Errorf("pausing Cluster %s/%s: %w; nothing else was changed", ns, name, err)
	}
	h.Progress(fmt.Sprintf("Cluster %s/%s paused: Cluster API's controllers leave it and what it owns alone", ns, name))
	if err := h.removeCluster(ctx); err != nil {
		return fmt.Errorf("replacing Cluster %s/%s: %w; it is paused: resume it with `kubectl topology resume cluster/%s -n %s` to give it back to Cluster API", ns, name, err, name, ns)
	}
	h.Progress(fmt.Sprintf("Cluster %s/%s removed; the objects it owned are kept, orphaned", ns, name))
	left := fmt.Sprintf("the Cluster is gone and its objects are kept; create Topology %s/%s (kubectl topology convert) to have the agent make it again", ns, name)
	topo := h.Topology.DeepCopy()
	topo.Spec.Paused = true
	desiredstate.HandOver(topo, infraRef, cpRef)
	if err := h.Client.Create(ctx, topo); err != nil {
		return fmt.Errorf("creating Topology %s/%s: %w; %s", ns, name, err, left)
	}
	h.Progress(fmt.Sprintf("Topology %s/%s created, paused", ns, name))
	owner := metav1.OwnerReference{APIVersion: v1alpha2.GroupVersion.String(), Kind: v1alpha2.TopologyKind, Name: topo.Name, UID: topo.UID}
	for _, ref := range []map[string]any{infraRef, cpRef} {
		if err := h.own(ctx, ref, owner); err != nil {
			return fmt.Errorf("handing %s to Topology %s/%s: %w; the Topology is paused: set its ownerReference by hand, then `kubectl topology resume %s -n %s`", describeRef(ref), ns, name, err, name, ns)
		}
	}
	h.Progress(fmt.Sprintf("%s and %s handed to Topology %s/%s", describeRef(infraRef), describeRef(cpRef), ns, name))
	if h.Paused {
		h.Progress(fmt.Sprintf("Topology %s/%s left paused, as the Cluster was", ns, name))
		return nil
	}
	patch := []byte(`{"spec":{"paused":null}}`)
	if err := h.Client.Patch(ctx, topo, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("resuming Topology %s/%s: %w; resume it with `kubectl topology resume %s -n %s`", ns, name, err, name, ns)
	}
	h.Progress(fmt.Sprintf("Topology %s/%s resumed: the agent makes the Cluster again", ns, name))
	return nil
}

// references are the Cluster's infrastructureRef and controlPlaneRef.
func (h *Handover) references() (map[string]any, map[string]any, error) {
	infra, _, _ := unstructured.NestedMap(h.Cluster.Object, "spec", "infrastructureRef")
	cp, _, _ := unstructured.NestedMap(h.Cluster.Object, "spec", "controlPlaneRef")
	if len(infra) == 0 || len(cp) == 0 {
		return nil, nil, fmt.Errorf("Cluster %s/%s has no infrastructureRef or controlPlaneRef yet: adopt it once Cluster API has provisioned it", h.Cluster.GetNamespace(), h.Cluster.GetName())
	}
	return infra, cp, nil
}

// createClass creates the TopologyClass and waits until the agent has
// read it: the Topology's admission needs its variables.
func (h *Handover) createClass(ctx context.Context) error {
	class := h.Class.DeepCopy()
	if err := h.Client.Create(ctx, class); err != nil {
		return fmt.Errorf("creating TopologyClass %s/%s: %w; nothing else was changed", class.Namespace, class.Name, err)
	}
	err := h.poll(ctx, func(ctx context.Context) (bool, error) {
		if err := h.Client.Get(ctx, client.ObjectKeyFromObject(class), class); err != nil {
			return false, err
		}
		return class.Status.ObservedGeneration == class.Generation, nil
	})
	if err != nil {
		return fmt.Errorf("TopologyClass %s/%s was created but the agent has not reconciled it (%w); is the agent running? nothing else was changed", class.Namespace, class.Name, err)
	}
	h.Progress(fmt.Sprintf("TopologyClass %s/%s created from ClusterClass %s", class.Namespace, class.Name, class.Name))
	return nil
}

// pause sets spec.paused, guarded by the resourceVersion read, and waits
// until Cluster API reports the Cluster Paused at that generation. Cluster
// API updates the status all the time, so a conflict is read again and the
// pause retried while the spec (its generation) is still the one checked.
func (h *Handover) pause(ctx context.Context) error {
	u := h.Cluster.DeepCopy()
	checked := h.Cluster.GetGeneration()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if g := u.GetGeneration(); g != checked {
			return fmt.Errorf("its spec changed after adopt checked it (generation %d, checked %d): run adopt again to check it anew", g, checked)
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": u.GetResourceVersion()},
			"spec":     map[string]any{"paused": true},
		})
		if err != nil {
			return err
		}
		err = h.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch))
		if apierrors.IsConflict(err) {
			if rerr := h.Client.Get(ctx, client.ObjectKeyFromObject(u), u); rerr != nil {
				return rerr
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	return h.poll(ctx, func(ctx context.Context) (bool, error) {
		if err := h.Client.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(health.Conditions(u), "Paused")
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == u.GetGeneration(), nil
	})
}

// removeCluster deletes the Cluster with its dependents orphaned and drops
// Cluster API's finalizers once the deletion is set, then waits until it is gone.
func (h *Handover) removeCluster(ctx context.Context) error {
	u := h.Cluster.DeepCopy()
	uid := u.GetUID()
	orphan := metav1.DeletePropagationOrphan
	if err := h.Client.Delete(ctx, u, &client.DeleteOptions{PropagationPolicy: &orphan, Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		return fmt.Errorf("deleting it with its dependents orphaned: %w", err)
	}
	// The garbage collector edits the finalizers too (it removes "orphan"
	// once the dependents are orphaned): the list is written guarded by the
	// resourceVersion it was read at, and read again on a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := h.Client.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return err
		}
		if u.GetUID() != uid {
			return nil // gone, and another of its name made since
		}
		keep := nonClusterAPIFinalizers(u.GetFinalizers())
		if len(keep) == len(u.GetFinalizers()) {
			return nil
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": keep, "resourceVersion": u.GetResourceVersion()}})
		if err != nil {
			return err
		}
		return h.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch))
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing Cluster API's finalizers: %w", err)
	}
	return h.poll(ctx, func(ctx context.Context) (bool, error) {
		read := u.DeepCopy()
		err := h.Client.Get(ctx, client.ObjectKeyFromObject(u), read)
		if apierrors.IsNotFound(err) || (err == nil && read.GetUID() != uid) {
			return true, nil
		}
		return false, err
	})
}

// nonClusterAPIFinalizers is fs without Cluster API's finalizers: the
// garbage collector's "orphan" and anyone else's stay.
func nonClusterAPIFinalizers(fs []string) []string {
	var keep []string
	for _, f := range fs {
		if !isClusterAPIFinalizer(f) {
			keep = append(keep, f)
		}
	}
	return keep
}

// own makes owner the only owner of the object ref names: the Topology's
// reconcile then takes it as the object it made before its Cluster.
func (h *Handover) own(ctx context.Context, ref map[string]any, owner metav1.OwnerReference) error {
	group, _ := ref["apiGroup"].(string)
	kind, _ := ref["kind"].(string)
	name, _ := ref["name"].(string)
	mapping, err := h.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: group, Kind: kind})
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(mapping.GroupVersionKind)
	u.SetNamespace(h.Cluster.GetNamespace())
	u.SetName(name)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{owner}}})
	if err != nil {
		return err
	}
	return h.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch))
}

// poll waits until done holds, or Timeout passes.
func (h *Handover) poll(ctx context.Context, done func(context.Context) (bool, error)) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, h.Interval, h.Timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := done(ctx)
		if err != nil {
			last = err
		}
		return ok, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return err
}

func describeRef(ref map[string]any) string {
	return fmt.Sprintf("%v %v", ref["kind"], ref["name"])
}
