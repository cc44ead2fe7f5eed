package editor

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
)

// View implements tea.Model. The screen is the title, a window of the form,
// the selected field's hint, the checks or preview, a message line and help;
// it never draws more lines than the terminal has or lines wider than it.
func (m *Model) View() string {
	if m.mode == quitting {
		return ""
	}
	screen, _ := m.render()
	return screen
}

// render draws the screen and says, for each line, which field it shows
// (-1 for none): mouse clicks are mapped back with it.
func (m *Model) render() (string, []int) {
	var b strings.Builder
	var rowsFields []int
	line := func(s string, field int) {
		b.WriteString(ansi.Truncate(s, m.common.Width, "…"))
		b.WriteByte('\n')
		rowsFields = append(rowsFields, field)
	}
	t := m.in.Topology
	title := fmt.Sprintf("Edit %s %s/%s · class %s", contract.KindOf(t), t.Namespace, t.Name, t.Spec.ClassRef.Name)
	if m.readOnly {
		title += " (read-only)"
	}
	line(m.common.Styles.Title.Render(title), -1)

	helpView := m.bar.Help(m.common.Keys)
	helpLines := strings.Count(helpView, "\n") + 1
	question := ""
	switch m.mode {
	case confirmingUnchecked:
		question = fmt.Sprintf("Apply %d change(s) to %s/%s once the checks pass? y/n", len(m.work.changed), t.Namespace, t.Name)
	case confirming:
		question = fmt.Sprintf("Apply %d change(s) to %s/%s? y/n", len(m.work.changed), t.Namespace, t.Name)
	}
	message := m.bar.Lines(question)
	// Fixed: title, hint, section header, message and the help. The preview
	// takes what it needs up to half of the rest; the form takes the others.
	rest := m.common.Height - 3 - len(message) - helpLines
	header, lower := m.previewLines(max(1, rest/2))
	if m.busy() {
		// What is shown is of an earlier draft until the engine answers.
		header = m.common.Styles.Hint.Render(m.compute.spinner.View()+" checking…") + " " + header
	}
	previewRows := max(0, min(len(lower), rest/2))
	fieldRows := max(3, rest-previewRows)

	m.form.SetSize(m.common.Width, fieldRows)
	rows, owners := m.form.Window()
	for i := range rows {
		line(rows[i], owners[i])
	}
	line("  "+m.common.Styles.Hint.Render(m.form.Fields[m.form.Cursor].Hint), -1)
	line(header, -1)
	if len(lower) > previewRows && previewRows > 0 {
		more := len(lower) - previewRows + 1
		lower = append(lower[:previewRows-1], m.common.Styles.Hint.Render(fmt.Sprintf("… %d more", more)))
	}
	for _, p := range lower[:previewRows] {
		line("  "+p, -1)
	}
	for _, l := range message {
		line(l, -1)
	}
	b.WriteString(helpView)
	return b.String(), rowsFields
}

// previewLines is the lower pane: a prompt or picker when one asks, else the
// checks' verdict over the problems, one object's diff, or the changes.
func (m *Model) previewLines(rows int) (string, []string) {
	fieldProblems := 0
	for _, es := range m.form.Errs {
		fieldProblems += len(es)
	}
	header := m.checks.Header(fieldProblems, len(m.work.changed), m.preview.Changing())
	switch {
	case m.mode == prompting:
		l := m.overlay.prompt.Lines()
		return l[0], l[1:]
	case m.mode == picking:
		m.overlay.picker.SetSize(m.common.Width, rows+1)
		l := m.overlay.picker.Lines()
		return l[0], l[1:]
	case m.checks.Failing(fieldProblems) > 0:
		return header, m.checks.ProblemLines()
	case len(m.work.changed) == 0:
		return header, nil
	case m.preview.Diffing():
		return m.preview.DiffHeader(), m.preview.DiffLines()
	}
	return header, append(m.checks.WarningLines(), m.preview.Lines()...)
}
