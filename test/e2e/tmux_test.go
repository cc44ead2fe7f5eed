package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// tmuxSession is the plugin running in a detached tmux session of its own
// server, read with capture-pane and driven with send-keys.
type tmuxSession struct {
	t      *testing.T
	socket string
}

func (s *tmuxSession) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen is what the pane shows now.
func (s *tmuxSession) screen() string { return s.tmux("capture-pane", "-p", "-t", "edit") }

func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	s.tmux(append([]string{"send-keys", "-t", "edit"}, keys...)...)
}

func (s *tmuxSession) waitFor(text string) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(s.screen(), text) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("the pane never showed %q; it shows:\n%s", text, s.screen())
}

// waitForRow waits for one line of the pane to hold all of parts.
func (s *tmuxSession) waitForRow(parts ...string) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, l := range strings.Split(s.screen(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(l, p)
			}
			if all {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("no line of the pane holds %q; it shows:\n%s", parts, s.screen())
}

// selected tells whether the row marked selected (">") shows label.
func (s *tmuxSession) selected(label string) bool {
	for _, l := range strings.Split(s.screen(), "\n") {
		if strings.HasPrefix(l, ">") && strings.Contains(l, label) {
			return true
		}
	}
	return false
}

// goTo presses Down until the selected row is label.
func (s *tmuxSession) goTo(label string) {
	s.t.Helper()
	for range 60 {
		if s.selected(label) {
			return
		}
		s.keys("Down")
		time.Sleep(30 * time.Millisecond)
	}
	s.t.Fatalf("no row %q; the pane shows:\n%s", label, s.screen())
}

// TestEditInTmux runs the real plugin in tmux, 80x24, against the local
// control plane and the agent, and uses the nested form: override a
// variable for one pool, add an item to a list variable, apply — and reads
// both back from the Topology on the server.
func TestEditInTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed: `make test` installs it (apt-get install tmux)")
	}
	startAgentBinary(t)
	ex := exampleClass(t, "tmux")
	createTopology(t, ex)
	ns := ex.Topology.Namespace
	waitFor(t, "the agent builds the cluster", func(ctx context.Context) (bool, error) {
		objs, err := fixture.Live(ctx, k8s, ns, "dev")
		return len(objs) > 10, err
	})
	s := &tmuxSession{t: t, socket: "kubectl-topology-e2e-" + ns}
	s.tmux("new-session", "-d", "-s", "edit", "-x", "80", "-y", "24",
		"env", "KUBECONFIG="+kubeconfig, "TERM=xterm-256color", pluginBin, "edit", "dev", "-n", ns)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", s.socket, "kill-server").Run() })

	s.waitFor("Edit Topology " + ns + "/dev")
	s.goTo("md-a (general) replicas")
	s.keys("C-o")
	s.waitFor("Override a variable for md-a")
	for range 5 { // maxPods is the fifth variable of the class
		if strings.Contains(s.screen(), "> maxPods") { // the picker's choice
			break
		}
		s.keys("Down")
		time.Sleep(30 * time.Millisecond)
	}
	s.keys("Enter")
	s.waitForRow(">", "override maxPods")
	s.keys("BSpace", "BSpace", "BSpace")
	s.keys("-l", "64")
	s.waitForRow(">", "override maxPods", "64")
	s.goTo("[1]")
	s.keys("C-n")
	s.waitForRow(">", "[2]")
	s.keys("-l", "10.0.0.9")
	s.waitFor("2 setting(s) changed")
	s.keys("C-s")
	s.waitFor("y/n")
	s.keys("y")
	s.waitFor("Applied to " + ns + "/dev")
	s.keys("C-c")

	got := &v1alpha2.Topology{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "dev"}, got); err != nil {
		t.Fatal(err)
	}
	md := got.Spec.Workers.MachineDeployments[0]
	if md.Name != "md-a" || md.Variables == nil || len(md.Variables.Overrides) != 1 || string(md.Variables.Overrides[0].Value.Raw) != "64" {
		t.Errorf("md-a on the server: %+v; want maxPods overridden to 64", md.Variables)
	}
	var sans []string
	for _, v := range got.Spec.Variables {
		if v.Name == "apiServerCertSANs" {
			if err := json.Unmarshal(v.Value.Raw, &sans); err != nil {
				t.Fatal(err)
			}
		}
	}
	if fmt.Sprint(sans) != "[localhost 127.0.0.1 10.0.0.9]" {
		t.Errorf("apiServerCertSANs on the server: %v", sans)
	}
}
