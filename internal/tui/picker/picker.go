// Package picker is the editor's list to choose one entry from: a worker
// class for a new pool, or the variable a part overrides.
package picker

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
)

// PickedMsg says that From's choice is Index: the picker is done.
type PickedMsg struct {
	From  *Model
	Index int
}

// CancelledMsg says that From was left without a choice.
type CancelledMsg struct{ From *Model }

// Model is a titled list with one entry selected.
type Model struct {
	common  *common.Common
	title   string
	options []string
	// Index is the entry selected.
	Index int
	rows  int
}

// New returns a picker over options, the first selected.
func New(c *common.Common, title string, options []string) *Model {
	return &Model{common: c, title: title, options: options, rows: c.Height}
}

// Title is what the picker asks.
func (m *Model) Title() string { return m.title }

// Options are the entries to choose from.
func (m *Model) Options() []string { return m.options }

// Selected is the entry selected now.
func (m *Model) Selected() string { return m.options[m.Index] }

// SetSize gives the picker height rows, title included.
func (m *Model) SetSize(_, height int) { m.rows = height }

// ShortHelp is the picker's help line.
func (m *Model) ShortHelp() []key.Binding {
	k := m.common.Keys
	return []key.Binding{k.Down, k.Select, k.Quit}
}

// FullHelp is the picker's full help.
func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }

var _ tea.Model = &Model{}

// Init implements tea.Model: the picker starts nothing.
func (m *Model) Init() tea.Cmd { return nil }

// Update implements tea.Model: keys move the selection; enter picks and
// esc cancels, each said by a message (PickedMsg, CancelledMsg) to whoever
// opened the picker.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return m, nil
	}
	k := m.common.Keys
	switch {
	case key.Matches(km, k.Up), key.Matches(km, k.Left):
		m.move(-1)
	case key.Matches(km, k.Down), key.Matches(km, k.Right):
		m.move(1)
	case key.Matches(km, k.Select):
		picked := PickedMsg{From: m, Index: m.Index}
		return m, func() tea.Msg { return picked }
	case key.Matches(km, k.Quit):
		return m, func() tea.Msg { return CancelledMsg{From: m} }
	}
	return m, nil
}

// View implements tea.Model: Lines, one a row.
func (m *Model) View() string { return strings.Join(m.Lines(), "\n") }

func (m *Model) move(step int) {
	m.Index = (m.Index + step + len(m.options)) % len(m.options)
}

// Lines renders the picker in at most its rows, keeping the choice in view.
func (m *Model) Lines() []string {
	s := m.common.Styles
	out := []string{s.Section.Render(m.title) + s.Hint.Render(" (enter picks, esc cancels)")}
	rows := max(1, m.rows-1)
	start := 0
	if m.Index >= rows {
		start = m.Index - rows + 1
	}
	for i := start; i < len(m.options) && i < start+rows; i++ {
		if i == m.Index {
			out = append(out, s.Selected.Render(fmt.Sprintf("> %s", m.options[i])))
			continue
		}
		out = append(out, "  "+m.options[i])
	}
	return out
}
