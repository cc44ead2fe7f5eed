//go:build windows

package plugin

import (
	"os"
	"os/exec"
)

// detach is a no-op on Windows; a local agent ends with its console.
func detach(*exec.Cmd) {}

// processAlive reports whether pid runs.
func processAlive(pid int) bool {
	_, err := os.FindProcess(pid)
	return err == nil
}

// terminate stops pid.
func terminate(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
