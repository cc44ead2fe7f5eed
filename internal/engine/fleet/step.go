package fleet

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// DefaultClusterTimeout bounds a cluster's change when the strategy does not.
const DefaultClusterTimeout = time.Hour

// DefaultProgressDeadline fails a cluster that makes no progress for this
// long when the strategy does not say: a Machine of the in-memory or a
// cloud provider is created or replaced well within it.
const DefaultProgressDeadline = 10 * time.Minute

// DefaultHealthTolerance is how long a soaking cluster may read unhealthy
// when the strategy does not say: longer than a reconcile retried after a
// conflict, shorter than anyone would let a broken cluster soak.
const DefaultHealthTolerance = time.Minute

// poll is how often a rollout with clusters in flight looks again, besides
// the watches: a soak ends, a cluster times out.
const poll = 5 * time.Second

// Reasons a cluster's status gives.
const (
	ReasonMissing      = "Missing"
	ReasonEditedByHand = "EditedByHand"
	ReasonTimeout      = "Timeout"
	ReasonHealthGate   = "HealthGate"
	ReasonPreflight    = "Preflight"
	ReasonHeld         = "Held"
	ReasonSkipped      = "Skipped"
	ReasonRetry        = "Retry"
	ReasonWindow       = "OutsideWindow"
	ReasonApplyFailed  = "ApplyFailed"
	// ReasonRefused: a write of the cluster's change was refused (admission,
	// a provider's webhook, validation) for longer than the health tolerance.
	ReasonRefused = "Refused"
	// ReasonProgressDeadline: nothing of the cluster moved for the deadline.
	ReasonProgressDeadline = "ProgressDeadlineExceeded"
	// ReasonAlreadyAtTarget: the cluster had the change before its turn.
	ReasonAlreadyAtTarget = "AlreadyAtTarget"
	// ReasonWaitingForApproval: the cluster's wave needs an approval.
	ReasonWaitingForApproval = "WaitingForApproval"
	// ReasonWaitingForRollout: a rollout of spec.waitFor has not completed.
	ReasonWaitingForRollout = "WaitingForRollout"
	// ReasonWaveWait: the wave before finished less than waitAfterWave ago.
	ReasonWaveWait = "WaitAfterWave"
)

// Observation is what the rollout controller read of one cluster this pass.
type Observation struct {
	// Found is false when the cluster is gone.
	Found bool
	// Hold says why the cluster must not start now (it is paused, or held
	// by annotation); "" when nothing holds it.
	Hold string
	// Has is what its spec has of the fields the change sets (Has).
	Has v1alpha2.RolloutChange
	// Settled: its latest spec is reconciled and every part is Ready,
	// nothing Degraded — the health view `status` shows.
	Settled bool
	// Problems say why it is not settled, for humans.
	Problems []string
	// Holding is what holds it as `status` says it: what its status reports
	// holding it and each part not Ready with why; the progress deadline's
	// reason.
	Holding []string
	// Refused is why the API server refuses what the agent writes for the
	// cluster, word for word, when the refusal will not pass by itself (not
	// a conflict, a timeout, 429 or 5xx); "" when nothing refuses it.
	Refused string
	// Progress marks how far the cluster's rollout has got: its parts'
	// states, versions and Machine counts. A different mark is progress.
	Progress string
}

// View is what the rollout controller read for one pass.
type View struct {
	// Clusters are the observations, by RolloutClusterRef.Key.
	Clusters map[string]Observation
	// Blocking says, one phrase each, which rollouts of spec.waitFor have
	// not completed; empty when none holds this one.
	Blocking []string
}

// Event is what a pass tells about a cluster, for the rollout's Events.
type Event struct {
	Warning bool
	Reason  string
	Message string
}

