// Package process manages the background processes kubectl-topology starts
// on this machine — the local control plane's components and an out-of-cluster
// agent: detached from the caller, recorded in a pid file, stopped through it,
// and their logs tailed for error messages.
package process

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// WritePID records pid in path.
func WritePID(path string, pid int) error {
	if err := os.WriteFile(path, []byte(strconv.Itoa(pid)), 0o600); err != nil {
		return fmt.Errorf("writing pid file %s: %w", path, err)
	}
	return nil
}

// ReadPID reads the pid recorded in path.
func ReadPID(path string) (int, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid, err == nil && pid > 0
}

// Running reports whether the process recorded in path runs, and its pid.
func Running(path string) (int, bool) {
	pid, ok := ReadPID(path)
	return pid, ok && alive(pid)
}

// Tail returns the last lines of a log file, for error messages.
func Tail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
