package patches

import (
	"context"
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func infraPatch(name string, ops ...v1alpha2.JSONPatch) v1alpha2.ClusterClassPatch {
	return v1alpha2.ClusterClassPatch{Name: name, Definitions: []v1alpha2.PatchDefinition{{
		Selector:    v1alpha2.PatchSelector{APIVersion: "a/v1", Kind: "K", MatchResources: v1alpha2.PatchSelectorMatch{InfrastructureCluster: true}},
		JSONPatches: ops,
	}}}
}

func set(op, path, value string) v1alpha2.JSONPatch {
	p := v1alpha2.JSONPatch{Op: op, Path: path}
	if value != "" {
		p.Value = &apiextensionsv1.JSON{Raw: []byte(value)}
	}
	return p
}

func infraTarget() *Target {
	return &Target{Role: InfrastructureCluster, Description: "infra", Object: &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "a/v1", "kind": "K", "spec": map[string]any{"template": map[string]any{"spec": map[string]any{}}},
	}}}
}

func TestApplyKeepsClassOrderAndNamesFailingDefinition(t *testing.T) {
	target := infraTarget()
	err := Apply(context.Background(), Input{Targets: []*Target{target}, Patches: []v1alpha2.ClusterClassPatch{
		infraPatch("first", set("add", "/spec/template/spec/a", "1")),
		infraPatch("second", set("replace", "/spec/template/spec/a", "2"), set("add", "/spec/template/spec/b", `"x"`)),
	}})
	if err != nil {
		t.Fatal(err)
	}
	spec, _, _ := unstructured.NestedMap(target.Object.Object, "spec", "template", "spec")
	if spec["a"] != float64(2) || spec["b"] != "x" {
		t.Fatalf("later patch must see and override the earlier one: %v", spec)
	}

	target = infraTarget()
	err = Apply(context.Background(), Input{Targets: []*Target{target}, Patches: []v1alpha2.ClusterClassPatch{
		infraPatch("fine", set("add", "/spec/template/spec/a", "1")),
		infraPatch("broken", set("remove", "/spec/template/spec/missing", "")),
	}})
	var pe *Error
	if !errors.As(err, &pe) || pe.Patch != "broken" || pe.Field != "spec.patches[1].definitions[0]" || !strings.Contains(pe.Error(), "missing") {
		t.Fatalf("want the broken patch named with its field, got %v", err)
	}
	if spec, _, _ := unstructured.NestedMap(target.Object.Object, "spec", "template", "spec"); len(spec) != 0 {
		t.Fatalf("a failed apply must leave the object unchanged, got %v", spec)
	}
}

// recordingExternal checks what external patches see: the generator the
// inline patches before it, the validator every patch.
type recordingExternal struct{ seen, validated any }

func (r *recordingExternal) Generate(_ context.Context, _ *v1alpha2.ClusterClassPatch, in ExternalInput) error {
	r.seen, _, _ = unstructured.NestedFieldCopy(in.Targets[0].Object.Object, "spec", "template", "spec", "a")
	return nil
}

func (r *recordingExternal) Validate(_ context.Context, _ *v1alpha2.ClusterClassPatch, in ExternalInput) error {
	r.validated, _, _ = unstructured.NestedFieldCopy(in.Targets[0].Object.Object, "spec", "template", "spec", "b")
	return nil
}

func TestExternalPatchSeesEarlierInlinePatches(t *testing.T) {
	ext := &recordingExternal{}
	target := infraTarget()
	gen := "gen"
	err := Apply(context.Background(), Input{Targets: []*Target{target}, External: ext, Patches: []v1alpha2.ClusterClassPatch{
		infraPatch("first", set("add", "/spec/template/spec/a", "1")),
		{Name: "ext", External: &v1alpha2.ExternalPatchDefinition{GeneratePatchesExtension: &gen}},
	}})
	if err != nil || ext.seen != float64(1) {
		t.Fatalf("external patch saw %v (err %v), want the inline patch's 1", ext.seen, err)
	}
}

func TestExternalValidatorSeesEveryPatch(t *testing.T) {
	ext := &recordingExternal{}
	check := "check"
	err := Apply(context.Background(), Input{Targets: []*Target{infraTarget()}, External: ext, Patches: []v1alpha2.ClusterClassPatch{
		{Name: "validate", External: &v1alpha2.ExternalPatchDefinition{ValidateTopologyExtension: &check}},
		infraPatch("later", set("add", "/spec/template/spec/b", "2")),
	}})
	if err != nil || ext.validated != float64(2) {
		t.Fatalf("the validator saw %v (err %v), want the later patch's 2", ext.validated, err)
	}
	if ext.seen != nil {
		t.Error("a validate-only patch was called to generate")
	}
}

func TestExternalPatchOffline(t *testing.T) {
	gen := "gen.ext"
	err := Apply(context.Background(), Input{Targets: []*Target{infraTarget()}, Patches: []v1alpha2.ClusterClassPatch{
		{Name: "ext", External: &v1alpha2.ExternalPatchDefinition{GeneratePatchesExtension: &gen}},
	}})
	var pe *Error
	if !errors.As(err, &pe) || pe.Field != "spec.patches[0].external" || !strings.Contains(err.Error(), "Runtime SDK extension") {
		t.Fatalf("offline external patch: %v", err)
	}
}
