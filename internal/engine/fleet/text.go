package fleet

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// StrategyText says how a rollout moves, in one line.
func StrategyText(r *v1alpha2.TopologyRollout) string {
	s := r.Spec.Strategy
	var waves []string
	for _, w := range Waves(s) {
		waves = append(waves, w.Clusters.String())
	}
	parts := []string{
		"waves " + strings.Join(waves, ", "),
		fmt.Sprintf("%d in flight at most", MaxInFlight(r)),
		"soak " + health.HumanDuration(s.Soak.Duration),
		"health tolerance " + health.HumanDuration(HealthTolerance(r)),
		"timeout " + health.HumanDuration(ClusterTimeout(r)),
		fmt.Sprintf("failure budget %d", s.FailureBudget),
		"progress deadline " + health.HumanDuration(ProgressDeadline(r)),
	}
	if s.WaitAfterWave.Duration > 0 {
		parts = append(parts, "wait after each wave "+health.HumanDuration(s.WaitAfterWave.Duration))
	}
	var approval []string
	for i, w := range Waves(s) {
		if w.Approval {
			approval = append(approval, fmt.Sprint(i+1))
		}
	}
	if len(approval) > 0 {
		parts = append(parts, "approval before wave(s) "+strings.Join(approval, ", "))
	}
	if r.Spec.Targets.JoinLate {
		parts = append(parts, "late matches join the last wave")
	}
	for _, w := range s.Windows {
		days := "daily"
		if len(w.Days) > 0 {
			days = strings.Join(w.Days, ",")
		}
		parts = append(parts, fmt.Sprintf("window %s %s-%s UTC", days, w.Start, w.End))
	}
	return strings.Join(parts, "; ")
}

// Header is what a status view says of a whole rollout before its waves
// and clusters: a title, the phase and why, then details.
type Header struct {
	Title   string
	Phase   v1alpha2.FleetRolloutPhase
	Message string
	Details []string
}

// HeaderOf is r's header. A zero now leaves out ages.
func HeaderOf(r *v1alpha2.TopologyRollout, now time.Time) Header {
	st := r.Status
	what := Describe(r.Spec.Change)
	if r.Spec.Undo != "" {
		what = "undo of TopologyRollout " + r.Spec.Undo
	}
	h := Header{
		Title:   fmt.Sprintf("TopologyRollout %s: %s", r.Name, what),
		Phase:   cmp.Or(st.Phase, v1alpha2.RolloutPending),
		Message: orText(st.Message, "the agent has not started it yet"),
		Details: []string{"Strategy: " + StrategyText(r)},
	}
	if r.Spec.Paused && st.Phase != v1alpha2.RolloutPaused {
		h.Details = append(h.Details, "Paused: clusters in flight finish, none starts")
	}
	if len(r.Spec.WaitFor) > 0 {
		h.Details = append(h.Details, "Waits for: "+strings.Join(r.Spec.WaitFor, ", ")+" to complete before its first wave")
	}
	for _, a := range r.Spec.Approvals {
		h.Details = append(h.Details, fmt.Sprintf("Approved: wave %d by %s at %s", a.Wave, a.By, a.At.UTC().Format(time.RFC3339)))
	}
	if len(st.JoinedLate) > 0 {
		var late []string
		for _, ref := range st.JoinedLate {
			late = append(late, ref.Key())
		}
		h.Details = append(h.Details, "Matched since the start, not in the rollout (spec.targets.joinLate): "+strings.Join(late, ", "))
	}
	counts := fmt.Sprintf("%d succeeded, %d failed, %d skipped, %d in flight of %d", st.Succeeded, st.Failed, st.Skipped, st.InFlight, st.Total)
	if st.StartedAt != nil && !now.IsZero() {
		counts = fmt.Sprintf("Started %s ago; %s", health.HumanDuration(now.Sub(st.StartedAt.Time)), counts)
	}
	h.Details = append(h.Details, counts)
	return h
}

// HeaderLines are r's header as lines of text.
func HeaderLines(r *v1alpha2.TopologyRollout, now time.Time) []string {
	h := HeaderOf(r, now)
	return append([]string{h.Title, fmt.Sprintf("Phase: %s — %s", h.Phase, h.Message)}, h.Details...)
}

func orText(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// WaveCells are one wave's columns: number, clusters, state, started, completed.
func WaveCells(r *v1alpha2.TopologyRollout, w v1alpha2.RolloutWaveStatus, now time.Time) []string {
	state := "Pending"
	switch {
	case w.CompletedAt != nil:
		state = "Completed"
	case w.StartedAt != nil:
		state = "InProgress"
	}
	failed := 0
	for _, c := range r.Status.Clusters {
		if c.Wave == w.Number && c.Phase == v1alpha2.ClusterFailed {
			failed++
		}
	}
	if failed > 0 {
		state += fmt.Sprintf(", %d failed", failed)
	}
	switch {
	case w.Number == r.Status.Wave && r.Status.Phase == v1alpha2.RolloutHalted:
		state += " (halted here)"
	case w.Number == r.Status.Wave && w.CompletedAt == nil:
		state += " (current)"
	}
	return []string{fmt.Sprint(w.Number), fmt.Sprint(w.Clusters), state, ago(w.StartedAt, now), ago(w.CompletedAt, now)}
}

// ClusterCells are one cluster's columns: wave, kind/namespace/name, phase,
// attempt, since and why.
func ClusterCells(c v1alpha2.RolloutClusterStatus, now time.Time) []string {
	since := c.CompletedAt
	switch c.Phase {
	case v1alpha2.ClusterInProgress:
		since = c.StartedAt
	case v1alpha2.ClusterSoaking:
		since = c.SoakStartedAt
	}
	why := c.Message
	if c.Reason != "" && c.Message != "" {
		why = c.Reason + ": " + c.Message
	}
	return []string{fmt.Sprint(c.Wave), strings.ToLower(c.Kind) + "/" + c.Namespace + "/" + c.Name, string(c.Phase), fmt.Sprint(c.Attempt), ago(since, now), why}
}

func ago(t *metav1.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	if now.IsZero() {
		return t.UTC().Format(time.RFC3339)
	}
	return health.HumanDuration(now.Sub(t.Time)) + " ago"
}
