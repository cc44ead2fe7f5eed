package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
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
	clusterLevel := contract.ClusterLevelKinds(s.class.Class)
	var unused []*unstructured.Unstructured
	for _, o := range s.live {
		if _, want := desired[clusterstate.KeyOf(o)]; want || !o.GetDeletionTimestamp().IsZero() {
			continue
		}
		if _, owned := o.GetLabels()[clusterv1.ClusterTopologyOwnedLabel]; !owned {
			continue
		}
		// An InfrastructureCluster or control plane is only ever removed as a
		// duplicate the Topology itself still owns; the Cluster's are never touched.
		if clusterLevel[o.GetKind()] && !desiredstate.OwnedBy(o, s.topo.UID) {
			continue
		}
		unused = append(unused, o)
	}
	if len(unused) == 0 {
		return true, nil
	}
	inUse, err := r.referencedNow(ctx, s)
	if err != nil {
		return false, err
	}
	for _, o := range unused {
		if inUse[clusterstate.KeyOf(o)] {
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

// referencedNow is every object the cluster's control plane, pools and
// MachineSets refer to, as the API server has them (desiredstate.InUse). The cache cannot say: its
// informers catch up kind by kind, so it may hold a pool from before the
// pass that pointed it at new clones beside those clones themselves, and a
// MachineSet Cluster API made a moment ago may not be in it yet. A template
// deleted on that view would leave a pool pointing at nothing.
func (r *TopologyReconciler) referencedNow(ctx context.Context, s *scope) (map[clusterstate.Key]bool, error) {
	l := r.loader()
	if r.APIReader != nil {
		// Listed by label: the cluster index is the cache's.
		l.Reader, l.ByCluster = r.APIReader, nil
	}
	var users []*unstructured.Unstructured
	for _, kind := range []string{machineSetKind, "MachineDeployment", "MachinePool"} {
		objs, err := l.Labelled(ctx, s.topo, r.capiGVK(kind))
		if err != nil {
			return nil, err
		}
		users = append(users, objs...)
	}
	if cp := s.current.ControlPlane.Object; cp != nil {
		now := &unstructured.Unstructured{}
		now.SetGroupVersionKind(cp.GroupVersionKind())
		switch err := l.Reader.Get(ctx, client.ObjectKeyFromObject(cp), now); {
		case err == nil:
			users = append(users, now)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading %s %s/%s: %w", cp.GetKind(), cp.GetNamespace(), cp.GetName(), err)
		}
	}
	return desiredstate.InUse(users, s.topo.Namespace)
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
