package localcluster

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestOwnNetworksHaveTheirOwnPorts: two processes RunInOwnNetwork started
// listen on the in-memory backend's fixed port at the same time, and each
// reaches its own listener over loopback: what lets the provider suites run
// side by side.
func TestOwnNetworksHaveTheirOwnPorts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a network namespace of its own needs root; the suites then take turns on the lock")
	}
	var stdins []io.WriteCloser
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNetworkHelperProcess$")
		cmd.Env = append(os.Environ(), "LOCALCLUSTER_NETWORK_HELPER=1")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		stdins = append(stdins, stdin)
		// Each answers once it listens and has reached itself; the first
		// still listens while the second does.
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if got := strings.TrimSpace(line); err != nil || got != "reached "+strconv.Itoa(inMemoryMuxPort) {
			t.Fatalf("helper %d said %q (%v), want it to have reached its own port %d", len(stdins), got, err, inMemoryMuxPort)
		}
	}
	for _, in := range stdins {
		_ = in.Close()
	}
}

// TestNetworkHelperProcess is TestOwnNetworksHaveTheirOwnPorts's helper,
// not a test of its own: in a network namespace of its own it listens on
// the fixed port, dials it, says so, and holds the port until stdin closes.
func TestNetworkHelperProcess(*testing.T) {
	if os.Getenv("LOCALCLUSTER_NETWORK_HELPER") != "1" {
		return
	}
	if code, ran := RunInOwnNetwork(); ran {
		os.Exit(code)
	}
	if !InOwnNetwork() {
		fmt.Println("not in a network namespace of its own")
		os.Exit(1)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(inMemoryMuxPort))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	_ = conn.Close()
	fmt.Println("reached", inMemoryMuxPort)
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}
