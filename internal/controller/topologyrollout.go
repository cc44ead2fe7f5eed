package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/internal/membership"
	"github.com/kubectl-topology/kubectl-topology/internal/transient"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// IndexRolloutCluster indexes TopologyRollouts by the clusters they have not
// finished with (RolloutClusterRef.Key), so a cluster's change wakes only
// the rollouts it is in.
const IndexRolloutCluster = "rollout.cluster"

// beginRetry is how soon a rollout whose waves no longer cover its fleet
// looks at the fleet again.
const beginRetry = 30 * time.Second

// TopologyRolloutReconciler carries out TopologyRollouts: it fixes a
// rollout's clusters and waves when it starts, follows each cluster in
// flight, preflights and starts the next ones, and writes the rollout's
// status before it changes any cluster.
type TopologyRolloutReconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// CoreVersion is the Cluster API version the agent reads and writes.
	CoreVersion contract.CoreVersion
	// Recorder emits the rollout's events.
	Recorder record.EventRecorder
	// Clock is the time rollouts are judged by; nil: the real clock.
	Clock clock.PassiveClock
}

func (r *TopologyRolloutReconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

func (r *TopologyRolloutReconciler) members() membership.Reader {
	return membership.Reader{Client: r.Client, CoreVersion: r.CoreVersion}
}

// Reconcile looks at one rollout: guards, then one pass of the fleet engine.
func (r *TopologyRolloutReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ro := &v1alpha2.TopologyRollout{}
	if err := r.Client.Get(ctx, req.NamespacedName, ro); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ro.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if len(ro.Status.Clusters) == 0 && ro.Status.Phase != v1alpha2.RolloutCompleted && !ro.Spec.Aborted {
		return r.begin(ctx, ro)
	}
	if ro.Status.Phase == v1alpha2.RolloutAborted && ro.Status.CompletedAt != nil {
		return ctrl.Result{}, nil
	}
	return r.step(ctx, ro)
}

// begin fixes the rollout's clusters and their waves, once.
func (r *TopologyRolloutReconciler) begin(ctx context.Context, ro *v1alpha2.TopologyRollout) (ctrl.Result, error) {
	selected, err := r.members().List(ctx, ro.Spec.Targets)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("TopologyRollout %s: %w", ro.Name, err)
	}
	refs := make([]v1alpha2.RolloutClusterRef, 0, len(selected))
	for _, t := range selected {
		refs = append(refs, membership.RefOf(t))
	}
	orig := ro.DeepCopy()
	clusters, waves, errs := fleet.Assign(refs, fleet.Waves(ro.Spec.Strategy))
	if len(errs) > 0 {
		// Admission checked the waves against the fleet then; it has changed since.
		ro.Status.Phase, ro.Status.Message = v1alpha2.RolloutHalted, errs.ToAggregate().Error()
		r.Recorder.Event(ro, "Warning", "WavesDoNotCover", ro.Status.Message)
		return ctrl.Result{RequeueAfter: beginRetry}, r.writeStatus(ctx, orig, ro)
	}
	ro.Status.Clusters, ro.Status.Waves = clusters, waves
	fleet.Summarize(ro, &ro.Status, r.now())
	r.Recorder.Eventf(ro, "Normal", "Started", "%d cluster(s) in %d wave(s): %s", len(clusters), len(waves), fleet.Describe(ro.Spec.Change))
	if err := r.writeStatus(ctx, orig, ro); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
}

