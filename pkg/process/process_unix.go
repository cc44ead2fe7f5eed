//go:build !windows

package process

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Detach starts cmd in a session of its own, so that it outlives the caller
// and terminal signals meant for the caller do not reach it.
func Detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// Stop ends the process recorded in path: SIGTERM, up to 20 s for a clean
// exit, then SIGKILL. The pid file is removed. Nothing recorded is no error.
func Stop(path string) error {
	pid, ok := ReadPID(path)
	if !ok {
		return nil
	}
	defer os.Remove(path)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	for range 200 {
		if !alive(pid) {
			return nil
		}
		// A child of the caller stays a zombie until its Wait reaps it.
		time.Sleep(100 * time.Millisecond)
	}
	return syscall.Kill(pid, syscall.SIGKILL)
}
