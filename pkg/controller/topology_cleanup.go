package controller

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine"
)

// deleteUnused deletes generated objects the desired state no longer has:
// pools and health checks removed from the topology, template clones replaced
// by a rotation (once no MachineSet still uses them), and objects a restarted
// agent made twice before the Cluster existed.
func (r *TopologyReconciler) deleteUnused(ctx context.Context, s *scope) (bool, error) {
	desired := indexByKey(s.desired)
	inUse, err := r.machineSetRefs(ctx, s.topo)
	if err != nil {
		return false, err
	}
	cls := s.class.Class.Spec
	clusterLevel := map[string]bool{}
	if cls.Infrastructure.Ref != nil {
		clusterLevel[engine.TrimTemplateSuffix(cls.Infrastructure.Ref.Kind)] = true
	}
	if cls.ControlPlane.Ref != nil {
		clusterLevel[engine.TrimTemplateSuffix(cls.ControlPlane.Ref.Kind)] = true
	}
	for _, o := range s.live {
		key := engine.KeyOf(o)
		if _, want := desired[key]; want || inUse[key] || !o.GetDeletionTimestamp().IsZero() {
			continue
		}
		if _, owned := o.GetLabels()[engine.TopologyOwnedLabel]; !owned {
			continue
		}
		// An InfrastructureCluster or control plane is only ever removed as a
		// duplicate the Topology itself still owns; the Cluster's are never touched.
		if clusterLevel[o.GetKind()] && !engine.OwnedBy(o, s.topo.UID) {
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
func (r *TopologyReconciler) machineSetRefs(ctx context.Context, topo *v1alpha1.Topology) (map[engine.ObjectKey]bool, error) {
	sets := &unstructured.UnstructuredList{}
	sets.SetGroupVersionKind(capiGVK(machineSetKind + "List"))
	if err := r.Client.List(ctx, sets, client.InNamespace(topo.Namespace), client.MatchingLabels{engine.ClusterNameLabel: topo.Name}); err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("listing MachineSets of Cluster %s/%s: %w", topo.Namespace, topo.Name, err)
	}
	out := map[engine.ObjectKey]bool{}
	for _, ms := range sets.Items {
		for _, path := range [][]string{{"spec", "template", "spec", "infrastructureRef"}, {"spec", "template", "spec", "bootstrap", "configRef"}} {
			ref, found, _ := unstructured.NestedMap(ms.Object, path...)
			if !found {
				continue
			}
			av, _ := ref["apiVersion"].(string)
			kind, _ := ref["kind"].(string)
			name, _ := ref["name"].(string)
			gv, _ := schema.ParseGroupVersion(av)
			out[engine.ObjectKey{Group: gv.Group, Kind: kind, Namespace: topo.Namespace, Name: name}] = true
		}
	}
	return out, nil
}

// reconcileDelete deletes the CAPI Cluster and keeps the Topology until it is
// gone; the garbage collector removes what the Cluster and the Topology own.
func (r *TopologyReconciler) reconcileDelete(ctx context.Context, topo *v1alpha1.Topology) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(topo, TopologyFinalizer) {
		return ctrl.Result{}, nil
	}
	cluster := &unstructured.Unstructured{}
	cluster.SetAPIVersion(engine.ClusterAPIVersion)
	cluster.SetKind(clusterKind)
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(topo), cluster)
	switch {
	case err == nil && engine.OwnedBy(cluster, topo.UID):
		if cluster.GetDeletionTimestamp().IsZero() {
			if err := r.Client.Delete(ctx, cluster, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, fmt.Errorf("deleting Cluster %s/%s of Topology %s: %w", cluster.GetNamespace(), cluster.GetName(), topo.Name, err)
			}
			r.Recorder.Eventf(topo, "Normal", "Deleting", "Deleting Cluster %s", cluster.GetName())
		}
		return ctrl.Result{RequeueAfter: deletionPollInterval}, nil
	case err != nil && !apierrors.IsNotFound(err):
		return ctrl.Result{}, fmt.Errorf("reading Cluster %s/%s: %w", topo.Namespace, topo.Name, err)
	}
	patch := client.MergeFrom(topo.DeepCopy())
	controllerutil.RemoveFinalizer(topo, TopologyFinalizer)
	if err := r.Client.Patch(ctx, topo, patch); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, nil
}

