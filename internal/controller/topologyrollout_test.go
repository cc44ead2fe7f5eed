package controller

import (
	"testing"
	"time"
)

// A cluster's writes are dry-run only after its reconciles have failed for
// refusalGrace: counted from the first failing pass, started again after a
// pass that sees it healthy, and forgotten with its rollout.
func TestFailingForCountsFromTheFirstFailingPass(t *testing.T) {
	r := &TopologyRolloutReconciler{}
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	if d := r.failingFor("ro", "ns/a", true, t0); d != 0 {
		t.Fatalf("first failing pass: %s, want 0", d)
	}
	if d := r.failingFor("ro", "ns/a", true, t0.Add(4*time.Second)); d != 4*time.Second {
		t.Fatalf("after 4s: %s, want 4s", d)
	}
	if d := r.failingFor("ro", "ns/b", true, t0.Add(4*time.Second)); d != 0 {
		t.Fatalf("another cluster shares the count: %s", d)
	}
	if d := r.failingFor("other", "ns/a", true, t0.Add(4*time.Second)); d != 0 {
		t.Fatalf("another rollout shares the count: %s", d)
	}
	if d := r.failingFor("ro", "ns/a", true, t0.Add(refusalGrace)); d < refusalGrace {
		t.Fatalf("after the grace: %s, want at least %s", d, refusalGrace)
	}
	if d := r.failingFor("ro", "ns/a", false, t0.Add(11*time.Second)); d != 0 {
		t.Fatalf("a healthy pass: %s, want 0", d)
	}
	if d := r.failingFor("ro", "ns/a", true, t0.Add(12*time.Second)); d != 0 {
		t.Fatalf("failing again counts again from 0, got %s", d)
	}
	r.forget("ro")
	if d := r.failingFor("ro", "ns/b", true, t0.Add(30*time.Second)); d != 0 {
		t.Fatalf("a forgotten rollout's count survived: %s", d)
	}
	if d := r.failingFor("other", "ns/a", true, t0.Add(30*time.Second)); d != 26*time.Second {
		t.Fatalf("forgetting ro forgot another rollout: %s", d)
	}
}
