// Package localagent runs the agent out of cluster, as `install --local`
// does for a local control plane: a detached process with its pid file, log
// and certificates in one state directory, and the checks that tell whether
// such an agent serves the cluster. It knows no cobra.
package localagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/freeport"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/process"
	"github.com/kubectl-topology/kubectl-topology/internal/shard"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Options say how to start the agent out of cluster.
type Options struct {
	// Binary is the agent executable.
	Binary string
	// StateDir holds the pid file, the log and the webhook certificates.
	StateDir string
	// Kubeconfig is the agent's; empty for its own default.
	Kubeconfig string
	// AgentNamespace is where the agent keeps its lease and Secrets.
	AgentNamespace string
	// Shard is what the agent reconciles: its namespaces (all when none)
	// and watch filter.
	Shard shard.Shard
	// ReconcileOnly runs an agent without webhooks: another shard's agent
	// admits for every shard.
	ReconcileOnly bool
	// LeaderElect runs it as one of several replicas: one leads, each admits.
	LeaderElect bool
}

// Agent is an agent started out of cluster.
type Agent struct {
	// PID is its process.
	PID int
	// LogPath is where its output goes.
	LogPath string
	probe   string
	exited  chan error
}

// probePrefix marks the local agent's probe address in its pid file, and
// leaderElectMark an agent that runs with leader election.
const (
	probePrefix     = "probe="
	leaderElectMark = "leader-elect"
)

// Identity is how a local agent of process pid names itself in the
// heartbeat Lease: local replicas share the host's name, not their process.
func Identity(pid int) string {
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	return fmt.Sprintf("%s-pid%d", host, pid)
}

// PIDFile and LogFile are the local agent's files in stateDir.
func PIDFile(stateDir string) string { return filepath.Join(stateDir, "agent.pid") }

// LogFile is the local agent's log in stateDir.
func LogFile(stateDir string) string { return filepath.Join(stateDir, "agent.log") }

// Find is the local agent recorded in stateDir, if it still runs.
func Find(stateDir string) (process.Record, bool) { return process.Find(PIDFile(stateDir)) }

// Stop stops the local agent recorded in stateDir and its other replicas, if any.
func Stop(stateDir string) error {
	var errs []error
	for _, dir := range ReplicaDirs(stateDir) {
		if err := StopReplica(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// StopReplica stops the one agent recorded in dir, if it runs, and none of
// the replicas a state directory below it may hold.
func StopReplica(dir string) error { return process.Stop(PIDFile(dir)) }

// ReplicaDir is the state directory of replica i of the local agent whose
// state is in stateDir: replica 0 keeps stateDir itself, so that one
// replica is laid out as before replicas were.
func ReplicaDir(stateDir string, i int) string {
	if i == 0 {
		return stateDir
	}
	return filepath.Join(stateDir, fmt.Sprintf("replica-%d", i))
}

// ReplicaDirs are the state directories of every replica ever started from
// stateDir, running or not, in replica order.
func ReplicaDirs(stateDir string) []string {
	dirs := []string{stateDir}
	for i := 1; ; i++ {
		dir := ReplicaDir(stateDir, i)
		if _, err := os.Stat(dir); err != nil {
			return dirs
		}
		dirs = append(dirs, dir)
	}
}

// Elects says whether the running agent rec was started with leader
// election, as every one of several replicas must be.
func Elects(rec process.Record) bool {
	return slices.Contains(strings.Fields(rec.Extra), leaderElectMark)
}

// Start starts the agent detached, so that it outlives the command, on
// ports the kernel has free now: agents of several local control planes
// (the demo's and the tests', say) run side by side.
func Start(o Options) (*Agent, error) {
	if err := os.MkdirAll(o.StateDir, 0o700); err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	probe, webhook := "127.0.0.1:"+strconv.Itoa(ports[0]), ports[1]
	args := []string{"--local", "--agent-namespace", o.AgentNamespace,
		"--metrics-bind-address", "0", "--health-probe-bind-address", probe,
		"--webhook-port", strconv.Itoa(webhook), "--webhook-cert-dir", filepath.Join(o.StateDir, "certs")}
	if o.Kubeconfig != "" {
		args = append(args, "--kubeconfig", o.Kubeconfig)
	}
	if !o.Shard.AllNamespaces() {
		args = append(args, "--namespace", strings.Join(o.Shard.Namespaces, ","))
	}
	if o.Shard.WatchFilter != "" {
		args = append(args, "--watch-filter", o.Shard.WatchFilter)
	}
	if o.ReconcileOnly {
		args = append(args, "--webhooks=false")
	}
	extra := probePrefix + probe
	if o.LeaderElect {
		args = append(args, "--leader-elect")
		extra += " " + leaderElectMark
	}
	logPath := LogFile(o.StateDir)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(o.Binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	process.Detach(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", o.Binary, err)
	}
	if err := process.WritePID(PIDFile(o.StateDir), cmd.Process.Pid, extra); err != nil {
		return nil, err
	}
	a := &Agent{PID: cmd.Process.Pid, LogPath: logPath, probe: probe, exited: make(chan error, 1)}
	go func() { a.exited <- cmd.Wait() }()
	return a, nil
}

// WaitReady waits until the agent's probe says ready and its webhooks are
// registered in the cluster c reaches, or says why not: it exited (with the
// end of its log), or timeout passed.
func (a *Agent) WaitReady(ctx context.Context, c client.Client, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-a.exited:
			return false, fmt.Errorf("the agent exited (%v); its log %s ends:\n%s", err, a.LogPath, process.Tail(a.LogPath, 15))
		default:
		}
		return live.WebhooksRegistered(ctx, c) && readiness(a.probe) == nil, nil
	})
}

// Problem says why a running local agent does not serve the cluster c
// reaches, or nil: its probe must answer ready, its webhooks be registered,
// and the API server reach them (a server-side dry run through them).
func Problem(ctx context.Context, c client.Client, rec process.Record) error {
	if addr, ok := probeAddr(rec); ok {
		if err := readiness(addr); err != nil {
			return err
		}
	}
	if !live.WebhooksRegistered(ctx, c) {
		return fmt.Errorf("its webhooks are not registered in this cluster")
	}
	probe := &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "install-probe"}}
	err := c.Create(ctx, probe, client.DryRunAll)
	if err != nil && strings.Contains(err.Error(), "failed calling webhook") {
		return fmt.Errorf("the API server cannot call its webhooks: %w", err)
	}
	return nil
}