// Pass is what one look at a rollout decided.
type Pass struct {
	// Status is the rollout's status after this pass.
	Status *v1alpha2.TopologyRolloutStatus
	// Start are the clusters (indexes into Status.Clusters) that may start
	// now, in order: the controller preflights each, then calls Start or
	// Fail, and writes the status before it changes any cluster.
	Start []int
	// Apply are clusters in progress whose change is not written yet: the
	// status says they started, the write did not happen (or not yet).
	Apply []int
	// Requeue is when to look again, 0 when nothing is waited for.
	Requeue time.Duration
	// Events happened in this pass.
	Events []Event
}

func finished(p v1alpha2.ClusterRolloutPhase) bool {
	return p == v1alpha2.ClusterSucceeded || p == v1alpha2.ClusterFailed || p == v1alpha2.ClusterSkipped
}

func inFlight(p v1alpha2.ClusterRolloutPhase) bool {
	return p == v1alpha2.ClusterInProgress || p == v1alpha2.ClusterSoaking
}

// Step looks at rollout r once: what skip and retry ask, how each cluster in
// flight has moved since (v.Clusters, by RolloutClusterRef.Key), which may
// start, and the phase of the whole. r's status must hold its clusters
// (Assign).
func Step(r *v1alpha2.TopologyRollout, v View, now time.Time) Pass {
	obs := v.Clusters
	st := r.Status.DeepCopy()
	pass := Pass{Status: st}
	at := metav1.NewTime(now)
	if r.Spec.Aborted {
		Summarize(r, st, now)
		return pass
	}
	pass.requests(r, at)
	timeout := ClusterTimeout(r)
	for i := range st.Clusters {
		c := &st.Clusters[i]
		if !inFlight(c.Phase) {
			continue
		}
		o, ok := obs[c.Key()]
		if !ok || !o.Found {
			pass.fail(i, ReasonMissing, "the cluster is gone", at)
			continue
		}
		pass.follow(r, i, o, timeout, now)
	}
	Summarize(r, st, now)
	pass.candidates(r, v, now)
	Summarize(r, st, now)
	return pass
}

// requests applies spec.skip and spec.retry.
func (p *Pass) requests(r *v1alpha2.TopologyRollout, at metav1.Time) {
	for i := range p.Status.Clusters {
		c := &p.Status.Clusters[i]
		if slices.Contains(r.Spec.Skip, c.RolloutClusterRef) && c.Phase != v1alpha2.ClusterSucceeded && c.Phase != v1alpha2.ClusterSkipped {
			msg := "skipped on request"
			if inFlight(c.Phase) {
				msg += "; its change was written and is left as it is"
			}
			c.Phase, c.Reason, c.Message, c.CompletedAt = v1alpha2.ClusterSkipped, ReasonSkipped, msg, &at
			p.event(false, ReasonSkipped, "%s skipped on request", c.Key())
			continue
		}
		if c.Phase != v1alpha2.ClusterFailed {
			continue
		}
		for _, rt := range r.Spec.Retry {
			if rt.RolloutClusterRef == c.RolloutClusterRef && c.Attempt < rt.Attempt {
				c.Phase, c.Reason, c.Message = v1alpha2.ClusterPending, ReasonRetry, fmt.Sprintf("attempt %d requested after: %s", rt.Attempt, c.Message)
				c.Applied, c.From, c.StartedAt, c.SoakStartedAt, c.UnhealthySince, c.CompletedAt = false, nil, nil, nil, nil, nil
				c.ProgressAt, c.ProgressMark, c.RefusedSince = nil, "", nil
				p.event(false, ReasonRetry, "%s will be tried again (attempt %d)", c.Key(), rt.Attempt)
			}
		}
	}
}