// step observes the clusters the engine needs, runs one pass, preflights
// and records the clusters that start, and only then writes them.
func (r *TopologyRolloutReconciler) step(ctx context.Context, ro *v1alpha2.TopologyRollout) (ctrl.Result, error) {
	now := r.now()
	m := r.members()
	read, obs, err := r.observe(ctx, m, ro, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	pass := fleet.Step(ro, obs, now)
	st := pass.Status
	classes := m.Classes()
	var started []int
	for _, i := range pass.Start {
		if fleet.Halted(ro, st) {
			break
		}
		c := st.Clusters[i]
		t := read[c.Key()]
		rolloutRequests.WithLabelValues(requestPreflight).Inc()
		if err := m.Preflight(ctx, classes, ro.Spec.Change, t, now); err != nil {
			var pf *membership.PreflightError
			if !errors.As(err, &pf) {
				return ctrl.Result{}, err
			}
			fleet.Refused(st, i, "preflight failed; nothing was changed: "+pf.Error(), now)
			pass.Events = append(pass.Events, fleet.Event{Warning: true, Reason: fleet.ReasonPreflight, Message: fmt.Sprintf("%s failed preflight: %s", c.Key(), pf.Error())})
			continue
		}
		fleet.Start(st, i, fleet.Has(ro.Spec.Change, t), now)
		pass.Events = append(pass.Events, fleet.Event{Reason: "ClusterStarted", Message: fmt.Sprintf("%s started (wave %d): %s", c.Key(), c.Wave, fleet.Describe(ro.Spec.Change))})
		started = append(started, i)
	}
	fleet.Summarize(ro, st, now)
	orig := ro.DeepCopy()
	ro.Status = *st
	// The status says a cluster started before the cluster is changed: a
	// restart in between writes the change then (pass.Apply), never twice.
	if err := r.writeStatus(ctx, orig, ro); err != nil {
		return ctrl.Result{}, err
	}
	for _, e := range pass.Events {
		kind := "Normal"
		if e.Warning {
			kind = "Warning"
		}
		r.Recorder.Event(ro, kind, e.Reason, e.Message)
	}
	// Applied is marked by the next pass, once the cache shows the change:
	// marked now, a cache still behind would read as an edit by hand.
	written := ro.DeepCopy()
	failed := false
	var retry error
	for _, i := range append(started, pass.Apply...) {
		if err := r.write(ctx, ro, i, read[ro.Status.Clusters[i].Key()]); err != nil {
			if transient.Is(err) {
				// The API server or a webhook it calls (the agent's own, just
				// restarted) could not answer now: the cluster stays in flight
				// and a later pass writes its change (pass.Apply).
				retry = err
				continue
			}
			fleet.Fail(&ro.Status, i, fleet.ReasonApplyFailed, err.Error(), now)
			r.Recorder.Eventf(ro, "Warning", fleet.ReasonApplyFailed, "%s: %s", ro.Status.Clusters[i].Key(), err.Error())
			failed = true
		}
	}
	if failed {
		fleet.Summarize(ro, &ro.Status, now)
		if err := r.writeStatus(ctx, written, ro); err != nil {
			return ctrl.Result{}, err
		}
	}
	if retry != nil {
		return ctrl.Result{}, fmt.Errorf("TopologyRollout %s: trying again: %w", ro.Name, retry)
	}
	result := ctrl.Result{RequeueAfter: pass.Requeue}
	if len(started) > 0 || ro.Status.Wave != orig.Status.Wave {
		result.RequeueAfter = time.Second
	}
	return result, nil
}

// observe reads what a pass needs and no more: every cluster in flight,
// and the waiting clusters of the current wave in order until there are as
// many free of holds as there is room in flight. A cluster the pass could
// start but did not read waits for the next pass (fleet.Step requeues).
func (r *TopologyRolloutReconciler) observe(ctx context.Context, m membership.Reader, ro *v1alpha2.TopologyRollout, now time.Time) (map[string]*v1alpha2.Topology, map[string]fleet.Observation, error) {
	read := map[string]*v1alpha2.Topology{}
	obs := map[string]fleet.Observation{}
	look := func(c v1alpha2.RolloutClusterStatus) (fleet.Observation, error) {
		t, err := m.Get(ctx, c.RolloutClusterRef)
		if err != nil {
			return fleet.Observation{}, fmt.Errorf("TopologyRollout %s: reading %s: %w", ro.Name, c.Key(), err)
		}
		read[c.Key()] = t
		obs[c.Key()] = m.Observe(ctx, ro.Spec.Change, t, now)
		return obs[c.Key()], nil
	}
	room := int(fleet.MaxInFlight(ro) - ro.Status.InFlight)
	wave := max(ro.Status.Wave, 1)
	for _, c := range ro.Status.Clusters {
		switch {
		case c.Phase == v1alpha2.ClusterInProgress || c.Phase == v1alpha2.ClusterSoaking:
			if _, err := look(c); err != nil {
				return nil, nil, err
			}
		case room > 0 && c.Wave == wave && (c.Phase == v1alpha2.ClusterPending || c.Phase == v1alpha2.ClusterWaitingForWindow):
			o, err := look(c)
			if err != nil {
				return nil, nil, err
			}
			if o.Found && o.Hold == "" {
				room--
			}
		}
	}
	return read, obs, nil
}

// write sets the change on a started cluster, unless it no longer is as it
// was when it started: then the next pass reports it as edited by hand.
func (r *TopologyRolloutReconciler) write(ctx context.Context, ro *v1alpha2.TopologyRollout, i int, t *v1alpha2.Topology) error {
	c := ro.Status.Clusters[i]
	if t == nil {
		return fmt.Errorf("%s is gone", c.Key())
	}
	has := fleet.Has(ro.Spec.Change, t)
	if fleet.Matches(ro.Spec.Change, has) || (c.From != nil && !fleet.Matches(*c.From, has)) {
		return nil
	}
	rolloutRequests.WithLabelValues(requestChange).Inc()
	err := r.members().Write(ctx, ro.Spec.Change, t)
	if apierrors.IsConflict(err) {
		// Changed since it was read: the next pass reads it again and
		// writes the change or reports the edit.
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing the change to %s: %w", c.Key(), err)
	}
	return nil
}

func (r *TopologyRolloutReconciler) writeStatus(ctx context.Context, orig, ro *v1alpha2.TopologyRollout) error {
	if equality.Semantic.DeepEqual(orig.Status, ro.Status) {
		return nil
	}
	// Guarded by the resourceVersion read: a second writer (an agent
	// before a restart) makes this one read again rather than overwrite.
	rolloutRequests.WithLabelValues(requestStatus).Inc()
	if err := r.Client.Status().Update(ctx, ro); err != nil {
		return fmt.Errorf("writing status of TopologyRollout %s: %w", ro.Name, err)
	}
	return nil
}

// rolloutClusterKeys indexes a rollout by the clusters it has not finished.
func rolloutClusterKeys(o client.Object) []string {
	ro, ok := o.(*v1alpha2.TopologyRollout)
	if !ok {
		return nil
	}
	var keys []string
	for _, c := range ro.Status.Clusters {
		if fleet.Holds(c) {
			keys = append(keys, c.Key())
		}
	}
	return keys
}

// rolloutsOf maps a cluster to the rollouts that have not finished with it.
func rolloutsOf(c client.Reader, kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &v1alpha2.TopologyRolloutList{}
		key := v1alpha2.RolloutClusterRef{Kind: kind, Namespace: o.GetNamespace(), Name: o.GetName()}.Key()
		if err := c.List(ctx, list, client.MatchingFields{IndexRolloutCluster: key}); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for _, ro := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&ro)})
		}
		return out
	}
}

// SetupWithManager registers the rollout controller: it watches rollouts,
// and Topologies and Clusters to wake the rollouts they are in.
func (r *TopologyRolloutReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha2.TopologyRollout{}, IndexRolloutCluster, rolloutClusterKeys); err != nil {
		return fmt.Errorf("indexing TopologyRollouts by cluster: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha2.TopologyRollout{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha2.Topology{}, handler.EnqueueRequestsFromMapFunc(rolloutsOf(mgr.GetClient(), v1alpha2.RolloutKindTopology)))
	if r.CoreVersion != "" {
		b = b.Watches(unstructuredOf(r.CoreVersion.GroupVersion().WithKind(clusterKind)), handler.EnqueueRequestsFromMapFunc(rolloutsOf(mgr.GetClient(), v1alpha2.RolloutKindCluster)))
	}
	return b.WithOptions(opts).Named("topologyrollout").Complete(r)
}
