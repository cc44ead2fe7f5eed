//go:build !windows

package process

import (
	"os/exec"
	"path/filepath"
	"testing"
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
