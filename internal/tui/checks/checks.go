// Package checks is the verdict the editor shows on a draft: the problems
// the engine found that no form field shows, and the line that says whether
// apply is allowed.
package checks

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
)

// Model is the checks of the draft shown.
type Model struct {
	common *common.Common
	// Problems are the engine's findings that name no field of the form.
	Problems []string
	// rows is how many lines the problems may take.
	rows int
}

var _ tea.Model = &Model{}

// New returns empty checks over c.
func New(c *common.Common) *Model { return &Model{common: c} }

// SetSize gives the problems their rows; those that do not fit are counted
// on the last.
func (m *Model) SetSize(_, height int) { m.rows = height }

// Init implements tea.Model: the checks start nothing.
func (m *Model) Init() tea.Cmd { return nil }

// Update implements tea.Model: the checks answer no key; the engine sets them.
func (m *Model) Update(tea.Msg) (tea.Model, tea.Cmd) { return m, nil }

// View implements tea.Model: the problems, one a line, in the rows given.
func (m *Model) View() string { return strings.Join(m.common.Cut(m.lines(), m.rows), "\n") }

// Height is how many lines the problems take in full.
func (m *Model) Height() int { return len(m.Problems) }

// ShortHelp is the checks' help line: apply, allowed when nothing is red.
func (m *Model) ShortHelp() []key.Binding { return []key.Binding{m.common.Keys.Apply} }

// FullHelp is the checks' full help.
func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }

// Failing counts what blocks apply: these problems and fieldProblems, the
// ones the form shows under its fields.
func (m *Model) Failing(fieldProblems int) int { return len(m.Problems) + fieldProblems }

// Header is the verdict: what blocks apply, that nothing changed yet, or
// that the draft is valid with how much it changes.
func (m *Model) Header(fieldProblems, settingsChanged, objectsChanging int) string {
	s := m.common.Styles
	switch {
	case m.Failing(fieldProblems) > 0:
		return s.Section.Render("Checks") + " " + s.Error.Render(fmt.Sprintf("✗ %d problem(s): apply is disabled", m.Failing(fieldProblems)))
	case settingsChanged == 0:
		return s.Section.Render("Checks") + " " + s.OK.Render("✓ no changes yet")
	}
	return s.Section.Render("Checks") + " " + s.OK.Render(fmt.Sprintf("✓ valid: %d setting(s) changed, %d object(s) change", settingsChanged, objectsChanging))
}

// lines are the problems, one a line.
func (m *Model) lines() []string {
	var out []string
	for _, c := range m.Problems {
		out = append(out, m.common.Styles.Error.Render("✗ "+c))
	}
	return out
}
