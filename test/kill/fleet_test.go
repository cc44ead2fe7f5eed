package kill

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// fleetRollout is a TopologyRollout of a settled in-memory fleet to
// v1.34.0, followed while a test kills the agent or fails it over.
type fleetRollout struct {
	t        *testing.T
	ns, name string
	names    []string
	// generation is each Topology's generation before the rollout.
	generation  map[string]int64
	maxInFlight int32
}

// settledFleet makes an in-memory fleet of names in a new namespace and
// waits until each is settled.
func settledFleet(t *testing.T, prefix string, names ...string) *fleetRollout {
	t.Helper()
	ns, _ := suite.InMemoryFleet(t, prefix, names...)
	f := &fleetRollout{t: t, ns: ns, names: names, generation: map[string]int64{}}
	for _, n := range names {
		suite.Settle(t, ns, n)
		topo := &v1alpha2.Topology{}
		if err := suite.K8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: n}, topo); err != nil {
			t.Fatal(err)
		}
		f.generation[n] = topo.Generation
	}
	return f
}

// start creates the rollout: a canary wave of one, then the rest, one
// cluster in flight, and the flags given.
func (f *fleetRollout) start(name string, flags ...string) {
	f.t.Helper()
	f.name = name
	args := append([]string{"rollout", "create", name, "-l", "fleet=" + f.ns, "--version", "v1.34.0",
		"--waves", "1,100%", "--max-in-flight", "1", "--yes"}, flags...)
	suite.MustTopology(f.t, args...)
	f.t.Cleanup(func() {
		_ = suite.K8s.Delete(context.Background(), &v1alpha2.TopologyRollout{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
}

// await waits until cond holds of the rollout, noting the most clusters it
// ever had in flight.
func (f *fleetRollout) await(what string, cond func(*v1alpha2.TopologyRollout) bool) *v1alpha2.TopologyRollout {
	f.t.Helper()
	return suite.WaitRollout(f.t, f.name, 8*time.Minute, what, func(ro *v1alpha2.TopologyRollout) bool {
		f.maxInFlight = max(f.maxInFlight, ro.Status.InFlight)
		return cond(ro)
	})
}

// completed waits until the rollout completed and checks it changed each
// cluster once: never two in flight, every cluster Succeeded at its first
// attempt, and each Topology's version written in one generation.
func (f *fleetRollout) completed() *v1alpha2.TopologyRollout {
	t := f.t
	t.Helper()
	ro := f.await("the rollout completed", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutCompleted
	})
	if f.maxInFlight > 1 {
		t.Errorf("%d clusters were in flight at once; at most 1", f.maxInFlight)
	}
	for _, c := range ro.Status.Clusters {
		if c.Phase != v1alpha2.ClusterSucceeded || c.Attempt != 1 {
			t.Errorf("%s: %s after %d attempt(s), want Succeeded after 1", c.Key(), c.Phase, c.Attempt)
		}
	}
	for _, n := range f.names {
		topo := &v1alpha2.Topology{}
		if err := suite.K8s.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: n}, topo); err != nil {
			t.Fatal(err)
		}
		if topo.Spec.Version != "v1.34.0" || topo.Generation != f.generation[n]+1 {
			t.Errorf("%s: version %s at generation %d; want v1.34.0 written once, at generation %d", n, topo.Spec.Version, topo.Generation, f.generation[n]+1)
		}
	}
	return ro
}

// upgradeHooks are the keys of every hook an upgrade from one version to
// another calls, in order, after the creation and deletion hooks.
func upgradeHooks(from, to string) []string {
	return []string{
		lifecycle.BeforeClusterCreate, lifecycle.BeforeClusterDelete,
		fixture.HookKey(lifecycle.BeforeClusterUpgrade, from, to), fixture.HookKey(lifecycle.BeforeControlPlaneUpgrade, from, to),
		fixture.HookKey(lifecycle.AfterControlPlaneUpgrade, to), fixture.HookKey(lifecycle.BeforeWorkersUpgrade, from, to),
		fixture.HookKey(lifecycle.AfterWorkersUpgrade, to), fixture.HookKey(lifecycle.AfterClusterUpgrade, to),
	}
}

// answerAllBut has the test extension let every hook of that upgrade go at
// once except held, which holds until the test answers it.
func answerAllBut(t *testing.T, ext *fixture.TestExtension, ns, name, from, to, held string) {
	t.Helper()
	for _, key := range upgradeHooks(from, to) {
		if key != held {
			ext.Answer(t, ns, name, key, 0)
		}
	}
}
