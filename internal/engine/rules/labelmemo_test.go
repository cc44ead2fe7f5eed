package rules

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/lru"
)

// TestLabelMemoAnswersAsTheLibrary checks that remembering valid keys and
// values changes no answer: a known key with a bad value, or a bad key with a
// known value, is refused with the library's own errors.
func TestLabelMemoAnswersAsTheLibrary(t *testing.T) {
	m := labelMemo{known: lru.New(16)}
	p := field.NewPath("metadata", "labels")
	good := map[string]string{"cluster.x-k8s.io/cluster-name": "c-0001", "topology.cluster.x-k8s.io/owned": ""}
	for range 2 {
		if errs := m.validate(good, p); len(errs) > 0 {
			t.Fatalf("valid labels refused: %v", errs)
		}
	}
	for _, bad := range []map[string]string{
		{"cluster.x-k8s.io/cluster-name": "not a value!"},
		{"bad key/with/slashes": "c-0001"},
		{"cluster.x-k8s.io/cluster-name": "c-0001", "-bad": ""},
	} {
		want := validation.ValidateLabels(bad, p)
		if len(want) == 0 {
			t.Fatalf("the case %v is not invalid", bad)
		}
		for range 2 {
			if got := m.validate(bad, p); got.ToAggregate().Error() != want.ToAggregate().Error() {
				t.Errorf("%v: got %v, want %v", bad, got, want)
			}
		}
	}
	if got := m.known.Len(); got != 4 {
		t.Errorf("remembered %d keys and values, want the 4 valid ones", got)
	}
	full := labelMemo{known: lru.New(1)}
	full.validate(good, p)
	if got := full.known.Len(); got > 1 {
		t.Errorf("a memo limited to 1 remembered %d", got)
	}
}
