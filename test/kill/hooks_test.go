package kill

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestAgentKilledWhileAHookHolds kills the agent (SIGKILL) while
// AfterControlPlaneUpgrade holds an upgrade, with upstream's test extension:
// the restarted agent calls the hook again, since it is still owed, and no
// worker starts before the hook lets it; once it does, the upgrade ends with
// nothing owed. Not in parallel: the other tests share the agent.
func TestAgentKilledWhileAHookHolds(t *testing.T) {
	ctx := context.Background()
	ex, err := fixture.ClassInNewNamespace(ctx, suite.K8s, "in-memory", "hook-killed")
	if err != nil {
		t.Fatal(err)
	}
	ns, name := ex.Topology.Namespace, ex.Topology.Name
	ext := suite.StartTestExtension(t, ns)
	from, to := "v1.33.1", "v1.34.0"
	acpu := fixture.HookKey(lifecycle.AfterControlPlaneUpgrade, to)
	answerAllBut(t, ext, ns, name, from, to, acpu)
	topo := ex.Topology.DeepCopy()
	fixture.OneMachineEach(topo)
	if err := suite.K8s.Create(ctx, topo); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fixture.DeleteTopology(t, suite.K8s, ns, name) })
	suite.Settle(t, ns, name)

	suite.MustTopology(t, "upgrade", name, "-n", ns, "--version", to, "--yes")
	ext.WaitAsked(t, ns, name, acpu, 5)
	killAgent(t)
	ext.ForgetCall(t, ns, name, acpu)
	ext.WaitAsked(t, ns, name, acpu, 5) // asked again: still owed after the restart
	fixture.AfterPasses(t, suite.K8s, client.ObjectKey{Namespace: ns, Name: name}, 2)
	poolVersion(t, ns, from)

	ext.Answer(t, ns, name, acpu, 0)
	suite.Settle(t, ns, name)
	checkConverged(t, ns, to)
	fixture.Eventually(t, time.Minute, "nothing is owed once the upgrade is over", func(ctx context.Context) (bool, error) {
		got := &v1alpha2.Topology{}
		if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			return false, err
		}
		owed := got.Annotations[runtimev1.PendingHooksAnnotation]
		return owed == "", fmt.Errorf("owed: %q", owed)
	})
	ext.WaitAsked(t, ns, name, fixture.HookKey(lifecycle.AfterClusterUpgrade, to), 0)
}

// poolVersion checks the version the one MachineDeployment of ns asks for.
func poolVersion(t *testing.T, ns, want string) {
	t.Helper()
	mds, err := suite.List(context.Background(), ns, "MachineDeployment")
	if err != nil || len(mds) != 1 {
		t.Fatalf("listing the pool: %d (%v)", len(mds), err)
	}
	if v, _, _ := unstructured.NestedString(mds[0].Object, "spec", "template", "spec", "version"); v != want {
		t.Errorf("the pool asks for %s while AfterControlPlaneUpgrade holds; want %s", v, want)
	}
}