// follow moves a cluster in flight on from what is observed of it.
func (p *Pass) follow(r *v1alpha2.TopologyRollout, i int, o Observation, timeout time.Duration, now time.Time) {
	c := &p.Status.Clusters[i]
	at := metav1.NewTime(now)
	target := Target(r, *c)
	matches := Matches(target, o.Has)
	if !matches {
		if c.Phase == v1alpha2.ClusterInProgress && !c.Applied && c.From != nil && Matches(*c.From, o.Has) {
			// Started, and the write did not happen: write it now.
			p.Apply = append(p.Apply, i)
			p.requeue(poll)
			return
		}
		p.fail(i, ReasonEditedByHand, "changed by hand during the rollout: "+strings.Join(Differences(target, o.Has), "; ")+"; the rollout does not overwrite it (retry to set it again, or skip the cluster)", at)
		return
	}
	c.Applied = true
	switch c.Phase {
	case v1alpha2.ClusterInProgress:
		progressed(c, o, at)
		if o.Refused == "" || o.Settled {
			c.RefusedSince = nil
		}
		deadline := ProgressDeadline(r)
		switch {
		case o.Settled:
			c.Phase, c.Reason, c.Message, c.SoakStartedAt = v1alpha2.ClusterSoaking, "", "", &at
			c.ProgressAt, c.ProgressMark = nil, ""
			p.event(false, "Soaking", "%s settled; soaking for %s", c.Key(), r.Spec.Strategy.Soak.Duration)
			p.soak(r, c, now)
		case o.Refused != "":
			p.refused(r, i, o, now)
		case c.StartedAt != nil && now.Sub(c.StartedAt.Time) > timeout:
			p.fail(i, ReasonTimeout, fmt.Sprintf("not settled %s after it started: %s", timeout, problemsText(o.Problems)), at)
		case c.ProgressAt != nil && now.Sub(c.ProgressAt.Time) >= deadline:
			p.fail(i, ReasonProgressDeadline, fmt.Sprintf("no progress for %s (no Machine created, replaced or ready, no part changing state): %s", deadline, problemsText(holding(o))), at)
		default:
			c.Message = problemsText(o.Problems)
			p.requeue(poll)
		}
	case v1alpha2.ClusterSoaking:
		p.soaking(r, i, o, timeout, now)
	}
}

// progressed moves the cluster's progress time on when its mark changed.
func progressed(c *v1alpha2.RolloutClusterStatus, o Observation, at metav1.Time) {
	if o.Progress != c.ProgressMark || c.ProgressAt == nil {
		c.ProgressMark, c.ProgressAt = o.Progress, &at
	}
}

// refused follows a cluster in progress whose writes are refused: once the
// refusal has lasted the health tolerance, the cluster fails with it word
// for word; a refusal that stops sooner (a policy taken back) fails nothing.
func (p *Pass) refused(r *v1alpha2.TopologyRollout, i int, o Observation, now time.Time) {
	c := &p.Status.Clusters[i]
	at := metav1.NewTime(now)
	tolerance := HealthTolerance(r)
	if c.RefusedSince == nil {
		c.RefusedSince = &at
		p.event(true, ReasonRefused, "%s is refused: %s", c.Key(), o.Refused)
	}
	spell := now.Sub(c.RefusedSince.Time)
	if spell >= tolerance {
		p.fail(i, ReasonRefused, o.Refused, at)
		return
	}
	c.Message = fmt.Sprintf("refused for %s, it fails at %s unless the refusal stops: %s", spell.Round(time.Second), tolerance, o.Refused)
	p.requeue(min(poll, tolerance-spell))
}

