package picker

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
)

// TestThePickerSaysItsChoiceByMessage: keys move the selection round the
// list; enter says the choice and esc the cancel as messages naming the
// picker; the size keeps the choice in view.
func TestThePickerSaysItsChoiceByMessage(t *testing.T) {
	m := New(common.New(), "Worker class", []string{"a", "b", "c", "d"})
	for _, k := range []tea.KeyType{tea.KeyDown, tea.KeyDown, tea.KeyUp, tea.KeyUp, tea.KeyUp} {
		if _, cmd := m.Update(tea.KeyMsg{Type: k}); cmd != nil {
			t.Fatalf("moving with %s ended the picker", k)
		}
	}
	if m.Selected() != "d" {
		t.Errorf("down, down, up, up, up from a: %s, want d (round the list)", m.Selected())
	}
	m.SetSize(80, 3)
	if v := m.View(); strings.Count(v, "\n") != 2 || !strings.Contains(v, "> d") || strings.Contains(v, "  a") {
		t.Errorf("three rows with d chosen:\n%s", v)
	}
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if got, ok := cmd().(PickedMsg); !ok || got.From != m || got.Index != 3 {
		t.Errorf("enter: %#v, want PickedMsg from this picker at 3", cmd())
	}
	_, cmd = m.Update(tea.KeyMsg{Type: tea.KeyEsc})
	if got, ok := cmd().(CancelledMsg); !ok || got.From != m {
		t.Errorf("esc: %#v, want CancelledMsg from this picker", cmd())
	}
}
