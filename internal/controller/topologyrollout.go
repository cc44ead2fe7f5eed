package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

	// written is when each rollout's status was last written, and joined
	// when its late matches were last looked for (by name).
	written, joined sync.Map
	// failing is since when each cluster in flight (rollout and cluster
	// key) has been seen with its last reconcile failed.
	failing sync.Map
	// carried is the status each rollout's annotation last carried (by
	// name), so that a pass does not decode it to compare.
	carried sync.Map
}

// refusalGrace is how long a cluster's reconciles fail before its writes are
// dry-run to learn whether they are refused: most failures (a conflict, a
// cache behind) heal on the next pass, and a dry run of every object costs
// requests per cluster that a fleet pays on every pass.
const refusalGrace = 10 * time.Second

// forget drops what is kept in memory for the rollout named ro, once it is gone.
func (r *TopologyRolloutReconciler) forget(ro string) {
	r.written.Delete(ro)
	r.joined.Delete(ro)
	r.carried.Delete(ro)
	r.failing.Range(func(id, _ any) bool {
		if strings.HasPrefix(id.(string), ro+"/") {
			r.failing.Delete(id)
		}
		return true
	})
}

// failingFor says how long the cluster key of rollout ro has been seen
// failing, counting from the first pass that saw it fail; it forgets a
// cluster once a pass sees it not failing. The message is not compared: a
// refusal's message may vary between retries.
func (r *TopologyRolloutReconciler) failingFor(ro, key string, failing bool, now time.Time) time.Duration {
	id := ro + "/" + key
	if !failing {
		r.failing.Delete(id)
		return 0
	}
	since, _ := r.failing.LoadOrStore(id, now)
	return now.Sub(since.(time.Time))
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
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ro.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if fleet.Restoring(ro) {
		return r.restore(ctx, ro)
	}
	if len(ro.Status.Clusters) == 0 && ro.Status.Phase != v1alpha2.RolloutCompleted && !ro.Spec.Aborted {
		return r.begin(ctx, ro)
	}
	if ro.Status.Phase == v1alpha2.RolloutAborted && ro.Status.CompletedAt != nil {
		return ctrl.Result{}, nil
	}
	return r.step(ctx, ro)
}