// soaking follows a soaking cluster: unhealthy for longer than the
// tolerance fails the health gate; a shorter spell starts the soak over, so
// that a cluster succeeds only after a whole soak of health. A cluster that
// keeps going unhealthy fails once its timeout and a soak have passed.
func (p *Pass) soaking(r *v1alpha2.TopologyRollout, i int, o Observation, timeout time.Duration, now time.Time) {
	c := &p.Status.Clusters[i]
	at := metav1.NewTime(now)
	tolerance := HealthTolerance(r)
	if !o.Settled {
		if c.UnhealthySince == nil {
			c.UnhealthySince = &at
			p.event(true, "Unhealthy", "%s unhealthy during the soak: %s", c.Key(), problemsText(o.Problems))
		}
		if spell := now.Sub(c.UnhealthySince.Time); spell >= tolerance {
			p.fail(i, ReasonHealthGate, fmt.Sprintf("unhealthy for %s during the soak: %s", spell.Round(time.Second), problemsText(o.Problems)), at)
			return
		}
		c.Message = "unhealthy, the soak starts over if it recovers: " + problemsText(o.Problems)
		p.requeue(min(poll, tolerance-now.Sub(c.UnhealthySince.Time)))
		return
	}
	if c.UnhealthySince != nil {
		c.UnhealthySince, c.SoakStartedAt, c.Message = nil, &at, ""
		p.event(false, "Recovered", "%s healthy again; its soak starts over", c.Key())
	}
	if c.StartedAt != nil && now.Sub(c.StartedAt.Time) > timeout+r.Spec.Strategy.Soak.Duration && now.Sub(c.SoakStartedAt.Time) < r.Spec.Strategy.Soak.Duration {
		p.fail(i, ReasonTimeout, fmt.Sprintf("not through a healthy soak %s after it started", timeout+r.Spec.Strategy.Soak.Duration), at)
		return
	}
	p.soak(r, c, now)
}

// soak ends a healthy soak that has lasted long enough.
func (p *Pass) soak(r *v1alpha2.TopologyRollout, c *v1alpha2.RolloutClusterStatus, now time.Time) {
	left := r.Spec.Strategy.Soak.Duration - now.Sub(c.SoakStartedAt.Time)
	if left > 0 {
		p.requeue(min(left, poll))
		return
	}
	at := metav1.NewTime(now)
	c.Phase, c.Reason, c.Message, c.CompletedAt = v1alpha2.ClusterSucceeded, "", "", &at
	p.event(false, "Succeeded", "%s succeeded", c.Key())
}

// candidates lists the clusters of the current wave that may start now: none
// while a rollout of spec.waitFor has not completed, the wave waits for its
// approval, or the wave before finished less than waitAfterWave ago. A
// cluster that had the change before the rollout reached it succeeds
// without a write; a retried one is followed through its soak again.
func (p *Pass) candidates(r *v1alpha2.TopologyRollout, v View, now time.Time) {
	st := p.Status
	if r.Spec.Paused || st.Phase == v1alpha2.RolloutHalted || st.Wave == 0 {
		return
	}
	if gate, message := p.gate(r, v, now); gate != "" {
		for i := range st.Clusters {
			c := &st.Clusters[i]
			if c.Wave == st.Wave && (c.Phase == v1alpha2.ClusterPending || c.Phase == v1alpha2.ClusterWaitingForWindow) {
				if c.Reason != gate {
					p.event(false, gate, "%s waits: %s", c.Key(), message)
				}
				c.Phase, c.Reason, c.Message = v1alpha2.ClusterPending, gate, message
			}
		}
		return
	}
	room := int(MaxInFlight(r)) - int(st.InFlight)
	windowOpen := InWindow(r.Spec.Strategy.Windows, now)
	for i := range st.Clusters {
		c := &st.Clusters[i]
		if c.Wave != st.Wave || (c.Phase != v1alpha2.ClusterPending && c.Phase != v1alpha2.ClusterWaitingForWindow) {
			continue
		}
		o, ok := v.Clusters[c.Key()]
		if ok && o.Found && c.Attempt == 0 && Matches(Target(r, *c), o.Has) {
			at := metav1.NewTime(now)
			c.Phase, c.Reason, c.Message, c.CompletedAt = v1alpha2.ClusterSucceeded, ReasonAlreadyAtTarget, "it had the change already; nothing was written", &at
			p.event(false, ReasonAlreadyAtTarget, "%s had the change already", c.Key())
			continue
		}
		if !windowOpen {
			next := NextWindow(r.Spec.Strategy.Windows, now)
			c.Phase, c.Reason, c.Message = v1alpha2.ClusterWaitingForWindow, ReasonWindow, "the next maintenance window opens at "+next.Format(time.RFC3339)
			if !next.IsZero() {
				p.requeue(next.Sub(now))
			}
			continue
		}
		if room <= 0 {
			break
		}
		switch {
		case !ok:
			// Not read in this pass: room came free in it, or its wave began.
			p.requeue(time.Second)
			continue
		case !o.Found:
			p.fail(i, ReasonMissing, "the cluster is gone", metav1.NewTime(now))
			continue
		case o.Hold != "":
			c.Phase, c.Reason, c.Message = v1alpha2.ClusterPending, ReasonHeld, o.Hold
			p.requeue(poll)
			continue
		}
		if a := Approval(r, c.Wave); a != nil && !waveStarted(st, c.Wave) && len(p.Start) == 0 {
			p.event(false, "Approved", "wave %d approved by %s at %s", c.Wave, a.By, a.At.UTC().Format(time.RFC3339))
		}
		p.Start = append(p.Start, i)
		room--
	}
}

