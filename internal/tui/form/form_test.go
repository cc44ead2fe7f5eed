package form

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
)

// TestMetadataHintIsSorted: labels then annotations, each sorted by key, so
// the hint reads the same on every run.
func TestMetadataHintIsSorted(t *testing.T) {
	if got := metadataHint(map[string]string{"b": "2", "a": "1"}, map[string]string{"c": "3"}); strings.Join(got, ",") != "a=1,b=2,c=3" {
		t.Errorf("metadata shown as %v", got)
	}
}

// TestWindowKeepsTheSelectedFieldInSight: in a height smaller than the
// form, the window moves with the cursor, shows the selected field's
// problems with it, and never more rows than its height.
func TestWindowKeepsTheSelectedFieldInSight(t *testing.T) {
	m := New(common.New())
	for i := range 10 {
		m.Fields = append(m.Fields, Field{Key: fmt.Sprint(i), Label: fmt.Sprintf("field%d", i), Kind: KindText, Value: "v", Present: true})
	}
	m.Errs[7] = []string{"field7 is wrong"}
	m.SetSize(80, 4)
	for _, tc := range []struct {
		cursor int
		want   []int
	}{
		{cursor: 0, want: []int{0, 1, 2, 3}},
		{cursor: 5, want: []int{2, 3, 4, 5}},
		{cursor: 7, want: []int{5, 6, 7, 7}},
		{cursor: 9, want: []int{7, 7, 8, 9}},
	} {
		m.Cursor = tc.cursor
		rows, owners := m.Window()
		if fmt.Sprint(owners) != fmt.Sprint(tc.want) || len(rows) != len(tc.want) {
			t.Errorf("cursor %d: window shows fields %v, want %v", tc.cursor, owners, tc.want)
		}
		if !strings.Contains(m.View(), fmt.Sprintf("field%d", tc.cursor)) {
			t.Errorf("cursor %d: the view lacks the selected field:\n%s", tc.cursor, m.View())
		}
	}
}
