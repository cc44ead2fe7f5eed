package preview

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/plan"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
)

// configMap is an object with n data keys, each valued v.
func configMap(n int, v string) *unstructured.Unstructured {
	data := map[string]any{}
	for i := range n {
		data[fmt.Sprintf("key%02d", i)] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "big"}, "data": data}}
}

// TestADiffLongerThanItsRowsScrollsAPageAtATime: the size given decides
// how many lines show; the header says which, and the page keys move
// through the diff without going past either end.
func TestADiffLongerThanItsRowsScrollsAPageAtATime(t *testing.T) {
	c := common.New()
	m := New(c)
	m.Set([]plan.Change{{Action: plan.Modified, Before: configMap(30, "a"), Object: configMap(30, "b")}}, nil, nil, nil)
	m.SetSize(80, 10)
	if got := strings.Count(m.View(), "\n") + 1; got != 1 || m.Height() != 1 {
		t.Fatalf("the list view takes %d lines (Height %d), want its natural 1", got, m.Height())
	}
	m.Update(tea.KeyMsg{Type: tea.KeyCtrlD})
	m.SetSize(80, 10)
	total := len(m.diffLines())
	if total <= 20 {
		t.Fatalf("the probe diff has %d lines; it must be longer than two pages", total)
	}
	view := m.View()
	if lines := strings.Split(view, "\n"); len(lines) != 10 || !strings.Contains(lines[9], fmt.Sprintf("… %d more", total-9)) {
		t.Errorf("the diff's first page:\n%s", view)
	}
	if h := m.DiffHeader(); !strings.Contains(h, fmt.Sprintf("lines 1-9 of %d (pgup/pgdn)", total)) {
		t.Errorf("header of the first page: %q", h)
	}
	m.Update(tea.KeyMsg{Type: tea.KeyPgDown})
	if h := m.DiffHeader(); !strings.Contains(h, fmt.Sprintf("lines 10-18 of %d", total)) {
		t.Errorf("header after one page down: %q", h)
	}
	if first := strings.Split(m.View(), "\n")[0]; first != m.diffLines()[9] {
		t.Errorf("after one page down the first line is %q, want the diff's tenth %q", first, m.diffLines()[9])
	}
	for range 10 {
		m.Update(tea.KeyMsg{Type: tea.KeyPgDown})
	}
	if last := strings.Split(m.View(), "\n"); last[len(last)-1] != m.diffLines()[total-1] || strings.Contains(m.View(), "more") {
		t.Errorf("paging past the end does not stop at the last page:\n%s", m.View())
	}
	for range 10 {
		m.Update(tea.KeyMsg{Type: tea.KeyPgUp})
	}
	if m.offset != 0 {
		t.Errorf("paging up past the top leaves offset %d", m.offset)
	}
	m.Update(tea.KeyMsg{Type: tea.KeyCtrlD})
	if m.Diffing() || m.offset != 0 {
		t.Errorf("ctrl+d past the last diff: diffing %v at offset %d", m.Diffing(), m.offset)
	}
}

// TestWarningsComeBeforeTheChangesAndAreCutWithThem: the preview's rows
// hold the warnings first; what does not fit is counted.
func TestWarningsComeBeforeTheChangesAndAreCutWithThem(t *testing.T) {
	m := New(common.New())
	var changes []plan.Change
	for i := range 6 {
		o := configMap(1, "a")
		o.SetName(fmt.Sprintf("cm-%d", i))
		changes = append(changes, plan.Change{Action: plan.Created, Object: o})
	}
	m.Set(changes, nil, nil, []string{"the control plane rolls"})
	if m.Height() != 7 {
		t.Errorf("Height = %d, want 7: a warning and six changes", m.Height())
	}
	m.SetSize(80, 4)
	lines := strings.Split(m.View(), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "⚠ the control plane rolls") || !strings.Contains(lines[1], "ConfigMap cm-0") || !strings.Contains(lines[3], "… 4 more") {
		t.Errorf("four rows of a warning and six changes:\n%s", strings.Join(lines, "\n"))
	}
	m.SetSize(80, 0)
	if m.View() != "" {
		t.Errorf("no rows, yet the preview draws %q", m.View())
	}
}
