package plugin

import (
	"os"
	"testing"
)

// BenchmarkPlanCommand is `plan --output-directory` in-process on the
// in-repo quick-start-sized upstream case: reading, defaulting, compiling
// the class, the desired state, the plan and writing the files. Process
// start-up is not in it; compare whole processes with hyperfine.
func BenchmarkPlanCommand(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		if _, stderr, code := runPlugin(b, "plan", "-f", planBenchInput(), "--output-directory", dir); code != 0 {
			b.Fatal(stderr)
		}
	}
}

func planBenchInput() string {
	if d := os.Getenv("PLAN_BENCH_DIR"); d != "" {
		return d
	}
	return "../../testdata/parity/docker-kubeadm"
}
