package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
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

// TestEditInTerminal runs `kubectl topology edit` on a real pseudo-terminal,
// as a user at a keyboard would: change the version, read the rollout
// preview, apply, confirm, quit — and the Topology on the server has changed.
func TestEditInTerminal(t *testing.T) {
	ctx := context.Background()
	startAgentBinary(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "edit-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	ex, err := fixture.LoadExample(ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.CreateClass(ctx, k8s); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, ex.Topology.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	// Leave no Topology behind for the tests after this one; runs before the
	// agent stops (cleanups run last-registered first).
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, ex.Topology.DeepCopy())
		waitFor(t, "the Topology is deleted", func(ctx context.Context) (bool, error) {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(ex.Topology), &v1alpha1.Topology{})
			return apierrors.IsNotFound(err), err
		})
	})
	waitFor(t, "the Cluster exists", func(ctx context.Context) (bool, error) {
		objs, err := fixture.Live(ctx, k8s, ns.Name, "dev")
		return len(objs) > 10, err
	})
	setControlPlaneVersion(t, ns.Name, "v1.33.1")
	waitFor(t, "the control plane is stable", func(context.Context) (bool, error) {
		return getTopologyStatusPhase(t, ns.Name) == "UpToDate", nil
	})

	cmd := exec.Command(pluginBin, "edit", "dev", "-n", ns.Name)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "TERM=xterm-256color")
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

	scr.waitFor(t, "Edit Topology "+ns.Name+"/dev")
	for range len("v1.33.1") {
		keys("\x7f") // backspace
	}
	keys("v1.34.0")
	scr.waitFor(t, "1. control plane")
	keys("\x13") // ctrl+s
	scr.waitFor(t, "y/n")
	keys("y")
	scr.waitFor(t, "Applied to "+ns.Name+"/dev")
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
	if v := getVersion(t, ns.Name); v != "v1.34.0" {
		t.Errorf("the Topology on the server has version %s after the edit, want v1.34.0", v)
	}
	scr.waitFor(t, fmt.Sprintf("Topology %s/dev updated.", ns.Name))
}

func getTopologyStatusPhase(t *testing.T, ns string) string {
	t.Helper()
	out, _, err := plugin(t, "", "get", "dev", "-n", ns, "-o", "jsonpath={.status.controlPlane.phase}")
	if err != nil {
		return ""
	}
	return out
}
