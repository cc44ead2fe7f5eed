package e2e

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
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
	scaleMD(t, ex, 5)
	waitFor(t, "the new leader scales md-a to 5", func(ctx context.Context) (bool, error) {
		return mdReplicas(ctx, t, ex) == 5, nil
	})
}
