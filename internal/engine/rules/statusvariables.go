package rules

import (
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// PatchVariables are the variables one external patch's extension defined
// when asked (DiscoverVariables), or why it could not be asked.
type PatchVariables struct {
	// Patch is the name of the external patch.
	Patch string
	// Variables are its extension's definitions.
	Variables []v1alpha2.ClusterClassVariable
	// Err is why the extension could not be asked; Variables are then empty.
	Err error
}

// StatusVariables lists every variable of the class with each definition and
// where it comes from — the class itself ("inline"), then each external
// patch — as a class's status.variables holds them, marking variables whose
// definitions disagree.
func StatusVariables(c *v1alpha2.TopologyClass, discovered []PatchVariables) []v1alpha2.ClusterClassStatusVariable {
	out := make([]v1alpha2.ClusterClassStatusVariable, 0, len(c.Spec.Variables))
	index := map[string]int{}
	add := func(from string, v v1alpha2.ClusterClassVariable) {
		def := v1alpha2.ClusterClassStatusVariableDefinition{From: from, Required: v.Required, DeprecatedV1Beta1Metadata: v.DeprecatedV1Beta1Metadata, Schema: v.Schema}
		i, ok := index[v.Name]
		if !ok {
			index[v.Name] = len(out)
			out = append(out, v1alpha2.ClusterClassStatusVariable{Name: v.Name, Definitions: []v1alpha2.ClusterClassStatusVariableDefinition{def}})
			return
		}
		first := out[i].Definitions[0]
		if first.Required != def.Required || !equality.Semantic.DeepEqual(first.Schema, def.Schema) || !equality.Semantic.DeepEqual(first.DeprecatedV1Beta1Metadata, def.DeprecatedV1Beta1Metadata) {
			out[i].DefinitionsConflict = true
		}
		out[i].Definitions = append(out[i].Definitions, def)
	}
	for _, v := range c.Spec.Variables {
		add(v1alpha2.VariableDefinitionFromInline, v)
	}
	for _, d := range discovered {
		for _, v := range d.Variables {
			add(d.Patch, v)
		}
	}
	return out
}

// ConflictingVariables names the variables whose definitions disagree.
func ConflictingVariables(vs []v1alpha2.ClusterClassStatusVariable) []string {
	var out []string
	for _, v := range vs {
		if v.DefinitionsConflict {
			out = append(out, v.Name)
		}
	}
	return out
}
