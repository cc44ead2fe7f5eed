// Package rolloutview is the live fleet view of `rollout status --watch`:
// the rollout, a progress bar per wave, and each cluster's phase and why it
// waits or failed, in the editor's styles. It quits when the rollout ends.
package rolloutview

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/progress"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/keymap"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Fetcher reads the rollout being watched.
type Fetcher func(ctx context.Context) (*v1alpha2.TopologyRollout, error)

// Model follows one TopologyRollout.
type Model struct {
	fetch    Fetcher
	interval time.Duration
	common   *common.Common
	keys     keymap.Watch
	bar      progress.Model
	ro       *v1alpha2.TopologyRollout
	err      error
	// Ended is true once the rollout completed, halted or was aborted.
	Ended bool
	// Now is the clock ages are read against.
	Now func() time.Time
}

// New watches through fetch, reading every interval.
func New(fetch Fetcher, interval time.Duration) *Model {
	bar := progress.New(progress.WithoutPercentage(), progress.WithWidth(16), progress.WithSolidFill("2"))
	return &Model{fetch: fetch, interval: interval, common: common.New(), keys: keymap.DefaultWatch(), bar: bar, Now: time.Now}
}

type rolloutMsg struct {
	ro  *v1alpha2.TopologyRollout
	err error
}

func (m *Model) read() tea.Msg {
	ro, err := m.fetch(context.Background())
	return rolloutMsg{ro: ro, err: err}
}

// Rollout is the latest rollout read; nil before the first read.
func (m *Model) Rollout() *v1alpha2.TopologyRollout { return m.ro }

// Init implements tea.Model.
func (m *Model) Init() tea.Cmd { return m.read }

// SetSize fits the view to the terminal.
func (m *Model) SetSize(w, h int) { m.common.SetSize(w, h) }

// ShortHelp is the view's help line.
func (m *Model) ShortHelp() []key.Binding { return m.keys.ShortHelp() }

// FullHelp is the view's full help.
func (m *Model) FullHelp() [][]key.Binding { return m.keys.FullHelp() }

// Update implements tea.Model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.SetSize(msg.Width, msg.Height)
	case tea.KeyMsg:
		if key.Matches(msg, m.keys.Quit) {
			return m, tea.Quit
		}
	case rolloutMsg:
		if msg.ro != nil {
			m.ro = msg.ro
		}
		m.err = msg.err
		if m.ro != nil && fleet.Ended(m.ro) {
			m.Ended = true
			return m, tea.Quit
		}
		return m, tea.Tick(m.interval, func(time.Time) tea.Msg { return m.read() })
	}
	return m, nil
}

// View implements tea.Model.
func (m *Model) View() string {
	var b strings.Builder
	line := func(s string) {
		b.WriteString(ansi.Truncate(s, m.common.Width, "…"))
		b.WriteByte('\n')
	}
	st := m.common.Styles
	if m.ro == nil {
		if m.err != nil {
			line(st.Error.Render(m.err.Error()))
		} else {
			line("reading the TopologyRollout...")
		}
		return b.String()
	}
	ro, now := m.ro, m.Now()
	header := fleet.HeaderLines(ro, now)
	line(st.Title.Render(header[0]))
	line("  " + m.phase(ro.Status.Phase) + strings.TrimPrefix(header[1], "Phase: "+string(ro.Status.Phase)))
	for _, h := range header[2:] {
		line(st.Hint.Render("  " + h))
	}
	if m.err != nil {
		line(st.Error.Render("  " + m.err.Error()))
	}
	for _, w := range ro.Status.Waves {
		done := 0
		for _, c := range ro.Status.Clusters {
			if c.Wave == w.Number && (c.Phase == v1alpha2.ClusterSucceeded || c.Phase == v1alpha2.ClusterSkipped) {
				done++
			}
		}
		cells := fleet.WaveCells(ro, w, now)
		line(st.Section.Render(fmt.Sprintf("Wave %d", w.Number)) + fmt.Sprintf(" %s %d/%d done · %s", m.bar.ViewAs(float64(done)/float64(max(w.Clusters, 1))), done, w.Clusters, cells[2]))
		for _, c := range ro.Status.Clusters {
			if c.Wave != w.Number {
				continue
			}
			cc := fleet.ClusterCells(c, now)
			row := fmt.Sprintf("  %-40s %s", cc[1], m.cluster(c.Phase))
			if cc[4] != "-" {
				row += " " + st.Hint.Render(cc[4])
			}
			line(row)
			if cc[5] != "" && c.Phase != v1alpha2.ClusterSucceeded {
				style := st.Hint
				if c.Phase == v1alpha2.ClusterFailed {
					style = st.Error
				}
				line("      " + style.Render(cc[5]))
			}
		}
	}
	if m.Ended {
		line(m.phase(ro.Status.Phase) + ": " + ro.Status.Message)
	} else {
		line(st.Help.Render("following the rollout… q quits (the rollout goes on)"))
	}
	return b.String()
}

func (m *Model) phase(p v1alpha2.FleetRolloutPhase) string {
	st := m.common.Styles
	switch p {
	case v1alpha2.RolloutCompleted:
		return st.OK.Render(string(p))
	case v1alpha2.RolloutHalted, v1alpha2.RolloutAborted:
		return st.Error.Render(string(p))
	case "":
		return st.Hint.Render(string(v1alpha2.RolloutPending))
	}
	return st.Warn.Render(string(p))
}

func (m *Model) cluster(p v1alpha2.ClusterRolloutPhase) string {
	st := m.common.Styles
	switch p {
	case v1alpha2.ClusterSucceeded:
		return st.OK.Render(string(p))
	case v1alpha2.ClusterFailed:
		return st.Error.Render(string(p))
	case v1alpha2.ClusterInProgress, v1alpha2.ClusterSoaking:
		return st.Warn.Render(string(p))
	}
	return st.Hint.Render(string(p))
}
