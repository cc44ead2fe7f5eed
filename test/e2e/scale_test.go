package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/controller"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	topologywebhook "github.com/kubectl-topology/kubectl-topology/internal/webhook"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// BenchmarkThousandTopologies creates TOPOLOGY_SCALE (default 1,000)
// Topologies of the example class on one control plane and reports: the time
// until the agent binary has reconciled all of them, its API requests per
// Topology, its peak RSS, and the time and writes of a no-op resync of all of
// them after a restart. TOPOLOGY_SCALE_AGENT_FLAGS adds agent flags to both
// runs (e.g. "--concurrency 40"). Run it with `make bench-scale-agent`; it is
// not part of `make test`.
func BenchmarkThousandTopologies(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("TOPOLOGY_SCALE")); err == nil && v > 0 {
		n = v
	}
	for range b.N {
		runScale(b, n)
	}
}

func runScale(b *testing.B, n int) {
	ctx := context.Background()
	ex := exampleClass(b, "scale")
	ns := ex.Topology.Namespace
	pprofPort := freePort(b)
	flags := strings.Fields(os.Getenv("TOPOLOGY_SCALE_AGENT_FLAGS"))
	agent := startAgentBinary(b, append([]string{"--pprof-bind-address", fmt.Sprintf("127.0.0.1:%d", pprofPort)}, flags...)...)
	profile := profileCPU(b, pprofPort)
	start := time.Now()
	latencies := make([]time.Duration, 0, n)
	for i := range n {
		t := ex.Topology.DeepCopy()
		t.Name = fmt.Sprintf("t-%04d", i)
		began := time.Now()
		if err := k8s.Create(ctx, t); err != nil {
			b.Fatal(err)
		}
		latencies = append(latencies, time.Since(began))
	}
	created := time.Since(start)
	slices.Sort(latencies)
	p50, p99 := latencies[len(latencies)/2], latencies[len(latencies)*99/100]
	metrics := agent.metrics(b)
	webhook := map[string]string{}
	var admissionP99 time.Duration
	for _, path := range []string{topologywebhook.TopologyDefaultPath, topologywebhook.TopologyValidatePath} {
		if mean, p99, ok := metrics.WebhookLatency(path); ok {
			admissionP99 = max(admissionP99, p99)
			webhook[path] = fmt.Sprintf("mean %s, p99 %s", mean.Round(time.Microsecond), p99.Round(time.Microsecond))
		}
	}
	b.Logf("Topology create, as the client sees it (API server, both webhooks, etcd): p50 %s, p99 %s; time in the agent's webhooks: %v; CPU profile of the agent while creating: %s",
		p50.Round(time.Microsecond), p99.Round(time.Microsecond), webhook, profile())
	waitAllReconciled(b, ns, n)
	converge := time.Since(start)
	b.Logf("heap profile of the agent with all %d reconciled (go tool pprof -sample_index=inuse_space): %s", n, fetchProfile(pprofPort, "heap?gc=1", "agent-heap-*.pprof"))
	// Reconciles the watches triggered after the last status write may still
	// be queued; stop the agent only once it is idle, so the resync below
	// measures a true steady state.
	waitIdle(b, agent)
	settled := agent.metrics(b)
	requests := settled.Sum("rest_client_requests_total")
	perMethod := map[string]string{}
	for m, v := range settled.RequestsByMethod() {
		perMethod[m] = strconv.FormatFloat(v/float64(n), 'f', 1, 64)
	}
	b.Logf("all %d reconciled %s after the last create; API requests per Topology by method: %v", n, (converge - created).Round(time.Millisecond), perMethod)
	rss := agent.peakRSS(b)

	agent.stop(b)
	restart := time.Now()
	again := startAgentBinary(b, append([]string{"-v", "4"}, flags...)...)
	fixture.EventuallyEvery(b, 200*time.Millisecond, 30*time.Minute, "the resync reconciled every Topology", func(context.Context) (bool, error) {
		return again.metric(b, "controller_runtime_reconcile_total", `controller="topology"`) >= float64(n), nil
	})
	waitIdle(b, again)
	resync := time.Since(restart)
	resynced := again.metrics(b)
	writes, byMethod := resynced.Writes(), resynced.RequestsByMethod()
	b.Logf("requests during the resync by method (all but GET write): %v; the agent's log of the writes: %s", byMethod, again.log.Name())

	b.ReportMetric(float64(p50.Microseconds())/1000, "ms-create-p50")
	b.ReportMetric(float64(p99.Microseconds())/1000, "ms-create-p99")
	b.ReportMetric(float64(admissionP99.Microseconds())/1000, "ms-admission-p99")
	b.ReportMetric(converge.Seconds(), "s-to-reconcile-all")
	b.ReportMetric(created.Seconds(), "s-to-create-all")
	b.ReportMetric(requests/float64(n), "requests/topology")
	b.ReportMetric(float64(rss)/1024, "peak-RSS-MiB")
	b.ReportMetric(resync.Seconds(), "s-noop-resync-all")
	b.ReportMetric(writes, "writes-during-resync")
	b.Logf("%d topologies: created in %s, all reconciled after %s; %.1f requests per topology; agent peak RSS %d MiB; no-op resync after restart %s with %.0f write requests",
		n, created.Round(time.Millisecond), converge.Round(time.Millisecond), requests/float64(n), rss/1024, resync.Round(time.Millisecond), writes)
}

// profileCPU starts a 20 s CPU profile of the agent and returns a function
// that waits for it and says where it was written, for `go tool pprof`.
func profileCPU(b *testing.B, port int) func() string {
	done := make(chan string, 1)
	go func() { done <- fetchProfile(port, "profile?seconds=20", "agent-cpu-*.pprof") }()
	return func() string { return <-done }
}

// fetchProfile saves the agent's pprof profile of that name into a file
// whose pattern is given, and returns its path, or why there is none.
func fetchProfile(port int, profile, pattern string) string {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/%s", port, profile))
	if err != nil {
		return "none: " + err.Error()
	}
	defer resp.Body.Close()
	f, err := os.CreateTemp(os.Getenv("TOPOLOGY_E2E_LOG_DIR"), pattern)
	if err != nil {
		return "none: " + err.Error()
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		return "none: " + err.Error()
	}
	return f.Name()
}

func waitAllReconciled(b *testing.B, ns string, n int) {
	fixture.EventuallyEvery(b, time.Second, 60*time.Minute, fmt.Sprintf("all %d topologies are reconciled", n), func(ctx context.Context) (bool, error) {
		list := &v1alpha2.TopologyList{}
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		done := 0
		for _, t := range list.Items {
			if c, current := fixture.Reconciled(&t); current && c.Reason == controller.ReasonSucceeded && len(t.OwnerReferences) == 0 {
				done++
			}
		}
		return done == n, fmt.Errorf("%d of %d reconciled", done, n)
	})
}

// waitIdle waits until the agent's Topology queue is empty and no worker is busy.
func waitIdle(b *testing.B, p *agentProcess) {
	fixture.EventuallyEvery(b, 200*time.Millisecond, 30*time.Minute, "the agent is idle", func(context.Context) (bool, error) {
		return p.metric(b, "workqueue_depth", `name="topology"`) == 0 && p.metric(b, "controller_runtime_active_workers", `controller="topology"`) == 0, nil
	})
}
