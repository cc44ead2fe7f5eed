package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// ReasonClusterCreating is TopologyReconciled's reason while
// BeforeClusterCreate holds the creation, upstream's.
const ReasonClusterCreating = "ClusterCreating"

// hookCaller is Hooks as the engine takes it: a nil interface, not a nil
// pointer, when the agent calls no lifecycle hook.
func (r *TopologyReconciler) hookCaller() lifecycle.Caller {
	if r.Hooks == nil {
		return nil
	}
	return r.Hooks
}

// callBeforeClusterCreate calls BeforeClusterCreate before anything of a
// Topology is made, and stops there while it blocks. Once it lets the
// creation go on, AfterControlPlaneInitialized is owed: written before the
// first object, so that an agent stopped in between still calls it.
func (r *TopologyReconciler) callBeforeClusterCreate(ctx context.Context, s *scope) (bool, error) {
	if r.Hooks == nil || s.current.Cluster != nil || s.topo.Annotations[v1alpha2.ClusterMadeAnnotation] != "" {
		return true, nil
	}
	hold, pending, err := lifecycle.BeforeCreate(ctx, r.Hooks, s.topo, &s.answers)
	r.hookEvents(s, err)
	if err != nil {
		return false, err
	}
	if hold {
		s.reason, s.message = ReasonClusterCreating, s.answers.Message("Cluster topology creation")
		s.requeueAfter = s.answers.RetryAfter()
		return false, nil
	}
	return true, r.writePending(ctx, s.topo, pending)
}

// writeOwedHooks writes the hooks the engine says are owed from now on,
// before any object is written.
func (r *TopologyReconciler) writeOwedHooks(ctx context.Context, s *scope) (bool, error) {
	if r.Hooks == nil {
		return true, nil
	}
	return true, r.writePending(ctx, s.topo, s.result.Hooks.Pending)
}

// oweAfterControlPlane writes the hooks owed after the control plane's new
// version, once the control plane has it.
func (r *TopologyReconciler) oweAfterControlPlane(ctx context.Context, s *scope) error {
	if r.Hooks == nil || len(s.result.Hooks.AfterControlPlane) == 0 {
		return nil
	}
	pending := lifecycle.PendingOf(s.topo.Annotations).With(s.result.Hooks.AfterControlPlane...)
	return r.writePending(ctx, s.topo, pending)
}

// callAfterHooks calls AfterControlPlaneInitialized and AfterClusterUpgrade
// when they are owed and due, after this pass's writes.
func (r *TopologyReconciler) callAfterHooks(ctx context.Context, s *scope) (bool, error) {
	if r.Hooks == nil {
		return true, nil
	}
	in := lifecycle.AfterInput{Caller: r.Hooks, Topology: s.topo, Cluster: s.current.Cluster, Pending: lifecycle.PendingOf(s.topo.Annotations), Sequence: s.result.Sequence}
	pending, err := lifecycle.After(ctx, in, &s.answers)
	r.hookEvents(s, err)
	if err != nil {
		return false, err
	}
	return true, r.writePending(ctx, s.topo, pending)
}

// writePending sets the pending-hooks annotation of t to pending, when it
// differs, with t's resourceVersion as a precondition: a stale read must
// not drop a hook another pass made owed.
func (r *TopologyReconciler) writePending(ctx context.Context, t *v1alpha2.Topology, pending lifecycle.Pending) error {
	if lifecycle.PendingOf(t.Annotations).Equal(pending) {
		return nil
	}
	orig := t.DeepCopy()
	if len(pending) == 0 {
		delete(t.Annotations, runtimev1.PendingHooksAnnotation)
	} else {
		metav1.SetMetaDataAnnotation(&t.ObjectMeta, runtimev1.PendingHooksAnnotation, pending.String())
	}
	if err := r.patchAsRead(ctx, t, orig); err != nil {
		return fmt.Errorf("writing the hooks owed (%s annotation) on Topology %s/%s: %w", runtimev1.PendingHooksAnnotation, t.Namespace, t.Name, err)
	}
	return nil
}

