package kill

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/localagent"
	"github.com/kubectl-topology/kubectl-topology/internal/process"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestAgentKilled kills the agent (SIGKILL) twice in a cluster's life —
// while it builds the cluster, and while Cluster API replaces the control
// plane's machines in an upgrade — starts it again each time, and checks
// that it converges with one MachineDeployment per pool and no template
// that nothing refers to. Not in parallel: the other tests share the agent.
func TestAgentKilled(t *testing.T) {
	ns := suite.InMemoryCluster(t, "killed", func(topo *v1alpha2.Topology) {
		fixture.OneMachineEach(topo)
	})
	fixture.Eventually(t, time.Minute, "the agent starts building the cluster", func(ctx context.Context) (bool, error) {
		objs, err := fixture.Live(ctx, suite.K8s, ns, "dev")
		return len(objs) > 0, err
	})
	killAgent(t)
	suite.Settle(t, ns, "dev")
	checkConverged(t, ns, "v1.33.1")

	suite.MustTopology(t, "upgrade", "dev", "-n", ns, "--version", "v1.34.0", "--yes")
	fixture.Eventually(t, 2*time.Minute, "the control plane is replacing its machine", func(ctx context.Context) (bool, error) {
		ms, err := suite.Machines(ctx, ns)
		_, all := fixture.Count(ms, "", "v1.34.0")
		return err == nil && all > 1, fmt.Errorf("%d control plane machines (%v)", all, err)
	})
	killAgent(t)
	suite.Settle(t, ns, "dev")
	checkConverged(t, ns, "v1.34.0")

	// An agent that stays dead: status says its news may be old, once the
	// heartbeat is three beats late, and stops saying so when it is back.
	stopAgent(t)
	fixture.Eventually(t, time.Minute, "status says the agent is silent", func(context.Context) (bool, error) {
		out, _, err := suite.Topology("", "status", "dev", "-n", ns)
		r := suite.StatusReport(t, "-A")
		return err == nil && strings.Contains(out, "STALE: the agent last reported ") && strings.Contains(r.Agent.Problem, "not running"), fmt.Errorf("%s", out)
	})
	suite.MustTopology(t, "install", "--local", "--state-dir", suite.AgentState)
	fixture.Eventually(t, 30*time.Second, "status no longer says stale", func(context.Context) (bool, error) {
		out, _, err := suite.Topology("", "status", "dev", "-n", ns)
		return err == nil && !strings.Contains(out, "STALE"), fmt.Errorf("%s", out)
	})
}

// killAgent kills the local agent with SIGKILL and starts it again as a
// user would, by installing it again.
func killAgent(t *testing.T) {
	t.Helper()
	stopAgent(t)
	suite.MustTopology(t, "install", "--local", "--state-dir", suite.AgentState)
}

// stopAgent kills the local agent with SIGKILL.
func stopAgent(t *testing.T) {
	t.Helper()
	pidFile := localagent.PIDFile(suite.AgentState)
	pid, up := process.Running(pidFile)
	if !up {
		t.Fatal("the agent is not running")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, 10*time.Second, "the agent is dead", func(context.Context) (bool, error) {
		_, up := process.Running(pidFile)
		return !up, nil
	})
}

// checkConverged checks the one-machine, one-pool cluster of TestAgentKilled:
// its machines run version, there is one MachineDeployment, and every
// template is referred to.
func checkConverged(t *testing.T, ns, version string) {
	t.Helper()
	ctx := context.Background()
	ms, err := suite.Machines(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	for part, want := range map[string]int{"": 1, "md-a": 1} {
		if running, all := fixture.Count(ms, part, version); running != want || all != want {
			t.Errorf("%q: %d of %d machines running %s, want %d", part, running, all, version, want)
		}
	}
	mds, err := suite.List(ctx, ns, "MachineDeployment")
	if err != nil {
		t.Fatal(err)
	}
	if len(mds) != 1 {
		t.Errorf("%d MachineDeployments, want 1", len(mds))
	}
	// Every template of the cluster is referred to by the control plane, a
	// MachineDeployment or a MachineSet: nothing leaked.
	referred := map[string]bool{}
	for _, kind := range []string{"KubeadmControlPlane", "MachineDeployment", "MachineSet"} {
		items, err := suite.List(ctx, ns, kind)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			for _, path := range [][]string{
				{"spec", "machineTemplate", "spec", "infrastructureRef", "name"},
				{"spec", "template", "spec", "infrastructureRef", "name"},
				{"spec", "template", "spec", "bootstrap", "configRef", "name"},
			} {
				if name, _, _ := unstructured.NestedString(o.Object, path...); name != "" {
					referred[name] = true
				}
			}
		}
	}
	for _, kind := range []string{"DevMachineTemplate", "KubeadmConfigTemplate"} {
		items, err := suite.List(ctx, ns, kind)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			if o.GetLabels()["cluster.x-k8s.io/cluster-name"] == "dev" && !referred[o.GetName()] {
				t.Errorf("%s %s is left over: nothing refers to it", kind, o.GetName())
			}
		}
	}
}
