package editor

import (
	"context"
	"errors"
	"time"

	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/names"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/variables"
	"github.com/kubectl-topology/kubectl-topology/internal/plan"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// The engine's checks and preview of a draft run off the UI goroutine: a
// class with external patches calls extensions over the network, and typing
// must never wait for that. Each draft has a generation; a computation
// starts once keystrokes pause (the debounce), a newer draft cancels the one
// running, and a result for an older draft is dropped.

// defaultDebounce is how long typing must pause before the checks run.
const defaultDebounce = 30 * time.Millisecond

// computation is the state of the draft's background checks.
type computation struct {
	// ctx bounds the computations.
	ctx context.Context
	// now is the clock health durations are read against.
	now func() time.Time
	// gen is the draft's generation; shownGen the one the checks and preview
	// shown are of; dueGen the newest whose debounce passed; startedGen the
	// one computing or computed last.
	gen, shownGen, dueGen, startedGen int
	// dirty is set when the draft changed and its checks are not scheduled.
	dirty    bool
	running  bool
	cancel   context.CancelFunc
	debounce time.Duration
	spinner  spinner.Model
	spinning bool
}

// findings is what the engine finds for one draft.
type findings struct {
	// problems are the Topology's field errors, with the path they name.
	problems     []problem
	checks       []string
	warnings     []string
	changes      []plan.Change
	rollout      []string
	replacements []string
}

type problem struct{ path, msg string }

// snapshot is what one computation reads; none of it changes under it.
type snapshot struct {
	now     time.Time
	draft   *v1alpha2.Topology
	in      Inputs
	catalog *variables.Catalog
}

// computeDue says typing paused on draft generation gen.
type computeDue struct{ gen int }

// computed carries the preview of draft generation gen.
type computed struct {
	gen int
	p   findings
}

// computePreview runs the engine on a draft: the webhook's field errors, the
// version rules, the objects that change, the Machines replaced and the
// rollout order. It reads only s.
func computePreview(ctx context.Context, s snapshot) findings {
	var p findings
	t := s.draft
	live := s.in.Topology.DeepCopy()
	live.Annotations = t.Annotations // the unsafe annotation, if the user set it
	errs, unhealthy := rules.UpgradePreflight(live, s.in.Class, t.Spec.Version, s.now)
	for _, fe := range errs {
		p.checks = append(p.checks, fe.Detail)
	}
	if len(unhealthy) > 0 {
		p.checks = append(append(p.checks, unhealthy...), "only a Ready control plane is upgraded here (`upgrade --force` overrides)")
	}
	p.warnings = append(p.warnings, rules.ChangeWarnings(live, t)...)
	// A lifecycle hook holding the Topology now holds what is applied too.
	for _, hold := range health.HookLines(s.in.Topology.Status.Hooks, s.now) {
		p.warnings = append(p.warnings, "the agent reports "+hold)
	}
	in := desiredstate.Input{
		Topology: t, Class: s.in.Class, Templates: s.in.Templates,
		Current: s.in.Current, Observed: s.in.Observed,
		Names: names.NewSeeded(1), Dialect: contract.DialectOf(t), Catalog: s.catalog,
		CoreVersion: s.in.CoreVersion, Contracts: s.in.Contracts,
	}
	if s.in.External != nil {
		in.External = s.in.External
	}
	// Compute defaults and validates the draft as the webhook does; its
	// errors about the Topology go to the fields they name.
	res, err := desiredstate.Compute(ctx, in)
	if s.in.External != nil {
		for _, sk := range s.in.External.Skipped() {
			p.warnings = append(p.warnings, sk.String())
		}
	}
	var invalid *rules.InvalidError
	if errors.As(err, &invalid) && invalid.Kind == v1alpha2.TopologyKind {
		for _, fe := range invalid.Errors {
			msg := fe.Detail // the webhook's message, without the value it quotes
			if msg == "" {
				msg = fe.ErrorBody()
			}
			p.problems = append(p.problems, problem{fe.Field, msg})
		}
		return p
	}
	if len(p.checks) > 0 {
		return p
	}
	if err != nil {
		p.checks = append(p.checks, err.Error())
		return p
	}
	pl, err := plan.Compute(plan.Input{Desired: res.Desired, Current: s.in.Objects, Cluster: t.Name, Class: s.in.Class, Namespace: t.Namespace, Summary: true, Pending: res.Pending()})
	if err != nil {
		p.checks = append(p.checks, err.Error())
		return p
	}
	p.changes = pl.Changes
	if t.Spec.Version != s.in.Topology.Spec.Version {
		withStatus := s.in.Topology.DeepCopy()
		withStatus.Spec = t.Spec
		withStatus.Spec.Version = s.in.Topology.Spec.Version
		up := upgrade.PlanUpgrade(withStatus, s.in.Class, t.Spec.Version)
		p.rollout = append(up.Lines(), lifecycle.PreviewLines(up, s.in.Hooks)...)
		return p
	}
	for _, r := range plan.Replacements(pl, res.Desired.ControlPlane.Object.GetKind()) {
		p.replacements = append(p.replacements, r.String())
	}
	return p
}

// busy reports whether the checks and preview shown are of an older draft.
func (m *Model) busy() bool { return m.compute.shownGen != m.compute.gen }

// startPending schedules the checks of the draft once recompute marked it
// changed: after the debounce, and with the spinner turning meanwhile.
func (m *Model) startPending() tea.Cmd {
	if !m.compute.dirty {
		return nil
	}
	m.compute.dirty = false
	gen := m.compute.gen
	due := func() tea.Msg { return computeDue{gen} }
	if m.compute.debounce > 0 {
		due = tea.Tick(m.compute.debounce, func(time.Time) tea.Msg { return computeDue{gen} })
	}
	return tea.Batch(due, m.spin())
}

func (m *Model) onComputeDue(msg computeDue) tea.Cmd {
	if msg.gen != m.compute.gen {
		return nil // a newer draft has its own
	}
	m.compute.dueGen = msg.gen
	if m.compute.running {
		m.compute.cancel() // its result is dropped; this draft starts when it returns
		return nil
	}
	return m.start()
}

// start computes the current draft in the background.
func (m *Model) start() tea.Cmd {
	s := snapshot{now: m.compute.now(), draft: m.work.topology.DeepCopy(), in: m.in, catalog: m.catalog}
	ctx, cancel := context.WithCancel(m.compute.ctx)
	m.compute.cancel, m.compute.running, m.compute.startedGen = cancel, true, m.compute.gen
	gen := m.compute.gen
	return func() tea.Msg {
		defer cancel()
		return computed{gen: gen, p: computePreview(ctx, s)}
	}
}

func (m *Model) onComputed(msg computed) tea.Cmd {
	m.compute.running = false
	switch {
	case msg.gen == m.compute.gen:
		return m.show(msg.gen, msg.p)
	case m.compute.dueGen == m.compute.gen && m.compute.startedGen != m.compute.gen:
		return m.start() // the draft it was superseded by is due already
	}
	return nil
}

// show makes p, the preview of draft generation gen, what the editor shows,
// and answers an apply asked for while it was checked: the question, or the
// apply itself when y was already pressed and the checks pass.
func (m *Model) show(gen int, p findings) tea.Cmd {
	m.compute.shownGen = gen
	m.checks.Problems = p.checks
	m.preview.Set(p.changes, p.replacements, p.rollout, p.warnings)
	for _, pr := range p.problems {
		m.attach(pr.path, pr.msg)
	}
	asked := m.mode
	if asked != confirmingUnchecked && asked != applyWhenChecked {
		return nil
	}
	m.mode, m.bar.Message = editing, ""
	m.onApply() // the question again, or why it cannot be applied
	if asked == applyWhenChecked && m.mode == confirming {
		return m.startApply()
	}
	return nil
}

// spin starts the spinner unless it turns already.
func (m *Model) spin() tea.Cmd {
	if m.compute.spinning {
		return nil
	}
	m.compute.spinning = true
	return m.compute.spinner.Tick
}

func (m *Model) onSpinnerTick(msg spinner.TickMsg) tea.Cmd {
	if !m.busy() {
		m.compute.spinning = false
		return nil
	}
	var cmd tea.Cmd
	m.compute.spinner, cmd = m.compute.spinner.Update(msg)
	return cmd
}
