package localcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// process is one started component, with its log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
}

func (c *Cluster) start(name string, args ...string) (*process, error) {
	logDir := filepath.Join(c.opts.Dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(c.opts.BinDir, name), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A session of its own keeps a detached control plane alive after make
	// returns, and keeps terminal signals meant for a test run away from it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	if err := os.WriteFile(filepath.Join(c.opts.Dir, name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// waitHTTP polls url until it answers 200, the process exits or time runs out.
func (p *process) waitHTTP(ctx context.Context, url string, cfg *rest.Config, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited while starting; its log is %s:\n%s", p.name, p.logPath, tail(p.logPath, 20))
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if last = healthy(ctx, url, cfg); last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s did not become healthy within %s (%v); its log is %s:\n%s", p.name, timeout, last, p.logPath, tail(p.logPath, 20))
}

// healthy GETs url: with the admin's credentials when cfg is set, else
// without verifying the component's self-signed certificate.
func healthy(ctx context.Context, url string, cfg *rest.Config) error {
	var rt http.RoundTripper = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // loopback health probe of a self-signed component
	if cfg != nil {
		var err error
		if rt, err = rest.TransportFor(cfg); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}

func readPID(path string) (int, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid, err == nil && pid > 0
}

func pidAlive(path string) bool {
	pid, ok := readPID(path)
	return ok && syscall.Kill(pid, 0) == nil
}

// stopPIDFile sends SIGTERM, waits up to 20s for a clean exit, then kills.
func stopPIDFile(path string) error {
	pid, ok := readPID(path)
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
		if syscall.Kill(pid, 0) != nil {
			return nil
		}
		// A child of this process stays a zombie until reaped; its Wait
		// goroutine reaps it, so give it a moment.
		time.Sleep(100 * time.Millisecond)
	}
	return syscall.Kill(pid, syscall.SIGKILL)
}

func tail(path string, lines int) string {
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
