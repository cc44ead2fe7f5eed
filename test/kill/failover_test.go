package kill

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/localagent"
	"github.com/kubectl-topology/kubectl-topology/internal/process"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// replica is one of the agent processes of a pair.
type replica struct {
	dir      string
	pid      int
	identity string
}

// pair replaces the suite's agent with two leader-elected replicas, as
// `install --local --replicas 2` starts them, and waits until one leads.
// When the test ends one agent serves the suite again.
func pair(t *testing.T) []replica {
	t.Helper()
	stopAgent(t)
	suite.MustTopology(t, "install", "--local", "--replicas", "2", "--state-dir", suite.AgentState)
	t.Cleanup(func() {
		if err := localagent.Stop(suite.AgentState); err != nil {
			t.Errorf("stopping the pair: %v", err)
		}
		suite.MustTopology(t, "install", "--local", "--state-dir", suite.AgentState)
	})
	var rs []replica
	for i := range 2 {
		dir := localagent.ReplicaDir(suite.AgentState, i)
		rec, ok := localagent.Find(dir)
		if !ok || !localagent.Elects(rec) {
			t.Fatalf("replica %d in %s does not run with leader election (running: %v, pid file says %q)", i, dir, ok, rec.Extra)
		}
		rs = append(rs, replica{dir: dir, pid: rec.PID, identity: localagent.Identity(rec.PID)})
	}
	fixture.Eventually(t, time.Minute, "one replica leads", func(ctx context.Context) (bool, error) {
		holder := heartbeatHolder(ctx)
		return slices.ContainsFunc(rs, func(r replica) bool { return r.identity == holder }), fmt.Errorf("the heartbeat names %q", holder)
	})
	return rs
}

// heartbeatHolder is the replica the agent's heartbeat Lease names: the
// one that leads, once it has beaten.
func heartbeatHolder(ctx context.Context) string {
	lease := &coordinationv1.Lease{}
	if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: components.Namespace, Name: components.HeartbeatLease}, lease); err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// failover kills the leading replica with SIGKILL, so that it cannot hand
// its Lease over, waits until the standby leads, checks that status names
// it, and returns how long the takeover took.
func failover(t *testing.T, rs []replica) time.Duration {
	t.Helper()
	ctx := context.Background()
	holder := heartbeatHolder(ctx)
	i := slices.IndexFunc(rs, func(r replica) bool { return r.identity == holder })
	if i < 0 {
		t.Fatalf("the heartbeat names %q, neither replica", holder)
	}
	leader, standby := rs[i], rs[1-i]
	if err := syscall.Kill(leader.pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the leader (pid %d): %v", leader.pid, err)
	}
	killed := time.Now()
	fixture.Eventually(t, 10*time.Second, "the leader is dead", func(context.Context) (bool, error) {
		_, up := process.Running(localagent.PIDFile(leader.dir))
		return !up, nil
	})
	fixture.EventuallyEvery(t, 100*time.Millisecond, 2*time.Minute, "the standby takes the lead", func(ctx context.Context) (bool, error) {
		holder := heartbeatHolder(ctx)
		return holder == standby.identity, fmt.Errorf("the heartbeat names %q", holder)
	})
	took := time.Since(killed)
	t.Logf("takeover: %s led %s after the leader (pid %d) was killed", standby.identity, took.Round(100*time.Millisecond), leader.pid)
	if r := suite.StatusReport(t, "-A"); r.Agent.Leader != standby.identity {
		t.Errorf("status -A names %q as the leader, want %q", r.Agent.Leader, standby.identity)
	}
	return took
}

// generations are the generations of the control plane and the
// MachineDeployments of ns, by kind and name.
func generations(t *testing.T, ns string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, kind := range []string{"KubeadmControlPlane", "MachineDeployment"} {
		items, err := suite.List(context.Background(), ns, kind)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			out[kind+"/"+o.GetName()] = o.GetGeneration()
		}
	}
	return out
}

// checkWrittenOnce compares the generations of ns with before: each object
// moved by exactly the number of changes want says (by kind).
func checkWrittenOnce(t *testing.T, ns string, before map[string]int64, want map[string]int64) {
	t.Helper()
	after := generations(t, ns)
	for key, gen := range after {
		kind, _, _ := strings.Cut(key, "/")
		if got := gen - before[key]; got != want[kind] {
			t.Errorf("%s: %d spec changes (generation %d → %d), want %d: a change was written more than once, or lost", key, got, before[key], gen, want[kind])
		}
	}
}

