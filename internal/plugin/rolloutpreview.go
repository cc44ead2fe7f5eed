package plugin

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rollout"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/membership"
	"github.com/kubectl-topology/kubectl-topology/internal/plan"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// rolloutPreview is what a rollout would do, per wave and cluster.
type rolloutPreview struct {
	waves []wavePreview
	// machines is the whole fleet's churn: Machines replaced.
	machines int64
}

type wavePreview struct {
	number   int32
	clusters []clusterPreview
	machines int64
}

type clusterPreview struct {
	ref v1alpha2.RolloutClusterRef
	// changes say what the rollout sets that differs; none when the
	// cluster already is that way.
	changes []string
	// machines replaced.
	machines int64
}

// classSource gives each cluster's class.
type classSource func(ctx context.Context, t *v1alpha2.Topology) (*v1alpha2.TopologyClass, error)

// replacementSource is the live plan's Machines replaced for a change other
// than the version alone: the desired state with the change, dry run.
type replacementSource func(ctx context.Context, edited *v1alpha2.Topology) (int64, error)

// previewRollout previews ro over the clusters selected, with the classes
// admission read and, for a class or variable change, each cluster's live
// plan.
func previewRollout(ctx context.Context, m membership.Reader, classes *membership.Classes, ca *live.Cluster, ro *v1alpha2.TopologyRollout, selected []*v1alpha2.Topology) (*rolloutPreview, error) {
	replaced := func(ctx context.Context, edited *v1alpha2.Topology) (int64, error) {
		desired, err := classes.Of(ctx, edited)
		if err != nil {
			return 0, err
		}
		p, state, _, err := ca.PlanWith(ctx, edited, desired)
		if err != nil {
			return 0, err
		}
		var n int64
		for _, r := range plan.Replacements(p, state.ControlPlane.Object.GetKind()) {
			n += r.Machines
		}
		return n, nil
	}
	for _, t := range selected {
		if err := m.Summarize(ctx, t); err != nil {
			return nil, err
		}
	}
	return buildPreview(ctx, ro, selected, classes.Of, replaced)
}

// buildPreview puts the clusters in their waves as the agent will and
// previews each: a version change by the engine's upgrade plan, anything
// else by replaced.
func buildPreview(ctx context.Context, ro *v1alpha2.TopologyRollout, selected []*v1alpha2.Topology, classOf classSource, replaced replacementSource) (*rolloutPreview, error) {
	refs := make([]v1alpha2.RolloutClusterRef, 0, len(selected))
	byKey := make(map[string]*v1alpha2.Topology, len(selected))
	for _, t := range selected {
		ref := membership.RefOf(t)
		refs = append(refs, ref)
		byKey[ref.Key()] = t
	}
	clusters, waves, errs := fleet.Assign(refs, fleet.Waves(ro.Spec.Strategy))
	if len(errs) > 0 {
		return nil, refusal(ro, errs)
	}
	out := &rolloutPreview{}
	for _, w := range waves {
		out.waves = append(out.waves, wavePreview{number: w.Number})
	}
	change := ro.Spec.Change
	for _, c := range clusters {
		t := byKey[c.Key()]
		cp := clusterPreview{ref: c.RolloutClusterRef, changes: fleet.Differences(change, fleet.Has(change, t))}
		if len(cp.changes) > 0 {
			versionOnly := change.Class == "" && len(change.Variables) == 0
			if versionOnly {
				class, err := classOf(ctx, t)
				if err != nil {
					return nil, fmt.Errorf("%s: reading its class: %w", c.Key(), err)
				}
				cp.machines = rollout.PlanUpgrade(t, class, change.Version).MachinesReplaced()
			} else {
				edited := t.DeepCopy()
				fleet.Apply(change, edited)
				n, err := replaced(ctx, edited)
				if err != nil {
					return nil, fmt.Errorf("%s: previewing the change: %w", c.Key(), err)
				}
				cp.machines = n
			}
		}
		wp := &out.waves[c.Wave-1]
		wp.clusters = append(wp.clusters, cp)
		wp.machines += cp.machines
		out.machines += cp.machines
	}
	return out, nil
}

// print writes the preview: a block per wave, a line per cluster (unless
// quiet), and the fleet's total.
func (p *rolloutPreview) print(w io.Writer, ro *v1alpha2.TopologyRollout, quiet bool) {
	total := 0
	for _, wp := range p.waves {
		total += len(wp.clusters)
	}
	fmt.Fprintf(w, "TopologyRollout %s: %s over %d cluster(s)\n", ro.Name, fleet.Describe(ro.Spec.Change), total)
	fmt.Fprintf(w, "Strategy: %s\n", fleet.StrategyText(ro))
	for _, wp := range p.waves {
		label := ""
		if wp.number == 1 {
			label = " (canary)"
		}
		fmt.Fprintf(w, "Wave %d%s: %d cluster(s), %d machine(s) replaced\n", wp.number, label, len(wp.clusters), wp.machines)
		if quiet {
			continue
		}
		for _, c := range wp.clusters {
			what := "already as the rollout sets it; nothing changes"
			if len(c.changes) > 0 {
				what = fmt.Sprintf("%s; %d machine(s) replaced", strings.Join(c.changes, "; "), c.machines)
			}
			fmt.Fprintf(w, "  %s/%s/%s: %s\n", strings.ToLower(c.ref.Kind), c.ref.Namespace, c.ref.Name, what)
		}
	}
	fmt.Fprintf(w, "Fleet: %d cluster(s) in %d wave(s), %d machine(s) replaced in all.\n", total, len(p.waves), p.machines)
}
