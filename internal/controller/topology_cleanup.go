package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// deleteUnused deletes generated objects the desired state no longer has:
// pools and health checks removed from the topology, template clones replaced
// by a rotation (once no MachineSet still uses them), and objects a restarted
// agent made twice before the Cluster existed. s.live holds none that Cluster
// API made for Machines (loader.Objects).
func (r *TopologyReconciler) deleteUnused(ctx context.Context, s *scope) (bool, error) {
	desired := indexByKey(s.desired, s.result.Held())
	inUse, err := r.machineSetRefs(ctx, s.topo)
	if err != nil {
		return false, err
	}
	clusterLevel := contract.ClusterLevelKinds(s.class.Class)
	for _, o := range s.live {
		key := contract.KeyOf(o)
		if _, want := desired[key]; want || inUse[key] || !o.GetDeletionTimestamp().IsZero() {
			continue
		}
		if _, owned := o.GetLabels()[contract.TopologyOwnedLabel]; !owned {
			continue
		}
		// An InfrastructureCluster or control plane is only ever removed as a
		// duplicate the Topology itself still owns; the Cluster's are never touched.
		if clusterLevel[o.GetKind()] && !desiredstate.OwnedBy(o, s.topo.UID) {
			continue
		}
		if err := r.Client.Delete(ctx, o, client.Preconditions{UID: ptr(o.GetUID())}); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("deleting unused %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		r.Recorder.Eventf(s.topo, "Normal", "Deleted", "Deleted %s %s: no longer part of the topology", o.GetKind(), o.GetName())
	}
	return true, nil
}

func ptr[T any](v T) *T { return &v }

// machineSetRefs lists the templates the cluster's MachineSets still use:
// Machines of an older MachineSet may still be created from them.
func (r *TopologyReconciler) machineSetRefs(ctx context.Context, topo *v1alpha2.Topology) (map[contract.ObjectKey]bool, error) {
	sets, err := r.loader().Labelled(ctx, topo, r.capiGVK(machineSetKind))
	if err != nil {
		return nil, err
	}
	out := map[contract.ObjectKey]bool{}
	for _, ms := range sets {
		for _, path := range [][]string{{"spec", "template", "spec", "infrastructureRef"}, {"spec", "template", "spec", "bootstrap", "configRef"}} {
			ref, found, _ := unstructured.NestedMap(ms.Object, path...)
			if !found {
				continue
			}
			out[contract.KeyOfReference(ref, topo.Namespace)] = true
		}
	}
	return out, nil
}

// reconcileDelete deletes the CAPI Cluster and keeps the Topology until it is
// gone; the garbage collector removes what the Cluster and the Topology own.
func (r *TopologyReconciler) reconcileDelete(ctx context.Context, topo *v1alpha2.Topology) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(topo, TopologyFinalizer) {
		return ctrl.Result{}, nil
	}
	if _, moved := topo.Annotations[contract.DeleteForMoveAnnotation]; moved {
		// clusterctl move deletes the source's copy of what it moved: the
		// Cluster lives on in the target and must not be deleted from here.
		return ctrl.Result{}, r.removeFinalizer(ctx, topo)
	}
	if err := r.markDeleting(ctx, topo); err != nil {
		return ctrl.Result{}, err
	}
	cluster := &unstructured.Unstructured{}
	cluster.SetAPIVersion(r.CoreVersion.APIVersion())
	cluster.SetKind(clusterKind)
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(topo), cluster)
	switch {
	case err == nil && desiredstate.OwnedBy(cluster, topo.UID):
		if cluster.GetDeletionTimestamp().IsZero() {
			if res, held, err := r.holdDeletion(ctx, topo, cluster); held || err != nil {
				return res, err
			}
			if err := r.Client.Delete(ctx, cluster, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, fmt.Errorf("deleting Cluster %s/%s of Topology %s: %w", cluster.GetNamespace(), cluster.GetName(), topo.Name, err)
			}
			r.Recorder.Eventf(topo, "Normal", "Deleting", "Deleting Cluster %s", cluster.GetName())
		}
		return ctrl.Result{RequeueAfter: deletionPollInterval}, nil
	case err != nil && !apierrors.IsNotFound(err):
		return ctrl.Result{}, fmt.Errorf("reading Cluster %s/%s: %w", topo.Namespace, topo.Name, err)
	}
	if r.Hooks != nil {
		r.Hooks.Forget(topo.Namespace, topo.Name)
	}
	return ctrl.Result{}, r.removeFinalizer(ctx, topo)
}

func (r *TopologyReconciler) removeFinalizer(ctx context.Context, topo *v1alpha2.Topology) error {
	patch := client.MergeFrom(topo.DeepCopy())
	controllerutil.RemoveFinalizer(topo, TopologyFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, topo, patch))
}
