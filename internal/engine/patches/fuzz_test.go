package patches

import (
	"context"
	"encoding/json"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// FuzzApply feeds arbitrary operations, values and templates to Apply: it may
// return errors, never panic.
func FuzzApply(f *testing.F) {
	f.Add("add", "/spec/template/spec/a", `{"x":1}`, "")
	f.Add("replace", "/spec/template/spec/list/0", `1`, "")
	f.Add("remove", "/spec/template/spec/missing", ``, "")
	f.Add("add", "/spec/template/spec/t", ``, "{{ .v | upper }}")
	f.Add("add", "/spec/-", `null`, "{{ index .v 3 }}")
	f.Fuzz(func(t *testing.T, op, path, value, tpl string) {
		jp := v1alpha2.JSONPatch{Op: op, Path: path}
		if tpl != "" {
			jp.ValueFrom = &v1alpha2.JSONPatchValue{Template: &tpl}
		} else if value != "" {
			jp.Value = &apiextensionsv1.JSON{Raw: []byte(value)}
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "a/v1", "kind": "K",
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"list": []any{int64(1)}}}},
		}}
		raw, _ := json.Marshal("s")
		_ = Apply(context.Background(), Input{
			Patches: []v1alpha2.ClusterClassPatch{{Name: "p", Definitions: []v1alpha2.PatchDefinition{{
				Selector:    v1alpha2.PatchSelector{APIVersion: "a/v1", Kind: "K", MatchResources: v1alpha2.PatchSelectorMatch{InfrastructureCluster: true}},
				JSONPatches: []v1alpha2.JSONPatch{jp},
			}}}},
			Variables: []v1alpha2.ClusterVariable{{Name: "v", Value: apiextensionsv1.JSON{Raw: raw}}},
			Targets:   []*Target{{Object: obj, Role: InfrastructureCluster, Description: "fuzz"}},
		})
	})
}

func TestLookup(t *testing.T) {
	vars := map[string]any{"a": map[string]any{"b": []any{"x", map[string]any{"c": "y"}}}}
	cases := map[string]any{"a.b[0]": "x", "a.b[1].c": "y"}
	for path, want := range cases {
		got, err := Lookup(vars, path)
		if err != nil || got != want {
			t.Errorf("Lookup(%q) = %v, %v; want %v", path, got, err, want)
		}
	}
	for _, bad := range []string{"nope", "a.x", "a.b[9]", "a.b[x]", "a.b[", "a..b"} {
		if _, err := Lookup(vars, bad); err == nil {
			t.Errorf("Lookup(%q) did not fail", bad)
		}
	}
}
