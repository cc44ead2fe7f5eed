package health

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/core"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func objectFromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// A control plane and a pool as Cluster API v1.14 reports them when read as
// v1beta1: counters in status, upstream's v1beta2 conditions in status.v1beta2.
const (
	kcpEtcdUnhealthy = `
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: KubeadmControlPlane
metadata: {name: dev-cp, generation: 2}
spec: {version: v1.33.1, replicas: 3}
status:
  observedGeneration: 2
  version: v1.33.1
  replicas: 3
  readyReplicas: 3
  updatedReplicas: 3
  conditions:
  - {type: Ready, status: "True", lastTransitionTime: "2026-11-23T10:00:00Z"}
  v1beta2:
    availableReplicas: 3
    conditions:
    - {type: Available, status: "True", reason: Available, lastTransitionTime: "2026-11-23T10:00:00Z"}
    - {type: EtcdClusterHealthy, status: "False", reason: EtcdClusterNotHealthy, message: "* Machine dev-cp-a:\n  * EtcdMemberHealthy: etcd member is unhealthy", lastTransitionTime: "2026-11-23T11:46:00Z"}
    - {type: RollingOut, status: "False", reason: NotRollingOut, lastTransitionTime: "2026-11-23T10:00:00Z"}
`
	mdHalfReady = `
apiVersion: cluster.x-k8s.io/v1beta1
kind: MachineDeployment
metadata: {name: dev-md-a, generation: 1}
spec: {replicas: 2, template: {spec: {version: v1.33.1}}}
status:
  observedGeneration: 1
  replicas: 2
  readyReplicas: 1
  updatedReplicas: 2
  availableReplicas: 1
  v1beta2:
    conditions:
    - {type: Available, status: "False", reason: NotAvailable, message: "1 available replicas, at least 2 required", lastTransitionTime: "2026-11-23T11:50:00Z"}
`
	machineReady = `
apiVersion: cluster.x-k8s.io/v1beta1
kind: Machine
metadata: {name: dev-md-a-1, labels: {cluster.x-k8s.io/deployment-name: dev-md-a}}
spec: {version: v1.33.1}
status:
  phase: Running
  nodeRef: {name: dev-md-a-1}
  v1beta2:
    conditions:
    - {type: Ready, status: "True", reason: Ready, lastTransitionTime: "2026-11-23T10:00:00Z"}
`
	machineNodeNotReady = `
apiVersion: cluster.x-k8s.io/v1beta1
kind: Machine
metadata: {name: dev-md-a-2, labels: {cluster.x-k8s.io/deployment-name: dev-md-a}}
spec: {version: v1.33.1}
status:
  phase: Running
  nodeRef: {name: dev-md-a-2}
  v1beta2:
    conditions:
    - {type: Ready, status: "False", reason: NotReady, message: "* NodeHealthy: Node dev-md-a-2 is not ready", lastTransitionTime: "2026-11-23T11:50:00Z"}
`
	machineProvisioning = `
apiVersion: cluster.x-k8s.io/v1beta1
kind: Machine
metadata: {name: dev-md-b-1, creationTimestamp: "2026-11-23T11:58:00Z", labels: {cluster.x-k8s.io/deployment-name: dev-md-b}}
spec: {version: v1.33.1}
status:
  phase: Provisioning
`
	mdProvisioning = `
apiVersion: cluster.x-k8s.io/v1beta1
kind: MachineDeployment
metadata: {name: dev-md-b, generation: 1}
spec: {replicas: 1, template: {spec: {version: v1.33.1}}}
status: {observedGeneration: 1, replicas: 1, updatedReplicas: 1}
`
)

