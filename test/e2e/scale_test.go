package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
	"github.com/kubectl-topology/kubectl-topology/pkg/controller"
)

// BenchmarkThousandTopologies creates TOPOLOGY_SCALE (default 1,000)
// Topologies of the example class on one control plane and reports: the time
// until the agent binary has reconciled all of them, its API requests per
// Topology, its peak RSS, and the time and writes of a no-op resync of all of
// them after a restart. Run it with `make bench-scale`; it is not part of
// `make test`.
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
	agent := startAgentBinary(b)
	start := time.Now()
	for i := range n {
		t := ex.Topology.DeepCopy()
		t.Name = fmt.Sprintf("t-%04d", i)
		if err := k8s.Create(ctx, t); err != nil {
			b.Fatal(err)
		}
	}
	created := time.Since(start)
	waitAllReconciled(b, ns, n)
	converge := time.Since(start)
	// Reconciles the watches triggered after the last status write may still
	// be queued; stop the agent only once it is idle, so the resync below
	// measures a true steady state.
	waitIdle(b, agent)
	requests := agent.metric(b, "rest_client_requests_total")
	rss := agent.peakRSS(b)

	agent.stop(b)
	restart := time.Now()
	again := startAgentBinary(b, "-v", "4")
	for again.metric(b, "controller_runtime_reconcile_total", `controller="topology"`) < float64(n) {
		if time.Since(restart) > 30*time.Minute {
			b.Fatal("resync did not reconcile every Topology within 30 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitIdle(b, again)
	resync := time.Since(restart)
	writes := 0.0
	byMethod := map[string]float64{}
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		byMethod[m] = again.metric(b, "rest_client_requests_total", `method="`+m+`"`)
		writes += byMethod[m]
	}
	b.Logf("write requests during the resync by method: %v; the agent's log of them: %s", byMethod, again.log.Name())

	b.ReportMetric(converge.Seconds(), "s-to-reconcile-all")
	b.ReportMetric(created.Seconds(), "s-to-create-all")
	b.ReportMetric(requests/float64(n), "requests/topology")
	b.ReportMetric(float64(rss)/1024, "peak-RSS-MiB")
	b.ReportMetric(resync.Seconds(), "s-noop-resync-all")
	b.ReportMetric(writes, "writes-during-resync")
	b.Logf("%d topologies: created in %s, all reconciled after %s; %.1f requests per topology; agent peak RSS %d MiB; no-op resync after restart %s with %.0f write requests",
		n, created.Round(time.Millisecond), converge.Round(time.Millisecond), requests/float64(n), rss/1024, resync.Round(time.Millisecond), writes)
}

func waitAllReconciled(b *testing.B, ns string, n int) {
	for deadline := time.Now().Add(60 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		list := &v1alpha1.TopologyList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		done := 0
		for _, t := range list.Items {
			c := meta.FindStatusCondition(t.Status.Conditions, controller.ReconciledCondition)
			if c != nil && c.ObservedGeneration == t.Generation && c.Reason == controller.ReasonSucceeded && len(t.OwnerReferences) == 0 {
				done++
			}
		}
		if done == n {
			return
		}
	}
	b.Fatalf("not all %d topologies were reconciled within an hour", n)
}

// waitIdle waits until the agent's Topology queue is empty and no worker is busy.
func waitIdle(b *testing.B, p *agentProcess) {
	for deadline := time.Now().Add(30 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if p.metric(b, "workqueue_depth", `name="topology"`) == 0 && p.metric(b, "controller_runtime_active_workers", `controller="topology"`) == 0 {
			return
		}
	}
	b.Fatal("the agent did not become idle within 30 minutes")
}
