package rules

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func pinnedTopology(version string, pins ...string) *v1alpha2.Topology {
	t := &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: v1alpha2.TopologySpec{Version: version, Workers: &v1alpha2.WorkersTopology{}}}
	for i, name := range []string{"md-a", "md-b"} {
		md := v1alpha2.MachineDeploymentTopology{Name: name, Class: "w"}
		if i < len(pins) {
			md.Version = pins[i]
		}
		t.Spec.Workers.MachineDeployments = append(t.Spec.Workers.MachineDeployments, md)
	}
	t.Spec.Workers.MachinePools = []v1alpha2.MachinePoolTopology{{Name: "mp", Class: "p"}}
	return t
}

func TestValidatePins(t *testing.T) {
	cases := []struct {
		name     string
		old, new *v1alpha2.Topology
		want     []string // one substring per error, in order; none for valid
	}{
		{"unpinned", nil, pinnedTopology("v1.34.0"), nil},
		{"pinned at the control plane's version", nil, pinnedTopology("v1.34.0", "", "v1.34.0"), nil},
		{"three minors behind", nil, pinnedTopology("v1.34.0", "", "v1.31.9"), nil},
		{"not a version", nil, pinnedTopology("v1.34.0", "", "1.33"), []string{"spec.workers.machineDeployments[1].version: Invalid value: \"1.33\": must be a Kubernetes version"}},
		{"newer than the control plane", nil, pinnedTopology("v1.34.0", "", "v1.34.1"), []string{"MachineDeployment md-b is pinned to v1.34.1, newer than the control plane's v1.34.0"}},
		{"four minors behind", nil, pinnedTopology("v1.34.0", "", "v1.30.2"), []string{"md-b is pinned to v1.30.2, 4 minors behind the control plane's v1.34.0", "--unpin md-b", "md-b=v1.31.x"}},
		{"an upgrade past the skew names the pool and both ways forward", pinnedTopology("v1.36.0", "", "v1.33.1"), pinnedTopology("v1.37.0", "", "v1.33.1"),
			[]string{"upgrading to v1.37.0 would leave MachineDeployment md-b, pinned to v1.33.1, 4 minors behind the control plane", "`kubectl topology set version dev --unpin md-b`", "`kubectl topology set version dev md-b=v1.34.x`"}},
		{"a new pin below the pool's version", pinnedTopology("v1.34.0"), pinnedTopology("v1.34.0", "", "v1.33.1"), []string{"MachineDeployment md-b runs v1.34.0: pinning it to the older v1.33.1 would downgrade"}},
		{"a pin moved back", pinnedTopology("v1.34.0", "", "v1.34.0"), pinnedTopology("v1.34.0", "", "v1.33.9"), []string{"runs v1.34.0: pinning it to the older v1.33.9"}},
		{"a pin moved up", pinnedTopology("v1.35.0", "", "v1.33.1"), pinnedTopology("v1.35.0", "", "v1.34.0"), nil},
		{"unpinned after the cluster moved on", pinnedTopology("v1.35.0", "", "v1.33.1"), pinnedTopology("v1.35.0"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := ValidatePins(c.new, c.old, field.NewPath("spec"))
			if len(c.want) == 0 {
				if len(errs) > 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("got %d errors %v, want one saying %q", len(errs), errs, c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(errs[0].Error(), w) {
					t.Errorf("error %q does not say %q", errs[0].Error(), w)
				}
			}
		})
	}
}

func TestValidatePinsUnsafeLetsAPoolGoBack(t *testing.T) {
	old, moved := pinnedTopology("v1.34.0", "", "v1.34.0"), pinnedTopology("v1.34.0", "", "v1.33.9")
	moved.Annotations = map[string]string{clusterv1.ClusterTopologyUnsafeUpdateVersionAnnotation: ""}
	if errs := ValidatePins(moved, old, field.NewPath("spec")); len(errs) > 0 {
		t.Errorf("refused with the unsafe annotation: %v", errs)
	}
}

func TestUpgradePreflightRefusesAVersionAPinCannotStayUnder(t *testing.T) {
	topo := pinnedTopology("v1.36.0", "", "v1.33.1")
	errs := ValidatePinsAt(topo, "v1.37.0")
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "upgrading to v1.37.0 would leave MachineDeployment md-b") {
		t.Errorf("ValidatePinsAt = %v, want md-b named", errs)
	}
	if topo.Spec.Version != "v1.36.0" {
		t.Errorf("ValidatePinsAt changed the Topology's version to %s", topo.Spec.Version)
	}
	errs, _ = UpgradePreflight(topo, nil, "v1.37.0", time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	found := false
	for _, e := range errs {
		found = found || strings.Contains(e.Detail, "md-b, pinned to v1.33.1")
	}
	if !found {
		t.Errorf("UpgradePreflight = %v, want the pin of md-b among its reasons", errs)
	}
}