// TestObserveHealth reads health the way the agent does: from the control
// plane's and pools' own conditions and from their Machines, with since when.
func TestObserveHealth(t *testing.T) {
	s := &clusterstate.State{
		ControlPlane: clusterstate.ControlPlane{Object: objectFromYAML(t, kcpEtcdUnhealthy)},
		MachineDeployments: map[string]*clusterstate.Worker{
			"md-a": {Object: objectFromYAML(t, mdHalfReady)},
			"md-b": {Object: objectFromYAML(t, mdProvisioning)},
		},
	}
	machines, err := core.Machines([]*unstructured.Unstructured{objectFromYAML(t, machineNodeNotReady), objectFromYAML(t, machineReady), objectFromYAML(t, machineProvisioning)})
	if err != nil {
		t.Fatal(err)
	}
	observed, err := ObserveState(s)
	if err != nil {
		t.Fatal(err)
	}
	obs := WithMachines(observed, s, machines)

	cp := obs.ControlPlane
	if len(cp.Problems) != 1 || cp.Problems[0].Reason != "EtcdClusterNotHealthy" || cp.Problems[0].Message != "Machine dev-cp-a: EtcdMemberHealthy: etcd member is unhealthy" {
		t.Errorf("control plane problems: %+v", cp.Problems)
	}
	if cp.AvailableReplicas != 3 {
		t.Errorf("control plane available %d, want 3 from status.v1beta2", cp.AvailableReplicas)
	}
	a := obs.MachineDeployments["md-a"]
	if len(a.Problems) != 2 || a.Problems[0].Object != "MachineDeployment/dev-md-a" || a.Problems[1].Object != "Machine/dev-md-a-2" || a.Problems[1].Message != "NodeHealthy: Node dev-md-a-2 is not ready" {
		t.Errorf("md-a problems: %+v", a.Problems)
	}
	if since := a.Problems[1].Since; since == nil || !since.Time.Equal(time.Date(2026, 11, 23, 11, 50, 0, 0, time.UTC)) {
		t.Errorf("md-a machine problem since %v, want the Ready condition's transition", since)
	}
	b := obs.MachineDeployments["md-b"]
	if b.Provisioning != 1 || len(b.Problems) != 1 || b.Problems[0].Reason != "NotReady" || b.Problems[0].Message != "phase Provisioning" {
		t.Errorf("md-b: provisioning %d, problems %+v", b.Provisioning, b.Problems)
	}

	// What status says of each, through the same Summarize the agent runs.
	three, two, one := int32(3), int32(2), int32(1)
	topo := &v1alpha2.Topology{Spec: v1alpha2.TopologySpec{Version: "v1.33.1",
		ControlPlane: v1alpha2.ControlPlaneTopology{Replicas: &three},
		Workers: &v1alpha2.WorkersTopology{MachineDeployments: []v1alpha2.MachineDeploymentTopology{
			{Name: "md-a", Class: "default", Replicas: &two}, {Name: "md-b", Class: "default", Replicas: &one},
		}}}}
	r := &upgrade.Sequence{DesiredVersion: "v1.33.1",
		ControlPlane:       upgrade.Decision{Name: upgrade.ControlPlaneName, Version: "v1.33.1", Phase: v1alpha2.PhaseUpToDate},
		MachineDeployments: []upgrade.Decision{{Name: "md-a", Version: "v1.33.1", Phase: v1alpha2.PhaseUpToDate}, {Name: "md-b", Version: "v1.33.1", Phase: v1alpha2.PhaseUpToDate}},
	}
	var status v1alpha2.TopologyStatus
	status.Infrastructure = v1alpha2.InfrastructureProvisioned
	Summarize(topo, r, obs, &status)
	got := []v1alpha2.State{status.ControlPlane.State, status.MachineDeployments[0].State, status.MachineDeployments[1].State, status.State}
	want := []v1alpha2.State{v1alpha2.StateDegraded, v1alpha2.StateDegraded, v1alpha2.StateProvisioning, v1alpha2.StateDegraded}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("states (control plane, md-a, md-b, topology) = %v, want %v", got, want)
			break
		}
	}
	topo.Status = status
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	health := strings.Join(ControlPlaneHealth(topo, now), "\n")
	if !strings.Contains(health, "the control plane is Degraded") || !strings.Contains(health, "EtcdClusterNotHealthy: Machine dev-cp-a: EtcdMemberHealthy: etcd member is unhealthy for 14m") {
		t.Errorf("preflight's health reasons:\n%s", health)
	}
}

