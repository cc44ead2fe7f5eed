package statusview

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// withStates sums the parts' states as the agent does.
func withStates(t *v1alpha2.Topology) *v1alpha2.Topology {
	if cp := t.Status.ControlPlane; cp != nil {
		cp.State = health.PartState(cp, 0)
	}
	for i := range t.Status.MachineDeployments {
		t.Status.MachineDeployments[i].State = health.PartState(&t.Status.MachineDeployments[i], 0)
	}
	t.Status.State = health.TopologyStateOf(&t.Status)
	return t
}

func rolling() *v1alpha2.Topology {
	n := int32(2)
	return withStates(&v1alpha2.Topology{
		ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: "default", Generation: 2},
		Spec:       v1alpha2.TopologySpec{ClassRef: v1alpha2.ClassRef{Name: "docker-kubeadm"}, Version: "v1.34.0"},
		Status: v1alpha2.TopologyStatus{
			ObservedGeneration: 2, Phase: v1alpha2.PhaseUpgrading, Infrastructure: v1alpha2.InfrastructureProvisioned,
			ControlPlane: &v1alpha2.PartStatus{Name: "control-plane", ObjectName: "dev-cp", DesiredVersion: "v1.34.0", Version: "v1.34.0", Replicas: 3, ReadyReplicas: 3, UpToDateReplicas: 3, Phase: v1alpha2.PhaseUpToDate},
			MachineDeployments: []v1alpha2.PartStatus{
				{Name: "md-a", Class: "general", ObjectName: "dev-md-a", DesiredVersion: "v1.34.0", Version: "v1.34.0", DesiredReplicas: &n, Replicas: 2, ReadyReplicas: 2, UpToDateReplicas: 1, Phase: v1alpha2.PhaseUpgrading, Message: "Machines are rolling to v1.34.0"},
				{Name: "md-b", Class: "general", ObjectName: "dev-md-b", DesiredVersion: "v1.34.0", Version: "v1.33.1", Replicas: 2, ReadyReplicas: 2, Phase: v1alpha2.PhasePending, Message: "upgrade concurrency limit 1 reached (md-a upgrading)"},
			},
			Conditions: []metav1.Condition{{Type: "TopologyReconciled", Status: metav1.ConditionFalse, ObservedGeneration: 2, Reason: "ClusterUpgrading", Message: "Cluster is upgrading to v1.34.0\n  * MachineDeployment md-b pending upgrade to version v1.34.0"}},
		},
	})
}

func settledTopology() *v1alpha2.Topology {
	t := rolling()
	t.Status.Phase = v1alpha2.PhaseUpToDate
	t.Status.MachineDeployments = t.Status.MachineDeployments[:1]
	t.Status.MachineDeployments[0].Phase, t.Status.MachineDeployments[0].UpToDateReplicas = v1alpha2.PhaseUpToDate, 2
	t.Status.MachineDeployments[0].ReadyReplicas = 2
	t.Status.Conditions = []metav1.Condition{{Type: "TopologyReconciled", Status: metav1.ConditionTrue, ObservedGeneration: 2, Reason: "ReconcileSucceeded"}}
	return withStates(t)
}

func TestStatusWatchView(t *testing.T) {
	reads := []*v1alpha2.Topology{rolling(), settledTopology()}
	fetch := func(context.Context) (*v1alpha2.Topology, error) {
		next := reads[0]
		if len(reads) > 1 {
			reads = reads[1:]
		}
		return next, nil
	}
	m := New(fetch, time.Millisecond)
	m.SetSize(100, 30)
	_, cmd := m.Update(m.Init()())
	if m.Done || cmd == nil {
		t.Fatal("a rollout in flight ended the watch")
	}
	golden.RequireEqual(t, []byte(m.View()))
	_, cmd = m.Update(m.Fetch())
	if !m.Done || cmd == nil || !strings.Contains(m.View(), "Rollout settled") {
		t.Errorf("a settled rollout did not end the watch: done %v\n%s", m.Done, m.View())
	}
}

// TestStatusProgressIsAgainstTheDesiredReplicas: a part still creating its
// Machines shows how far it is from what the topology asks, not 0/0.
func TestStatusProgressIsAgainstTheDesiredReplicas(t *testing.T) {
	topo := rolling()
	three := int32(3)
	topo.Status.ControlPlane = &v1alpha2.PartStatus{Name: "control-plane", DesiredVersion: "v1.34.0", Version: "v1.34.0", DesiredReplicas: &three, Replicas: 1, UpToDateReplicas: 1, Phase: v1alpha2.PhaseCreating}
	m := New(func(context.Context) (*v1alpha2.Topology, error) { return topo, nil }, time.Millisecond)
	m.SetSize(100, 30)
	m.Update(m.Init()())
	if want := "████░░░░░░░░ 1/3 up-to-date"; !strings.Contains(m.View(), want) {
		t.Errorf("the control plane's line lacks %q:\n%s", want, m.View())
	}
}

