//go:build windows

package process

import (
	"os"
	"os/exec"
)

// Detach is a no-op on Windows: the process ends with its console.
func Detach(*exec.Cmd) {}

func alive(pid int) bool {
	_, err := os.FindProcess(pid)
	return err == nil
}

// Stop kills the process recorded in path and removes the pid file.
func Stop(path string) error {
	pid, ok := ReadPID(path)
	if !ok {
		return nil
	}
	defer os.Remove(path)
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	return p.Kill()
}