// TestPartStateOrder: rolling out and provisioning read before degraded, a
// healthy part reads its wait, and only all of it reads Ready.
func TestPartStateOrder(t *testing.T) {
	two := int32(2)
	base := func() *v1alpha2.PartStatus {
		return &v1alpha2.PartStatus{Name: "md-a", ObjectName: "dev-md-a", DesiredReplicas: &two, Replicas: 2, ReadyReplicas: 2, UpToDateReplicas: 2, Phase: v1alpha2.PhaseUpToDate}
	}
	for _, tc := range []struct {
		name         string
		change       func(*v1alpha2.PartStatus)
		provisioning int32
		want         v1alpha2.State
	}{
		{"ready", func(*v1alpha2.PartStatus) {}, 0, v1alpha2.StateReady},
		{"not made yet, waits", func(p *v1alpha2.PartStatus) { p.ObjectName, p.Phase = "", v1alpha2.PhasePending }, 0, v1alpha2.StateWaiting},
		{"not made yet, creating", func(p *v1alpha2.PartStatus) { p.ObjectName, p.Phase = "", v1alpha2.PhaseCreating }, 0, v1alpha2.StateProvisioning},
		{"first machines coming up", func(p *v1alpha2.PartStatus) { p.ReadyReplicas = 0 }, 2, v1alpha2.StateProvisioning},
		{"the last machine of a new control plane still joining", func(p *v1alpha2.PartStatus) {
			p.Problems = []v1alpha2.Problem{{Object: "KubeadmControlPlane/dev", Reason: "EtcdClusterNotHealthy"}}
		}, 1, v1alpha2.StateProvisioning},
		{"upgrading", func(p *v1alpha2.PartStatus) { p.Phase, p.ReadyReplicas = v1alpha2.PhaseUpgrading, 1 }, 0, v1alpha2.StateRollingOut},
		{"one machine lost", func(p *v1alpha2.PartStatus) { p.ReadyReplicas = 1 }, 0, v1alpha2.StateDegraded},
		{"scaling down", func(p *v1alpha2.PartStatus) { p.Replicas, p.UpToDateReplicas = 3, 3 }, 0, v1alpha2.StateScaling},
		{"held and healthy", func(p *v1alpha2.PartStatus) { p.Phase = v1alpha2.PhaseHeld }, 0, v1alpha2.StateHeld},
		{"held and degraded", func(p *v1alpha2.PartStatus) { p.Phase, p.ReadyReplicas = v1alpha2.PhaseHeld, 1 }, 0, v1alpha2.StateDegraded},
		{"deferred", func(p *v1alpha2.PartStatus) { p.Phase = v1alpha2.PhaseDeferred }, 0, v1alpha2.StateDeferred},
		{"waiting its turn", func(p *v1alpha2.PartStatus) { p.Phase = v1alpha2.PhasePending }, 0, v1alpha2.StateWaiting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			tc.change(p)
			if got := PartState(p, tc.provisioning); got != tc.want {
				t.Errorf("state %s, want %s", got, tc.want)
			}
		})
	}
}