// hookEvents records an Event for each hook that was asked this pass and
// holds, and for a call that failed.
func (r *TopologyReconciler) hookEvents(s *scope, err error) {
	if r.Recorder == nil {
		return
	}
	for _, a := range s.answers.Holding() {
		if a.Remembered || s.evented[a.Hook] {
			continue
		}
		if s.evented == nil {
			s.evented = map[string]bool{}
		}
		s.evented[a.Hook] = true
		msg := fmt.Sprintf("%s (%s) holds %s", a.Hook, strings.Join(a.Handlers, ", "), lifecycle.Holds(a.Hook))
		if a.Message != "" {
			msg += ": " + a.Message
		}
		r.Recorder.Eventf(s.topo, "Normal", "LifecycleHookBlocking", "%s; asked again in %s", msg, a.RetryAfter.Round(time.Second))
	}
	if err != nil {
		r.Recorder.Eventf(s.topo, "Warning", "LifecycleHookFailed", "%v", err)
	}
}

// hooksStatus is status.hooks: the hooks owed and those holding.
func hooksStatus(t *v1alpha2.Topology, answers *lifecycle.Answers) *v1alpha2.HooksStatus {
	out := &v1alpha2.HooksStatus{Pending: lifecycle.PendingOf(t.Annotations)}
	for _, a := range answers.Holding() {
		h := v1alpha2.HookHold{Hook: a.Hook, Handlers: a.Handlers, Holds: lifecycle.Holds(a.Hook), Message: a.Message}
		if !a.NextCall.IsZero() {
			next := metav1.NewTime(a.NextCall.Truncate(time.Second))
			h.NextCall = &next
		}
		out.Holding = append(out.Holding, h)
	}
	if len(out.Pending) == 0 && len(out.Holding) == 0 {
		return nil
	}
	return out
}

// holdDeletion calls BeforeClusterDelete before the agent deletes a
// Topology's Cluster: on a stock management cluster nothing else holds the
// deletion. It returns true while the hook holds it.
func (r *TopologyReconciler) holdDeletion(ctx context.Context, t *v1alpha2.Topology, cluster *unstructured.Unstructured) (ctrl.Result, bool, error) {
	if r.Hooks == nil {
		return ctrl.Result{}, false, nil
	}
	s := &scope{topo: t}
	hold, ok, err := lifecycle.BeforeDelete(ctx, r.Hooks, t, cluster, &s.answers)
	r.hookEvents(s, err)
	if err != nil {
		return ctrl.Result{}, true, r.reportDeleting(ctx, s, err)
	}
	if hold {
		return ctrl.Result{RequeueAfter: s.answers.RetryAfter()}, true, r.reportDeleting(ctx, s, nil)
	}
	if ok {
		orig := t.DeepCopy()
		metav1.SetMetaDataAnnotation(&t.ObjectMeta, runtimev1.OkToDeleteAnnotation, "")
		if err := r.Client.Patch(ctx, t, client.MergeFrom(orig)); err != nil {
			return ctrl.Result{}, true, fmt.Errorf("marking Topology %s/%s %s: %w", t.Namespace, t.Name, runtimev1.OkToDeleteAnnotation, err)
		}
	}
	return ctrl.Result{}, false, nil
}

// reportDeleting says on TopologyReconciled why the deletion waits, in
// upstream's words ("Cluster is deleting. Following hooks are blocking
// delete: …"), and reports the holding hooks in status.
func (r *TopologyReconciler) reportDeleting(ctx context.Context, s *scope, callErr error) error {
	t := s.topo
	orig := t.DeepCopy()
	msg := "Cluster is deleting"
	if m := s.answers.Message("delete"); m != "" {
		msg += ". " + m
	}
	if callErr != nil {
		msg += ". " + callErr.Error()
	}
	meta.SetStatusCondition(&t.Status.Conditions, metav1.Condition{Type: ReconciledCondition, Status: metav1.ConditionFalse, Reason: ReasonDeleting, Message: conditionMessage(msg), ObservedGeneration: t.Generation})
	t.Status.Hooks = hooksStatus(t, &s.answers)
	if equalStatus(&orig.Status, &t.Status) {
		return callErr
	}
	if err := r.Client.Status().Patch(ctx, t, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("writing status of Topology %s/%s: %w", t.Namespace, t.Name, client.IgnoreNotFound(err))
	}
	return callErr
}
