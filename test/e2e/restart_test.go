package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/controller"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestRestartWritesNothing: an agent restarted on Topologies it has already
// reconciled reads them and writes nothing, to them or to what it made; its
// only writes are its own upkeep (webhook registrations on its new port, the
// heartbeat Lease). The agent logs every write it makes at -v 4.
func TestRestartWritesNothing(t *testing.T) {
	ctx := context.Background()
	first := startAgentBinary(t)
	ex := exampleClass(t, "restart")
	const n = 5
	var names []string
	for i := range n {
		topo := ex.Topology.DeepCopy()
		topo.Name = fmt.Sprintf("r-%d", i)
		if err := k8s.Create(ctx, topo); err != nil {
			t.Fatal(err)
		}
		names = append(names, topo.Name)
	}
	reconciled := func(context.Context) (bool, error) {
		list := &v1alpha2.TopologyList{}
		if err := k8s.List(ctx, list, client.InNamespace(ex.Topology.Namespace)); err != nil {
			return false, err
		}
		done := 0
		for _, topo := range list.Items {
			if c, current := fixture.Reconciled(&topo); current && c.Reason == controller.ReasonSucceeded {
				done++
			}
		}
		return done == n, fmt.Errorf("%d of %d reconciled", done, n)
	}
	waitFor(t, "every Topology is reconciled", reconciled)
	idle := func(p *agentProcess) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) {
			return p.metric(t, "workqueue_depth", `name="topology"`) == 0 && p.metric(t, "controller_runtime_active_workers", `controller="topology"`) == 0, nil
		}
	}
	waitFor(t, "the first agent is idle", idle(first))
	first.stop(t)

	second := startAgentBinary(t, "-v", "4")
	t.Cleanup(func() {
		// While the second agent runs, which lets the Topologies go.
		for _, name := range names {
			_ = k8s.Delete(ctx, &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: ex.Topology.Namespace, Name: name}})
		}
		waitFor(t, "the Topologies are deleted", func(ctx context.Context) (bool, error) {
			for _, name := range names {
				if err := k8s.Get(ctx, client.ObjectKey{Namespace: ex.Topology.Namespace, Name: name}, &v1alpha2.Topology{}); !apierrors.IsNotFound(err) {
					return false, err
				}
			}
			return true, nil
		})
	})
	waitFor(t, "the restarted agent has reconciled every Topology", func(context.Context) (bool, error) {
		return second.metric(t, "controller_runtime_reconcile_total", `controller="topology"`) >= n, nil
	})
	waitFor(t, "the restarted agent is idle", idle(second))

	data, err := os.ReadFile(second.log.Name())
	if err != nil {
		t.Fatal(err)
	}
	upkeep := 0
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, `"logger":"writes"`) {
			continue
		}
		if strings.Contains(line, "webhookconfigurations/") || strings.Contains(line, "leases/"+components.HeartbeatLease) {
			upkeep++
			continue
		}
		t.Errorf("the restarted agent wrote to a reconciled cluster: %s", line)
	}
	if upkeep == 0 {
		t.Error("the agent's log shows not even its own upkeep writes: is -v 4 still logging writes? (a test that cannot fail proves nothing)")
	}
}
