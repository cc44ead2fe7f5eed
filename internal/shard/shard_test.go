package shard

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func TestNewSortsAndDropsEmptyAndQuotedNames(t *testing.T) {
	s := New([]string{`team-b,team-a`, `""`, "team-a", " team-c "}, `""`)
	if got, want := s.String(), "namespaces team-a, team-b, team-c"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if !New([]string{`""`}, "").AllNamespaces() {
		t.Error(`--namespace="" (clusterctl's literal default) does not mean every namespace`)
	}
}

func TestOwns(t *testing.T) {
	topo := func(ns string, labels map[string]string) *v1alpha2.Topology {
		return &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev", Labels: labels}}
	}
	filtered := map[string]string{WatchLabel: "blue"}
	cases := []struct {
		shard Shard
		obj   *v1alpha2.Topology
		want  bool
	}{
		{New(nil, ""), topo("any", nil), true},
		{New(nil, ""), topo("any", filtered), true},
		{New([]string{"a"}, ""), topo("a", nil), true},
		{New([]string{"a"}, ""), topo("b", nil), false},
		{New(nil, "blue"), topo("b", filtered), true},
		{New(nil, "blue"), topo("b", nil), false},
		{New(nil, "green"), topo("b", filtered), false},
		{New([]string{"a"}, "blue"), topo("b", filtered), false},
	}
	for _, tc := range cases {
		if got := tc.shard.Owns(tc.obj); got != tc.want {
			t.Errorf("shard (%s) owns %s labelled %v: %v, want %v", tc.shard, tc.obj.Namespace, tc.obj.Labels, got, tc.want)
		}
	}
}

func TestOverlaps(t *testing.T) {
	cases := []struct {
		a, b Shard
		want bool
	}{
		{New([]string{"a"}, ""), New([]string{"b"}, ""), false},
		{New([]string{"a", "b"}, ""), New([]string{"b", "c"}, ""), true},
		{New(nil, ""), New([]string{"b"}, ""), true},
		{New(nil, "blue"), New(nil, "green"), false},
		{New(nil, "blue"), New(nil, "blue"), true},
		{New(nil, "blue"), New([]string{"a"}, ""), true},
		{New([]string{"a"}, "blue"), New([]string{"a"}, "green"), false},
	}
	for _, tc := range cases {
		if got := tc.a.Overlaps(tc.b); got != tc.want {
			t.Errorf("(%s) overlaps (%s): %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := tc.b.Overlaps(tc.a); got != tc.want {
			t.Errorf("(%s) overlaps (%s): %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestAnnotationsRoundTrip(t *testing.T) {
	for _, s := range []Shard{New(nil, ""), New([]string{"a", "b"}, ""), New([]string{"a"}, "blue")} {
		ann := map[string]string{}
		s.Annotate(ann)
		if got := FromAnnotations(ann); got.String() != s.String() {
			t.Errorf("shard (%s) read back from %v as (%s)", s, ann, got)
		}
	}
	if got := FromAnnotations(nil); !got.AllNamespaces() || got.WatchFilter != "" {
		t.Errorf("a heartbeat without annotations reads as (%s), want every namespace", got)
	}
}
