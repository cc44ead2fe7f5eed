package plugin

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkPlanCommand is `plan --output-directory` in-process on the
// in-repo quick-start-sized upstream case: reading, defaulting, compiling
// the class, the desired state, the plan and writing the files. Process
// start-up is not in it; compare whole processes with hyperfine.
//
// Each plan writes into a new directory, as BenchmarkPlanQuickStart's
// processes do: rewriting the files of an earlier plan costs ext4 a flush
// per truncated file, about 5 ms a plan here, which would hide the plan.
func BenchmarkPlanCommand(b *testing.B) {
	base, n := b.TempDir(), 0
	for b.Loop() {
		n++
		dir := filepath.Join(base, strconv.Itoa(n))
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
