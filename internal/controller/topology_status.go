package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
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
		health.Summarize(t, s.result.Sequence, s.observed, &t.Status)
	}
	if s.current != nil {
		t.Status.Infrastructure = health.InfrastructurePhase(s.current)
	}
	if r.Hooks != nil {
		t.Status.Hooks = hooksStatus(t, &s.answers)
	}
	if t.Spec.Paused || s.reason == ReasonClusterPaused {
		t.Status.State = v1alpha2.StatePaused
	} else if s.result != nil || t.Status.State == v1alpha2.StatePaused {
		// Summed again from the parts (as last observed, if this pass
		// stopped early): a resumed Topology is no longer Paused.
		t.Status.State = health.TopologyStateOf(&t.Status)
	}
	health.CarryStateSince(before, &t.Status, metav1.NewTime(r.now()))
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
	if !equalStatus(before, &t.Status) {
		orig := t.DeepCopy()
		orig.Status = *before
		if err := r.Client.Status().Patch(ctx, t, client.MergeFrom(orig)); err != nil {
			return fmt.Errorf("writing status of Topology %s/%s: %w", t.Namespace, t.Name, client.IgnoreNotFound(err))
		}
	}
	// After the Topology's own: a Cluster that cannot take the condition
	// must not keep the Topology from saying how it stands.
	return r.mirrorCondition(ctx, s, *meta.FindStatusCondition(t.Status.Conditions, ReconciledCondition))
}

// StatusFieldManager owns the one condition the agent puts on a Cluster's
// status; Cluster API's own controllers own the rest.
const StatusFieldManager = "topology-agent-status"

