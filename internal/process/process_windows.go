//go:build windows

package process

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Detach is a no-op on Windows: the process ends with its console.
func Detach(*exec.Cmd) {}

// Identify names the executable of process pid, from tasklist; Windows does
// not reuse a pid while its process runs.
func Identify(pid int) (string, error) {
	out, err := exec.Command("tasklist", "/FI", fmt.Sprintf("PID eq %d", pid), "/FO", "CSV", "/NH").Output()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf(`"%d"`, pid)) {
		return "", fmt.Errorf("process %d does not exist", pid)
	}
	return strings.SplitN(strings.TrimSpace(string(out)), ",", 2)[0], nil
}

// Stop kills the process recorded in path, if it is still the process that
// was recorded, and removes the pid file.
func Stop(path string) error {
	r, ok := ReadPID(path)
	if !ok {
		return nil
	}
	defer os.Remove(path)
	if _, same := Find(path); !same {
		return nil
	}
	p, err := os.FindProcess(r.PID)
	if err != nil {
		return nil
	}
	return p.Kill()
}

// StopPID kills the process pid, for one no pid file records.
func StopPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	return p.Kill()
}

// Parent is not read on Windows: 0.
func Parent(int) int { return 0 }
