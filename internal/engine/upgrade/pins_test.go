package upgrade

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func pinned(name, version string) v1alpha2.MachineDeploymentTopology {
	p := md(name, nil)
	p.Version = version
	return p
}

func TestPinnedPools(t *testing.T) {
	stable := func(v string) PartObserved { return PartObserved{Exists: true, SpecVersion: v, StatusVersion: v} }
	at := func(v string) PartObserved { return PartObserved{Exists: true, SpecVersion: v} }
	cases := []struct {
		name    string
		topo    *v1alpha2.Topology
		obs     *Observed
		phases  []v1alpha2.PartPhase
		version []string
		reason  string // of b
	}{
		{"an upgrade leaves the pinned pool where it is", topologyWith("v1.34.0", nil, md("a", nil), pinned("b", "v1.33.1")),
			&Observed{ControlPlane: stable("v1.34.0"), MachineDeployments: map[string]PartObserved{"a": at("v1.33.1"), "b": at("v1.33.1")}},
			[]v1alpha2.PartPhase{v1alpha2.PhaseUpgrading, v1alpha2.PhasePinned}, []string{"v1.34.0", "v1.33.1"}, "pinned to v1.33.1"},
		{"a pinned pool does not take a concurrency slot", topologyWith("v1.34.0", nil, pinned("b", "v1.34.0"), md("a", nil)),
			&Observed{ControlPlane: stable("v1.34.0"), MachineDeployments: map[string]PartObserved{"a": at("v1.33.1"), "b": at("v1.33.1")}},
			[]v1alpha2.PartPhase{v1alpha2.PhaseUpgrading, v1alpha2.PhaseUpgrading}, []string{"v1.34.0", "v1.34.0"}, "moving from v1.33.1 to its pinned version v1.34.0"},
		{"a move waits for the control plane to run the pin", topologyWith("v1.34.0", nil, pinned("b", "v1.34.0")),
			&Observed{ControlPlane: PartObserved{Exists: true, SpecVersion: "v1.34.0", StatusVersion: "v1.33.1"}, MachineDeployments: map[string]PartObserved{"b": at("v1.33.1")}},
			[]v1alpha2.PartPhase{v1alpha2.PhasePending}, []string{"v1.33.1"}, "waiting for the control plane to run v1.34.0"},
		{"the hold and defer annotations are the Topology's upgrade's", topologyWith("v1.34.0", nil, withAnnotations(pinned("b", "v1.34.0"), "topology.cluster.x-k8s.io/defer-upgrade")),
			&Observed{ControlPlane: stable("v1.34.0"), MachineDeployments: map[string]PartObserved{"b": at("v1.33.1")}},
			[]v1alpha2.PartPhase{v1alpha2.PhaseUpgrading}, []string{"v1.34.0"}, "moving from v1.33.1"},
		{"a new pinned pool is created at its pin", topologyWith("v1.34.0", nil, pinned("b", "v1.33.1")),
			&Observed{ControlPlane: stable("v1.34.0"), MachineDeployments: map[string]PartObserved{}},
			[]v1alpha2.PartPhase{v1alpha2.PhaseCreating}, []string{"v1.33.1"}, "being created at its pinned version v1.33.1"},
		{"rolling at its pin", topologyWith("v1.34.0", nil, pinned("b", "v1.33.1")),
			&Observed{ControlPlane: stable("v1.34.0"), MachineDeployments: map[string]PartObserved{"b": {Exists: true, SpecVersion: "v1.33.1", Upgrading: true}}},
			[]v1alpha2.PartPhase{v1alpha2.PhaseUpgrading}, []string{"v1.33.1"}, "Machines are rolling to its pinned version v1.33.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Decide(c.topo, c.obs, VersionPlan{})
			var phases []v1alpha2.PartPhase
			var versions []string
			var reason string
			for _, d := range r.MachineDeployments {
				phases, versions = append(phases, d.Phase), append(versions, d.Version)
				if d.Name == "b" {
					reason = d.Reason
					if d.Pin == "" {
						t.Errorf("b's decision does not carry its pin")
					}
				} else if d.Pin != "" {
					t.Errorf("%s is not pinned but its decision carries pin %q", d.Name, d.Pin)
				}
			}
			if !slices.Equal(phases, c.phases) || !slices.Equal(versions, c.version) {
				t.Errorf("phases %v versions %v, want %v %v", phases, versions, c.phases, c.version)
			}
			if !strings.Contains(reason, c.reason) {
				t.Errorf("b's reason %q, want it to say %q", reason, c.reason)
			}
		})
	}
}

func withAnnotations(p v1alpha2.MachineDeploymentTopology, keys ...string) v1alpha2.MachineDeploymentTopology {
	p.Metadata.Annotations = map[string]string{}
	for _, k := range keys {
		p.Metadata.Annotations[k] = ""
	}
	return p
}

// A pinned pool rolling neither holds the control plane's next version nor
// the workers' plan: the control plane moves on while it rolls.
func TestPinnedPoolsDoNotHoldTheControlPlane(t *testing.T) {
	topo := topologyWith("v1.35.0", nil, md("a", nil), pinned("b", "v1.33.1"))
	obs := &Observed{
		ControlPlane:       PartObserved{Exists: true, SpecVersion: "v1.34.0", StatusVersion: "v1.34.0"},
		MachineDeployments: map[string]PartObserved{"a": {Exists: true, SpecVersion: "v1.34.0"}, "b": {Exists: true, SpecVersion: "v1.33.1", Upgrading: true}},
	}
	if mds, _ := PoolsUpgrading(topo, obs); len(mds) != 0 {
		t.Errorf("PoolsUpgrading = %v, want none: b is pinned", mds)
	}
	if got := MinWorkersVersion(Unpinned(topo, obs)); got != "v1.34.0" {
		t.Errorf("MinWorkersVersion without pins = %q, want v1.34.0 (a's; b is pinned)", got)
	}
	if got := MinWorkersVersion(obs); got != "v1.33.1" {
		t.Errorf("MinWorkersVersion = %q, want v1.33.1", got)
	}
	r := Decide(topo, obs, VersionPlan{ControlPlane: []string{"v1.35.0"}})
	if r.ControlPlane.Phase != v1alpha2.PhaseUpgrading || r.ControlPlane.Version != "v1.35.0" {
		t.Errorf("control plane %s at %s (%s), want Upgrading to v1.35.0", r.ControlPlane.Phase, r.ControlPlane.Version, r.ControlPlane.Reason)
	}
}
