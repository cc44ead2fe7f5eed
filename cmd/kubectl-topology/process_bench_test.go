package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkStartup is the plugin as a user starts it, a whole process:
// `version --client`, which is package initialisation and building the
// command tree, and nothing else. Each round also starts testdata/floor, a
// program that only links the libraries the plugin is built on by the
// project's rules, so that floor-ms is the part of a start those libraries
// take and above-floor-ms what the plugin's own code adds, on the same
// machine at the same moment. `GODEBUG=inittrace=1` says which packages
// the initialisation spends its time in.
func BenchmarkStartup(b *testing.B) {
	bin := buildRelease(b, ".", "kubectl-topology")
	floor := buildRelease(b, "./testdata/floor", "floor")
	var ours, base time.Duration
	for b.Loop() {
		start := time.Now()
		run(b, bin, nil, "version", "--client")
		ours += time.Since(start)
		start = time.Now()
		run(b, floor, nil)
		base += time.Since(start)
	}
	b.ReportMetric(float64(ours.Microseconds())/1000/float64(b.N), "ms/start")
	b.ReportMetric(float64(base.Microseconds())/1000/float64(b.N), "floor-ms")
	b.ReportMetric(float64((ours-base).Microseconds())/1000/float64(b.N), "above-floor-ms")
}

// BenchmarkPlanQuickStart is `plan -f` of upstream's v1.10 quick-start
// fixture (../shared/fixtures/capi-v1beta1), a whole process, beside
// clusterctl v1.10.10's removed `alpha topology plan` of the same files
// ($CLUSTERCTL, else bin/clusterctl, which `make parity` builds), one
// after the other in each round so both see the same machine. It reports
// our time per plan and ours/clusterctl.
func BenchmarkPlanQuickStart(b *testing.B) {
	shared := filepath.Join(moduleRoot(b), "..", "shared", "fixtures", "capi-v1beta1")
	if _, err := os.Stat(shared); err != nil {
		b.Skipf("the quick-start fixture is not at %s: %v", shared, err)
	}
	clusterctl := os.Getenv("CLUSTERCTL")
	if clusterctl == "" {
		clusterctl = filepath.Join(moduleRoot(b), "bin", "clusterctl")
	}
	if _, err := os.Stat(clusterctl); err != nil {
		b.Skipf("clusterctl v1.10.10 is not at %s (`make parity` builds it): %v", clusterctl, err)
	}
	bin := buildRelease(b, ".", "kubectl-topology")
	in := []string{"-f", filepath.Join(shared, "clusterclass-quick-start.yaml"), "-f", filepath.Join(shared, "cluster-qs1.yaml")}
	var ours, theirs time.Duration
	for b.Loop() {
		start := time.Now()
		run(b, bin, nil, append([]string{"plan", "--cluster-api-version", "v1beta1", "--output-directory", b.TempDir()}, in...)...)
		ours += time.Since(start)
		start = time.Now()
		run(b, clusterctl, []string{"KUBECONFIG=/nonexistent"}, append([]string{"alpha", "topology", "plan", "-o", b.TempDir()}, in...)...)
		theirs += time.Since(start)
	}
	b.ReportMetric(float64(ours.Milliseconds())/float64(b.N), "ms/plan")
	b.ReportMetric(float64(theirs.Milliseconds())/float64(b.N), "clusterctl-ms/plan")
	b.ReportMetric(float64(ours)/float64(theirs), "ours/clusterctl")
}

func run(b *testing.B, bin string, env []string, args ...string) {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %v: %v\n%s", filepath.Base(bin), args, err, out)
	}
}

// buildRelease builds the main package at pkg (relative to this
// directory) into a binary called name, as a release is built (static, trimmed, without debug
// information), once per benchmark.
func buildRelease(b *testing.B, pkg, name string) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), name)
	// As hack/dist.sh builds the release Krew installs: static, stripped.
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	return bin
}

func moduleRoot(b *testing.B) string {
	b.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		b.Fatal(err)
	}
	return root
}
