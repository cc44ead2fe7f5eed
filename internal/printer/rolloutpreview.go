package printer

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// RolloutPreview writes what rollout create's dry run found: the change and
// strategy, a block per wave with a line per cluster, the fleet's total and
// every cluster the preflight would refuse now.
func RolloutPreview(w io.Writer, ro *v1alpha2.TopologyRollout, p *fleet.Preview) {
	rolloutPreview(w, ro, p, true)
}

// RolloutPreviewSummary writes RolloutPreview without a line per cluster
// (rollout create --quiet): the waves, the total and the refused.
func RolloutPreviewSummary(w io.Writer, ro *v1alpha2.TopologyRollout, p *fleet.Preview) {
	rolloutPreview(w, ro, p, false)
}

func rolloutPreview(w io.Writer, ro *v1alpha2.TopologyRollout, p *fleet.Preview, perCluster bool) {
	total := 0
	for _, wp := range p.Waves {
		total += len(wp.Clusters)
	}
	if ro.Spec.Undo != "" {
		fmt.Fprintf(w, "TopologyRollout %s: undo of TopologyRollout %s over %d cluster(s), each back to the value it had before\n", ro.Name, ro.Spec.Undo, total)
	} else {
		fmt.Fprintf(w, "TopologyRollout %s: %s over %d cluster(s)\n", ro.Name, fleet.Describe(ro.Spec.Change), total)
	}
	fmt.Fprintf(w, "Strategy: %s\n", fleet.StrategyText(ro))
	name := func(c fleet.ClusterPreview) string {
		return fmt.Sprintf("%s/%s/%s", strings.ToLower(c.Ref.Kind), c.Ref.Namespace, c.Ref.Name)
	}
	var refused []string
	for _, wp := range p.Waves {
		label := ""
		if wp.Number == 1 {
			label = " (canary)"
		}
		fmt.Fprintf(w, "Wave %d%s: %d cluster(s), %d machine(s) replaced\n", wp.Number, label, len(wp.Clusters), wp.Machines)
		for _, c := range wp.Clusters {
			if c.Refused != "" {
				refused = append(refused, fmt.Sprintf("  %s (wave %d): %s", name(c), wp.Number, c.Refused))
			}
		}
		if !perCluster {
			continue
		}
		for _, c := range wp.Clusters {
			what := "already as the rollout sets it; nothing changes"
			if len(c.Changes) > 0 {
				what = fmt.Sprintf("%s; %d machine(s) replaced", strings.Join(c.Changes, "; "), c.Machines)
			}
			fmt.Fprintf(w, "  %s: %s\n", name(c), what)
		}
	}
	fmt.Fprintf(w, "Fleet: %d cluster(s) in %d wave(s), %d machine(s) replaced in all.\n", total, len(p.Waves), p.Machines)
	if len(refused) == 0 {
		fmt.Fprintln(w, "Preflight: every cluster that changes passes now (the agent checks each again right before it starts).")
		return
	}
	fmt.Fprintf(w, "Preflight: %d cluster(s) would be refused now; the agent fails each when its turn comes unless what refuses it changes:\n", len(refused))
	for _, r := range refused {
		fmt.Fprintln(w, r)
	}
}
