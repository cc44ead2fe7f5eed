package checks

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
)

// TestProblemsFitTheRowsGiven: the size decides how many problems show;
// the last row counts those left out, and the verdict counts them all.
func TestProblemsFitTheRowsGiven(t *testing.T) {
	m := New(common.New())
	for i := range 5 {
		m.Problems = append(m.Problems, fmt.Sprintf("problem %d", i))
	}
	m.SetSize(80, 3)
	lines := strings.Split(m.View(), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "✗ problem 0") || !strings.Contains(lines[2], "… 3 more") {
		t.Errorf("five problems in three rows:\n%s", m.View())
	}
	m.SetSize(80, 5)
	if got := strings.Count(m.View(), "✗"); got != 5 || strings.Contains(m.View(), "more") {
		t.Errorf("five problems in five rows show %d:\n%s", got, m.View())
	}
	if h := m.Header(2, 1, 0); !strings.Contains(h, "7 problem(s): apply is disabled") {
		t.Errorf("the verdict over five problems and two under fields: %q", h)
	}
}
