package upstream

import (
	"context"
	"strings"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/localcluster"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/parity"
)

// TestRolloutParityWithUpstream is the upstream side of a fleet rollout's
// comparison: one TopologyRollout moves our Topology (the canary, carried
// out by the agent) and then upstream's Cluster with spec.topology (carried
// out by Cluster API's topology controller, ClusterTopology on in this
// suite only) of the in-memory case to the next minor, and both must roll
// their parts in the same order, the second wave only after the canary
// succeeded. Waves, soak and clusters in flight on stock providers are
// test/capi's TestFleetRolloutWavesFailureRetryAndRebase.
func TestRolloutParityWithUpstream(t *testing.T) {
	t.Parallel()
	root, err := localcluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	var report strings.Builder
	env := parityEnv(&report)
	r, err := parity.CompareRollout(context.Background(), env, root+"/testdata/parity/in-memory", "rollout-in-memory")
	if err != nil {
		t.Fatalf("the comparison could not be made: %v\n%s", err, report.String())
	}
	if problems := r.Problems(); len(problems) > 0 {
		t.Fatalf("the rollout is short of parity with upstream: %s\n%s", strings.Join(problems, "; "), report.String())
	}
	t.Logf("upgrade order on both sides: %s", strings.Join(r.Order["ours"], " → "))
}
