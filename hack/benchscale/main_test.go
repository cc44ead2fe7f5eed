package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/scale"
)

// TestParseFlags reads a command line as make bench-scale gives it, and
// refuses a side that is not one; building the flags must not collide with
// the flags the linked libraries register globally.
func TestParseFlags(t *testing.T) {
	f, err := parseFlags([]string{"-n", "100,1000", "-sides", "ours", "-idle-providers", "-profile", "-agent-flags", "--concurrency 40", "-kubeconfig", "/tmp/kc"})
	if err != nil {
		t.Fatal(err)
	}
	if f.ns != "100,1000" || f.kubeconfig != "/tmp/kc" || !f.opts.IdleProviders || !f.opts.Profile {
		t.Errorf("parsed %+v", f)
	}
	if !slices.Equal(f.opts.AgentFlags, []string{"--concurrency", "40"}) {
		t.Errorf("agent flags %q, want --concurrency 40", f.opts.AgentFlags)
	}
	if !f.want[scale.Ours] || f.want[scale.Upstream] {
		t.Errorf("sides %v, want ours alone", f.want)
	}
	if _, err := parseFlags([]string{"-sides", "ours,theirs"}); err == nil || !strings.Contains(err.Error(), `"theirs" is neither ours nor upstream`) {
		t.Errorf("-sides theirs: %v", err)
	}
}
