package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
)

func TestAgentRefusesBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--local", "--kubeconfig", kubeconfig, "--concurrency", "0"}, "--concurrency must be at least 1"},
		{[]string{"--local", "--kubeconfig", kubeconfig, "--webhook-port", "70000"}, "--webhook-port must be between 1 and 65535"},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig"}, "loading kubeconfig"},
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := exec.Command(agentBin, tc.args...).CombinedOutput()
			if err == nil {
				t.Fatalf("agent %v exited 0", tc.args)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output does not say %q:\n%s", tc.want, out)
			}
		})
	}
}

// waitFor is fixture.EventuallyEvery with this suite's pace and bound.
func waitFor(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	fixture.EventuallyEvery(t, 100*time.Millisecond, 90*time.Second, what, cond)
}
