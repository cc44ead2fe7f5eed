package prompt

import (
	"errors"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
)

// TestThePromptAnswersOnlyWhatPassesItsCheck: text that fails the check is
// refused with the reason and no answer; text that passes is the answer,
// said by a message naming the prompt; esc cancels by message.
func TestThePromptAnswersOnlyWhatPassesItsCheck(t *testing.T) {
	check := func(s string) error {
		if strings.ContainsAny(s, " _") {
			return errors.New("a pool name has no spaces or underscores")
		}
		return nil
	}
	m := New(common.New(), "Name of the new pool", "md_", check)
	if _, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter}); cmd != nil {
		t.Errorf("md_ was answered: %#v", cmd())
	}
	if !strings.Contains(m.View(), "✗ a pool name has no spaces or underscores") {
		t.Errorf("the refusal is not shown:\n%s", m.View())
	}
	m.Update(tea.KeyMsg{Type: tea.KeyBackspace})
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("-c")})
	if strings.Contains(m.View(), "✗") {
		t.Errorf("typing did not clear the refusal:\n%s", m.View())
	}
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if got, ok := cmd().(AnsweredMsg); !ok || got.From != m || got.Value != "md-c" {
		t.Errorf("enter on md-c: %#v", cmd())
	}
	_, cmd = m.Update(tea.KeyMsg{Type: tea.KeyEsc})
	if got, ok := cmd().(CancelledMsg); !ok || got.From != m {
		t.Errorf("esc: %#v", cmd())
	}
}
