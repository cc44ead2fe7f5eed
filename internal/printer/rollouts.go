package printer

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Rollout writes a fleet rollout as `rollout status` shows it: the whole,
// its waves, then its clusters. A zero now leaves out the times.
func Rollout(w io.Writer, ro *v1alpha2.TopologyRollout, now time.Time) error {
	for _, line := range fleet.HeaderLines(ro, now) {
		fmt.Fprintln(w, line)
	}
	if len(ro.Status.Waves) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "WAVE\tCLUSTERS\tSTATE\tSTARTED\tCOMPLETED")
	for _, wave := range ro.Status.Waves {
		fmt.Fprintln(tw, strings.Join(fleet.WaveCells(ro, wave, now), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "WAVE\tCLUSTER\tPHASE\tATTEMPT\tSINCE\tREASON")
	for _, c := range ro.Status.Clusters {
		fmt.Fprintln(tw, strings.Join(fleet.ClusterCells(c, now), "\t"))
	}
	return tw.Flush()
}

// RolloutList writes a line per fleet rollout, as `rollout list` shows
// them: its change, phase, where its waves stand, counts, start, end, and
// failures by reason.
func RolloutList(w io.Writer, rollouts []v1alpha2.TopologyRollout, now time.Time) error {
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "NAME\tCHANGE\tPHASE\tWAVE\tSUCCEEDED\tFAILED\tTOTAL\tSTARTED\tCOMPLETED\tFAILURES")
	for _, ro := range rollouts {
		st := ro.Status
		what := fleet.Describe(ro.Spec.Change)
		if ro.Spec.Undo != "" {
			what = "undo of " + ro.Spec.Undo
		}
		wave := "-"
		if len(st.Waves) > 0 {
			wave = fmt.Sprintf("%d/%d", max(st.Wave, 1), len(st.Waves))
			if st.Phase == v1alpha2.RolloutCompleted {
				wave = fmt.Sprintf("%d/%d", len(st.Waves), len(st.Waves))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", ro.Name, what, cmp.Or(st.Phase, v1alpha2.RolloutPending), wave,
			st.Succeeded, st.Failed, st.Total, ago(st.StartedAt, now), ago(st.CompletedAt, now), failuresByReason(st))
	}
	return tw.Flush()
}

// failuresByReason counts a rollout's failed clusters by reason:
// "Refused 2, Preflight 1"; "-" when none failed.
func failuresByReason(st v1alpha2.TopologyRolloutStatus) string {
	counts := map[string]int{}
	for _, c := range st.Clusters {
		if c.Phase == v1alpha2.ClusterFailed {
			counts[cmp.Or(c.Reason, "Failed")]++
		}
	}
	if len(counts) == 0 {
		return "-"
	}
	var parts []string
	for _, reason := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", reason, counts[reason]))
	}
	return strings.Join(parts, ", ")
}

// ago is "5m ago", or "-" for no time.
func ago(t *metav1.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	return health.HumanDuration(now.Sub(t.Time)) + " ago"
}
