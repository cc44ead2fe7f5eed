// Package prompt is the editor's one-line question: the name of a new pool,
// or the key of a new map entry. It checks the text before taking it.
package prompt

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
)

// AnsweredMsg says that From's text, Value, was checked and taken.
type AnsweredMsg struct {
	From  *Model
	Value string
}

// CancelledMsg says that From's question was dropped.
type CancelledMsg struct{ From *Model }

// Model is a titled text input with the reason its text was refused.
type Model struct {
	common *common.Common
	title  string
	input  textinput.Model
	err    string
	// check says what is wrong with the text, or nil.
	check func(string) error
}

// New asks title, starting from value; check refuses what it finds wrong.
func New(c *common.Common, title, value string, check func(string) error) *Model {
	in := textinput.New()
	in.Prompt = "> "
	in.SetValue(value)
	in.CursorEnd()
	in.Focus()
	return &Model{common: c, title: title, input: in, check: check}
}

// Value is the text typed.
func (m *Model) Value() string { return m.input.Value() }

// SetSize fits the input to the terminal's width.
func (m *Model) SetSize(width, _ int) { m.input.Width = max(0, width-4) }

// ShortHelp is the prompt's help line.
func (m *Model) ShortHelp() []key.Binding {
	return []key.Binding{m.common.Keys.Select, m.common.Keys.Quit}
}

// FullHelp is the prompt's full help.
func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }

var _ tea.Model = &Model{}

// Init implements tea.Model: the prompt starts nothing.
func (m *Model) Init() tea.Cmd { return nil }

// Update implements tea.Model: keys type into the prompt; enter answers
// once the text passes the check, esc cancels, each said by a message
// (AnsweredMsg, CancelledMsg) to whoever asked.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return m, nil
	}
	switch {
	case key.Matches(km, m.common.Keys.Select):
		if err := m.check(m.input.Value()); err != nil {
			m.err = err.Error()
			return m, nil
		}
		answered := AnsweredMsg{From: m, Value: m.input.Value()}
		return m, func() tea.Msg { return answered }
	case km.Type == tea.KeyEsc || km.Type == tea.KeyCtrlC:
		return m, func() tea.Msg { return CancelledMsg{From: m} }
	}
	// The input's cursor does not blink: a blink would redraw the screen
	// for nothing, and teatest's frames would not settle.
	m.input, _ = m.input.Update(km)
	m.err = ""
	return m, nil
}

// View implements tea.Model: Lines, one a row.
func (m *Model) View() string { return strings.Join(m.Lines(), "\n") }

// Lines renders the prompt: title, input and the reason the text was refused.
func (m *Model) Lines() []string {
	s := m.common.Styles
	out := []string{s.Section.Render(m.title) + s.Hint.Render(" (enter takes it, esc cancels)"), m.input.View()}
	if m.err != "" {
		out = append(out, s.Error.Render("✗ "+m.err))
	}
	return out
}
