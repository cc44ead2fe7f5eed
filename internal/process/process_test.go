//go:build !windows

package process

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestDetachRecordStop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sleep.pid")
	if _, up := Running(path); up {
		t.Fatal("nothing recorded counts as running")
	}
	cmd := exec.Command("sleep", "60")
	Detach(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }() // reap it, as the callers do
	if err := WritePID(path, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if pid, up := Running(path); !up || pid != cmd.Process.Pid {
		t.Fatalf("Running = %d %v, want %d true", pid, up, cmd.Process.Pid)
	}
	if err := Stop(path); err != nil {
		t.Fatal(err)
	}
	if _, up := Running(path); up {
		t.Error("still running after Stop")
	}
	if err := Stop(path); err != nil {
		t.Errorf("stopping again: %v", err)
	}
}

// A pid file whose pid now belongs to another process (pids are reused), or
// that records no identity at all, must never get that process signalled.
func TestStopLeavesStrangersAlone(t *testing.T) {
	dir := t.TempDir()
	stranger := exec.Command("sleep", "60")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = stranger.Wait(); close(exited) }()
	t.Cleanup(func() { _ = stranger.Process.Kill() })
	pid := stranger.Process.Pid
	files := map[string]string{
		"reused.pid":  fmt.Sprintf("%d\nstart=1 exe=/usr/bin/kube-apiserver\n\n", pid),
		"old.pid":     fmt.Sprintf("%d", pid),
		"garbage.pid": "not a pid",
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, up := Running(path); up {
			t.Errorf("%s: Running says the stranger is ours", name)
		}
		if err := Stop(path); err != nil {
			t.Errorf("%s: Stop: %v", name, err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) && name != "garbage.pid" {
			t.Errorf("%s: the stale pid file is still there", name)
		}
	}
	select {
	case <-exited:
		t.Fatal("Stop signalled a process it did not start")
	case <-time.After(200 * time.Millisecond):
	}
}
