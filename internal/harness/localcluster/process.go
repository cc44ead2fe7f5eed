package localcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/kubectl-topology/kubectl-topology/internal/process"
)

// component is one started control-plane process, with its log file.
type component struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
}

func (c *Cluster) start(name string, args ...string) (*component, error) {
	return c.startWithEnv(name, nil, args...)
}

// startWithEnv starts BinDir/name with args, its environment this process's
// plus env.
func (c *Cluster) startWithEnv(name string, env []string, args ...string) (*component, error) {
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
	cmd.Env = append(os.Environ(), env...)
	if c.opts.GOGC != 0 && os.Getenv("GOGC") == "" {
		cmd.Env = append(cmd.Env, "GOGC="+strconv.Itoa(c.opts.GOGC))
	}
	// Detached, the control plane outlives make local-up and is out of the
	// way of terminal signals meant for a test run.
	process.Detach(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &component{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	if err := process.WritePID(filepath.Join(c.opts.Dir, name+".pid"), cmd.Process.Pid); err != nil {
		// A process that exits at once may be gone before it is recorded:
		// what it said is the error worth reporting, not the pid file's.
		select {
		case <-p.exited:
			return nil, p.exitedWhileStarting()
		case <-time.After(time.Second):
		}
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// exitedWhileStarting says the process ended before it was ready, with the
// end of its log.
func (p *component) exitedWhileStarting() error {
	return fmt.Errorf("%s exited while starting; its log is %s:\n%s", p.name, p.logPath, process.Tail(p.logPath, 20))
}

// waitHTTP polls url until it answers 200, the process exits or time runs out.
func (p *component) waitHTTP(ctx context.Context, url string, cfg *rest.Config, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-p.exited:
			return false, p.exitedWhileStarting()
		default:
		}
		last = healthy(ctx, url, cfg)
		return last == nil, nil
	})
	if err == nil || !wait.Interrupted(err) || ctx.Err() != nil {
		return err
	}
	return fmt.Errorf("%s did not become healthy within %s (%v); its log is %s:\n%s", p.name, timeout, last, p.logPath, process.Tail(p.logPath, 20))
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
