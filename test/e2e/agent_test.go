package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
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

func waitFor(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil && ctx.Err() == nil {
			last = err // keep the last real state, not the deadline's error
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out waiting until %s (last: %v)", what, last)
	}
}