// TestCarryStateSince: a state keeps its transition time while it lasts and
// takes now when it changes.
func TestCarryStateSince(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	now := metav1.NewTime(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	before := &v1alpha2.TopologyStatus{State: v1alpha2.StateReady, StateSince: &then,
		ControlPlane:       &v1alpha2.PartStatus{Name: upgrade.ControlPlaneName, State: v1alpha2.StateReady, StateSince: &then},
		MachineDeployments: []v1alpha2.PartStatus{{Name: "md-a", State: v1alpha2.StateReady, StateSince: &then}}}
	after := before.DeepCopy()
	after.State = v1alpha2.StateDegraded
	after.MachineDeployments[0].State = v1alpha2.StateDegraded
	after.MachineDeployments = append(after.MachineDeployments, v1alpha2.PartStatus{Name: "md-b", State: v1alpha2.StateProvisioning})
	CarryStateSince(before, after, now)
	if !after.ControlPlane.StateSince.Equal(&then) {
		t.Errorf("an unchanged state moved its time to %v", after.ControlPlane.StateSince)
	}
	for _, got := range []*metav1.Time{after.StateSince, after.MachineDeployments[0].StateSince, after.MachineDeployments[1].StateSince} {
		if !got.Equal(&now) {
			t.Errorf("a changed or new state has time %v, want now", got)
		}
	}
}

// TestUpToDateOfAV1Beta2Pool: right after a template change a v1beta2
// MachineDeployment may report every Machine up to date (their UpToDate
// conditions lag) while its v1beta1 count, kept under status.deprecated,
// already says the new MachineSet has none: the pool is rolling out.
func TestUpToDateOfAV1Beta2Pool(t *testing.T) {
	for _, tc := range []struct {
		name, status string
		want         int32
	}{
		{"v1beta2 lagging", "{replicas: 3, upToDateReplicas: 3, deprecated: {v1beta1: {updatedReplicas: 0}}}", 0},
		{"v1beta2 settled", "{replicas: 3, upToDateReplicas: 3, deprecated: {v1beta1: {updatedReplicas: 3}}}", 3},
		{"v1beta2 without the deprecated count", "{replicas: 3, upToDateReplicas: 2}", 2},
		{"v1beta1", "{replicas: 3, updatedReplicas: 1}", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := objectFromYAML(t, "apiVersion: cluster.x-k8s.io/v1beta2\nkind: MachineDeployment\nmetadata: {name: md}\nstatus: "+tc.status)
			if got := upToDateReplicas(md); got != tc.want {
				t.Errorf("up to date %d, want %d", got, tc.want)
			}
		})
	}
}

func TestInfrastructurePhase(t *testing.T) {
	infra := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{}}}
	cluster := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{}}}
	if p := InfrastructurePhase(&clusterstate.State{}); p != v1alpha2.InfrastructurePending {
		t.Errorf("no InfrastructureCluster: %s, want Pending", p)
	}
	if p := InfrastructurePhase(&clusterstate.State{InfrastructureCluster: infra, Cluster: cluster}); p != v1alpha2.InfrastructureProvisioning {
		t.Errorf("not ready: %s, want Provisioning", p)
	}
	_ = unstructured.SetNestedField(cluster.Object, true, "status", "infrastructureReady")
	if p := InfrastructurePhase(&clusterstate.State{InfrastructureCluster: infra, Cluster: cluster}); p != v1alpha2.InfrastructureProvisioned {
		t.Errorf("the Cluster says ready: %s, want Provisioned", p)
	}
}

// TestMachineWithOnlyV1Beta1Conditions: a Machine from a core that sets no
// v1beta2 conditions yet is read by its own, as before the types were
// upstream's: its Ready condition's reason is the problem, and a false
// BootstrapReady means it is still coming up.
func TestMachineWithOnlyV1Beta1Conditions(t *testing.T) {
	m, err := core.Machine(objectFromYAML(t, `
apiVersion: cluster.x-k8s.io/v1beta1
kind: Machine
metadata: {name: dev-md-a-3, labels: {cluster.x-k8s.io/deployment-name: dev-md-a}}
spec: {version: v1.33.1}
status:
  phase: Provisioned
  conditions:
  - {type: Ready, status: "False", severity: Info, reason: WaitingForBootstrapData, message: "0 of 2 completed", lastTransitionTime: "2026-11-23T11:55:00Z"}
  - {type: BootstrapReady, status: "False", severity: Info, reason: WaitingForDataSecret, lastTransitionTime: "2026-11-23T11:55:00Z"}
`))
	if err != nil {
		t.Fatal(err)
	}
	provisioning, problem := machineHealth(m)
	if !provisioning || problem == nil || problem.Reason != "WaitingForBootstrapData" || problem.Message != "0 of 2 completed" {
		t.Errorf("provisioning %v, problem %+v; want provisioning and the Ready condition's reason and message", provisioning, problem)
	}
}

