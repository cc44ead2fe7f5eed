package localagent

import (
	"fmt"
	"net"
	"os"
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