// writeStatus reports the outcome and the rollout summary, and writes only
// when something changed: a steady state makes no requests.
func (r *TopologyReconciler) writeStatus(ctx context.Context, s *scope, before *v1alpha1.TopologyStatus, reconcileErr error) error {
	t := s.topo
	t.Status.ObservedGeneration = t.Generation
	if s.current != nil && s.current.Cluster != nil {
		t.Status.ClusterName = s.current.Cluster.GetName()
	}
	if s.result != nil {
		engine.Summarize(t, s.result.Rollout, s.observed, &t.Status)
	}
	if s.current != nil {
		t.Status.Infrastructure = engine.InfrastructurePhase(s.current)
	}
	cond := metav1.Condition{Type: ReconciledCondition, Status: metav1.ConditionFalse, ObservedGeneration: t.Generation}
	switch {
	case reconcileErr != nil:
		cond.Reason, cond.Message = ReasonFailed, conditionMessage(reconcileErr.Error())
	case s.reason == ReasonSucceeded || s.reason == "":
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonSucceeded
	default:
		cond.Reason, cond.Message = s.reason, s.message
	}
	meta.SetStatusCondition(&t.Status.Conditions, cond)
	if equalStatus(before, &t.Status) {
		return nil
	}
	orig := t.DeepCopy()
	orig.Status = *before
	if err := r.Client.Status().Patch(ctx, t, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("writing status of Topology %s/%s: %w", t.Namespace, t.Name, client.IgnoreNotFound(err))
	}
	return nil
}

// maxConditionMessage keeps a condition within what the CRD admits (32 KiB);
// a longer message would make the status write itself fail, and then the
// reason would be nowhere but in the log.
const maxConditionMessage = 8 << 10

func conditionMessage(msg string) string {
	if len(msg) <= maxConditionMessage {
		return msg
	}
	return msg[:maxConditionMessage] + "… (cut; the agent's log has all of it)"
}

func equalStatus(a, b *v1alpha1.TopologyStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}

// rolloutReason turns the engine's sequencing into upstream's condition reasons.
func rolloutReason(r *engine.Rollout) (string, string) {
	if r.ControlPlane.Version != r.DesiredVersion {
		return ReasonControlPlaneUpgradePending, fmt.Sprintf("Control plane rollout and upgrade to version %s on hold: %s", r.DesiredVersion, r.ControlPlane.Reason)
	}
	for _, set := range []struct {
		decisions                 []engine.Decision
		create, upgrade, deferred string
		kind                      string
	}{
		{r.MachineDeployments, ReasonMachineDeploymentsCreate, ReasonMachineDeploymentsUpgrade, ReasonMachineDeploymentsDeferred, "MachineDeployment"},
		{r.MachinePools, ReasonMachinePoolsCreate, ReasonMachinePoolsUpgrade, ReasonMachinePoolsDeferred, "MachinePool"},
	} {
		var create, upgrade, deferred []string
		for _, d := range set.decisions {
			switch {
			case d.CreatePending:
				create = append(create, d.Name)
			case d.Phase == v1alpha1.PhaseDeferred:
				deferred = append(deferred, d.Name)
			case d.Version != r.DesiredVersion:
				upgrade = append(upgrade, d.Name)
			}
		}
		switch {
		case len(create) > 0:
			return set.create, fmt.Sprintf("%s(s) %s creation on hold: the control plane is not stable yet", set.kind, strings.Join(create, ", "))
		case len(upgrade) > 0:
			return set.upgrade, fmt.Sprintf("%s(s) %s rollout and upgrade to version %s on hold", set.kind, strings.Join(upgrade, ", "), r.DesiredVersion)
		case len(deferred) > 0:
			return set.deferred, fmt.Sprintf("%s(s) %s upgrade to version %s deferred by the %s annotation", set.kind, strings.Join(deferred, ", "), r.DesiredVersion, engine.DeferUpgradeAnnotation)
		}
	}
	return ReasonSucceeded, ""
}