// gate is what keeps the current wave from starting, as a cluster's reason
// and message; "" when nothing does.
func (p *Pass) gate(r *v1alpha2.TopologyRollout, v View, now time.Time) (string, string) {
	st := p.Status
	if waveStarted(st, st.Wave) {
		return "", ""
	}
	if st.StartedAt == nil && len(v.Blocking) > 0 {
		p.requeue(poll)
		return ReasonWaitingForRollout, "waits for " + strings.Join(v.Blocking, "; ")
	}
	waves := Waves(r.Spec.Strategy)
	if int(st.Wave) <= len(waves) && waves[st.Wave-1].Approval && Approval(r, st.Wave) == nil {
		return ReasonWaitingForApproval, fmt.Sprintf("wave %d needs an approval: kubectl topology rollout approve %s --wave %d", st.Wave, r.Name, st.Wave)
	}
	if wait := r.Spec.Strategy.WaitAfterWave.Duration; wait > 0 {
		if done := previousWaveDone(st); done != nil && now.Before(done.Add(wait)) {
			p.requeue(min(done.Add(wait).Sub(now), poll))
			return ReasonWaveWait, fmt.Sprintf("wave %d starts at %s, %s after the wave before finished", st.Wave, done.Add(wait).UTC().Format(time.RFC3339), wait)
		}
	}
	return "", ""
}

// waveStarted tells whether a cluster of wave w has started or finished.
func waveStarted(st *v1alpha2.TopologyRolloutStatus, w int32) bool {
	for _, c := range st.Clusters {
		if c.Wave == w && (inFlight(c.Phase) || (finished(c.Phase) && c.Reason != ReasonAlreadyAtTarget)) {
			return true
		}
	}
	return false
}

// previousWaveDone is when the last wave before the current one with
// clusters finished.
func previousWaveDone(st *v1alpha2.TopologyRolloutStatus) *time.Time {
	for w := len(st.Waves) - 1; w >= 0; w-- {
		ws := st.Waves[w]
		if ws.Number < st.Wave && ws.Clusters > 0 && ws.CompletedAt != nil {
			return &ws.CompletedAt.Time
		}
	}
	return nil
}

// Approval is the approval of wave w, nil when it has none.
func Approval(r *v1alpha2.TopologyRollout, w int32) *v1alpha2.RolloutApproval {
	for i := range r.Spec.Approvals {
		if r.Spec.Approvals[i].Wave == w {
			return &r.Spec.Approvals[i]
		}
	}
	return nil
}

// ProgressDeadline is r's progressDeadline, DefaultProgressDeadline when unset.
func ProgressDeadline(r *v1alpha2.TopologyRollout) time.Duration {
	if d := r.Spec.Strategy.ProgressDeadline.Duration; d != 0 {
		return d
	}
	return DefaultProgressDeadline
}

// ClusterTimeout is r's clusterTimeout, DefaultClusterTimeout when unset.
func ClusterTimeout(r *v1alpha2.TopologyRollout) time.Duration {
	if d := r.Spec.Strategy.ClusterTimeout.Duration; d != 0 {
		return d
	}
	return DefaultClusterTimeout
}

