package parity

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/apply"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
)

// TestSentConversionData: only the agent's own ownership of the conversion
// annotation counts, whatever else it or others own.
func TestSentConversionData(t *testing.T) {
	owned := func(entries ...metav1.ManagedFieldsEntry) object {
		o := &unstructured.Unstructured{Object: map[string]any{"kind": "DockerMachineTemplate"}}
		o.SetManagedFields(entries)
		return object{obj: o}
	}
	entry := func(manager, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: "Apply", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	withData := `{"f:metadata":{"f:annotations":{"f:cluster.x-k8s.io/cloned-from-name":{},"f:` + contract.ConversionDataAnnotation + `":{}}}}`
	without := `{"f:metadata":{"f:annotations":{"f:cluster.x-k8s.io/cloned-from-name":{}}}}`
	gen := map[string]object{
		"ControlPlane/infrastructure":           owned(entry(apply.FieldManager, withData)),
		"MachineDeployment/md-a/bootstrap":      owned(entry(apply.FieldManager, without), entry("capi-kubeadmconfig", withData)),
		"MachineDeployment/md-a/infrastructure": owned(entry("manager", without), entry(apply.FieldManager, withData)),
		"Cluster":                               owned(),
	}
	var out bytes.Buffer
	got := sentConversionData(&out, gen)
	want := []string{"ControlPlane/infrastructure", "MachineDeployment/md-a/infrastructure"}
	if !slices.Equal(got, want) {
		t.Errorf("sentConversionData = %v, want %v", got, want)
	}
	if !strings.Contains(out.String(), strings.Join(want, ", ")) {
		t.Errorf("the report does not name them: %q", out.String())
	}
	if problems := (Result{Objects: 1, Equal: 1, SentConversionData: got}).Problems(); len(problems) != 1 || !strings.Contains(problems[0], "conversion data") {
		t.Errorf("Problems = %v, want the conversion data named", problems)
	}
	if got := sentConversionData(&out, map[string]object{"x": owned(entry(apply.FieldManager, without))}); got != nil {
		t.Errorf("sentConversionData without it = %v", got)
	}
}
