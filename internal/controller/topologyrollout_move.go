package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// carry keeps ro's status annotation as its status stands, so that
// clusterctl move, which creates the target's copy without a status, takes
// it along. Text that changes on every pass (messages, progress marks) is
// not worth a write: the annotation follows the status's progress.
func (r *TopologyRolloutReconciler) carry(ctx context.Context, ro *v1alpha2.TopologyRollout) error {
	last, known := r.carried.Load(ro.Name)
	if !known {
		if st, ok, err := fleet.Carried(ro); ok && err == nil {
			last, known = st, true
		}
	}
	if known && fleet.OnlyMinorDiffer(last.(*v1alpha2.TopologyRolloutStatus), &ro.Status) {
		r.carried.Store(ro.Name, last)
		return nil
	}
	text, err := fleet.Carry(&ro.Status)
	if err != nil {
		return fmt.Errorf("TopologyRollout %s: %w", ro.Name, err)
	}
	orig := ro.DeepCopy()
	if len(text) > fleet.MaxCarried {
		// Too large to carry: a move starts the rollout anew on the target
		// rather than from a status that is not this one.
		if _, ok := ro.Annotations[v1alpha2.RolloutStatusAnnotation]; !ok {
			r.carried.Store(ro.Name, ro.Status.DeepCopy())
			return nil
		}
		delete(ro.Annotations, v1alpha2.RolloutStatusAnnotation)
		r.Recorder.Eventf(ro, "Warning", "StatusNotCarried", "the status is %d bytes compressed, over the %d an annotation may carry: clusterctl move would start this rollout anew on the target", len(text), fleet.MaxCarried)
	} else {
		if ro.Annotations == nil {
			ro.Annotations = map[string]string{}
		}
		ro.Annotations[v1alpha2.RolloutStatusAnnotation] = text
	}
	rolloutRequests.WithLabelValues(requestStatus).Inc()
	if err := r.Client.Patch(ctx, ro, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("writing annotation %s of TopologyRollout %s: %w", v1alpha2.RolloutStatusAnnotation, ro.Name, err)
	}
	r.carried.Store(ro.Name, ro.Status.DeepCopy())
	return nil
}

// restore takes the status of a rollout that clusterctl move (or a backup
// read back) created here from the annotation the source's agent kept. A
// rollout that was moving clusters is paused first: its clusters arrive
// after it, and one not here yet would read as gone.
func (r *TopologyRolloutReconciler) restore(ctx context.Context, ro *v1alpha2.TopologyRollout) (ctrl.Result, error) {
	st, _, err := fleet.Carried(ro)
	if err != nil {
		orig := ro.DeepCopy()
		ro.Status.Phase, ro.Status.Message = v1alpha2.RolloutHalted, err.Error()
		r.Recorder.Event(ro, "Warning", "NotRestored", ro.Status.Message)
		return ctrl.Result{}, r.writeStatus(ctx, orig, ro, true)
	}
	paused := ""
	if !ro.Spec.Paused && !ro.Spec.Aborted && st.Phase != v1alpha2.RolloutCompleted {
		orig := ro.DeepCopy()
		ro.Spec.Paused = true
		if err := r.Client.Patch(ctx, ro, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("pausing the restored TopologyRollout %s: %w", ro.Name, err)
		}
		paused = fmt.Sprintf("; paused until its clusters are here: resume it with `kubectl topology rollout resume %s`", ro.Name)
	}
	orig := ro.DeepCopy()
	ro.Status = *st
	if equality.Semantic.DeepEqual(orig.Status, ro.Status) {
		return ctrl.Result{}, nil
	}
	if err := r.writeStatus(ctx, orig, ro, true); err != nil {
		return ctrl.Result{}, err
	}
	r.carried.Store(ro.Name, st.DeepCopy())
	r.Recorder.Eventf(ro, "Normal", "Restored", "status restored from annotation %s (clusterctl move): %d cluster(s), wave %d, %s%s",
		v1alpha2.RolloutStatusAnnotation, len(st.Clusters), st.Wave, st.Phase, paused)
	return ctrl.Result{}, nil
}
