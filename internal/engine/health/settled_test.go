package health

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestRolloutSettled: only a reconciled latest generation with every part
// up to date is settled, and what holds it otherwise is said.
func TestRolloutSettled(t *testing.T) {
	settled := func() *v1alpha2.Topology {
		return &v1alpha2.Topology{
			ObjectMeta: metav1.ObjectMeta{Generation: 4},
			Status: v1alpha2.TopologyStatus{ObservedGeneration: 4, Phase: v1alpha2.PhaseUpToDate, Infrastructure: v1alpha2.InfrastructureProvisioned,
				ControlPlane:       &v1alpha2.PartStatus{Name: upgrade.ControlPlaneName, ObjectName: "dev-cp", Phase: v1alpha2.PhaseUpToDate, DesiredReplicas: new(int32(3)), Replicas: 3, ReadyReplicas: 3, UpToDateReplicas: 3},
				MachineDeployments: []v1alpha2.PartStatus{{Name: "md-a", ObjectName: "dev-md-a", Phase: v1alpha2.PhaseUpToDate, DesiredReplicas: new(int32(2)), Replicas: 2, ReadyReplicas: 2, UpToDateReplicas: 2}},
				Conditions: []metav1.Condition{
					{Type: v1alpha2.TopologyReconciledCondition, Status: metav1.ConditionTrue, ObservedGeneration: 4, Reason: "ReconcileSucceeded"},
				}},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*v1alpha2.Topology)
		holds  string
	}{
		{"settled", func(*v1alpha2.Topology) {}, ""},
		{"a change not seen yet", func(t *v1alpha2.Topology) { t.Generation = 5 },
			"the agent has not seen the latest change yet (generation 5, observed 4)"},
		{"a part still upgrading", func(t *v1alpha2.Topology) { t.Status.MachineDeployments[0].Phase = v1alpha2.PhaseUpgrading },
			"md-a: RollingOut, 2/2 ready, 2 up to date, 2 machines"},
		{"reconcile failing", func(t *v1alpha2.Topology) {
			t.Status.Conditions[0].Status, t.Status.Conditions[0].Reason, t.Status.Conditions[0].Message = metav1.ConditionFalse, "TopologyReconcileFailed", "boom"
		}, "TopologyReconciled=False TopologyReconcileFailed: boom"},
		{"no condition", func(t *v1alpha2.Topology) { t.Status.Conditions = nil }, ""},
		{"versions match, machines not all ready", func(t *v1alpha2.Topology) {
			t.Status.ControlPlane.ReadyReplicas = 2
			t.Status.ControlPlane.Problems = []v1alpha2.Problem{{Object: "Machine/dev-cp-x", Reason: "NodeNotReady", Message: "kubelet stopped posting node status"}}
		}, "control plane: Degraded, 2/3 ready, 3 up to date, 3 machines; Machine/dev-cp-x NodeNotReady: kubelet stopped posting node status"},
		{"all ready, etcd unhealthy", func(t *v1alpha2.Topology) {
			t.Status.ControlPlane.Problems = []v1alpha2.Problem{{Object: "KubeadmControlPlane/dev-cp", Reason: "EtcdClusterUnhealthy"}, {Object: "Machine/dev-cp-x", Reason: "EtcdMemberUnhealthy"}}
		}, "control plane: Degraded, 3/3 ready, 3 up to date, 3 machines; KubeadmControlPlane/dev-cp EtcdClusterUnhealthy (+1 more)"},
		{"a surplus machine of a rolling pool", func(t *v1alpha2.Topology) { t.Status.MachineDeployments[0].Replicas = 3 },
			"md-a: RollingOut, 2/2 ready, 2 up to date, 3 machines"},
		{"a pool scaling up", func(t *v1alpha2.Topology) {
			t.Status.MachineDeployments[0].Replicas, t.Status.MachineDeployments[0].UpToDateReplicas, t.Status.MachineDeployments[0].DesiredReplicas = 2, 2, new(int32(3))
		}, "md-a: Scaling, 2/3 ready, 2 up to date, 2 machines"},
		{"infrastructure provisioning", func(t *v1alpha2.Topology) { t.Status.Infrastructure = v1alpha2.InfrastructureProvisioning }, ""},
		{"paused", func(t *v1alpha2.Topology) { t.Spec.Paused = true }, ""},
		{"deleting", func(t *v1alpha2.Topology) { t.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }, ""},
		{"a deferred pool", func(t *v1alpha2.Topology) { t.Status.MachineDeployments[0].Phase = v1alpha2.PhaseDeferred },
			"md-a: Deferred, 2/2 ready, 2 up to date, 2 machines"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := settled()
			tc.change(topo)
			// The states as the agent would sum them from these counts.
			for _, p := range []*v1alpha2.PartStatus{topo.Status.ControlPlane, &topo.Status.MachineDeployments[0]} {
				p.State = PartState(p, 0)
			}
			topo.Status.State = TopologyStateOf(&topo.Status)
			if got, want := Settled(topo), tc.name == "settled"; got != want {
				t.Errorf("settled %v, want %v", got, want)
			}
			if got := strings.Join(append(Holds(topo), PartsNotReady(topo, time.Time{})...), "\n"); got != tc.holds {
				t.Errorf("holds %q, want %q", got, tc.holds)
			}
		})
	}
}
