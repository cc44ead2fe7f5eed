package fleet

import (
	"slices"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func TestPinnedStay(t *testing.T) {
	topo := &v1alpha2.Topology{Spec: v1alpha2.TopologySpec{Version: "v1.33.1", Workers: &v1alpha2.WorkersTopology{
		MachineDeployments: []v1alpha2.MachineDeploymentTopology{{Name: "md-a"}, {Name: "md-gpu", Version: "v1.32.4"}},
		MachinePools:       []v1alpha2.MachinePoolTopology{{Name: "mp-db", Version: "v1.33.1"}},
	}}}
	want := []string{"md-gpu stays at its pinned v1.32.4", "mp-db stays at its pinned v1.33.1"}
	if got := PinnedStay(v1alpha2.RolloutChange{Version: "v1.34.0"}, topo); !slices.Equal(got, want) {
		t.Errorf("a version change: %q, want %q", got, want)
	}
	for name, change := range map[string]v1alpha2.RolloutChange{
		"no version":   {Class: "other"},
		"same version": {Version: "v1.33.1"},
	} {
		if got := PinnedStay(change, topo); len(got) != 0 {
			t.Errorf("%s: %q, want nothing said of pins", name, got)
		}
	}
}
