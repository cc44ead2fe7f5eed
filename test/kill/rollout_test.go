package kill

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestAgentKilledDuringAFleetRollout kills the agent (SIGKILL) while a
// fleet rollout's canary is changing and again while a cluster soaks: the
// restarted agent resumes the rollout from its status, and it completes
// with each cluster changed exactly once (one generation more, one
// attempt), the second wave started only after the canary succeeded, and
// never two clusters in flight. Not in parallel: the other tests share the
// agent.
func TestAgentKilledDuringAFleetRollout(t *testing.T) {
	ctx := context.Background()
	names := []string{"c1", "c2", "c3"}
	f := settledFleet(t, "fleet-killed", names...)
	ns := f.ns
	f.start("killed-"+ns, "--soak", "20s")
	f.await("the canary c1 is changing", func(ro *v1alpha2.TopologyRollout) bool {
		return fixture.RolloutCluster(ro, "c1").Phase == v1alpha2.ClusterInProgress
	})
	killAgent(t)
	f.await("c2 soaks", func(ro *v1alpha2.TopologyRollout) bool {
		return fixture.RolloutCluster(ro, "c2").Phase == v1alpha2.ClusterSoaking
	})
	killAgent(t)
	ro := f.completed()
	canary, wave2 := ro.Status.Waves[0], ro.Status.Waves[1]
	if canary.CompletedAt == nil || wave2.StartedAt == nil || wave2.StartedAt.Before(canary.CompletedAt) {
		t.Errorf("wave 2 started (%v) before the canary completed (%v)", wave2.StartedAt, canary.CompletedAt)
	}
	ms, err := suite.Machines(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		cp, workers := 0, 0
		for _, m := range ms {
			if m.Cluster != n {
				continue
			}
			if m.Version != "v1.34.0" || m.Phase != "Running" {
				t.Errorf("%s: machine %s runs %s (%s)", n, m.Name, m.Version, m.Phase)
			}
			if m.ControlPlane {
				cp++
			} else {
				workers++
			}
		}
		if cp != 1 || workers != 1 {
			t.Errorf("%s: %d control plane and %d worker machines, want 1 and 1", n, cp, workers)
		}
	}
}

// TestAgentKilledDuringAnApprovalWaitAndAnUndo rolls a variable over k1 and
// k2 with an approval before wave 2 and kills the agent while the rollout
// waits for it; after the approval it completes with each cluster written
// once. Its undo, with the same gate, is killed while its canary changes:
// it completes too, each cluster written once more and back to its value.
func TestAgentKilledDuringAnApprovalWaitAndAnUndo(t *testing.T) {
	ctx := context.Background()
	names := []string{"k1", "k2"}
	ns, _ := suite.InMemoryFleet(t, "approval-killed", names...)
	generation, value := map[string]int64{}, map[string]string{}
	read := func(n string) *v1alpha2.Topology {
		t.Helper()
		topo := &v1alpha2.Topology{}
		if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, topo); err != nil {
			t.Fatal(err)
		}
		return topo
	}
	for _, n := range names {
		suite.Settle(t, ns, n)
		topo := read(n)
		generation[n], value[n] = topo.Generation, variable(topo, "workerStartup")
	}
	name := "approve-" + ns
	suite.MustTopology(t, "rollout", "create", name, "-l", "fleet="+ns, "--set", "workerStartup=2s",
		"--waves", "1,100%", "--approval", "2", "--yes")
	t.Cleanup(func() {
		_ = suite.K8s.Delete(context.Background(), &v1alpha2.TopologyRollout{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	suite.WaitRollout(t, name, fixture.SettleTimeout, "waits for the approval of wave 2", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutWaitingForApproval
	})
	killAgent(t)
	fixture.AfterPasses(t, suite.K8s, client.ObjectKey{Namespace: ns, Name: "k2"}, 1)
	if topo := read("k2"); topo.Generation != generation["k2"] {
		t.Errorf("k2 was written while its wave waited for an approval: generation %d, want %d", topo.Generation, generation["k2"])
	}
	suite.MustTopology(t, "rollout", "approve", name)
	ro := suite.WaitRollout(t, name, fixture.SettleTimeout, "completed", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutCompleted
	})
	for _, c := range ro.Status.Clusters {
		if c.Phase != v1alpha2.ClusterSucceeded || c.Attempt != 1 {
			t.Errorf("%s: %s after %d attempt(s), want Succeeded after 1", c.Key(), c.Phase, c.Attempt)
		}
	}
	for _, n := range names {
		if topo := read(n); variable(topo, "workerStartup") != `"2s"` || topo.Generation != generation[n]+1 {
			t.Errorf("%s: workerStartup %s at generation %d; want \"2s\" written once, at generation %d", n, variable(topo, "workerStartup"), topo.Generation, generation[n]+1)
		}
	}

	undo := name + "-undo"
	suite.MustTopology(t, "rollout", "undo", name, "--yes")
	t.Cleanup(func() {
		_ = suite.K8s.Delete(context.Background(), &v1alpha2.TopologyRollout{ObjectMeta: metav1.ObjectMeta{Name: undo}})
	})
	suite.WaitRollout(t, undo, fixture.SettleTimeout, "the undo's canary k1 is changing", func(ro *v1alpha2.TopologyRollout) bool {
		return fixture.RolloutCluster(ro, "k1").Phase == v1alpha2.ClusterInProgress
	})
	killAgent(t)
	suite.WaitRollout(t, undo, fixture.SettleTimeout, "the undo waits for the approval of wave 2", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutWaitingForApproval
	})
	suite.MustTopology(t, "rollout", "approve", undo)
	ro = suite.WaitRollout(t, undo, fixture.SettleTimeout, "the undo completed", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutCompleted
	})
	for _, c := range ro.Status.Clusters {
		if c.Phase != v1alpha2.ClusterSucceeded || c.Attempt != 1 {
			t.Errorf("undo, %s: %s after %d attempt(s), want Succeeded after 1", c.Key(), c.Phase, c.Attempt)
		}
	}
	for _, n := range names {
		if topo := read(n); variable(topo, "workerStartup") != value[n] || topo.Generation != generation[n]+2 {
			t.Errorf("%s after the undo: workerStartup %s at generation %d; want %s written once more, at generation %d", n, variable(topo, "workerStartup"), topo.Generation, value[n], generation[n]+2)
		}
	}
}

// variable is the value topo sets for name, as JSON; "" when it sets none.
func variable(topo *v1alpha2.Topology, name string) string {
	for _, v := range topo.Spec.Variables {
		if v.Name == name {
			return string(v.Value.Raw)
		}
	}
	return ""
}
