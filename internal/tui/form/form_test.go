package form

import (
	"strings"
	"testing"
)

// TestMetadataHintIsSorted: labels then annotations, each sorted by key, so
// the hint reads the same on every run.
func TestMetadataHintIsSorted(t *testing.T) {
	if got := metadataHint(map[string]string{"b": "2", "a": "1"}, map[string]string{"c": "3"}); strings.Join(got, ",") != "a=1,b=2,c=3" {
		t.Errorf("metadata shown as %v", got)
	}
}
