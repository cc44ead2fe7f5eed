// Package statusview is `kubectl topology status --watch` on one Topology:
// the control plane and each pool with phases, why a part waits and progress
// bars, redrawn until the rollout settles.
package statusview

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/progress"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/watch"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Fetcher reads the Topology being watched.
type Fetcher func(ctx context.Context) (*v1alpha2.Topology, error)

// Model follows a Topology's rollout: the control plane, then each
// pool, with phases, why a part waits and progress bars, in the editor's
// styles. It quits when the rollout settles.
type Model struct {
	*watch.Model[*v1alpha2.Topology]
	common *common.Common
	bar    progress.Model
	// Now is the clock problem durations are read against.
	Now func() time.Time
}

// New watches through fetch, reading every interval.
func New(fetch Fetcher, interval time.Duration) *Model {
	bar := progress.New(progress.WithoutPercentage(), progress.WithWidth(12), progress.WithSolidFill("2"))
	return &Model{Model: watch.New(fetch, interval, health.Settled), common: common.New(), bar: bar, Now: time.Now}
}

// Topology is the latest Topology read; nil before the first read.
func (m *Model) Topology() *v1alpha2.Topology { return m.Last }

// SetSize fits the view to the terminal.
func (m *Model) SetSize(w, h int) { m.common.SetSize(w, h) }

// Update implements tea.Model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if size, ok := msg.(tea.WindowSizeMsg); ok {
		m.SetSize(size.Width, size.Height)
		return m, nil
	}
	return m, m.Model.Update(msg)
}

// View implements tea.Model.
func (m *Model) View() string {
	var b strings.Builder
	line := func(s string) {
		b.WriteString(ansi.Truncate(s, m.common.Width, "…"))
		b.WriteByte('\n')
	}
	if m.Last == nil {
		if m.Err != nil {
			line(m.common.Styles.Error.Render(m.Err.Error()))
		} else {
			line("reading the Topology...")
		}
		return b.String()
	}
	t := m.Last
	line(m.common.Styles.Title.Render(fmt.Sprintf("%s %s/%s (class %s)", contract.KindOf(t), t.Namespace, t.Name, t.Spec.ClassRef.Name)))
	line(fmt.Sprintf("  version %s · %s · infrastructure %s", t.Spec.Version, m.state(health.TopologyState(t)), orDash(string(t.Status.Infrastructure))))
	for _, hold := range health.Holds(t) {
		line(m.common.Styles.Warn.Render("  " + hold))
	}
	for _, hook := range health.HookLines(t.Status.Hooks, m.Now()) {
		line(m.common.Styles.Warn.Render("  " + hook))
	}
	if m.Err != nil {
		line(m.common.Styles.Error.Render("  " + m.Err.Error()))
	}
	parts := t.Status.Parts()
	if len(parts) == 0 {
		line(m.common.Styles.Hint.Render("  " + health.NoParts(t)))
	}
	nameWidth := 0
	for _, p := range parts {
		nameWidth = max(nameWidth, len(partName(p)))
	}
	for i, p := range parts {
		branch := "├─"
		if i == len(parts)-1 {
			branch = "└─"
		}
		version := orDash(p.Version)
		if p.DesiredVersion != "" && p.Version != p.DesiredVersion {
			version += " → " + p.DesiredVersion
		}
		if p.Pinned {
			version += " (pinned)"
		}
		// Progress is against what the topology asks for: while Machines are
		// created, the part has fewer replicas than it will.
		want := p.Replicas
		if p.DesiredReplicas != nil {
			want = *p.DesiredReplicas
		}
		ratio := 0.0
		if want > 0 {
			ratio = min(1, float64(p.UpToDateReplicas)/float64(want))
		}
		line(fmt.Sprintf("%s %-*s %s %d/%d up-to-date %d/%d ready %-17s %s", branch, nameWidth, partName(p), m.bar.ViewAs(ratio), p.UpToDateReplicas, want, p.ReadyReplicas, want, version, m.state(p.State)))
		if p.Message != "" && p.State != v1alpha2.StateReady {
			line("     " + m.common.Styles.Hint.Render(p.Message))
		}
		for _, pr := range p.Problems {
			line("     " + m.common.Styles.Warn.Render(health.ProblemText(pr, m.Now())))
		}
	}
	if m.Done {
		line(m.common.Styles.OK.Render("Rollout settled: every part is up to date and Ready."))
	} else {
		line(m.common.Styles.Help.Render("following the rollout… q quits"))
	}
	return b.String()
}

func partName(p v1alpha2.PartStatus) string {
	if p.Class != "" {
		return p.Name + " (" + p.Class + ")"
	}
	return p.Name
}

func (m *Model) state(s v1alpha2.State) string {
	switch s {
	case v1alpha2.StateReady:
		return m.common.Styles.OK.Render(string(s))
	case v1alpha2.StateDegraded, v1alpha2.StateDeleting:
		return m.common.Styles.Error.Render(string(s))
	case v1alpha2.StateRollingOut, v1alpha2.StateProvisioning, v1alpha2.StateScaling, v1alpha2.StatePaused:
		return m.common.Styles.Warn.Render(string(s))
	case "":
		return "-"
	}
	return m.common.Styles.Hint.Render(string(s))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
