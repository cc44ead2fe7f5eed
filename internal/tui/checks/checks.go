// Package checks is the verdict the editor shows on a draft: the problems
// the engine found that no form field shows, the warnings, and the line that
// says whether apply is allowed.
package checks

import (
	"fmt"

	"github.com/charmbracelet/bubbles/key"

	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
)

// Model is the checks of the draft shown.
type Model struct {
	common *common.Common
	// Problems are the engine's findings that name no field of the form.
	Problems []string
	// Warnings are what the change risks without being wrong.
	Warnings []string
}

// New returns empty checks over c.
func New(c *common.Common) *Model { return &Model{common: c} }

// SetSize has nothing to fit: lines are cut by the editor.
func (m *Model) SetSize(int, int) {}

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

// ProblemLines are the problems, one a line.
func (m *Model) ProblemLines() []string {
	var out []string
	for _, c := range m.Problems {
		out = append(out, m.common.Styles.Error.Render("✗ "+c))
	}
	return out
}

// WarningLines are the warnings, one a line.
func (m *Model) WarningLines() []string {
	var out []string
	for _, w := range m.Warnings {
		out = append(out, m.common.Styles.Warn.Render("⚠ "+w))
	}
	return out
}
