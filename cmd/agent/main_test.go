package main

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kubectl-topology/kubectl-topology/internal/shard"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
)

// TestSetGCPercent: without GOGC the agent collects at gcPercent; a GOGC
// the user set is left in force.
func TestSetGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	unset := func(string) (string, bool) { return "", false }
	if got := setGCPercent(unset); got != gcPercent {
		t.Errorf("without GOGC: %d, want %d", got, gcPercent)
	}
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("without GOGC the runtime's target is %d, want %d", got, gcPercent)
	}
	// The runtime read GOGC=200 at start; setGCPercent must not change it.
	debug.SetGCPercent(200)
	set := func(string) (string, bool) { return "200", true }
	if got := setGCPercent(set); got != 200 {
		t.Errorf("with GOGC=200: %d, want 200", got)
	}
	if got := debug.SetGCPercent(100); got != 200 {
		t.Errorf("with GOGC=200 the runtime's target is %d, want 200", got)
	}
}

// TestSetMemoryLimit: the container's limit holds the runtime to nine tenths
// of it; GOMEMLIMIT wins; a limit that is not a number of bytes is reported
// and changes nothing.
func TestSetMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	for _, tc := range []struct {
		name    string
		vars    map[string]string
		start   int64
		want    int64
		wantErr bool
	}{
		{name: "no limit", vars: nil, start: math.MaxInt64, want: math.MaxInt64},
		{name: "1Gi container", vars: map[string]string{components.MemoryLimitEnv: "1073741824"}, start: math.MaxInt64, want: 966367641},
		{name: "GOMEMLIMIT wins", vars: map[string]string{"GOMEMLIMIT": "500MiB", components.MemoryLimitEnv: "1073741824"}, start: 500 << 20, want: 500 << 20},
		{name: "not a number", vars: map[string]string{components.MemoryLimitEnv: "1Gi"}, start: math.MaxInt64, want: math.MaxInt64, wantErr: true},
		{name: "zero", vars: map[string]string{components.MemoryLimitEnv: "0"}, start: math.MaxInt64, want: math.MaxInt64, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(tc.start) // what the runtime read from GOMEMLIMIT at start
			got, err := setMemoryLimit(env(tc.vars))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error: %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("returned %d, want %d", got, tc.want)
			}
			if inForce := debug.SetMemoryLimit(-1); inForce != tc.want {
				t.Errorf("runtime limit %d, want %d", inForce, tc.want)
			}
		})
	}
	if got := memoryLimitText(966367641); got != "921MiB" {
		t.Errorf("memoryLimitText = %q, want 921MiB", got)
	}
	if got := memoryLimitText(math.MaxInt64); got != "none" {
		t.Errorf("memoryLimitText(no limit) = %q, want none", got)
	}
}

// clusterctl installs the agent with --namespace="" (it substitutes the
// components' default literally): every namespace, as for --namespace=.
func TestWatchNamespaceAsClusterctlSubstitutesIt(t *testing.T) {
	for flag, want := range map[string]string{`""`: "every namespace", "": "every namespace", "team-a": "namespace team-a", `"team-a"`: "namespace team-a", "team-b,team-a": "namespaces team-a, team-b"} {
		fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
		namespaces := fs.StringSlice("namespace", nil, "")
		if err := fs.Parse([]string{"--namespace=" + flag}); err != nil {
			t.Fatal(err)
		}
		if got := shard.New(*namespaces, "").String(); got != want {
			t.Errorf("--namespace=%s watches %q, want %q", flag, got, want)
		}
	}
}