// HealthTolerance is r's healthTolerance, DefaultHealthTolerance when unset.
func HealthTolerance(r *v1alpha2.TopologyRollout) time.Duration {
	if d := r.Spec.Strategy.HealthTolerance.Duration; d != 0 {
		return d
	}
	return DefaultHealthTolerance
}

// MaxInFlight is the strategy's clusters in flight at once, 1 when unset.
func MaxInFlight(r *v1alpha2.TopologyRollout) int32 {
	return max(r.Spec.Strategy.MaxInFlight, 1)
}

// Start records that cluster i starts now with has (Has) before the change:
// the controller writes this to the rollout's status before the change to
// the cluster, so a restart finds it in flight and neither starts another
// cluster in its place nor changes it twice.
func Start(st *v1alpha2.TopologyRolloutStatus, i int, has v1alpha2.RolloutChange, now time.Time) {
	at := metav1.NewTime(now)
	c := &st.Clusters[i]
	c.Phase, c.Reason, c.Message = v1alpha2.ClusterInProgress, "", ""
	c.Attempt++
	c.From, c.Applied, c.StartedAt, c.SoakStartedAt, c.CompletedAt = has.DeepCopy(), false, &at, nil, nil
	c.ProgressAt, c.ProgressMark, c.RefusedSince, c.UnhealthySince = &at, "", nil, nil
}

// Fail records that cluster i failed now, with why.
func Fail(st *v1alpha2.TopologyRolloutStatus, i int, reason, message string, now time.Time) {
	at := metav1.NewTime(now)
	c := &st.Clusters[i]
	c.Phase, c.Reason, c.Message, c.CompletedAt = v1alpha2.ClusterFailed, reason, message, &at
}

// Refused records that cluster i failed its preflight now: an attempt
// that changed nothing, which a retry counts past.
func Refused(st *v1alpha2.TopologyRolloutStatus, i int, message string, now time.Time) {
	st.Clusters[i].Attempt++
	st.Clusters[i].From, st.Clusters[i].Applied, st.Clusters[i].StartedAt = nil, false, nil
	Fail(st, i, ReasonPreflight, message, now)
}

func (p *Pass) fail(i int, reason, message string, at metav1.Time) {
	Fail(p.Status, i, reason, message, at.Time)
	p.event(true, reason, "%s failed: %s", p.Status.Clusters[i].Key(), message)
}

