package lifecycle

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/core"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// BeforeCreate calls BeforeClusterCreate for a topology none of whose
// objects exists yet. hold is true while it blocks; otherwise pending owes
// AfterControlPlaneInitialized, to be written before anything is created.
func BeforeCreate(ctx context.Context, c Caller, t *v1alpha2.Topology, answers *Answers) (hold bool, pending Pending, err error) {
	pending = PendingOf(t.Annotations)
	a, err := call(ctx, c, answers, Request{Hook: BeforeClusterCreate, Topology: t})
	switch {
	case err != nil:
		return false, pending, err
	case a.Blocking():
		return true, pending, nil
	}
	return false, pending.With(AfterControlPlaneInitialized), nil
}

// AfterInput is what the hooks called after the objects are written are
// decided from.
type AfterInput struct {
	// Caller calls the hooks.
	Caller Caller
	// Topology is the cluster's Topology; Cluster its Cluster.
	Topology *v1alpha2.Topology
	Cluster  *unstructured.Unstructured
	// Pending are the hooks owed now.
	Pending Pending
	// Sequence is this reconcile's sequencing decision.
	Sequence *upgrade.Sequence
}

// After calls AfterControlPlaneInitialized once the Cluster says its control
// plane is initialized, and AfterClusterUpgrade once an upgrade has settled:
// every part at the topology's version and stable, and the control plane's
// and workers' own After hooks answered. It returns the hooks still owed.
func After(ctx context.Context, in AfterInput, answers *Answers) (Pending, error) {
	pending := in.Pending
	if pending.Has(AfterControlPlaneInitialized) && controlPlaneInitialized(in.Cluster) {
		// Not a blocking hook: any answer but a failure discharges it.
		if _, err := call(ctx, in.Caller, answers, Request{Hook: AfterControlPlaneInitialized, Topology: in.Topology, Cluster: in.Cluster}); err != nil {
			return pending, err
		}
		pending = pending.Without(AfterControlPlaneInitialized)
	}
	if !pending.Has(AfterClusterUpgrade) || pending.Has(AfterControlPlaneUpgrade) || pending.Has(AfterWorkersUpgrade) || !settled(in.Sequence) {
		return pending, nil
	}
	a, err := call(ctx, in.Caller, answers, Request{Hook: AfterClusterUpgrade, Topology: in.Topology, Cluster: in.Cluster, Version: in.Topology.Spec.Version})
	if err != nil || a.Blocking() {
		return pending, err
	}
	return pending.Without(AfterClusterUpgrade), nil
}

// settled reports whether nothing of r is still to move: the control plane
// and every pool that follows it up to date, none waiting, deferred, held or
// to be created.
func settled(r *upgrade.Sequence) bool {
	if r == nil || r.ControlPlane.Phase != v1alpha2.PhaseUpToDate {
		return false
	}
	for _, d := range append(append([]upgrade.Decision{}, r.MachineDeployments...), r.MachinePools...) {
		// A pinned pool is on its own schedule: the cluster's upgrade is
		// over without it, as upstream's hooks ignore pinned pools.
		if d.Pin == "" && d.Phase != v1alpha2.PhaseUpToDate {
			return false
		}
	}
	return true
}

// controlPlaneInitialized reads the Cluster's ControlPlaneInitialized, in
// either core API version's status: the initialization field, or the
// condition of that name, as upstream's controller reads it.
func controlPlaneInitialized(cluster *unstructured.Unstructured) bool {
	if cluster == nil {
		return false
	}
	c, err := core.Cluster(cluster)
	if err != nil {
		// Not readable as a Cluster: the hook waits for one that is.
		return false
	}
	if ptr.Deref(c.Status.Initialization.ControlPlaneInitialized, false) {
		return true
	}
	return meta.IsStatusConditionTrue(core.Conditions(c), clusterv1.ClusterControlPlaneInitializedCondition)
}

// BeforeDelete calls BeforeClusterDelete for a Topology being deleted whose
// Cluster exists, unless an earlier answer let the deletion go on. hold is
// true while it blocks; ok is true when the runtimev1.OkToDeleteAnnotation is to be
// written.
func BeforeDelete(ctx context.Context, c Caller, t *v1alpha2.Topology, cluster *unstructured.Unstructured, answers *Answers) (hold, ok bool, err error) {
	if _, done := t.Annotations[runtimev1.OkToDeleteAnnotation]; done {
		return false, false, nil
	}
	a, err := call(ctx, c, answers, Request{Hook: BeforeClusterDelete, Topology: t, Cluster: cluster})
	if err != nil {
		return false, false, err
	}
	if a.Blocking() {
		return true, false, nil
	}
	return false, true, nil
}
