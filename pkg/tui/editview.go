package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/pkg/engine/plan"
)

// View implements tea.Model.
func (m *EditModel) View() string {
	if m.quitting {
		return ""
	}
	var b strings.Builder
	line := func(s string) {
		b.WriteString(ansi.Truncate(s, m.width, "…"))
		b.WriteByte('\n')
	}
	t := m.in.Topology
	title := fmt.Sprintf("Edit Topology %s/%s · class %s", t.Namespace, t.Name, t.Spec.Class)
	if m.readOnly {
		title += " (read-only)"
	}
	line(m.styles.Title.Render(title))

	// Budget: title, hint, the two section headers, message and help lines
	// are fixed; fields get half of the rest, checks and preview the other.
	rest := m.height - 6
	fieldRows := max(4, rest/2)
	previewRows := max(2, rest-fieldRows)
	labelWidth := 0
	for _, f := range m.fields {
		labelWidth = max(labelWidth, len(f.label)+1)
	}
	// Every field is one line, followed by a line per error; the window
	// scrolls so that the selected field and its errors are in view.
	var rows []string
	first, last := 0, 0
	for i, f := range m.fields {
		marker, label := "  ", m.styles.Label
		if i == m.cursor {
			marker, label = "> ", m.styles.Selected
			first = len(rows)
		}
		name := f.label
		if f.required {
			name += "*"
		}
		value := f.value
		switch {
		case len(f.options) > 0:
			value = "‹ " + value + " ›"
		case value == "" && f.kind == kindText:
			value = `""`
		case value == "":
			value = m.styles.Hint.Render("(unset)")
		}
		if f.value != f.original {
			value = m.styles.Changed.Render(value)
		}
		rows = append(rows, marker+label.Render(fmt.Sprintf("%-*s", labelWidth, name))+" "+value)
		for _, e := range m.fieldErrs[i] {
			rows = append(rows, "    "+m.styles.Error.Render("✗ "+e))
		}
		if i == m.cursor {
			last = len(rows) - 1
		}
	}
	start := 0
	if last >= fieldRows {
		start = min(first, last-fieldRows+1)
	}
	for i := start; i < len(rows) && i < start+fieldRows; i++ {
		line(rows[i])
	}
	line("  " + m.styles.Hint.Render(m.fields[m.cursor].hint))

	problems := len(m.checks)
	for _, es := range m.fieldErrs {
		problems += len(es)
	}
	var preview []string
	switch {
	case problems > 0:
		line(m.styles.Section.Render("Checks") + " " + m.styles.Error.Render(fmt.Sprintf("✗ %d problem(s): apply is disabled", problems)))
		for _, c := range m.checks {
			preview = append(preview, m.styles.Error.Render("✗ "+c))
		}
	case len(m.dirty()) == 0 && !m.structureChanged():
		line(m.styles.Section.Render("Checks") + " " + m.styles.OK.Render("✓ no changes yet"))
	case m.diffIndex >= 0 && m.diffIndex < len(m.changes):
		c := m.changes[m.diffIndex]
		line(m.styles.Section.Render("Diff") + fmt.Sprintf(" %d/%d: %s %s %s (ctrl+d: next)", m.diffIndex+1, len(m.changes), c.Action, c.Object.GetKind(), c.Object.GetName()))
		preview = m.diffLines(c)
	default:
		fields := len(m.dirty())
		summary := fmt.Sprintf("✓ valid: %d field(s) changed, %d object(s) change", fields, len(m.changes))
		if m.structureChanged() {
			summary = fmt.Sprintf("✓ valid: %d field(s) changed, %d pool(s) added, %d removed, %d object(s) change", fields, len(m.added)-countRemovedAdded(m), len(m.removed), len(m.changes))
		}
		line(m.styles.Section.Render("Checks") + " " + m.styles.OK.Render(summary))
		for _, c := range m.changes {
			preview = append(preview, fmt.Sprintf("%-8s %s %s", c.Action, c.Object.GetKind(), c.Object.GetName()))
		}
		if len(m.rollout) > 0 {
			preview = append(preview, m.styles.Section.Render("Rollout"))
			preview = append(preview, m.rollout...)
		}
	}
	if len(preview) > previewRows {
		more := len(preview) - previewRows + 1
		preview = append(preview[:previewRows-1], m.styles.Hint.Render(fmt.Sprintf("… %d more", more)))
	}
	for _, p := range preview {
		line("  " + p)
	}
	switch {
	case m.confirming:
		line(m.styles.Warn.Render(fmt.Sprintf("Apply %d change(s) to %s/%s? y/n", len(m.dirty()), t.Namespace, t.Name)))
	case m.message != "":
		line(m.styles.Warn.Render(m.message))
	default:
		line("")
	}
	b.WriteString(m.help.View(m.keys))
	return b.String()
}

// countRemovedAdded counts added pools that were removed again.
func countRemovedAdded(m *EditModel) int {
	n := 0
	for _, md := range m.added {
		if m.removed[md.Name] {
			n++
		}
	}
	return n
}

// diffLines renders one change: a unified diff for a modified object, the
// object itself for a created one.
func (m *EditModel) diffLines(c plan.Change) []string {
	var text string
	switch c.Action {
	case plan.Modified:
		d, err := plan.UnifiedDiff(c.Before, c.Object, "current", "after apply")
		if err != nil {
			return []string{m.styles.Error.Render(err.Error())}
		}
		text = d
	case plan.Created:
		raw, err := yaml.Marshal(c.Object.Object)
		if err != nil {
			return []string{m.styles.Error.Render(err.Error())}
		}
		text = string(raw)
	default:
		return []string{"this object will be deleted"}
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++"):
			out = append(out, m.styles.OK.Render(l))
		case strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---"):
			out = append(out, m.styles.Error.Render(l))
		default:
			out = append(out, l)
		}
	}
	return out
}