func (p *Pass) event(warning bool, reason, format string, args ...any) {
	p.Events = append(p.Events, Event{Warning: warning, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

func (p *Pass) requeue(d time.Duration) {
	if d > 0 && (p.Requeue == 0 || d < p.Requeue) {
		p.Requeue = d
	}
}

// holding is what holds o as status says it, else its problems.
func holding(o Observation) []string {
	if len(o.Holding) > 0 {
		return o.Holding
	}
	return o.Problems
}

func problemsText(problems []string) string {
	if len(problems) == 0 {
		return "waiting for its rollout to settle"
	}
	return strings.Join(problems, "; ")
}

// Halted tells whether more clusters failed than the budget allows.
func Halted(r *v1alpha2.TopologyRollout, st *v1alpha2.TopologyRolloutStatus) bool {
	failed := 0
	for _, c := range st.Clusters {
		if c.Phase == v1alpha2.ClusterFailed {
			failed++
		}
	}
	return failed > int(r.Spec.Strategy.FailureBudget)
}

// Summarize recomputes what follows from the clusters' phases: the counts,
// the current wave, each wave's times, the rollout's phase, message and
// conditions.
func Summarize(r *v1alpha2.TopologyRollout, st *v1alpha2.TopologyRolloutStatus, now time.Time) {
	at := metav1.NewTime(now)
	st.ObservedGeneration = r.Generation
	st.Total, st.Succeeded, st.Failed, st.Skipped, st.InFlight = int32(len(st.Clusters)), 0, 0, 0, 0
	st.Wave = 0
	var waiting, windowWaiting int
	// The gate that holds the next wave, as its first waiting cluster says.
	var gate, gateMessage string
	for _, c := range st.Clusters {
		if gate == "" && c.Phase == v1alpha2.ClusterPending && (c.Reason == ReasonWaitingForApproval || c.Reason == ReasonWaitingForRollout || c.Reason == ReasonWaveWait) {
			gate, gateMessage = c.Reason, c.Message
		}
		switch c.Phase {
		case v1alpha2.ClusterSucceeded:
			st.Succeeded++
		case v1alpha2.ClusterFailed:
			st.Failed++
		case v1alpha2.ClusterSkipped:
			st.Skipped++
		case v1alpha2.ClusterInProgress, v1alpha2.ClusterSoaking:
			st.InFlight++
		case v1alpha2.ClusterWaitingForWindow:
			windowWaiting++
		default:
			waiting++
		}
		if !finished(c.Phase) && (st.Wave == 0 || c.Wave < st.Wave) {
			st.Wave = c.Wave
		}
		if c.StartedAt != nil && (st.StartedAt == nil || c.StartedAt.Before(st.StartedAt)) {
			st.StartedAt = c.StartedAt.DeepCopy()
		}
	}
	for w := range st.Waves {
		summarizeWave(st, &st.Waves[w])
	}
	unfinished := int(st.InFlight) + waiting + windowWaiting
	switch {
	case r.Spec.Aborted:
		st.Phase, st.Message = v1alpha2.RolloutAborted, fmt.Sprintf("aborted: no cluster starts again; %d succeeded, %d failed, %d in flight were left as they are", st.Succeeded, st.Failed, st.InFlight)
	case Halted(r, st):
		// Halted, the wave to show is where it stopped: the first failure's.
		st.Wave = firstFailedWave(st)
		st.Phase, st.Message = v1alpha2.RolloutHalted, fmt.Sprintf("%d cluster(s) failed, more than the failure budget of %d: retry or skip them to go on (%s)", st.Failed, r.Spec.Strategy.FailureBudget, strings.Join(failedNames(st), ", "))
	case unfinished == 0:
		st.Phase, st.Message = v1alpha2.RolloutCompleted, fmt.Sprintf("%d succeeded, %d failed, %d skipped", st.Succeeded, st.Failed, st.Skipped)
	case r.Spec.Paused:
		st.Phase, st.Message = v1alpha2.RolloutPaused, fmt.Sprintf("paused: %d in flight finish, none starts", st.InFlight)
	case st.InFlight == 0 && windowWaiting > 0:
		st.Phase, st.Message = v1alpha2.RolloutWaitingForWindow, "waiting for a maintenance window"
	case st.InFlight == 0 && gate == ReasonWaitingForApproval:
		st.Phase, st.Message = v1alpha2.RolloutWaitingForApproval, gateMessage
	case st.InFlight == 0 && gate == ReasonWaitingForRollout:
		st.Phase, st.Message = v1alpha2.RolloutWaitingForRollout, gateMessage
	case st.InFlight == 0 && gate == ReasonWaveWait:
		st.Phase, st.Message = v1alpha2.RolloutProgressing, gateMessage
	default:
		st.Phase, st.Message = v1alpha2.RolloutProgressing, fmt.Sprintf("wave %d of %d: %d in flight, %d succeeded of %d", st.Wave, len(st.Waves), st.InFlight, st.Succeeded, st.Total)
	}
	if (st.Phase == v1alpha2.RolloutCompleted || st.Phase == v1alpha2.RolloutAborted) && st.CompletedAt == nil {
		st.CompletedAt = &at
	}
	if st.Phase != v1alpha2.RolloutCompleted && st.Phase != v1alpha2.RolloutAborted {
		st.CompletedAt = nil
	}
	progressing := metav1.Condition{Type: "Progressing", Status: metav1.ConditionTrue, Reason: string(st.Phase), Message: st.Message, ObservedGeneration: r.Generation}
	if st.Phase != v1alpha2.RolloutProgressing && st.Phase != v1alpha2.RolloutWaitingForWindow && st.Phase != v1alpha2.RolloutWaitingForApproval && st.Phase != v1alpha2.RolloutWaitingForRollout {
		progressing.Status = metav1.ConditionFalse
	}
	completed := metav1.Condition{Type: "Completed", Status: metav1.ConditionFalse, Reason: string(st.Phase), Message: st.Message, ObservedGeneration: r.Generation}
	if st.Phase == v1alpha2.RolloutCompleted {
		completed.Status = metav1.ConditionTrue
	}
	// A transition is dated by the pass's clock, not the wall's.
	progressing.LastTransitionTime, completed.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second)), metav1.NewTime(now.Truncate(time.Second))
	meta.SetStatusCondition(&st.Conditions, progressing)
	meta.SetStatusCondition(&st.Conditions, completed)
}

func summarizeWave(st *v1alpha2.TopologyRolloutStatus, w *v1alpha2.RolloutWaveStatus) {
	w.StartedAt, w.CompletedAt = nil, nil
	done := true
	for _, c := range st.Clusters {
		if c.Wave != w.Number {
			continue
		}
		if c.StartedAt != nil && (w.StartedAt == nil || c.StartedAt.Before(w.StartedAt)) {
			w.StartedAt = c.StartedAt.DeepCopy()
		}
		if !finished(c.Phase) {
			done = false
		} else if c.CompletedAt != nil && (w.CompletedAt == nil || w.CompletedAt.Before(c.CompletedAt)) {
			w.CompletedAt = c.CompletedAt.DeepCopy()
		}
	}
	if !done {
		w.CompletedAt = nil
	}
}

func firstFailedWave(st *v1alpha2.TopologyRolloutStatus) int32 {
	wave := int32(0)
	for _, c := range st.Clusters {
		if c.Phase == v1alpha2.ClusterFailed && (wave == 0 || c.Wave < wave) {
			wave = c.Wave
		}
	}
	return wave
}

func failedNames(st *v1alpha2.TopologyRolloutStatus) []string {
	var out []string
	for _, c := range st.Clusters {
		if c.Phase == v1alpha2.ClusterFailed {
			out = append(out, c.Key())
		}
	}
	return out
}

// Ended tells whether a rollout has stopped moving as of its latest spec:
// completed, halted or aborted. Watches stop there.
func Ended(r *v1alpha2.TopologyRollout) bool {
	if r.Status.ObservedGeneration != r.Generation {
		return false
	}
	switch r.Status.Phase {
	case v1alpha2.RolloutCompleted, v1alpha2.RolloutHalted, v1alpha2.RolloutAborted:
		return true
	}
	return false
}

// Active tells whether a rollout may still change clusters: not aborted
// and not completed.
func Active(r *v1alpha2.TopologyRollout) bool {
	return !r.Spec.Aborted && r.Status.Phase != v1alpha2.RolloutCompleted && r.Status.Phase != v1alpha2.RolloutAborted
}

// Hold is the rollout a cluster is in and the cluster's phase there.
type Hold struct {
	Rollout string
	Phase   v1alpha2.ClusterRolloutPhase
}

// Holding maps each cluster (RolloutClusterRef.Key) that an active rollout
// has started with and not finished with to that rollout. A rollout that
// has not started yet holds the clusters its targets select, which only a
// reader of the fleet can say.
func Holding(rollouts []v1alpha2.TopologyRollout) map[string]Hold {
	out := map[string]Hold{}
	for i := range rollouts {
		r := &rollouts[i]
		if !Active(r) {
			continue
		}
		for _, c := range r.Status.Clusters {
			if Holds(c) {
				out[c.Key()] = Hold{Rollout: r.Name, Phase: c.Phase}
			}
		}
	}
	return out
}

// Holds tells whether a rollout still holds cluster c: it has neither
// succeeded nor been skipped (a failed cluster may be retried).
func Holds(c v1alpha2.RolloutClusterStatus) bool {
	return c.Phase != v1alpha2.ClusterSucceeded && c.Phase != v1alpha2.ClusterSkipped
}
