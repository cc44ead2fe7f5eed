package editor

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
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
	lower, headerOf := m.lowerPane(max(1, rest/2))
	previewRows := max(0, min(lower.Height(), rest/2))
	lower.SetSize(m.common.Width-2, previewRows)
	header := headerOf()
	if m.busy() {
		// What is shown is of an earlier draft until the engine answers.
		header = m.common.Styles.Hint.Render(m.compute.spinner.View()+" checking…") + " " + header
	}
	fieldRows := max(3, rest-previewRows)

	m.form.SetSize(m.common.Width, fieldRows)
	rows, owners := m.form.Window()
	for i := range rows {
		line(rows[i], owners[i])
	}
	line("  "+m.common.Styles.Hint.Render(m.form.Fields[m.form.Cursor].Hint), -1)
	line(header, -1)
	if v := lower.View(); v != "" {
		for _, p := range strings.Split(v, "\n") {
			line("  "+p, -1)
		}
	}
	for _, l := range message {
		line(l, -1)
	}
	b.WriteString(helpView)
	return b.String(), rowsFields
}

// pane is what the lower part of the screen shows, fitted to its rows.
type pane interface {
	Height() int
	SetSize(width, height int)
	View() string
}

// lowerPane is the lower part of the screen and its header, asked for once
// the pane has its size: a prompt or picker when one asks, else the checks'
// verdict over the problems, one object's diff, or the preview.
func (m *Model) lowerPane(rows int) (pane, func() string) {
	fieldProblems := 0
	for _, es := range m.form.Errs {
		fieldProblems += len(es)
	}
	header := func() string { return m.checks.Header(fieldProblems, len(m.work.changed), m.preview.Changing()) }
	switch {
	case m.mode == prompting:
		l := m.overlay.prompt.Lines()
		return &lines{common: m.common, lines: l[1:]}, func() string { return l[0] }
	case m.mode == picking:
		m.overlay.picker.SetSize(m.common.Width, rows+1)
		l := m.overlay.picker.Lines()
		return &lines{common: m.common, lines: l[1:]}, func() string { return l[0] }
	case m.checks.Failing(fieldProblems) > 0:
		return m.checks, header
	case len(m.work.changed) == 0:
		return &lines{common: m.common}, header
	case m.preview.Diffing():
		return m.preview, m.preview.DiffHeader
	}
	return m.preview, header
}

// lines is an overlay's lines as a pane.
type lines struct {
	common *common.Common
	lines  []string
	rows   int
}

func (l *lines) Height() int           { return len(l.lines) }
func (l *lines) SetSize(_, height int) { l.rows = height }
func (l *lines) View() string          { return strings.Join(l.common.Cut(l.lines, l.rows), "\n") }
