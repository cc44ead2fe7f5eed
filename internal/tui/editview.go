package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/draft"
	"github.com/kubectl-topology/kubectl-topology/internal/plan"
)

// View implements tea.Model. The screen is the title, a window of the form,
// the selected field's hint, the checks or preview, a message line and help;
// it never draws more lines than the terminal has or lines wider than it.
func (m *EditModel) View() string {
	if m.quitting {
		return ""
	}
	screen, _ := m.render()
	return screen
}

// render draws the screen and says, for each line, which field it shows
// (-1 for none): mouse clicks are mapped back with it.
func (m *EditModel) render() (string, []int) {
	var b strings.Builder
	var rowsFields []int
	line := func(s string, field int) {
		b.WriteString(ansi.Truncate(s, m.common.Width, "…"))
		b.WriteByte('\n')
		rowsFields = append(rowsFields, field)
	}
	t := m.in.Topology
	title := fmt.Sprintf("Edit %s %s/%s · class %s", draft.Kind(t), t.Namespace, t.Name, t.Spec.ClassRef.Name)
	if m.readOnly {
		title += " (read-only)"
	}
	line(m.common.Styles.Title.Render(title), -1)

	helpView := m.help.View(m.common.Keys)
	helpLines := strings.Count(helpView, "\n") + 1
	// The message wraps to at most three lines: a conflict names what changed.
	var message []string
	switch {
	case m.mode == confirming:
		message = []string{m.common.Styles.Warn.Render(fmt.Sprintf("Apply %d change(s) to %s/%s? y/n", len(m.changed), t.Namespace, t.Name))}
	case m.message != "":
		wrapped := strings.Split(ansi.Wordwrap(m.message, max(20, m.common.Width), ""), "\n")
		for _, l := range wrapped[:min(3, len(wrapped))] {
			message = append(message, m.common.Styles.Warn.Render(l))
		}
	default:
		message = []string{""}
	}
	// Fixed: title, hint, section header, message and the help. The preview
	// takes what it needs up to half of the rest; the form takes the others.
	rest := m.common.Height - 3 - len(message) - helpLines
	header, preview := m.previewLines(max(1, rest/2))
	if m.busy() {
		// What is shown is of an earlier draft until the engine answers.
		header = m.common.Styles.Hint.Render(m.spinner.View()+" checking…") + " " + header
	}
	previewRows := max(0, min(len(preview), rest/2))
	fieldRows := max(3, rest-previewRows)

	rows, owners, first, last := m.form.Rows()
	start := 0
	if last >= fieldRows {
		start = min(first, last-fieldRows+1)
	}
	for i := start; i < len(rows) && i < start+fieldRows; i++ {
		line(rows[i], owners[i])
	}
	line("  "+m.common.Styles.Hint.Render(m.form.Fields[m.form.Cursor].Hint), -1)
	line(header, -1)
	if len(preview) > previewRows && previewRows > 0 {
		more := len(preview) - previewRows + 1
		preview = append(preview[:previewRows-1], m.common.Styles.Hint.Render(fmt.Sprintf("… %d more", more)))
	}
	for _, p := range preview[:previewRows] {
		line("  "+p, -1)
	}
	for _, l := range message {
		line(l, -1)
	}
	b.WriteString(helpView)
	return b.String(), rowsFields
}

// previewLines is the lower pane: a picker, the problems, one object's
// diff, or the changes with the machines they replace and the rollout order.
func (m *EditModel) previewLines(rows int) (string, []string) {
	problems := len(m.checks)
	for _, es := range m.form.Errs {
		problems += len(es)
	}
	switch {
	case m.mode == prompting:
		l := m.prompt.Lines()
		return l[0], l[1:]
	case m.mode == picking:
		m.picker.SetSize(m.common.Width, rows+1)
		l := m.picker.Lines()
		return l[0], l[1:]
	case problems > 0:
		var out []string
		for _, c := range m.checks {
			out = append(out, m.common.Styles.Error.Render("✗ "+c))
		}
		return m.common.Styles.Section.Render("Checks") + " " + m.common.Styles.Error.Render(fmt.Sprintf("✗ %d problem(s): apply is disabled", problems)), out
	case len(m.changed) == 0:
		return m.common.Styles.Section.Render("Checks") + " " + m.common.Styles.OK.Render("✓ no changes yet"), nil
	case m.diffIndex >= 0 && m.diffIndex < len(m.changes):
		c := m.changes[m.diffIndex]
		return m.common.Styles.Section.Render("Diff") + fmt.Sprintf(" %d/%d: %s %s %s (ctrl+d: next)", m.diffIndex+1, len(m.changes), c.Action, c.Object.GetKind(), c.Object.GetName()), m.diffLines(c)
	}
	var out []string
	for _, w := range m.warnings {
		out = append(out, m.common.Styles.Warn.Render("⚠ "+w))
	}
	changing := 0
	for _, c := range m.changes {
		line := fmt.Sprintf("%-8s %s %s", c.Action, c.Object.GetKind(), c.Object.GetName())
		if c.Action == plan.Pending {
			line += " (" + c.Reason + ")"
		} else {
			changing++
		}
		out = append(out, line)
	}
	if len(m.replacements) > 0 {
		out = append(out, m.common.Styles.Section.Render("Machines replaced"))
		out = append(out, m.replacements...)
	}
	if len(m.rollout) > 0 {
		out = append(out, m.common.Styles.Section.Render("Rollout"))
		out = append(out, m.rollout...)
	}
	summary := fmt.Sprintf("✓ valid: %d setting(s) changed, %d object(s) change", len(m.changed), changing)
	return m.common.Styles.Section.Render("Checks") + " " + m.common.Styles.OK.Render(summary), out
}

// diffLines renders one change: a unified diff for a modified object, the
// object itself for a created one.
func (m *EditModel) diffLines(c plan.Change) []string {
	var text string
	switch c.Action {
	case plan.Modified:
		d, err := plan.UnifiedDiff(c.Before, c.Object, "current", "after apply")
		if err != nil {
			return []string{m.common.Styles.Error.Render(err.Error())}
		}
		text = d
	case plan.Created, plan.Pending:
		raw, err := yaml.Marshal(c.Object.Object)
		if err != nil {
			return []string{m.common.Styles.Error.Render(err.Error())}
		}
		text = string(raw)
	default:
		return []string{"this object will be deleted"}
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++"):
			out = append(out, m.common.Styles.OK.Render(l))
		case strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---"):
			out = append(out, m.common.Styles.Error.Render(l))
		default:
			out = append(out, l)
		}
	}
	return out
}