// TestStatusShowsTheHookThatHolds: a lifecycle hook holding the upgrade is
// named in the live view, with its extension, message and next call.
func TestStatusShowsTheHookThatHolds(t *testing.T) {
	topo := rolling()
	m := New(func(context.Context) (*v1alpha2.Topology, error) { return topo, nil }, time.Millisecond)
	next := metav1.NewTime(m.Now().Add(25 * time.Second))
	topo.Status.Hooks = &v1alpha2.HooksStatus{
		Pending: []string{"AfterClusterUpgrade"},
		Holding: []v1alpha2.HookHold{{Hook: "BeforeWorkersUpgrade", Handlers: []string{"drain.backup"}, Holds: "the control plane and the workers", Message: "snapshotting etcd", NextCall: &next}},
	}
	m.SetSize(140, 30)
	m.Update(m.Init()())
	view := m.View()
	for _, want := range []string{"HELD: hook BeforeWorkersUpgrade (drain.backup) holds the control plane and the workers — snapshotting etcd; asked again in 2", "hooks owed: AfterClusterUpgrade"} {
		if !strings.Contains(view, want) {
			t.Errorf("the live view lacks %q:\n%s", want, view)
		}
	}
}

// TestStatusSaysWhyThereAreNoPartsYet: a Topology held by
// BeforeClusterCreate has no parts; the live view says which hook holds
// them back, as the printed report does, not that the agent is silent.
func TestStatusSaysWhyThereAreNoPartsYet(t *testing.T) {
	topo := rolling()
	topo.Status.ControlPlane, topo.Status.MachineDeployments = nil, nil
	topo.Status.Hooks = &v1alpha2.HooksStatus{Holding: []v1alpha2.HookHold{{Hook: "BeforeClusterCreate", Handlers: []string{"create.gate"}, Holds: "the cluster's creation", Message: "waiting for approval"}}}
	m := New(func(context.Context) (*v1alpha2.Topology, error) { return topo, nil }, time.Millisecond)
	m.SetSize(140, 30)
	m.Update(m.Init()())
	view := m.View()
	if want := "no parts yet: hook BeforeClusterCreate holds the cluster before they are created"; !strings.Contains(view, want) {
		t.Errorf("the live view of a held creation lacks %q:\n%s", want, view)
	}
	topo.Status.Hooks = nil
	m.Update(m.Init()())
	if view := m.View(); !strings.Contains(view, "no parts reported yet: the agent has not reconciled it yet") {
		t.Errorf("the live view of an unreconciled Topology does not say so:\n%s", view)
	}
}

// TestStatusSeededShowsTheRolloutBeforeAnyRead: the Topology status read
// before the view starts is its first frame, so a slow next read (or a
// short --timeout) never leaves the terminal at "reading the Topology...".
func TestStatusSeededShowsTheRolloutBeforeAnyRead(t *testing.T) {
	topo := rolling()
	m := New(func(context.Context) (*v1alpha2.Topology, error) {
		return nil, errors.New("the API server is slow")
	}, time.Millisecond)
	m.SetSize(100, 30)
	if !strings.Contains(m.View(), "reading the Topology...") {
		t.Fatalf("an unseeded view does not say it is reading:\n%s", m.View())
	}
	m.Seed(topo)
	if v := m.View(); strings.Contains(v, "reading the Topology...") || !strings.Contains(v, "v1.33.1 → v1.34.0") {
		t.Errorf("the seeded view does not show the rollout:\n%s", v)
	}
	// A failed read afterwards keeps what was shown.
	m.Update(m.Init()())
	if !strings.Contains(m.View(), "v1.33.1 → v1.34.0") {
		t.Errorf("a failed read after the seed lost the rollout:\n%s", m.View())
	}
}

// TestStatusMarksAPinnedPool: a pool at its pin reads as pinned, as `status`
// prints it, not as behind the Topology's version.
func TestStatusMarksAPinnedPool(t *testing.T) {
	topo := fixture.MidUpgrade()
	m := New(func(context.Context) (*v1alpha2.Topology, error) { return topo, nil }, time.Millisecond)
	m.SetSize(120, 30)
	m.Update(m.Init()())
	if view := m.View(); !strings.Contains(view, "v1.33.1 (pinned)") || strings.Contains(view, "v1.33.1 → v1.34.0 (pinned)") {
		t.Errorf("md-db, pinned at v1.33.1, is not shown pinned:\n%s", view)
	}
}
