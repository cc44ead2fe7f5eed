package rules

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func TestDiscoveredVariables(t *testing.T) {
	def := func(from string) v1alpha2.ClusterClassStatusVariableDefinition {
		return v1alpha2.ClusterClassStatusVariableDefinition{From: from, Schema: v1alpha2.VariableSchema{OpenAPIV3Schema: v1alpha2.JSONSchemaProps{Type: "string"}}}
	}
	gen := "generate.ext"
	c := &v1alpha2.TopologyClass{}
	c.Spec.Variables = []v1alpha2.ClusterClassVariable{{Name: "inline"}}
	c.Spec.Patches = []v1alpha2.ClusterClassPatch{{Name: "ext", External: &v1alpha2.ExternalPatchDefinition{GeneratePatchesExtension: &gen}}}
	c.Status.Variables = []v1alpha2.ClusterClassStatusVariable{
		{Name: "inline", Definitions: []v1alpha2.ClusterClassStatusVariableDefinition{def(v1alpha2.VariableDefinitionFromInline), def("ext")}},
		{Name: "image", Definitions: []v1alpha2.ClusterClassStatusVariableDefinition{def("ext")}},
		{Name: "clash", DefinitionsConflict: true, Definitions: []v1alpha2.ClusterClassStatusVariableDefinition{def("ext"), def("other")}},
		{Name: "stale", Definitions: []v1alpha2.ClusterClassStatusVariableDefinition{def(v1alpha2.VariableDefinitionFromInline)}},
	}
	var got []string
	for _, v := range DiscoveredVariables(c) {
		got = append(got, v.Name)
	}
	if strings.Join(got, ",") != "image" {
		t.Errorf("discovered %v; want only image (inline ones are the class's, conflicts and stale inline ones are not used)", got)
	}
	c.Spec.Patches = nil
	if vs := DiscoveredVariables(c); len(vs) != 0 {
		t.Errorf("a class without external patches has discovered variables %v, from a status not yet updated", vs)
	}
}

// TestStatusVariables: the class's own definitions come first as "inline",
// then each patch's; a variable defined differently twice is marked, one
// Defined alike twice is not.
func TestStatusVariables(t *testing.T) {
	str := v1alpha2.VariableSchema{OpenAPIV3Schema: v1alpha2.JSONSchemaProps{Type: "string"}}
	num := v1alpha2.VariableSchema{OpenAPIV3Schema: v1alpha2.JSONSchemaProps{Type: "integer"}}
	c := &v1alpha2.TopologyClass{}
	c.Spec.Variables = []v1alpha2.ClusterClassVariable{{Name: "region", Schema: str}, {Name: "size", Schema: num}}
	got := StatusVariables(c, []PatchVariables{
		{Patch: "a", Variables: []v1alpha2.ClusterClassVariable{{Name: "region", Schema: str}, {Name: "image", Schema: str}}},
		{Patch: "b", Variables: []v1alpha2.ClusterClassVariable{{Name: "size", Schema: str}, {Name: "image", Schema: str, Required: true}}},
	})
	var lines []string
	for _, v := range got {
		var from []string
		for _, d := range v.Definitions {
			from = append(from, d.From)
		}
		lines = append(lines, fmt.Sprintf("%s from %s conflict=%v", v.Name, strings.Join(from, "+"), v.DefinitionsConflict))
	}
	want := []string{"region from inline+a conflict=false", "size from inline+b conflict=true", "image from a+b conflict=true"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("status variables:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if conflicts := ConflictingVariables(got); strings.Join(conflicts, ",") != "size,image" {
		t.Errorf("conflicting %v; want size and image", conflicts)
	}
}
