// Package prompt is the editor's one-line question: the name of a new pool,
// or the key of a new map entry. It checks the text before taking it.
package prompt

import (
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
)

// Result says what a key did to the prompt.
type Result int

const (
	// Open means the prompt still asks.
	Open Result = iota
	// Answered means Value is checked and taken.
	Answered
	// Cancelled means the question was dropped.
	Cancelled
)

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

// Update types into the prompt, or answers or cancels it.
func (m *Model) Update(msg tea.KeyMsg) Result {
	switch {
	case key.Matches(msg, m.common.Keys.Select):
		if err := m.check(m.input.Value()); err != nil {
			m.err = err.Error()
			return Open
		}
		return Answered
	case msg.Type == tea.KeyEsc || msg.Type == tea.KeyCtrlC:
		return Cancelled
	}
	m.input, _ = m.input.Update(msg)
	m.err = ""
	return Open
}

// Lines renders the prompt: title, input and the reason the text was refused.
func (m *Model) Lines() []string {
	s := m.common.Styles
	out := []string{s.Section.Render(m.title) + s.Hint.Render(" (enter takes it, esc cancels)"), m.input.View()}
	if m.err != "" {
		out = append(out, s.Error.Render("✗ "+m.err))
	}
	return out
}
