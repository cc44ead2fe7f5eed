package e2e

import (
	"context"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// leaderLog is what client-go's leader election logs when it takes the lease.
const leaderLog = "Successfully acquired lease"

func (p *agentProcess) logged(text string) bool {
	raw, err := os.ReadFile(p.log.Name())
	return err == nil && strings.Contains(string(raw), text)
}

// TestLeaderElectionHandsOver runs two agent binaries with --leader-elect, as
// two replicas of the Deployment would: one reconciles, the other waits; when
// the leader is killed, the other takes the lease and carries on.
func TestLeaderElectionHandsOver(t *testing.T) {
	first := startAgentBinary(t, "--leader-elect")
	waitFor(t, "the first agent leads", func(context.Context) (bool, error) { return first.logged(leaderLog), nil })
	second := startAgentBinary(t, "--leader-elect")

	ex := exampleClass(t, "leader")
	createTopology(t, ex) // before the agents stop: the leader removes the finalizer
	ns := ex.Topology.Namespace
	waitFor(t, "the leader builds the cluster", func(ctx context.Context) (bool, error) {
		objs, err := fixture.Live(ctx, k8s, ns, "dev")
		return len(objs) > 10, err
	})
	if second.logged(leaderLog) {
		t.Fatal("both agents took the lease")
	}

	first.kill()
	waitFor(t, "the second agent takes the lease", func(context.Context) (bool, error) { return second.logged(leaderLog), nil })
	// Out of cluster each agent registers the webhooks at its own URL, and
	// the leader keeps them pointed at itself; the new leader takes them over.
	five := int32(5)
	waitFor(t, "the new leader's webhooks admit a change", func(ctx context.Context) (bool, error) {
		topo := &v1alpha2.Topology{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ex.Topology), topo); err != nil {
			return false, err
		}
		topo.Spec.Workers.MachineDeployments[0].Replicas = &five
		err := k8s.Update(ctx, topo)
		return err == nil, err
	})
	waitFor(t, "the new leader scales md-a to 5", func(ctx context.Context) (bool, error) {
		objs, err := fixture.Live(ctx, k8s, ns, "dev")
		for _, o := range objs {
			if o.GetKind() == "MachineDeployment" && o.GetLabels()["topology.cluster.x-k8s.io/deployment-name"] == "md-a" {
				r, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
				return r == 5, err
			}
		}
		return false, err
	})
}
