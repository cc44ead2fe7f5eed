//go:build !windows

package process

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Detach starts cmd in a session of its own, so that it outlives the caller
// and terminal signals meant for the caller do not reach it.
func Detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// Identify is what tells process pid from any later process with the same
// pid: its start time (in clock ticks since boot) and its executable.
func Identify(pid int) (string, error) {
	if fields, err := statFields(pid); err == nil {
		if len(fields) < 20 {
			return "", fmt.Errorf("unexpected /proc/%d/stat", pid)
		}
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		return "start=" + fields[19] + " exe=" + strings.TrimSuffix(exe, " (deleted)"), nil
	}
	// No /proc (macOS): ps gives the start time and the command.
	out, err := exec.Command("ps", "-o", "lstart=", "-o", "comm=", "-p", fmt.Sprint(pid)).Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return "", fmt.Errorf("process %d does not exist", pid)
	}
	return strings.Join(strings.Fields(string(out)), " "), nil
}

// statFields are the fields of /proc/PID/stat after the command name, which
// is in parentheses and may hold spaces: state, ppid, ...
func statFields(pid int) ([]string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])), nil
}

// Parent is pid's parent process, or 0 where it cannot be read.
func Parent(pid int) int {
	fields, err := statFields(pid)
	if err != nil || len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// Stop ends the process recorded in path: SIGTERM, up to 20 s for a clean
// exit, then SIGKILL. The pid file is removed. Nothing recorded, or a pid
// that now belongs to another process, is no error: nothing is signalled.
func Stop(path string) error {
	r, ok := ReadPID(path)
	if !ok {
		return nil
	}
	defer os.Remove(path)
	if _, same := Find(path); !same {
		return nil // gone, or its pid reused by a process we did not start
	}
	return stop(r)
}

// StopPID ends the process pid as Stop does, for one no pid file records:
// a component restarted by hand.
func StopPID(pid int) error {
	id, err := Identify(pid)
	if err != nil {
		return nil // gone already
	}
	return stop(Record{PID: pid, Identity: id})
}

func stop(r Record) error {
	if err := syscall.Kill(r.PID, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	// A stopped process (SIGSTOP, a debugger) handles SIGTERM only once continued.
	_ = syscall.Kill(r.PID, syscall.SIGCONT)
	if gone(r, 200) {
		return nil
	}
	if err := syscall.Kill(r.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	// SIGKILL is delivered asynchronously: return once it is gone, so that a
	// caller replacing the process never finds the old one still there.
	if !gone(r, 50) {
		return fmt.Errorf("process %d did not exit after SIGKILL", r.PID)
	}
	return nil
}

// gone waits up to tries tenths of a second for the process of r to exit.
// A zombie (exited, not yet reaped) counts as gone: it has no executable.
func gone(r Record, tries int) bool {
	for range tries {
		if id, err := Identify(r.PID); err != nil || id != r.Identity || !alive(r.PID) {
			return true
		}
		// A child of the caller stays a zombie until its Wait reaps it.
		time.Sleep(100 * time.Millisecond)
	}
	return false
}
