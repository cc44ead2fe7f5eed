package capi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
	"github.com/kubectl-topology/kubectl-topology/test/fixture"
)

// screen collects what the editor draws on its terminal.
type screen struct {
	fixture.SyncBuffer
}

func (s *screen) waitFor(t *testing.T, text string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if bytes.Contains(s.Bytes(), []byte(text)) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the editor never showed %q; the terminal got:\n%q", text, s.String())
}

// terminalRun is the plugin running on a pseudo-terminal of its own, with
// everything it draws collected.
type terminalRun struct {
	t   *testing.T
	cmd *exec.Cmd
	tty *os.File
	*screen
}

// runInTerminal starts the plugin with args on a cols×30 pseudo-terminal,
// in a user's terminal environment plus env.
func runInTerminal(t *testing.T, cols uint16, env []string, args ...string) *terminalRun {
	t.Helper()
	cmd := exec.Command(pluginBin, args...)
	cmd.Env = terminalEnv(append([]string{"TERM=xterm-256color"}, env...)...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: cols})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tty.Close() })
	r := &terminalRun{t: t, cmd: cmd, tty: tty, screen: &screen{}}
	go func() { _, _ = io.Copy(r.screen, tty) }()
	return r
}

// keys types s, and gives the program a moment to draw.
func (r *terminalRun) keys(s string) {
	r.t.Helper()
	if _, err := r.tty.Write([]byte(s)); err != nil {
		r.t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
}

// exit waits for the program to end and returns how it ended; it fails the
// test if that takes over 20 s.
func (r *terminalRun) exit() error {
	r.t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		_ = r.cmd.Process.Kill()
		r.t.Fatalf("%v did not exit", r.cmd.Args[1:])
		return nil
	}
}

// TestEditAndFollowInTerminal runs `kubectl topology edit` on a real
// pseudo-terminal, as a user at a keyboard would: change the version, read
// the rollout preview, apply, confirm, quit — the Topology on the server has
// changed. Then `status --watch` follows the upgrade Cluster API carries out
// and, with a timeout shorter than the rollout, gives up saying why.
func TestEditAndFollowInTerminal(t *testing.T) {
	t.Parallel()
	ns := inMemoryCluster(t, "terminal", func(topo *v1alpha2.Topology) {
		topo.Spec.ControlPlane.Replicas = ptr.To[int32](1)
		topo.Spec.Workers.MachineDeployments = topo.Spec.Workers.MachineDeployments[:1]
		topo.Spec.Workers.MachineDeployments[0].Replicas = ptr.To[int32](1)
	})
	settle(t, ns, "dev", 4*time.Minute)

	edit := runInTerminal(t, 100, nil, "edit", "dev", "-n", ns)
	editVersion(t, edit, "Edit Topology "+ns+"/dev", "v1.33.1", "v1.34.0", ns)
	if v := topologyVersion(t, ns); v != "v1.34.0" {
		t.Errorf("the Topology on the server has version %s after the edit, want v1.34.0", v)
	}
	edit.waitFor(t, fmt.Sprintf("Topology %s/dev updated.", ns))
	if !colour.Match(edit.Bytes()) {
		t.Error("the editor drew no colour on a 256-colour terminal; the NO_COLOR check below would prove nothing")
	}

	status := runInTerminal(t, 120, nil, "status", "dev", "-n", ns, "--watch", "--interval", "200ms", "--timeout", "2s")
	status.waitFor(t, "v1.33.1 → v1.34.0")
	status.waitFor(t, "Topology "+ns+"/dev did not settle within 2s")
	status.waitFor(t, "The rollout goes on")
	var exit *exec.ExitError
	if err := status.exit(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("status --watch --timeout exited with %v, want exit status 1", err)
	}

	// NO_COLOR: the same editor, opened and quit, draws no colour at all.
	plain := runInTerminal(t, 100, []string{"NO_COLOR=1"}, "edit", "dev", "-n", ns)
	plain.waitFor(t, "Edit Topology "+ns+"/dev")
	plain.keys("\x03")
	if err := plain.exit(); err != nil {
		t.Fatalf("edit with NO_COLOR exited with %v", err)
	}
	if m := colour.Find(plain.Bytes()); m != nil {
		t.Errorf("with NO_COLOR the editor still drew colour: %q", m)
	}
	settle(t, ns, "dev", 4*time.Minute)
}

