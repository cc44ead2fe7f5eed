package e2e

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
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/kubectl-topology/kubectl-topology/test/fixture"
)

// screen collects what the editor draws on its terminal.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *screen) waitFor(t *testing.T, text string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		found := bytes.Contains(s.buf.Bytes(), []byte(text))
		s.mu.Unlock()
		if found {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Fatalf("the editor never showed %q; the terminal got:\n%q", text, s.buf.String())
}

// editableTopology creates the example Topology in a new namespace, with
// the agent running and the control plane stable at v1.33.1, and returns
// the namespace.
func editableTopology(t *testing.T) string {
	t.Helper()
	startAgentBinary(t)
	ex := exampleClass(t, "edit")
	createTopology(t, ex)
	ns := ex.Topology.Namespace
	waitFor(t, "the Cluster exists", func(ctx context.Context) (bool, error) {
		objs, err := fixture.Live(ctx, k8s, ns, "dev")
		return len(objs) > 10, err
	})
	setControlPlaneVersion(t, ns, "v1.33.1")
	waitFor(t, "the control plane is stable", func(context.Context) (bool, error) {
		return getTopologyStatusPhase(t, ns) == "UpToDate", nil
	})
	return ns
}

// TestEditInTerminal runs `kubectl topology edit` on a real pseudo-terminal,
// as a user at a keyboard would: change the version, read the rollout
// preview, apply, confirm, quit — and the Topology on the server has changed.
func TestEditInTerminal(t *testing.T) {
	ns := editableTopology(t)
	cmd := exec.Command(pluginBin, "edit", "dev", "-n", ns)
	cmd.Env = terminalEnv("TERM=xterm-256color")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	scr := &screen{}
	go func() { _, _ = io.Copy(scr, tty) }()
	keys := func(s string) {
		if _, err := tty.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Millisecond)
	}

	scr.waitFor(t, "Edit Topology "+ns+"/dev")
	for range len("v1.33.1") {
		keys("\x7f") // backspace
	}
	keys("v1.34.0")
	scr.waitFor(t, "1. control plane")
	keys("\x13") // ctrl+s
	scr.waitFor(t, "y/n")
	keys("y")
	scr.waitFor(t, "Applied to "+ns+"/dev")
	keys("\x03") // ctrl+c quits
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("edit exited with %v", err)
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("edit did not quit on ctrl+c")
	}
	if v := getVersion(t, ns); v != "v1.34.0" {
		t.Errorf("the Topology on the server has version %s after the edit, want v1.34.0", v)
	}
	scr.waitFor(t, fmt.Sprintf("Topology %s/dev updated.", ns))
	if !colour.Match(scr.bytes()) {
		t.Error("the editor drew no colour on a 256-colour terminal; the NO_COLOR check below would prove nothing")
	}

	// NO_COLOR: the same editor, opened and quit, draws no colour at all.
	plain := exec.Command(pluginBin, "edit", "dev", "-n", ns)
	plain.Env = terminalEnv("TERM=xterm-256color", "NO_COLOR=1")
	ptty, err := pty.StartWithSize(plain, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer ptty.Close()
	plainScr := &screen{}
	go func() { _, _ = io.Copy(plainScr, ptty) }()
	plainScr.waitFor(t, "Edit Topology "+ns+"/dev")
	if _, err := ptty.Write([]byte("\x03")); err != nil {
		t.Fatal(err)
	}
	if err := plain.Wait(); err != nil {
		t.Fatalf("edit with NO_COLOR exited with %v", err)
	}
	if m := colour.Find(plainScr.bytes()); m != nil {
		t.Errorf("with NO_COLOR the editor still drew colour: %q", m)
	}
}

// TestStatusWatchInTerminalGivesUp runs `status --watch --timeout` on a
// pseudo-terminal, where it draws the live view: a rollout that cannot
// finish (no provider here upgrades the control plane) is left after the
// timeout with the reason, exit 1, and the terminal's view of the rollout.
func TestStatusWatchInTerminalGivesUp(t *testing.T) {
	ns := editableTopology(t)
	mustPlugin(t, "upgrade", "dev", "-n", ns, "--version", "v1.34.0", "--yes")
	cmd := exec.Command(pluginBin, "status", "dev", "-n", ns, "--watch", "--interval", "200ms", "--timeout", "2s")
	cmd.Env = terminalEnv("TERM=xterm-256color")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	scr := &screen{}
	go func() { _, _ = io.Copy(scr, tty) }()
	scr.waitFor(t, "v1.33.1 → v1.34.0")
	scr.waitFor(t, "Topology "+ns+"/dev did not settle within 2s")
	scr.waitFor(t, "The rollout goes on")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("status --watch --timeout exited with %v, want exit status 1", err)
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("status --watch --timeout 2s did not exit")
	}
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

func (s *screen) bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.buf.Bytes()...)
}

func getTopologyStatusPhase(t *testing.T, ns string) string {
	t.Helper()
	out, _, err := plugin(t, "", "get", "dev", "-n", ns, "-o", "jsonpath={.status.controlPlane.phase}")
	if err != nil {
		return ""
	}
	return out
}
