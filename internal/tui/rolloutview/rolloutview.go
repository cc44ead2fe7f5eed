// Package rolloutview is the live fleet view of `rollout status --watch`:
// the rollout, a progress bar per wave, and each cluster's phase and why it
// waits or failed, in the editor's styles. It quits when the rollout ends.
package rolloutview

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/progress"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/watch"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Model follows one TopologyRollout until it ends (fleet.Ended).
type Model struct {
	*watch.Model[*v1alpha2.TopologyRollout]
	common *common.Common
	bar    progress.Model
	// Now is the clock ages are read against.
	Now func() time.Time
}

// New watches through fetch, reading every interval.
func New(fetch func(context.Context) (*v1alpha2.TopologyRollout, error), interval time.Duration) *Model {
	bar := progress.New(progress.WithoutPercentage(), progress.WithWidth(16), progress.WithSolidFill("2"))
	return &Model{Model: watch.New(fetch, interval, fleet.Ended), common: common.New(), bar: bar, Now: time.Now}
}

// Rollout is the latest rollout read; nil before the first read.
func (m *Model) Rollout() *v1alpha2.TopologyRollout { return m.Last }

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
	st := m.common.Styles
	if m.Last == nil {
		if m.Err != nil {
			line(st.Error.Render(m.Err.Error()))
		} else {
			line("reading the TopologyRollout...")
		}
		return b.String()
	}
	ro, now := m.Last, m.Now()
	header := fleet.HeaderOf(ro, now)
	line(st.Title.Render(header.Title))
	line("  " + m.phase(header.Phase) + " — " + header.Message)
	for _, h := range header.Details {
		line(st.Hint.Render("  " + h))
	}
	if m.Err != nil {
		line(st.Error.Render("  " + m.Err.Error()))
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
	if m.Done {
		line(m.phase(header.Phase) + ": " + header.Message)
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
	case v1alpha2.RolloutPending:
		return st.Hint.Render(string(p))
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