// terminalEnv is the environment of a user at a terminal: this test's own,
// less what decides colour (termenv draws none when CI is set, as it is on CI
// machines), plus the kubeconfig and extra.
func terminalEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "CI", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "COLORTERM", "TERM", "KUBECONFIG":
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "KUBECONFIG="+kubeconfig), extra...)
}

// colour matches an SGR sequence that sets a foreground or background colour.
var colour = regexp.MustCompile(`\x1b\[[0-9;]*?(3[0-7]|9[0-7]|4[0-7]|10[0-7]|[34]8;[25];[0-9;]+)m`)

// TestEditUpstreamClusterInTerminal edits a gate-on upstream Cluster's
// topology in the editor on a pseudo-terminal — the version changed, the
// rollout previewed, applied, confirmed — and Cluster API's own topology
// controller then rolls every machine to the new version.
func TestEditUpstreamClusterInTerminal(t *testing.T) {
	t.Parallel()
	ns := upstreamCluster(t, "edit-upstream", func(topo map[string]any) {
		topo["version"] = "v1.32.3"
		topo["controlPlane"] = map[string]any{"replicas": int64(1)}
		workers := topo["workers"].(map[string]any)
		md := workers["machineDeployments"].([]any)[0].(map[string]any)
		md["replicas"] = int64(1)
		workers["machineDeployments"] = []any{md}
	})
	mustPlugin(t, "status", "cluster/dev", "-n", ns, "--watch", "--interval", "1s", "--timeout", "4m")

	edit := runInTerminal(t, 100, nil, "edit", "cluster/dev", "-n", ns)
	editVersion(t, edit, "Edit Cluster "+ns+"/dev", "v1.32.3", "v1.33.1", ns)
	edit.waitFor(t, fmt.Sprintf("Cluster %s/dev updated. Follow it with: kubectl topology status cluster/dev", ns))
	if v, _, _ := unstructured.NestedString(onlyCluster(t, ns).Object, "spec", "topology", "version"); v != "v1.33.1" {
		t.Fatalf("the Cluster's spec.topology.version is %s after the edit, want v1.33.1", v)
	}
	eventually(t, 5*time.Minute, "upstream rolls every machine to v1.33.1", func(ctx context.Context) (bool, error) {
		ms, err := machines(ctx, ns)
		if err != nil {
			return false, err
		}
		cp, cpAll := count(ms, "", "v1.33.1")
		md, mdAll := count(ms, "md-a", "v1.33.1")
		return cp == 1 && cpAll == 1 && md == 1 && mdAll == 1, fmt.Errorf("control plane %d/%d, md-a %d/%d at v1.33.1", cp, cpAll, md, mdAll)
	})
}

// editVersion types a new version over the old one in the editor titled
// title, saves, confirms and quits, as a user at the terminal would.
func editVersion(t *testing.T, edit *terminalRun, title, from, to, ns string) {
	t.Helper()
	edit.waitFor(t, title)
	for range len(from) {
		edit.keys("\x7f") // backspace
	}
	edit.keys(to)
	edit.waitFor(t, "1. control plane")
	edit.keys("\x13") // ctrl+s
	edit.waitFor(t, "y/n")
	edit.keys("y")
	edit.waitFor(t, "Applied to "+ns+"/dev")
	edit.keys("\x03") // ctrl+c quits
	if err := edit.exit(); err != nil {
		t.Fatalf("edit exited with %v", err)
	}
}
