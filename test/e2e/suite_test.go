// Package e2e drives the real agent binary, as a user runs it, against a real
// control plane: the local one by default, or any cluster KUBECONFIG names
// when TOPOLOGY_E2E_KUBECONFIG is set (kind, where images can be pulled).
package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubectl-topology/kubectl-topology/internal/agent"
	"github.com/kubectl-topology/kubectl-topology/internal/freeport"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/localcluster"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/scale"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

var (
	kubeconfig string
	restConfig *rest.Config
	k8s        client.Client
	agentBin   string
	pluginBin  string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("TOPOLOGY_E2E_KUBECONFIG") == "" && fixture.SkipWithoutBinaries(false) {
		return m.Run()
	}
	ctx := context.Background()
	// The test's own client logs the API server's warnings (a Topology
	// before its class) through controller-runtime: not worth a stack trace.
	ctrllog.SetLogger(logr.Discard())
	bins, _, remove, err := fixture.SuiteBinaries("e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer remove()
	agentBin, pluginBin = bins.Agent, bins.Plugin
	kubeconfig = os.Getenv("TOPOLOGY_E2E_KUBECONFIG")
	if kubeconfig == "" {
		c, err := localcluster.StartForTests(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() { _ = c.Cleanup() }()
		kubeconfig = c.Kubeconfig
	}
	if restConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	restConfig.QPS, restConfig.Burst = 200, 400
	if k8s, err = client.New(restConfig, client.Options{Scheme: agent.Scheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// agentProcess is the agent binary running out of cluster (--local).
type agentProcess struct {
	cmd                   *exec.Cmd
	probePort, metricPort int
	log                   *os.File
}

func freePort(tb testing.TB) int {
	tb.Helper()
	ports, err := freeport.New().Ports(1)
	if err != nil {
		tb.Fatal(err)
	}
	return ports[0]
}

// startAgentBinary starts the agent and waits for /readyz.
func startAgentBinary(tb testing.TB, extra ...string) *agentProcess {
	tb.Helper()
	p := &agentProcess{probePort: freePort(tb), metricPort: freePort(tb)}
	args := append([]string{
		"--local", "--kubeconfig", kubeconfig,
		"--webhook-port", strconv.Itoa(freePort(tb)),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", p.probePort),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", p.metricPort),
		// Plain HTTP, so the tests read metrics without a token; the secure
		// endpoint has a test of its own.
		"--metrics-secure=false",
		"--webhook-cert-dir", tb.TempDir(),
	}, extra...)
	var err error
	if p.log, err = os.CreateTemp(os.Getenv("TOPOLOGY_E2E_LOG_DIR"), "agent-*.log"); err != nil {
		tb.Fatal(err)
	}
	p.cmd = exec.Command(agentBin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.stop(tb) })
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", p.probePort))
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		tb.Fatalf("agent did not become ready; log %s:\n%s", p.log.Name(), tailFile(p.log.Name()))
	}
	return p
}

// kill ends the agent abruptly, as a crashed or evicted Pod would.
func (p *agentProcess) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

func (p *agentProcess) stop(tb testing.TB) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		tb.Errorf("agent did not stop within 20s of SIGTERM")
		p.kill()
	}
}

// metrics scrapes the agent's metrics endpoint.
func (p *agentProcess) metrics(tb testing.TB) scale.Metrics {
	tb.Helper()
	m, err := scale.Scrape(context.Background(), fmt.Sprintf("http://127.0.0.1:%d/metrics", p.metricPort))
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// metric sums a Prometheus metric from the agent's metrics endpoint over the
// series whose labels contain every filter.
func (p *agentProcess) metric(tb testing.TB, name string, filters ...string) float64 {
	tb.Helper()
	return p.metrics(tb).Sum(name, filters...)
}

// peakRSS reads the agent's peak resident set size in KiB.
func (p *agentProcess) peakRSS(tb testing.TB) int64 {
	tb.Helper()
	u, err := scale.ReadUsage(p.cmd.Process.Pid)
	if err != nil {
		tb.Fatal(err)
	}
	return u.PeakRSS / 1024
}

func tailFile(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// exampleClass creates a namespace named from prefix, with the example's
// templates and class in it, and returns the example for that namespace.
func exampleClass(tb testing.TB, prefix string) fixture.Example {
	tb.Helper()
	ex, err := fixture.ClassInNewNamespace(context.Background(), k8s, "docker", prefix)
	if err != nil {
		tb.Fatal(err)
	}
	return ex
}

// createTopology creates the example's Topology and, when the test ends,
// deletes it and waits until the agent has let it go. Call it once the
// agents that handle the deletion run: cleanups run last-registered first.
func createTopology(t *testing.T, ex fixture.Example) {
	t.Helper()
	ctx := context.Background()
	if err := k8s.Create(ctx, ex.Topology.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, ex.Topology.DeepCopy())
		waitFor(t, "the Topology is deleted", func(ctx context.Context) (bool, error) {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(ex.Topology), &v1alpha2.Topology{})
			return apierrors.IsNotFound(err), err
		})
	})
}

// scaleMD sets md-a's replicas, once the webhooks admit the change.
func scaleMD(t *testing.T, ex fixture.Example, replicas int32) {
	t.Helper()
	waitFor(t, "md-a's replicas are set", func(ctx context.Context) (bool, error) {
		topo := &v1alpha2.Topology{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ex.Topology), topo); err != nil {
			return false, err
		}
		topo.Spec.Workers.MachineDeployments[0].Replicas = &replicas
		err := k8s.Update(ctx, topo)
		return err == nil, err
	})
}

// mdReplicas is md-a's MachineDeployment's spec.replicas, or -1.
func mdReplicas(ctx context.Context, t *testing.T, ex fixture.Example) int64 {
	t.Helper()
	objs, err := fixture.Live(ctx, k8s, ex.Topology.Namespace, ex.Topology.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "MachineDeployment" && o.GetLabels()["topology.cluster.x-k8s.io/deployment-name"] == "md-a" {
			n, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
			return n
		}
	}
	return -1
}

// exampleIn makes a namespace named from prefix and loads the example class,
// templates and Topology into it (nothing is created but the namespace).
func exampleIn(tb testing.TB, prefix string) fixture.Example {
	tb.Helper()
	ex, err := fixture.ExampleInNewNamespace(context.Background(), k8s, "docker", prefix)
	if err != nil {
		tb.Fatal(err)
	}
	return ex
}
