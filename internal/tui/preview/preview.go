// Package preview is what applying the draft would do: the objects that
// change, the Machines replaced, the rollout order, and one object's diff.
package preview

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/plan"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
)

// Model is the preview of the draft shown.
type Model struct {
	common *common.Common
	// Changes are the objects that change, as plan computes them.
	Changes []plan.Change
	// Replacements and Rollout are the Machines replaced and the order parts move in.
	Replacements, Rollout []string
	// Warnings are what the change risks without being wrong.
	Warnings []string
	// diff is the index of the change whose diff is shown, or -1; offset is
	// the diff's first line shown.
	diff, offset int
	// rows is how many lines the preview may take.
	rows int
	// shown is the diff of Changes[diff] rendered, nil until asked: a frame
	// asks for it four times, and a diff of a large object is costly.
	shown []string
}

var _ tea.Model = &Model{}

// New returns an empty preview over c.
func New(c *common.Common) *Model { return &Model{common: c, diff: -1} }

// SetSize gives the preview its rows: what does not fit is counted on the
// last, and a diff scrolls a page of them at a time.
func (m *Model) SetSize(_, height int) {
	m.rows = height
	m.offset = m.clamp(m.offset)
}

// Init implements tea.Model: the preview starts nothing.
func (m *Model) Init() tea.Cmd { return nil }

// Update implements tea.Model: the diff key steps through the changes'
// diffs, and the page keys scroll the one shown.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return m, nil
	}
	page := max(1, m.rows-1)
	switch {
	case key.Matches(k, m.common.Keys.Diff):
		m.NextDiff()
	case key.Matches(k, m.common.Keys.PageDown) && m.Diffing():
		m.offset = m.clamp(m.offset + page)
	case key.Matches(k, m.common.Keys.PageUp) && m.Diffing():
		m.offset = m.clamp(m.offset - page)
	}
	return m, nil
}

// View implements tea.Model: the diff shown from its offset, or the
// warnings and the changes, in the rows given.
func (m *Model) View() string { return strings.Join(m.common.Cut(m.body(), m.rows), "\n") }

// Height is how many lines the preview takes in full.
func (m *Model) Height() int { return len(m.body()) + m.offset }

// ShortHelp is the preview's help line.
func (m *Model) ShortHelp() []key.Binding { return []key.Binding{m.common.Keys.Diff} }

// FullHelp is the preview's full help.
func (m *Model) FullHelp() [][]key.Binding {
	return [][]key.Binding{{m.common.Keys.Diff, m.common.Keys.PageDown, m.common.Keys.PageUp}}
}

// body is what the preview shows: the diff from its offset, or the
// warnings then the changes.
func (m *Model) body() []string {
	if m.Diffing() {
		return m.diffLines()[m.offset:]
	}
	return append(m.warningLines(), m.lines()...)
}

// clamp keeps a diff's offset where a page of it still shows.
func (m *Model) clamp(offset int) int {
	if !m.Diffing() {
		return 0
	}
	return max(0, min(offset, len(m.diffLines())-max(1, m.rows-1)))
}

// warningLines are the warnings, one a line.
func (m *Model) warningLines() []string {
	var out []string
	for _, w := range m.Warnings {
		out = append(out, m.common.Styles.Warn.Render("⚠ "+w))
	}
	return out
}

// Set shows a new preview; a diff shown stays if its change still exists.
func (m *Model) Set(changes []plan.Change, replacements, rollout, warnings []string) {
	m.Changes, m.Replacements, m.Rollout, m.Warnings = changes, replacements, rollout, warnings
	m.shown = nil
	if m.diff >= len(m.Changes) {
		m.diff = -1
	}
	m.offset = m.clamp(m.offset)
}

// NextDiff shows the next change's diff from its top, and the list after
// the last.
func (m *Model) NextDiff() {
	m.diff, m.offset, m.shown = m.diff+1, 0, nil
	if m.diff >= len(m.Changes) {
		m.diff = -1
	}
}

// Diffing tells whether a change's diff is shown.
func (m *Model) Diffing() bool { return m.diff >= 0 && m.diff < len(m.Changes) }

// Changing counts the changes that will be applied, not those held back.
func (m *Model) Changing() int {
	n := 0
	for _, c := range m.Changes {
		if c.Action != plan.Pending {
			n++
		}
	}
	return n
}

// lines are the changes, then the Machines replaced and the rollout order.
func (m *Model) lines() []string {
	s := m.common.Styles
	var out []string
	for _, c := range m.Changes {
		line := fmt.Sprintf("%-8s %s %s", c.Action, c.Object.GetKind(), c.Object.GetName())
		if c.Action == plan.Pending {
			line += " (" + c.Reason + ")"
		}
		out = append(out, line)
	}
	if len(m.Replacements) > 0 {
		out = append(out, s.Section.Render("Machines replaced"))
		out = append(out, m.Replacements...)
	}
	if len(m.Rollout) > 0 {
		out = append(out, s.Section.Render("Rollout"))
		out = append(out, m.Rollout...)
	}
	return out
}

// DiffHeader names the change whose diff is shown and, when it does not
// fit, which of its lines are.
func (m *Model) DiffHeader() string {
	c := m.Changes[m.diff]
	header := m.common.Styles.Section.Render("Diff") + fmt.Sprintf(" %d/%d: %s %s %s (ctrl+d: next)", m.diff+1, len(m.Changes), c.Action, c.Object.GetKind(), c.Object.GetName())
	if n := len(m.diffLines()); m.rows > 0 && n > m.rows {
		header += fmt.Sprintf(" lines %d-%d of %d (pgup/pgdn)", m.offset+1, min(n, m.offset+m.rows-1), n)
	}
	return header
}

// diffLines render the change shown: a unified diff for a modified object,
// the object itself for a created one.
func (m *Model) diffLines() []string {
	if m.shown == nil {
		m.shown = m.renderDiff()
	}
	return m.shown
}

// renderDiff renders the change shown.
func (m *Model) renderDiff() []string {
	s := m.common.Styles
	c := m.Changes[m.diff]
	var text string
	switch c.Action {
	case plan.Modified:
		d, err := plan.UnifiedDiff(c.Before, c.Object, "current", "after apply")
		if err != nil {
			return []string{s.Error.Render(err.Error())}
		}
		text = d
	case plan.Created, plan.Pending:
		raw, err := yaml.Marshal(c.Object.Object)
		if err != nil {
			return []string{s.Error.Render(err.Error())}
		}
		text = string(raw)
	default:
		return []string{"this object will be deleted"}
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++"):
			out = append(out, s.OK.Render(l))
		case strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---"):
			out = append(out, s.Error.Render(l))
		default:
			out = append(out, l)
		}
	}
	return out
}