// TestPoolCountsAreUpstreamsV1Beta2Counts: a pool reads upstream's v1beta2
// counts at either core version (under status.v1beta2 when read as v1beta1),
// the v1beta1 counts where there are no others, and the lower of the two
// up-to-date counts while a template change rolls out.
func TestPoolCountsAreUpstreamsV1Beta2Counts(t *testing.T) {
	for _, tc := range []struct {
		name, doc                  string
		ready, available, upToDate int32
	}{{
		name: "v1beta2 during a rollout",
		doc: `
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {name: dev-md-a, generation: 4}
spec: {template: {spec: {version: v1.34.0}}}
status: {observedGeneration: 4, replicas: 3, readyReplicas: 3, availableReplicas: 3, upToDateReplicas: 3, deprecated: {v1beta1: {updatedReplicas: 1, readyReplicas: 3, availableReplicas: 3, unavailableReplicas: 0}}}
`, ready: 3, available: 3, upToDate: 1,
	}, {
		name: "v1beta1 with v1beta2 counts",
		doc: `
apiVersion: cluster.x-k8s.io/v1beta1
kind: MachineDeployment
metadata: {name: dev-md-a, generation: 4}
spec: {template: {spec: {version: v1.34.0}}}
status: {observedGeneration: 4, replicas: 3, readyReplicas: 3, availableReplicas: 3, updatedReplicas: 3, v1beta2: {readyReplicas: 2, availableReplicas: 2, upToDateReplicas: 3}}
`, ready: 2, available: 2, upToDate: 3,
	}, {
		name: "v1beta1 from a core before v1beta2 counts",
		doc: `
apiVersion: cluster.x-k8s.io/v1beta1
kind: MachineDeployment
metadata: {name: dev-md-a, generation: 4}
spec: {template: {spec: {version: v1.34.0}}}
status: {observedGeneration: 4, replicas: 3, readyReplicas: 3, availableReplicas: 2, updatedReplicas: 2}
`, ready: 3, available: 2, upToDate: 2,
	}} {
		s := &clusterstate.State{MachineDeployments: map[string]*clusterstate.Worker{"md-a": {Object: objectFromYAML(t, tc.doc)}}}
		obs, err := ObserveState(s)
		if err != nil {
			t.Fatal(err)
		}
		got := obs.MachineDeployments["md-a"]
		if got.SpecVersion != "v1.34.0" || got.Replicas != 3 || got.ReadyReplicas != tc.ready || got.AvailableReplicas != tc.available || got.UpToDateReplicas != tc.upToDate || got.Upgrading != (tc.upToDate < 3) {
			t.Errorf("%s: read %+v, want version v1.34.0, 3 replicas, %d ready, %d available, %d up to date", tc.name, got, tc.ready, tc.available, tc.upToDate)
		}
	}
}

// TestMachinePoolIsReadLikeADeployment: a MachinePool's version, counts and
// health conditions, at v1beta1 with v1beta2 counts beside.
func TestMachinePoolIsReadLikeADeployment(t *testing.T) {
	s := &clusterstate.State{MachinePools: map[string]*clusterstate.Worker{"mp-0": {Object: objectFromYAML(t, `
apiVersion: cluster.x-k8s.io/v1beta1
kind: MachinePool
metadata: {name: dev-mp-0, generation: 2}
spec: {replicas: 2, template: {spec: {clusterName: dev, version: v1.33.1, bootstrap: {dataSecretName: x}, infrastructureRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: DockerMachinePool, name: dev-mp-0}}}}
status:
  observedGeneration: 2
  replicas: 2
  readyReplicas: 2
  v1beta2:
    readyReplicas: 1
    upToDateReplicas: 2
    conditions:
    - {type: Available, status: "False", reason: NotAvailable, message: "1 available replicas, at least 2 required", lastTransitionTime: "2026-11-23T11:50:00Z"}
`)}}}
	obs, err := ObserveState(s)
	if err != nil {
		t.Fatal(err)
	}
	got := obs.MachinePools["mp-0"]
	if got.SpecVersion != "v1.33.1" || got.Replicas != 2 || got.ReadyReplicas != 1 || got.UpToDateReplicas != 2 || got.Upgrading {
		t.Errorf("read %+v, want v1.33.1, 2 replicas, 1 ready, 2 up to date", got)
	}
	if len(got.Problems) != 1 || got.Problems[0].Object != "MachinePool/dev-mp-0" || got.Problems[0].Reason != "NotAvailable" {
		t.Errorf("problems %+v, want MachinePool/dev-mp-0 NotAvailable", got.Problems)
	}
}

