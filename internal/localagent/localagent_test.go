package localagent

import (
	"fmt"
	"net"
	"testing"
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
