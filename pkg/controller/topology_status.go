package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine"
)

// writeStatus reports the outcome and the rollout summary, and writes only
// when something changed: a steady state makes no requests.
func (r *TopologyReconciler) writeStatus(ctx context.Context, s *scope, before *v1alpha2.TopologyStatus, reconcileErr error) error {
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
	if t.Spec.Paused {
		t.Status.State = v1alpha2.StatePaused
	} else if s.result != nil || t.Status.State == v1alpha2.StatePaused {
		// Summed again from the parts (as last observed, if this pass
		// stopped early): a resumed Topology is no longer Paused.
		t.Status.State = engine.TopologyStateOf(&t.Status)
	}
	engine.CarryStateSince(before, &t.Status, metav1.NewTime(r.now()))
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

// markDeleting reports a Topology being deleted as such, once.
func (r *TopologyReconciler) markDeleting(ctx context.Context, t *v1alpha2.Topology) error {
	if t.Status.State == v1alpha2.StateDeleting {
		return nil
	}
	orig := t.DeepCopy()
	t.Status.State = v1alpha2.StateDeleting
	engine.CarryStateSince(&orig.Status, &t.Status, metav1.NewTime(r.now()))
	if err := r.Client.Status().Patch(ctx, t, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("writing status of Topology %s/%s: %w", t.Namespace, t.Name, client.IgnoreNotFound(err))
	}
	return nil
}

// now is the reconciler's clock: transition times in status come from it.
func (r *TopologyReconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
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

func equalStatus(a, b *v1alpha2.TopologyStatus) bool {
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
			case d.Phase == v1alpha2.PhaseDeferred:
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