// TestObserveStateNamesAPoolItCannotRead: a pool whose status has the
// wrong shape stops the observation with the pool named.
func TestObserveStateNamesAPoolItCannotRead(t *testing.T) {
	md := objectFromYAML(t, mdProvisioning)
	md.SetNamespace("default")
	_ = unstructured.SetNestedField(md.Object, "three", "status", "replicas")
	_, err := ObserveState(&clusterstate.State{MachineDeployments: map[string]*clusterstate.Worker{"md-b": {Object: md}}})
	if err == nil || !strings.Contains(err.Error(), "MachineDeployment default/dev-md-b") {
		t.Errorf("got %v, want an error naming MachineDeployment default/dev-md-b", err)
	}
}

// TestSummarizeMatchesPoolsByName: a sequence computed from an older spec
// (a pool added in front since) still gives each pool its own decision, and
// a pool it has none for reads Pending rather than another pool's phase.
func TestSummarizeMatchesPoolsByName(t *testing.T) {
	one := int32(1)
	topo := &v1alpha2.Topology{Spec: v1alpha2.TopologySpec{Version: "v1.34.0",
		ControlPlane: v1alpha2.ControlPlaneTopology{Replicas: &one},
		Workers: &v1alpha2.WorkersTopology{
			MachineDeployments: []v1alpha2.MachineDeploymentTopology{{Name: "md-new", Class: "default", Replicas: &one}, {Name: "md-a", Class: "default", Replicas: &one}},
			MachinePools:       []v1alpha2.MachinePoolTopology{{Name: "mp-new", Class: "default", Replicas: &one}},
		}}}
	r := &upgrade.Sequence{DesiredVersion: "v1.34.0",
		ControlPlane:       upgrade.Decision{Name: upgrade.ControlPlaneName, Version: "v1.34.0", Phase: v1alpha2.PhaseUpToDate},
		MachineDeployments: []upgrade.Decision{{Name: "md-a", Version: "v1.33.1", Phase: v1alpha2.PhaseUpgrading, Reason: "rolling"}},
	}
	var status v1alpha2.TopologyStatus
	Summarize(topo, r, nil, &status)
	if len(status.MachineDeployments) != 2 || len(status.MachinePools) != 1 {
		t.Fatalf("parts: %d MachineDeployments, %d MachinePools, want the spec's 2 and 1", len(status.MachineDeployments), len(status.MachinePools))
	}
	got := map[string]v1alpha2.PartPhase{}
	for _, p := range append(status.MachineDeployments, status.MachinePools...) {
		got[p.Name] = p.Phase
	}
	want := map[string]v1alpha2.PartPhase{"md-new": v1alpha2.PhasePending, "md-a": v1alpha2.PhaseUpgrading, "mp-new": v1alpha2.PhasePending}
	for name, phase := range want {
		if got[name] != phase {
			t.Errorf("%s: phase %q, want %q (all: %v)", name, got[name], phase, got)
		}
	}
	if status.MachineDeployments[1].Message != "rolling" {
		t.Errorf("md-a's message %q, want its own decision's (rolling)", status.MachineDeployments[1].Message)
	}
	if status.Phase != v1alpha2.PhasePending {
		t.Errorf("topology phase %q, want Pending while a pool is unplanned", status.Phase)
	}
}
