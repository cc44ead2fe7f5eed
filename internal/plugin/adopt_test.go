package plugin

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/plan"
)

func TestMachineReplacementsNamesWhatWouldRollMachines(t *testing.T) {
	obj := func(kind, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("x/v1")
		u.SetKind(kind)
		u.SetNamespace("ns")
		u.SetName(name)
		return u
	}
	cp := obj("KubeadmControlPlane", "dev-cp")
	desired := &clusterstate.State{ControlPlane: clusterstate.ControlPlane{Object: cp}}
	for _, tc := range []struct {
		name   string
		change plan.Change
		want   string
	}{
		{"the Cluster is made again anyway", plan.Change{Action: plan.Created, Object: obj("Cluster", "dev")}, ""},
		{"control plane replicas only", plan.Change{Action: plan.Modified, Object: cp, MergePatch: []byte(`{"spec":{"replicas":3}}`)}, ""},
		{"control plane labels only", plan.Change{Action: plan.Modified, Object: cp, MergePatch: []byte(`{"metadata":{"labels":{"a":"b"}}}`)}, ""},
		{"control plane version", plan.Change{Action: plan.Modified, Object: cp, MergePatch: []byte(`{"spec":{"replicas":3,"version":"v1.34.0"}}`)}, "KubeadmControlPlane dev-cp (spec replicas, version), which replaces its Machines"},
		{"pool template", plan.Change{Action: plan.Modified, Object: obj("MachineDeployment", "dev-md-a"), MergePatch: []byte(`{"spec":{"template":{"spec":{"version":"v1.34.0"}}}}`)}, "MachineDeployment dev-md-a's machine template"},
		{"pool replicas", plan.Change{Action: plan.Modified, Object: obj("MachineDeployment", "dev-md-a"), MergePatch: []byte(`{"spec":{"replicas":2}}`)}, ""},
		{"a template rotated", plan.Change{Action: plan.Created, Object: obj("DevMachineTemplate", "dev-md-a-x1")}, "would create DevMachineTemplate dev-md-a-x1"},
		{"a pool dropped", plan.Change{Action: plan.Deleted, Object: obj("MachineDeployment", "dev-md-b")}, "would delete MachineDeployment dev-md-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := machineReplacements(&plan.Plan{Changes: []plan.Change{tc.change}}, desired)
			if tc.want == "" {
				if len(got) > 0 {
					t.Fatalf("refused: %v", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0], tc.want) {
				t.Fatalf("got %v, want one refusal with %q", got, tc.want)
			}
		})
	}
}