// begin fixes the rollout's clusters and their waves, once: those its
// targets select, or for an undo those the rollout it undoes changed, each
// with the value it goes back to.
func (r *TopologyRolloutReconciler) begin(ctx context.Context, ro *v1alpha2.TopologyRollout) (ctrl.Result, error) {
	m := r.members()
	var selected []*v1alpha2.Topology
	var back map[string]v1alpha2.RolloutChange
	orig := ro.DeepCopy()
	if ro.Spec.Undo != "" {
		var undoErr *field.Error
		selected, back, undoErr = m.UndoMembers(ctx, ro.Spec.Undo)
		if undoErr != nil {
			ro.Status.Phase, ro.Status.Message = v1alpha2.RolloutHalted, undoErr.Error()
			r.Recorder.Event(ro, "Warning", "UndoRefused", ro.Status.Message)
			return ctrl.Result{RequeueAfter: beginRetry}, r.writeStatus(ctx, orig, ro, true)
		}
	} else {
		var err error
		if selected, err = m.List(ctx, ro.Spec.Targets); err != nil {
			return ctrl.Result{}, fmt.Errorf("TopologyRollout %s: %w", ro.Name, err)
		}
	}
	refs := make([]v1alpha2.RolloutClusterRef, 0, len(selected))
	for _, t := range selected {
		refs = append(refs, membership.RefOf(t))
	}
	clusters, waves, errs := fleet.Assign(refs, fleet.Waves(ro.Spec.Strategy))
	if len(errs) > 0 {
		// Admission checked the waves against the fleet then; it has changed since.
		ro.Status.Phase, ro.Status.Message = v1alpha2.RolloutHalted, errs.ToAggregate().Error()
		r.Recorder.Event(ro, "Warning", "WavesDoNotCover", ro.Status.Message)
		return ctrl.Result{RequeueAfter: beginRetry}, r.writeStatus(ctx, orig, ro, true)
	}
	for i := range clusters {
		if to, ok := back[clusters[i].Key()]; ok {
			clusters[i].To = to.DeepCopy()
		}
	}
	ro.Status.Clusters, ro.Status.Waves = clusters, waves
	fleet.Summarize(ro, &ro.Status, r.now())
	what := fleet.Describe(ro.Spec.Change)
	if ro.Spec.Undo != "" {
		what = "undo of TopologyRollout " + ro.Spec.Undo
	}
	r.Recorder.Eventf(ro, "Normal", "Started", "%d cluster(s) in %d wave(s): %s", len(clusters), len(waves), what)
	if err := r.writeStatus(ctx, orig, ro, true); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.carry(ctx, ro); err != nil {
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
	view := fleet.View{Clusters: obs}
	if ro.Status.StartedAt == nil && len(ro.Spec.WaitFor) > 0 {
		if view.Blocking, err = m.Blocking(ctx, ro); err != nil {
			return ctrl.Result{}, fmt.Errorf("TopologyRollout %s: %w", ro.Name, err)
		}
	}
	pass := fleet.Step(ro, view, now)
	st := pass.Status
	if err := r.join(ctx, m, ro, st, &pass); err != nil {
		return ctrl.Result{}, err
	}
	classes := m.Classes()
	var started []int
	for _, i := range pass.Start {
		if fleet.Halted(ro, st) {
			break
		}
		c := st.Clusters[i]
		t := read[c.Key()]
		change := fleet.Target(ro, c)
		rolloutRequests.WithLabelValues(requestPreflight).Inc()
		if err := m.Preflight(ctx, classes, change, t, now); err != nil {
			var pf *membership.PreflightError
			if !errors.As(err, &pf) {
				return ctrl.Result{}, err
			}
			fleet.Refused(st, i, "preflight failed; nothing was changed: "+pf.Error(), now)
			pass.Events = append(pass.Events, fleet.Event{Warning: true, Reason: fleet.ReasonPreflight, Message: fmt.Sprintf("%s failed preflight: %s", c.Key(), pf.Error())})
			continue
		}
		fleet.Start(st, i, fleet.Has(change, t), now)
		pass.Events = append(pass.Events, fleet.Event{Reason: "ClusterStarted", Message: fmt.Sprintf("%s started (wave %d): %s", c.Key(), c.Wave, fleet.Describe(change))})
		started = append(started, i)
	}
	fleet.Summarize(ro, st, now)
	orig := ro.DeepCopy()
	ro.Status = *st
	// The status says a cluster started before the cluster is changed: a
	// restart in between writes the change then (pass.Apply), never twice.
	if err := r.writeStatus(ctx, orig, ro, len(started) > 0); err != nil {
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
		if err := r.writeStatus(ctx, written, ro, true); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.carry(ctx, ro); err != nil {
		return ctrl.Result{}, err
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
		o := m.Observe(ctx, fleet.Target(ro, c), t, now)
		failing := c.Phase == v1alpha2.ClusterInProgress && o.Found && !o.Settled && membership.ReconcileFailed(t)
		if r.failingFor(ro.Name, c.Key(), failing, now) >= refusalGrace {
			// Its reconciles have failed a while: is it refused, and not for now only?
			rolloutRequests.WithLabelValues(requestDryRun).Inc()
			o.Refused = m.Refused(ctx, t)
		}
		obs[c.Key()] = o
		return o, nil
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
			// One that has the change already succeeds without taking room.
			if o.Found && o.Hold == "" && (c.Attempt > 0 || !fleet.Matches(fleet.Target(ro, c), o.Has)) {
				room--
			}
		}
	}
	return read, obs, nil
}

// join looks for clusters the targets select now that the rollout does not
// hold, once it has started and while it may still change clusters: with
// spec.targets.joinLate they join its last wave, else they are listed in
// status.joinedLate. An undo moves only what it undoes.
func (r *TopologyRolloutReconciler) join(ctx context.Context, m membership.Reader, ro *v1alpha2.TopologyRollout, st *v1alpha2.TopologyRolloutStatus, pass *fleet.Pass) error {
	if ro.Spec.Undo != "" || len(st.Clusters) == 0 || !fleet.Active(ro) || st.Phase == v1alpha2.RolloutCompleted {
		return nil
	}
	// Every pass would list the whole fleet; late matches can wait a while.
	if last, ok := r.joined.Load(ro.Name); ok && r.now().Sub(last.(time.Time)) < joinInterval {
		return nil
	}
	r.joined.Store(ro.Name, r.now())
	selected, err := m.List(ctx, ro.Spec.Targets)
	if err != nil {
		return fmt.Errorf("TopologyRollout %s: %w", ro.Name, err)
	}
	refs := make([]v1alpha2.RolloutClusterRef, 0, len(selected))
	for _, t := range selected {
		refs = append(refs, membership.RefOf(t))
	}
	var busy map[string]fleet.Hold
	if ro.Spec.Targets.JoinLate {
		list := &v1alpha2.TopologyRolloutList{}
		if err := r.Client.List(ctx, list); err != nil {
			return fmt.Errorf("listing TopologyRollouts: %w", err)
		}
		others := slices.DeleteFunc(list.Items, func(o v1alpha2.TopologyRollout) bool { return o.Name == ro.Name })
		busy = fleet.Holding(others)
	}
	pass.Events = append(pass.Events, fleet.Join(ro, st, refs, busy)...)
	fleet.Summarize(ro, st, r.now())
	return nil
}

// write sets the change on a started cluster, unless it no longer is as it
// was when it started: then the next pass reports it as edited by hand.
func (r *TopologyRolloutReconciler) write(ctx context.Context, ro *v1alpha2.TopologyRollout, i int, t *v1alpha2.Topology) error {
	c := ro.Status.Clusters[i]
	if t == nil {
		return fmt.Errorf("%s is gone", c.Key())
	}
	change := fleet.Target(ro, c)
	has := fleet.Has(change, t)
	if fleet.Matches(change, has) || (c.From != nil && !fleet.Matches(*c.From, has)) {
		return nil
	}
	rolloutRequests.WithLabelValues(requestChange).Inc()
	err := r.members().Write(ctx, change, t)
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

// messageInterval is how often a rollout's status is written when only its
// messages or clusters' progress marks changed (a refusal's or an unhealthy
// spell's length, what a cluster waits for, a Machine replaced): at fleet
// scale those were most of its writes.
const messageInterval = 30 * time.Second

// joinInterval is how often a rollout looks for clusters that match its
// targets since it started.
const joinInterval = 30 * time.Second

// writeStatus writes ro's status when it differs from orig's. A change of
// messages or progress marks alone waits until messageInterval has passed
// since the last write, unless now says the write guards a change to a
// cluster.
func (r *TopologyRolloutReconciler) writeStatus(ctx context.Context, orig, ro *v1alpha2.TopologyRollout, now bool) error {
	if equality.Semantic.DeepEqual(orig.Status, ro.Status) {
		return nil
	}
	if last, ok := r.written.Load(ro.Name); ok && !now && r.now().Sub(last.(time.Time)) < messageInterval && fleet.OnlyMinorDiffer(&orig.Status, &ro.Status) {
		return nil
	}
	// Guarded by the resourceVersion read: a second writer (an agent
	// before a restart) makes this one read again rather than overwrite.
	rolloutRequests.WithLabelValues(requestStatus).Inc()
	if err := r.Client.Status().Update(ctx, ro); err != nil {
		return fmt.Errorf("writing status of TopologyRollout %s: %w", ro.Name, err)
	}
	r.written.Store(ro.Name, r.now())
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
