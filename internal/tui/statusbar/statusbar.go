// Package statusbar is the editor's bottom: the message or question of the
// moment, wrapped to at most three lines, and the help built from the keys.
package statusbar

import (
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
)

// maxMessageLines bounds the message: a conflict names what changed.
const maxMessageLines = 3

// Model is the status bar.
type Model struct {
	common *common.Common
	help   help.Model
	// Message is what the editor has to say now; empty for nothing.
	Message string
}

// New returns an empty status bar over c.
func New(c *common.Common) *Model {
	h := help.New()
	h.Width = c.Width
	return &Model{common: c, help: h}
}

// SetSize fits the help to the terminal's width.
func (m *Model) SetSize(width, _ int) { m.help.Width = width }

// ShortHelp is the status bar's own key: full help.
func (m *Model) ShortHelp() []key.Binding { return []key.Binding{m.common.Keys.Help} }

// FullHelp is the status bar's full help.
func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }

var _ tea.Model = &Model{}

// Init implements tea.Model: the status bar starts nothing.
func (m *Model) Init() tea.Cmd { return nil }

// Update implements tea.Model: the help key switches between the help line
// and the full help.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if k, ok := msg.(tea.KeyMsg); ok && key.Matches(k, m.common.Keys.Help) {
		m.help.ShowAll = !m.help.ShowAll
	}
	return m, nil
}

// View implements tea.Model: the message of the moment, as Lines shows it
// when nothing is asked.
func (m *Model) View() string { return strings.Join(m.Lines(""), "\n") }

// Lines are the question when one is asked, else the message, else one
// empty line.
func (m *Model) Lines(question string) []string {
	warn := m.common.Styles.Warn
	switch {
	case question != "":
		return []string{warn.Render(question)}
	case m.Message != "":
		wrapped := strings.Split(ansi.Wordwrap(m.Message, max(20, m.common.Width), ""), "\n")
		var out []string
		for _, l := range wrapped[:min(maxMessageLines, len(wrapped))] {
			out = append(out, warn.Render(l))
		}
		return out
	}
	return []string{""}
}

// Help is the help line, or the full help, of keys.
func (m *Model) Help(keys help.KeyMap) string { return m.help.View(keys) }