// mirrorCondition puts TopologyReconciled on the Cluster's status as upstream's
// topology controller does, so that clusterctl describe and whatever reads
// Clusters see it. A held Cluster (paused, or mid-move) is not touched, and
// an unchanged condition is not written again.
func (r *TopologyReconciler) mirrorCondition(ctx context.Context, s *scope, cond metav1.Condition) error {
	if s.current == nil || s.current.Cluster == nil || r.CoreVersion != contract.CoreV1Beta2 ||
		s.reason == ReasonClusterPaused || s.reason == ReasonClusterMissing {
		return nil
	}
	cluster := s.current.Cluster
	cond.ObservedGeneration = cluster.GetGeneration()
	cond.LastTransitionTime = metav1.NewTime(r.now())
	conds := health.Conditions(cluster)
	if old := meta.FindStatusCondition(conds, cond.Type); old != nil && old.Status == cond.Status &&
		old.Reason == cond.Reason && old.Message == cond.Message && old.ObservedGeneration == cond.ObservedGeneration {
		return nil
	}
	meta.SetStatusCondition(&conds, cond) // keeps the transition time while the status holds
	entry, err := runtime.DefaultUnstructuredConverter.ToUnstructured(meta.FindStatusCondition(conds, cond.Type))
	if err != nil {
		return err
	}
	patch := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{entry}}}}
	patch.SetGroupVersionKind(cluster.GroupVersionKind())
	patch.SetNamespace(cluster.GetNamespace())
	patch.SetName(cluster.GetName())
	if err := r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(patch), client.FieldOwner(StatusFieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("writing condition %s on Cluster %s/%s: %w", cond.Type, cluster.GetNamespace(), cluster.GetName(), client.IgnoreNotFound(err))
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
	health.CarryStateSince(&orig.Status, &t.Status, metav1.NewTime(r.now()))
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

// CreationDeferredMessage ends a TopologyReconciled message line naming pools
// whose creation waits for a stable control plane, in upstream v1.14's words.
const CreationDeferredMessage = "creation deferred while control plane upgrade is in progress"

// rolloutReason turns the engine's sequencing into the reason and message
// upstream v1.14 gives TopologyReconciled: ClusterUpgrading while any part
// is upgrading, waits for its turn or waits to be created, with one line
// per part; MachineDeploymentsUpgradeDeferred (MachinePools…) when only
// deferred or held pools keep the upgrade from finishing. cpKind names the
// control plane as the lines do.
func rolloutReason(r *upgrade.Sequence, cpKind string, answers *lifecycle.Answers, upgradeOwed bool) (string, string) {
	msg := &strings.Builder{}
	fmt.Fprintf(msg, "Cluster is upgrading to %s", r.DesiredVersion)
	// An upgrade whose AfterClusterUpgrade is still owed is not over, and a
	// hook that holds it comes first, as upstream reports them.
	busy, cpMoving := upgradeOwed, false
	if answers.AnyBlocking() {
		busy = true
		fmt.Fprintf(msg, "\n  * %s", answers.Message("upgrade"))
	}
	switch r.ControlPlane.Phase {
	case v1alpha2.PhaseUpgrading:
		busy, cpMoving = true, true
		fmt.Fprintf(msg, "\n  * %s upgrading to version %s%s", cpKind, r.ControlPlane.Version, pendingVersions(r.Plan.ControlPlane, r.ControlPlane.Version))
	case v1alpha2.PhasePending:
		busy = true
		fmt.Fprintf(msg, "\n  * %s pending upgrade to version %s", cpKind, strings.Join(orDesired(r.Plan.ControlPlane, r.DesiredVersion), ", "))
	}
	reason := ReasonClusterUpgrading
	for _, set := range []struct {
		decisions []upgrade.Decision
		deferred  string
		kind      string
	}{
		{r.MachineDeployments, ReasonMachineDeploymentsDeferred, "MachineDeployment"},
		{r.MachinePools, ReasonMachinePoolsDeferred, "MachinePool"},
	} {
		var upgrading, pending, deferred, create []string
		for _, d := range set.decisions {
			switch {
			case d.CreatePending:
				create = append(create, d.Name)
			case d.Pin != "":
				// On its own schedule, as upstream leaves a pinned pool out
				// of the upgrade it reports: its part's state shows its roll.
			case d.Phase == v1alpha2.PhaseUpgrading:
				upgrading = append(upgrading, d.Name)
			case d.Phase == v1alpha2.PhaseDeferred || d.Phase == v1alpha2.PhaseHeld:
				deferred = append(deferred, d.Name)
			case d.Phase == v1alpha2.PhasePending:
				pending = append(pending, d.Name)
			}
		}
		if len(upgrading) > 0 {
			fmt.Fprintf(msg, "\n  * %s upgrading to version %s%s", nameList(set.kind, upgrading), nextOf(r.Plan.Workers, r.DesiredVersion), pendingVersions(r.Plan.Workers, nextOf(r.Plan.Workers, r.DesiredVersion)))
		}
		if len(pending) > 0 {
			fmt.Fprintf(msg, "\n  * %s pending upgrade to version %s", nameList(set.kind, pending), strings.Join(orDesired(r.Plan.Workers, r.DesiredVersion), ", "))
		}
		if len(deferred) > 0 {
			fmt.Fprintf(msg, "\n  * %s upgrade to version %s deferred using defer-upgrade or hold-upgrade-sequence annotations", nameList(set.kind, deferred), r.DesiredVersion)
			if !cpMoving && len(upgrading) == 0 && len(pending) == 0 && reason == ReasonClusterUpgrading && !answers.AnyBlocking() {
				reason = set.deferred
			}
		}
		if len(create) > 0 {
			fmt.Fprintf(msg, "\n  * %s %s", nameList(set.kind, create), CreationDeferredMessage)
		}
		busy = busy || len(upgrading)+len(pending)+len(deferred)+len(create) > 0
	}
	if !busy {
		return ReasonSucceeded, ""
	}
	return reason, msg.String()
}

// pendingVersions names the versions of plan after current, as upstream
// does: " (v1.34.0 pending)", or "".
func pendingVersions(plan []string, current string) string {
	var rest []string
	for _, v := range plan {
		if v != current {
			rest = append(rest, v)
		}
	}
	if len(rest) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s pending)", strings.Join(rest, ", "))
}

func orDesired(plan []string, desired string) []string {
	if len(plan) == 0 {
		return []string{desired}
	}
	return plan
}

func nextOf(plan []string, desired string) string {
	if len(plan) == 0 {
		return desired
	}
	return plan[0]
}

// nameList lists at most three names of kind, as upstream's messages do.
func nameList(kind string, list []string) string {
	if len(list) > 1 {
		kind += "s"
	}
	if len(list) > 3 {
		list = append(list[:3:3], "...")
	}
	return kind + " " + strings.Join(list, ", ")
}
