package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
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
	case len(m.dirty()) == 0:
		line(m.styles.Section.Render("Checks") + " " + m.styles.OK.Render("✓ no changes yet"))
	default:
		line(m.styles.Section.Render("Checks") + " " + m.styles.OK.Render(fmt.Sprintf("✓ valid: %d field(s) changed, %d object(s) change", len(m.dirty()), len(m.changes))))
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