// TestFailoverDuringAChainedUpgrade runs two replicas and kills the leader
// while Cluster API takes the control plane through the first step of a
// chained upgrade: the standby takes over and finishes the chain, the
// control plane's version written once per step and the pool's once.
func TestFailoverDuringAChainedUpgrade(t *testing.T) {
	ns := suite.InMemoryCluster(t, "failover-chained", func(topo *v1alpha2.Topology) {
		topo.Spec.Version = "v1.31.6"
		fixture.OneMachineEach(topo)
	}, func(ex *fixture.Example) {
		ex.Class.Spec.KubernetesVersions = []string{"v1.31.6", "v1.32.0", "v1.32.3", "v1.33.1"}
	})
	suite.Settle(t, ns, "dev")
	rs := pair(t)
	before := generations(t, ns)
	suite.MustTopology(t, "upgrade", "dev", "-n", ns, "--version", "v1.33.1", "--yes")
	fixture.Eventually(t, 2*time.Minute, "the control plane is replacing its machine for v1.32.3", func(ctx context.Context) (bool, error) {
		ms, err := suite.Machines(ctx, ns)
		_, all := fixture.Count(ms, "", "v1.32.3")
		return err == nil && all > 0, fmt.Errorf("%d control plane machines at v1.32.3 (%v)", all, err)
	})
	failover(t, rs)
	suite.Settle(t, ns, "dev")
	checkConverged(t, ns, "v1.33.1")
	checkWrittenOnce(t, ns, before, map[string]int64{"KubeadmControlPlane": 2, "MachineDeployment": 1})
}

// TestFailoverWhileBeforeClusterUpgradeHolds runs two replicas and kills
// the leader while BeforeClusterUpgrade holds an upgrade, with upstream's
// test extension: the standby asks the hook again, as it is still asked
// until it lets the upgrade go, and moves nothing before it does; then the
// upgrade runs with every later hook called and nothing left owed.
func TestFailoverWhileBeforeClusterUpgradeHolds(t *testing.T) {
	ctx := context.Background()
	ex, err := fixture.ClassInNewNamespace(ctx, suite.K8s, "in-memory", "failover-hook")
	if err != nil {
		t.Fatal(err)
	}
	ns, name := ex.Topology.Namespace, ex.Topology.Name
	ext := suite.StartTestExtension(t, ns)
	from, to := "v1.33.1", "v1.34.0"
	bcu := fixture.HookKey(lifecycle.BeforeClusterUpgrade, from, to)
	answerAllBut(t, ext, ns, name, from, to, bcu)
	later := upgradeHooks(from, to)[3:] // the hooks after BeforeClusterUpgrade
	topo := ex.Topology.DeepCopy()
	fixture.OneMachineEach(topo)
	if err := suite.K8s.Create(ctx, topo); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fixture.DeleteTopology(t, suite.K8s, ns, name) })
	suite.Settle(t, ns, name)
	rs := pair(t)
	before := generations(t, ns)

	suite.MustTopology(t, "upgrade", name, "-n", ns, "--version", to, "--yes")
	ext.WaitAsked(t, ns, name, bcu, 5)
	ext.ForgetCall(t, ns, name, bcu)
	failover(t, rs)
	ext.WaitAsked(t, ns, name, bcu, 5) // asked again by the new leader: the upgrade is still held
	fixture.AfterPasses(t, suite.K8s, client.ObjectKey{Namespace: ns, Name: name}, 2)
	checkWrittenOnce(t, ns, before, map[string]int64{}) // nothing moves while the hook holds
	calls, err := ext.Calls(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range later {
		if slices.Contains(calls, key) {
			t.Errorf("%s was called while BeforeClusterUpgrade held the upgrade", key)
		}
	}

	ext.Answer(t, ns, name, bcu, 0)
	suite.Settle(t, ns, name)
	checkConverged(t, ns, to)
	checkWrittenOnce(t, ns, before, map[string]int64{"KubeadmControlPlane": 1, "MachineDeployment": 1})
	fixture.Eventually(t, time.Minute, "every later hook is called and nothing is owed", func(ctx context.Context) (bool, error) {
		got := &v1alpha2.Topology{}
		if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			return false, err
		}
		calls, err := ext.Calls(ctx, ns, name)
		if err != nil {
			return false, err
		}
		missing := slices.DeleteFunc(slices.Clone(later), func(k string) bool { return slices.Contains(calls, k) })
		owed := got.Annotations[runtimev1.PendingHooksAnnotation]
		return owed == "" && len(missing) == 0, fmt.Errorf("owed %q, not called %v", owed, missing)
	})
}

// TestFailoverDuringAFleetWave runs two replicas and kills the leader while
// a fleet rollout's second wave changes its cluster: the
// standby resumes the rollout from its status and completes it, each
// cluster changed once (one generation, one attempt) and never two in
// flight.
func TestFailoverDuringAFleetWave(t *testing.T) {
	ctx := context.Background()
	f := settledFleet(t, "failover-fleet", "w1", "w2")
	ns := f.ns
	rs := pair(t)
	f.start("failover-" + ns)
	f.await("the second wave is changing a cluster", func(ro *v1alpha2.TopologyRollout) bool {
		return len(ro.Status.Waves) > 1 && ro.Status.Waves[1].StartedAt != nil && ro.Status.InFlight > 0
	})
	failover(t, rs)
	f.completed()
	ms, err := suite.Machines(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Version != "v1.34.0" || m.Phase != "Running" {
			t.Errorf("%s: machine %s runs %s (%s)", m.Cluster, m.Name, m.Version, m.Phase)
		}
	}
}