// State says whether the agent registered at webhookURL (out of cluster)
// really runs: something must answer there, and, when its pid file in
// stateDir says where its probes are, it must say it is ready. With several
// replicas it says each one's state, and which leads by leader, the
// heartbeat's holder.
func State(webhookURL, stateDir, leader string) string {
	u, err := url.Parse(webhookURL)
	if err != nil {
		return "registered at " + webhookURL + ", which is not a URL"
	}
	conn, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err != nil {
		return fmt.Sprintf("registered out of cluster at %s but NOT RUNNING: nothing answers there, so every Topology write is refused; start it with `kubectl topology install --local`", u.Host)
	}
	conn.Close()
	state := "running out of cluster at " + webhookURL
	var replicas, details []string
	for i, dir := range ReplicaDirs(stateDir) {
		rec, ok := Find(dir)
		if !ok {
			continue
		}
		d := fmt.Sprintf("pid %d", rec.PID)
		if addr, found := probeAddr(rec); found {
			if err := readiness(addr); err != nil {
				d += ", " + err.Error() + "; its log " + LogFile(dir) + " says why"
			} else {
				d += ", ready"
			}
		}
		if leader != "" && leader == Identity(rec.PID) {
			d += ", leads"
		}
		details = append(details, d)
		replicas = append(replicas, fmt.Sprintf("replica %d (%s)", i, d))
	}
	switch len(details) {
	case 0:
		return state
	case 1:
		return state + " (" + details[0] + ")"
	}
	return state + ": " + strings.Join(replicas, "; ")
}

// probeAddr is where the agent rec serves its probes, from its pid file.
func probeAddr(rec process.Record) (string, bool) {
	for _, f := range strings.Fields(rec.Extra) {
		if addr, ok := strings.CutPrefix(f, probePrefix); ok {
			return addr, true
		}
	}
	return "", false
}

// Binary finds the agent executable: explicit if given, else next to the
// running plugin, else on PATH.
func Binary(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	self, err := os.Executable()
	if err == nil {
		for _, name := range []string{"kubectl-topology-agent", "agent"} {
			p := filepath.Join(filepath.Dir(self), name)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
	}
	if p, err := exec.LookPath("kubectl-topology-agent"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no agent binary found next to this plugin or on PATH; build it (make build) and pass --agent-binary bin/agent")
}

// freePorts are n distinct loopback TCP ports nothing listens on at the
// moment, below the ephemeral range so no outgoing connection takes one
// before the agent binds it.
func freePorts(n int) ([]int, error) {
	ports, err := freeport.New().Ports(n)
	if err != nil {
		return nil, fmt.Errorf("finding free ports for the local agent: %w", err)
	}
	return ports, nil
}

// readiness asks an agent's probe endpoint whether it is ready; the error
// carries the checks that fail.
func readiness(addr string) error {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/readyz?verbose")
	if err != nil {
		return fmt.Errorf("its probe endpoint %s does not answer: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var failing []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "[-]") {
			failing = append(failing, strings.TrimPrefix(line, "[-]"))
		}
	}
	return fmt.Errorf("not ready: %s", strings.Join(failing, "; "))
}
