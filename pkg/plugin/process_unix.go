//go:build !windows

package plugin

import (
	"os/exec"
	"syscall"
)

// detach makes a started process outlive this command.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }

// processAlive reports whether pid runs.
func processAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// terminate asks pid to stop.
func terminate(pid int) error { return syscall.Kill(pid, syscall.SIGTERM) }
