// Package preview is what applying the draft would do: the objects that
// change, the Machines replaced, the rollout order, and one object's diff.
package preview

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
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
	// diff is the index of the change whose diff is shown, or -1.
	diff int
}

// New returns an empty preview over c.
func New(c *common.Common) *Model { return &Model{common: c, diff: -1} }

// SetSize has nothing to fit: lines are cut by the editor.
func (m *Model) SetSize(int, int) {}

// ShortHelp is the preview's help line.
func (m *Model) ShortHelp() []key.Binding { return []key.Binding{m.common.Keys.Diff} }

// FullHelp is the preview's full help.
func (m *Model) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }

// Set shows a new preview; a diff shown stays if its change still exists.
func (m *Model) Set(changes []plan.Change, replacements, rollout []string) {
	m.Changes, m.Replacements, m.Rollout = changes, replacements, rollout
	if m.diff >= len(m.Changes) {
		m.diff = -1
	}
}

// NextDiff shows the next change's diff, and the list after the last.
func (m *Model) NextDiff() {
	m.diff++
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

// Lines are the changes, then the Machines replaced and the rollout order.
func (m *Model) Lines() []string {
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

// DiffHeader names the change whose diff is shown.
func (m *Model) DiffHeader() string {
	c := m.Changes[m.diff]
	return m.common.Styles.Section.Render("Diff") + fmt.Sprintf(" %d/%d: %s %s %s (ctrl+d: next)", m.diff+1, len(m.Changes), c.Action, c.Object.GetKind(), c.Object.GetName())
}

// DiffLines render the change shown: a unified diff for a modified object,
// the object itself for a created one.
func (m *Model) DiffLines() []string {
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
