package printer

import (
	"bytes"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/plan"
)

// quickStartChanges are a plan's changes of each kind: a created machine
// template, a modified pool, a deleted template and a pool that waits.
func quickStartChanges() []plan.Change {
	obj := func(kind, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetKind(kind)
		u.SetNamespace("default")
		u.SetName(name)
		return u
	}
	return []plan.Change{
		{Action: plan.Created, Object: obj("DockerMachineTemplate", "dev-md-a-infra-v2")},
		{Action: plan.Modified, Object: obj("MachineDeployment", "dev-md-a"), MergePatch: json.RawMessage(`{"spec":{"template":{"spec":{"version":"v1.34.0"}}}}`)},
		{Action: plan.Deleted, Object: obj("DockerMachineTemplate", "dev-md-a-infra-v1")},
		{Action: plan.Pending, Object: obj("MachineDeployment", "dev-md-b"), Reason: "waits for the control plane to reach v1.34.0"},
	}
}

// TestPlanPrinters: plan's table, a command's preview list and adopt's list
// with patches, each as printed.
func TestPlanPrinters(t *testing.T) {
	for name, print := range map[string]func(*bytes.Buffer, []plan.Change) error{
		"plan-table.txt":     func(w *bytes.Buffer, c []plan.Change) error { return PlanTable(w, c) },
		"changes.txt":        func(w *bytes.Buffer, c []plan.Change) error { return Changes(w, c) },
		"change-patches.txt": func(w *bytes.Buffer, c []plan.Change) error { return ChangePatches(w, c) },
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := print(&buf, quickStartChanges()); err != nil {
				t.Fatal(err)
			}
			golden(t, name, buf.String())
		})
	}
}
