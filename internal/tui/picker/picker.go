// Package picker is the editor's list to choose one entry from: a worker
// class for a new pool, or the variable a part overrides.
package picker

import (
	"fmt"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
)

// Result says what a key did to the picker.
type Result int

const (
	// Open means the picker still asks.
	Open Result = iota
	// Picked means Index is the choice.
	Picked
	// Cancelled means nothing was chosen.
	Cancelled
)

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

// Update moves the selection, picks or cancels.
func (m *Model) Update(msg tea.KeyMsg) Result {
	k := m.common.Keys
	switch {
	case key.Matches(msg, k.Up), key.Matches(msg, k.Left):
		m.move(-1)
	case key.Matches(msg, k.Down), key.Matches(msg, k.Right):
		m.move(1)
	case key.Matches(msg, k.Select):
		return Picked
	case key.Matches(msg, k.Quit):
		return Cancelled
	}
	return Open
}

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
