package localagent

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/internal/process"
)

// TestFreeLocalPortsAreDistinctAndFree: the local agent's probe and webhook
// ports differ and can be listened on, so a second local agent (the demo's
// beside the tests') does not fail on a port the first holds.
func TestFreeLocalPortsAreDistinctAndFree(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	ports, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 2 || ports[0] == ports[1] {
		t.Fatalf("ports %v: want two distinct ones", ports)
	}
	for _, p := range ports {
		if p == busy.Addr().(*net.TCPAddr).Port {
			t.Errorf("port %d is held by another listener", p)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Errorf("port %d cannot be listened on: %v", p, err)
			continue
		}
		l.Close()
	}
}

// TestReplicasHaveTheirOwnStateAndSayTheyElect: replica 0 keeps the state
// directory itself (one agent is laid out as before), others a directory
// each, listed while they exist; a pid file says whether its agent runs
// with leader election, as each of several must.
func TestReplicasHaveTheirOwnStateAndSayTheyElect(t *testing.T) {
	state := t.TempDir()
	if got := ReplicaDir(state, 0); got != state {
		t.Errorf("replica 0 keeps %s, want the state directory %s", got, state)
	}
	if got := ReplicaDirs(state); !slices.Equal(got, []string{state}) {
		t.Errorf("replicas before any second one: %v", got)
	}
	for i := 1; i <= 2; i++ {
		if err := os.MkdirAll(ReplicaDir(state, i), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{state, filepath.Join(state, "replica-1"), filepath.Join(state, "replica-2")}
	if got := ReplicaDirs(state); !slices.Equal(got, want) {
		t.Errorf("replicas %v, want %v", got, want)
	}
	if !Elects(process.Record{Extra: "probe=127.0.0.1:1 leader-elect"}) || Elects(process.Record{Extra: "probe=127.0.0.1:1"}) {
		t.Error("Elects does not read the pid file's leader-elect mark")
	}
	if addr, ok := probeAddr(process.Record{Extra: "probe=127.0.0.1:7 leader-elect"}); !ok || addr != "127.0.0.1:7" {
		t.Errorf("probe address %q (%v), want 127.0.0.1:7", addr, ok)
	}
	if a, b := Identity(10), Identity(11); a == b || !strings.HasSuffix(a, "-pid10") {
		t.Errorf("identities %q and %q: local replicas must differ by process", a, b)
	}
}

// TestStateListsEachReplicaAndTheLeader: `version` of a local agent with
// two replicas says each one's process and readiness, and which one leads
// (the heartbeat's holder); one agent reads as it did before replicas.
func TestStateListsEachReplicaAndTheLeader(t *testing.T) {
	webhook := httptest.NewServer(http.NotFoundHandler())
	defer webhook.Close()
	ready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer ready.Close()
	notReady := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintln(w, "[-]webhook-server failed: webhook certificate not ready")
	}))
	defer notReady.Close()
	state := t.TempDir()
	var pids []int
	for i, probe := range []string{ready.Listener.Addr().String(), notReady.Listener.Addr().String()} {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		pids = append(pids, cmd.Process.Pid)
		dir := ReplicaDir(state, i)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := process.WritePID(PIDFile(dir), cmd.Process.Pid, probePrefix+probe, leaderElectMark); err != nil {
			t.Fatal(err)
		}
	}
	got := State(webhook.URL, state, Identity(pids[0]))
	for _, want := range []string{
		fmt.Sprintf("replica 0 (pid %d, ready, leads)", pids[0]),
		fmt.Sprintf("replica 1 (pid %d, not ready: webhook-server failed", pids[1]),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("State says %q, which lacks %q", got, want)
		}
	}
	if err := StopReplica(ReplicaDir(state, 1)); err != nil {
		t.Fatal(err)
	}
	if got, want := State(webhook.URL, state, ""), fmt.Sprintf("running out of cluster at %s (pid %d, ready)", webhook.URL, pids[0]); got != want {
		t.Errorf("one agent: State says %q, want %q", got, want)
	}
}
