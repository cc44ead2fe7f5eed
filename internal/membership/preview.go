package membership

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/plan"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

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

// Preview is `rollout create --dry-run`: ro over the clusters selected (as
// Admit returns them), with the classes admission read and, for a class or
// variable change, each cluster's live plan through ca; then every cluster
// that changes preflighted, as the agent will before it starts it. targets
// are each cluster's own change (an undo's), by RolloutClusterRef.Key;
// spec.change for the rest.
func (m Reader) Preview(ctx context.Context, classes *Classes, ca *live.Cluster, ro *v1alpha2.TopologyRollout, selected []*v1alpha2.Topology, targets map[string]v1alpha2.RolloutChange) (*fleet.Preview, error) {
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
	return p, preflightPreview(ctx, p, selected, changeOf, checks)
}

// preflightPreview runs each changing cluster's preflight, preflightParallel at a
// time, and keeps why each is refused: the whole preflight, or without the
// objects' dry run where the live plan sent them; none where the live plan
// was refused already. An error that is not a refusal (the API server could
// not answer) stops it.
func preflightPreview(ctx context.Context, p *fleet.Preview, selected []*v1alpha2.Topology, changeOf func(v1alpha2.RolloutClusterRef) v1alpha2.RolloutChange, checks preflights) error {
	byKey := make(map[string]*v1alpha2.Topology, len(selected))
	for _, t := range selected {
		byKey[RefOf(t).Key()] = t
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(preflightParallel)
	for w := range p.Waves {
		for i := range p.Waves[w].Clusters {
			c := &p.Waves[w].Clusters[i]
			if len(c.Changes) == 0 || c.Refused != "" {
				continue
			}
			check := checks.whole
			if c.Planned {
				check = checks.topology
			}
			g.Go(func() error {
				err := check(ctx, changeOf(c.Ref), byKey[c.Ref.Key()])
				var refused *PreflightError
				switch {
				case errors.As(err, &refused):
					c.Refused = refused.Error()
				case err != nil:
					return fmt.Errorf("preflight of %s: %w", c.Ref.Key(), err)
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
func buildPreview(ctx context.Context, ro *v1alpha2.TopologyRollout, selected []*v1alpha2.Topology, classOf classSource, replaced replacementSource, changeOf func(v1alpha2.RolloutClusterRef) v1alpha2.RolloutChange) (*fleet.Preview, error) {
	refs := make([]v1alpha2.RolloutClusterRef, 0, len(selected))
	byKey := make(map[string]*v1alpha2.Topology, len(selected))
	for _, t := range selected {
		ref := RefOf(t)
		refs = append(refs, ref)
		byKey[ref.Key()] = t
	}
	clusters, waves, errs := fleet.Assign(refs, fleet.Waves(ro.Spec.Strategy))
	if len(errs) > 0 {
		// Admit refuses waves that do not cover the fleet before this.
		return nil, fmt.Errorf("TopologyRollout %s: %w", ro.Name, errs.ToAggregate())
	}
	out := &fleet.Preview{}
	for _, w := range waves {
		out.Waves = append(out.Waves, fleet.WavePreview{Number: w.Number})
	}
	// Each cluster's preview is its own; a class or variable change asks the
	// API server for its live plan, so they run preflightParallel at a time.
	previews := make([]fleet.ClusterPreview, len(clusters))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(preflightParallel)
	for i, c := range clusters {
		t := byKey[c.Key()]
		change := ro.Spec.Change
		if changeOf != nil {
			change = changeOf(c.RolloutClusterRef)
		}
		previews[i] = fleet.ClusterPreview{Ref: c.RolloutClusterRef, Changes: fleet.Differences(change, fleet.Has(change, t))}
		if len(previews[i].Changes) == 0 {
			continue
		}
		previews[i].Changes = append(previews[i].Changes, fleet.PinnedStay(change, t)...)
		if change.Version != "" && change.Class == "" && len(change.Variables) == 0 && len(change.UnsetVariables) == 0 {
			class, err := classOf(ctx, t)
			if err != nil {
				return nil, fmt.Errorf("%s: reading its class: %w", c.Key(), err)
			}
			previews[i].Machines = upgrade.PlanUpgrade(t, class, change.Version).MachinesReplaced()
			continue
		}
		g.Go(func() error {
			edited := t.DeepCopy()
			fleet.Apply(change, edited)
			n, err := replaced(gctx, edited)
			if refused := Refusal(err); refused != nil {
				// A webhook or policy refused an object in the plan's dry
				// run: the cluster is listed as refused, the rest go on.
				previews[i].Refused = refused.Error()
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: previewing the change: %w", c.Key(), err)
			}
			previews[i].Machines, previews[i].Planned = n, true
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i, c := range clusters {
		wp := &out.Waves[c.Wave-1]
		wp.Clusters = append(wp.Clusters, previews[i])
		wp.Machines += previews[i].Machines
		out.Machines += previews[i].Machines
	}
	return out, nil
}
