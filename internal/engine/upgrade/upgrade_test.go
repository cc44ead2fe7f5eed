package upgrade

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func topologyWith(version string, annotations map[string]string, mds ...v1alpha2.MachineDeploymentTopology) *v1alpha2.Topology {
	return &v1alpha2.Topology{
		ObjectMeta: metav1.ObjectMeta{Name: "t", Annotations: annotations},
		Spec:       v1alpha2.TopologySpec{Version: version, Workers: &v1alpha2.WorkersTopology{MachineDeployments: mds}},
	}
}

func md(name string, annotations map[string]string) v1alpha2.MachineDeploymentTopology {
	return v1alpha2.MachineDeploymentTopology{Name: name, Class: "w", Metadata: v1alpha2.ObjectMeta{Annotations: annotations}}
}

func TestSequence(t *testing.T) {
	atOld := func() map[string]PartObserved {
		return map[string]PartObserved{
			"a": {Exists: true, SpecVersion: "v1.32.0"},
			"b": {Exists: true, SpecVersion: "v1.32.0"},
			"c": {Exists: true, SpecVersion: "v1.32.0"},
		}
	}
	stableCP := func(v string) PartObserved { return PartObserved{Exists: true, SpecVersion: v, StatusVersion: v} }
	type want struct {
		cp  v1alpha2.PartPhase
		cpV string
		mds []v1alpha2.PartPhase
		mdV []string
	}
	cases := []struct {
		name string
		topo *v1alpha2.Topology
		obs  *Observed
		want want
	}{
		{"control plane first", topologyWith("v1.33.0", nil, md("a", nil), md("b", nil)), &Observed{ControlPlane: stableCP("v1.32.0"), MachineDeployments: atOld()},
			want{v1alpha2.PhaseUpgrading, "v1.33.0", []v1alpha2.PartPhase{v1alpha2.PhasePending, v1alpha2.PhasePending}, []string{"v1.32.0", "v1.32.0"}}},
		{"control plane rolling", topologyWith("v1.33.0", nil, md("a", nil)), &Observed{ControlPlane: PartObserved{Exists: true, SpecVersion: "v1.33.0", StatusVersion: "v1.32.0"}, MachineDeployments: atOld()},
			want{v1alpha2.PhaseUpgrading, "v1.33.0", []v1alpha2.PartPhase{v1alpha2.PhasePending}, []string{"v1.32.0"}}},
		{"one MD at a time", topologyWith("v1.33.0", nil, md("a", nil), md("b", nil), md("c", nil)), &Observed{ControlPlane: stableCP("v1.33.0"), MachineDeployments: atOld()},
			want{v1alpha2.PhaseUpToDate, "v1.33.0", []v1alpha2.PartPhase{v1alpha2.PhaseUpgrading, v1alpha2.PhasePending, v1alpha2.PhasePending}, []string{"v1.33.0", "v1.32.0", "v1.32.0"}}},
		{"concurrency 2", topologyWith("v1.33.0", map[string]string{clusterv1.ClusterTopologyUpgradeConcurrencyAnnotation: "2"}, md("a", nil), md("b", nil), md("c", nil)), &Observed{ControlPlane: stableCP("v1.33.0"), MachineDeployments: atOld()},
			want{v1alpha2.PhaseUpToDate, "v1.33.0", []v1alpha2.PartPhase{v1alpha2.PhaseUpgrading, v1alpha2.PhaseUpgrading, v1alpha2.PhasePending}, []string{"v1.33.0", "v1.33.0", "v1.32.0"}}},
		{"defer skips one", topologyWith("v1.33.0", nil, md("a", map[string]string{clusterv1.ClusterTopologyDeferUpgradeAnnotation: ""}), md("b", nil)), &Observed{ControlPlane: stableCP("v1.33.0"), MachineDeployments: atOld()},
			want{v1alpha2.PhaseUpToDate, "v1.33.0", []v1alpha2.PartPhase{v1alpha2.PhaseDeferred, v1alpha2.PhaseUpgrading}, []string{"v1.32.0", "v1.33.0"}}},
		{"hold stops the rest", topologyWith("v1.33.0", map[string]string{clusterv1.ClusterTopologyUpgradeConcurrencyAnnotation: "5"}, md("a", nil), md("b", map[string]string{clusterv1.ClusterTopologyHoldUpgradeSequenceAnnotation: ""}), md("c", nil)), &Observed{ControlPlane: stableCP("v1.33.0"), MachineDeployments: atOld()},
			want{v1alpha2.PhaseUpToDate, "v1.33.0", []v1alpha2.PartPhase{v1alpha2.PhaseUpgrading, v1alpha2.PhaseHeld, v1alpha2.PhaseHeld}, []string{"v1.33.0", "v1.32.0", "v1.32.0"}}},
		{"MD mid-upgrade blocks the control plane", topologyWith("v1.34.0", nil, md("a", nil)), &Observed{ControlPlane: stableCP("v1.33.0"), MachineDeployments: map[string]PartObserved{"a": {Exists: true, SpecVersion: "v1.33.0", Upgrading: true}}},
			want{v1alpha2.PhasePending, "v1.33.0", []v1alpha2.PartPhase{v1alpha2.PhasePending}, []string{"v1.33.0"}}},
		{"new cluster creates its pools with the control plane, as upstream", topologyWith("v1.33.0", nil, md("a", nil)), &Observed{},
			want{v1alpha2.PhaseCreating, "v1.33.0", []v1alpha2.PartPhase{v1alpha2.PhaseCreating}, []string{"v1.33.0"}}},
		{"new MD waits for a provisioning control plane", topologyWith("v1.33.0", nil, md("a", nil)), &Observed{ControlPlane: PartObserved{Exists: true, SpecVersion: "v1.33.0"}},
			want{v1alpha2.PhaseCreating, "v1.33.0", []v1alpha2.PartPhase{v1alpha2.PhasePending}, []string{"v1.33.0"}}},
		{"chained: the control plane takes the first step", topologyWith("v1.34.0", nil, md("a", nil)), &Observed{ControlPlane: stableCP("v1.32.0"), MachineDeployments: atOld()},
			want{v1alpha2.PhaseUpgrading, "v1.33.1", []v1alpha2.PartPhase{v1alpha2.PhasePending}, []string{"v1.32.0"}}},
		{"chained: the workers skip the middle step, within the skew", topologyWith("v1.34.0", nil, md("a", nil)), &Observed{ControlPlane: stableCP("v1.33.1"), MachineDeployments: atOld()},
			want{v1alpha2.PhaseUpgrading, "v1.34.0", []v1alpha2.PartPhase{v1alpha2.PhasePending}, []string{"v1.32.0"}}},
		{"chained: the workers go straight to the end", topologyWith("v1.34.0", nil, md("a", nil)), &Observed{ControlPlane: stableCP("v1.34.0"), MachineDeployments: atOld()},
			want{v1alpha2.PhaseUpToDate, "v1.34.0", []v1alpha2.PartPhase{v1alpha2.PhaseUpgrading}, []string{"v1.34.0"}}},
		{"chained: the control plane waits where the workers would fall too far behind", topologyWith("v1.34.0", nil, md("a", nil)),
			&Observed{ControlPlane: stableCP("v1.33.1"), MachineDeployments: map[string]PartObserved{"a": {Exists: true, SpecVersion: "v1.30.2"}}},
			want{v1alpha2.PhasePending, "v1.33.1", []v1alpha2.PartPhase{v1alpha2.PhaseUpgrading}, []string{"v1.33.1"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			class := &v1alpha2.TopologyClass{Spec: v1alpha2.TopologyClassSpec{KubernetesVersions: []string{"v1.30.2", "v1.31.0", "v1.32.0", "v1.33.0", "v1.33.1", "v1.34.0"}}}
			plan, err := PlanVersionsFor(context.Background(), class, tc.topo, tc.obs, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := Decide(tc.topo, tc.obs, plan)
			if r.ControlPlane.Phase != tc.want.cp || r.ControlPlane.Version != tc.want.cpV {
				t.Errorf("control plane: %s %s, want %s %s (%s)", r.ControlPlane.Phase, r.ControlPlane.Version, tc.want.cp, tc.want.cpV, r.ControlPlane.Reason)
			}
			for i, d := range r.MachineDeployments {
				if d.Phase != tc.want.mds[i] || d.Version != tc.want.mdV[i] {
					t.Errorf("%s: %s %s, want %s %s (%s)", d.Name, d.Phase, d.Version, tc.want.mds[i], tc.want.mdV[i], d.Reason)
				}
				if d.Phase != v1alpha2.PhaseUpToDate && d.Phase != v1alpha2.PhaseUpgrading && d.Reason == "" {
					t.Errorf("%s waits without a reason", d.Name)
				}
			}
		})
	}
}

// TestPlanUpgradeChained: the preview of an upgrade over two minors walks
// the control plane through each and the workers once, at the end, within
// the skew rules.
func TestPlanUpgradeChained(t *testing.T) {
	topo := topologyWith("v1.31.4", nil, md("a", nil), md("b", nil))
	topo.Status.MachineDeployments = []v1alpha2.PartStatus{{Name: "a", Version: "v1.31.4", Replicas: 2}, {Name: "b", Version: "v1.31.4", Replicas: 1}}
	class := &v1alpha2.TopologyClass{Spec: v1alpha2.TopologyClassSpec{KubernetesVersions: []string{"v1.31.4", "v1.32.0", "v1.32.5", "v1.33.2"}}}
	got := strings.Join(PlanUpgrade(topo, class, "v1.33.2").Lines(), "\n")
	want := strings.Join([]string{
		"chained over 2 minors, as the class's kubernetesVersions allow: v1.31.4 → v1.32.5 → v1.33.2",
		"1. control plane: v1.31.4 → v1.32.5, 0 machine(s) replaced",
		"2. control plane: v1.32.5 → v1.33.2, 0 machine(s) replaced",
		"3. a (w) v1.31.4 → v1.33.2: 2 machine(s) replaced",
		"4. b (w) v1.31.4 → v1.33.2: 1 machine(s) replaced",
	}, "\n")
	if got != want {
		t.Errorf("chained preview:\n%s\nwant:\n%s", got, want)
	}
	// Without the class's versions the preview is the single step asked
	// for; the preflight is what refuses it.
	if lines := PlanUpgrade(topo, nil, "v1.33.2").Lines(); len(lines) != 3 || !strings.Contains(lines[0], "v1.31.4 → v1.33.2") {
		t.Errorf("preview without the class: %q", lines)
	}
	// A class whose extension plans upgrades: the preview says the extension
	// has the last word, and shows what the class's list would give.
	class.Spec.Upgrade.External.GenerateUpgradePlanExtension = "plan.ext"
	lines := PlanUpgrade(topo, class, "v1.33.2").Lines()
	if len(lines) != 6 || lines[0] != "the class's upgrade-plan extension plan.ext decides the versions in between when the upgrade starts; the steps below may differ" || lines[1] != want[:strings.Index(want, "\n")] {
		t.Errorf("preview with an upgrade-plan extension: %q", lines)
	}
}
