// Package process manages the background processes kubectl-topology starts
// on this machine — the local control plane's components and an out-of-cluster
// agent: detached from the caller, recorded in a pid file, stopped through it,
// and their logs tailed for error messages.
//
// A pid file records the process's identity (its start time and executable)
// beside its pid, and nothing is signalled unless the process that has the
// pid now is that same process: pids are reused, and a stale pid file must
// never make us kill something we did not start.
package process

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Record is what a pid file says of a process.
type Record struct {
	PID int
	// Identity is the process's start time and executable, from Identify.
	Identity string
	// Extra is what the caller recorded with it (e.g. the agent's probe address).
	Extra string
}

// WritePID records pid, its identity and extra in path.
func WritePID(path string, pid int, extra ...string) error {
	id, err := Identify(pid)
	if err != nil {
		return fmt.Errorf("recording process %d in %s: %w", pid, path, err)
	}
	data := strconv.Itoa(pid) + "\n" + id + "\n" + strings.Join(extra, " ") + "\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		return fmt.Errorf("writing pid file %s: %w", path, err)
	}
	return nil
}

// ReadPID reads the record in path.
func ReadPID(path string) (Record, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Record{}, false
	}
	lines := strings.SplitN(string(data), "\n", 3)
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || pid <= 0 {
		return Record{}, false
	}
	r := Record{PID: pid}
	if len(lines) > 1 {
		r.Identity = strings.TrimSpace(lines[1])
	}
	if len(lines) > 2 {
		r.Extra = strings.TrimSpace(lines[2])
	}
	return r, true
}

// Running reports whether the process recorded in path runs — the same
// process, not another that got its pid since — and its pid.
func Running(path string) (int, bool) {
	r, ok := Find(path)
	return r.PID, ok
}

// Find is Running with the whole record.
func Find(path string) (Record, bool) {
	r, ok := ReadPID(path)
	if !ok || r.Identity == "" {
		// Without an identity the process cannot be told from a stranger.
		return r, false
	}
	id, err := Identify(r.PID)
	return r, err == nil && id == r.Identity
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
