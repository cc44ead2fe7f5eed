package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
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
	// refused says why the cluster's preflight fails now, as the agent's
	// would right before it starts it; "" when it passes.
	refused string
	// planned: its live plan, which dry-runs every object written for
	// it, passed; its preflight need not send them again.
	planned bool
}

// preflights are the agent's preflight of a cluster, whole, and without the
// dry run of the objects written for it, for a cluster whose live plan has
// just sent them.
type preflights struct{ whole, topology preflightSource }

// preflightSource is the preflight the agent runs right before a cluster
// starts: the version rules, its health, and a server-side dry run of the
// change and of every object the agent would write for it.
type preflightSource func(ctx context.Context, change v1alpha2.RolloutChange, t *v1alpha2.Topology) error

// preflightParallel bounds the clusters preflighted at once: each is a few
// reads and a dry run per object the agent would write.
const preflightParallel = 8

// classSource gives each cluster's class.
type classSource func(ctx context.Context, t *v1alpha2.Topology) (*v1alpha2.TopologyClass, error)

// replacementSource is the live plan's Machines replaced for a change other
// than the version alone: the desired state with the change, dry run.
type replacementSource func(ctx context.Context, edited *v1alpha2.Topology) (int64, error)

// previewRollout previews ro over the clusters selected, with the classes
// admission read and, for a class or variable change, each cluster's live
// plan; then preflights every cluster that changes, as the agent will.
// targets are each cluster's own change (an undo's), by
// RolloutClusterRef.Key; spec.change for the rest.
func previewRollout(ctx context.Context, m membership.Reader, classes *membership.Classes, ca *live.Cluster, ro *v1alpha2.TopologyRollout, selected []*v1alpha2.Topology, targets map[string]v1alpha2.RolloutChange) (*rolloutPreview, error) {
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
	changeOf := func(ref v1alpha2.RolloutClusterRef) v1alpha2.RolloutChange {
		if to, ok := targets[ref.Key()]; ok {
			return to
		}
		return ro.Spec.Change
	}
	p, err := buildPreview(ctx, ro, selected, classes.Of, replaced, changeOf)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	checks := preflights{
		whole: func(ctx context.Context, change v1alpha2.RolloutChange, t *v1alpha2.Topology) error {
			return m.Preflight(ctx, classes, change, t, now)
		},
		topology: func(ctx context.Context, change v1alpha2.RolloutChange, t *v1alpha2.Topology) error {
			return m.PreflightTopology(ctx, classes, change, t, now)
		},
	}
	return p, p.preflight(ctx, selected, changeOf, checks)
}

// preflight runs each changing cluster's preflight, preflightParallel at a
// time, and keeps why each is refused: the whole preflight, or without the
// objects' dry run where the live plan sent them; none where the live plan
// was refused already. An error that is not a refusal (the API server could
// not answer) stops it.
func (p *rolloutPreview) preflight(ctx context.Context, selected []*v1alpha2.Topology, changeOf func(v1alpha2.RolloutClusterRef) v1alpha2.RolloutChange, checks preflights) error {
	byKey := make(map[string]*v1alpha2.Topology, len(selected))
	for _, t := range selected {
		byKey[membership.RefOf(t).Key()] = t
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(preflightParallel)
	for w := range p.waves {
		for i := range p.waves[w].clusters {
			c := &p.waves[w].clusters[i]
			if len(c.changes) == 0 || c.refused != "" {
				continue
			}
			check := checks.whole
			if c.planned {
				check = checks.topology
			}
			g.Go(func() error {
				err := check(ctx, changeOf(c.ref), byKey[c.ref.Key()])
				var refused *membership.PreflightError
				switch {
				case errors.As(err, &refused):
					c.refused = refused.Error()
				case err != nil:
					return fmt.Errorf("preflight of %s: %w", c.ref.Key(), err)
				}
				return nil
			})
		}
	}
	return g.Wait()
}

// buildPreview puts the clusters in their waves as the agent will and
// previews each: a version change by the engine's upgrade plan, anything
// else by replaced.
func buildPreview(ctx context.Context, ro *v1alpha2.TopologyRollout, selected []*v1alpha2.Topology, classOf classSource, replaced replacementSource, changeOf func(v1alpha2.RolloutClusterRef) v1alpha2.RolloutChange) (*rolloutPreview, error) {
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
	// Each cluster's preview is its own; a class or variable change asks the
	// API server for its live plan, so they run preflightParallel at a time.
	previews := make([]clusterPreview, len(clusters))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(preflightParallel)
	for i, c := range clusters {
		t := byKey[c.Key()]
		change := ro.Spec.Change
		if changeOf != nil {
			change = changeOf(c.RolloutClusterRef)
		}
		previews[i] = clusterPreview{ref: c.RolloutClusterRef, changes: fleet.Differences(change, fleet.Has(change, t))}
		if len(previews[i].changes) == 0 {
			continue
		}
		if change.Version != "" && change.Class == "" && len(change.Variables) == 0 && len(change.UnsetVariables) == 0 {
			class, err := classOf(ctx, t)
			if err != nil {
				return nil, fmt.Errorf("%s: reading its class: %w", c.Key(), err)
			}
			previews[i].machines = upgrade.PlanUpgrade(t, class, change.Version).MachinesReplaced()
			continue
		}
		g.Go(func() error {
			edited := t.DeepCopy()
			fleet.Apply(change, edited)
			n, err := replaced(gctx, edited)
			if refused := membership.Refusal(err); refused != nil {
				// A webhook or policy refused an object in the plan's dry
				// run: the cluster is listed as refused, the rest go on.
				previews[i].refused = refused.Error()
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: previewing the change: %w", c.Key(), err)
			}
			previews[i].machines, previews[i].planned = n, true
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i, c := range clusters {
		wp := &out.waves[c.Wave-1]
		wp.clusters = append(wp.clusters, previews[i])
		wp.machines += previews[i].machines
		out.machines += previews[i].machines
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
	if ro.Spec.Undo != "" {
		fmt.Fprintf(w, "TopologyRollout %s: undo of TopologyRollout %s over %d cluster(s), each back to the value it had before\n", ro.Name, ro.Spec.Undo, total)
	} else {
		fmt.Fprintf(w, "TopologyRollout %s: %s over %d cluster(s)\n", ro.Name, fleet.Describe(ro.Spec.Change), total)
	}
	fmt.Fprintf(w, "Strategy: %s\n", fleet.StrategyText(ro))
	var refused []string
	for _, wp := range p.waves {
		label := ""
		if wp.number == 1 {
			label = " (canary)"
		}
		fmt.Fprintf(w, "Wave %d%s: %d cluster(s), %d machine(s) replaced\n", wp.number, label, len(wp.clusters), wp.machines)
		for _, c := range wp.clusters {
			if c.refused != "" {
				refused = append(refused, fmt.Sprintf("  %s/%s/%s (wave %d): %s", strings.ToLower(c.ref.Kind), c.ref.Namespace, c.ref.Name, wp.number, c.refused))
			}
		}
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
	if len(refused) == 0 {
		fmt.Fprintln(w, "Preflight: every cluster that changes passes now (the agent checks each again right before it starts).")
		return
	}
	fmt.Fprintf(w, "Preflight: %d cluster(s) would be refused now; the agent fails each when its turn comes unless what refuses it changes:\n", len(refused))
	for _, r := range refused {
		fmt.Fprintln(w, r)
	}
}
