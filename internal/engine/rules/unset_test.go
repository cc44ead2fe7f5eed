package rules

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Unsetting a variable the class defaults at its root would be undone by
// defaulting on the same write; it is refused, saying what to set instead.
func TestUnsetDefaultedNamesTheDefaultToSet(t *testing.T) {
	class := &v1alpha2.TopologyClass{}
	class.Name = "quick-start"
	class.Spec.Variables = []v1alpha2.ClusterClassVariable{
		{Name: "maxPods", Schema: v1alpha2.VariableSchema{OpenAPIV3Schema: v1alpha2.JSONSchemaProps{Type: "integer", Default: &apiextensionsv1.JSON{Raw: []byte("110")}}}},
		{Name: "imageRepository", Schema: v1alpha2.VariableSchema{OpenAPIV3Schema: v1alpha2.JSONSchemaProps{Type: "string"}}},
	}
	got := UnsetDefaulted(class, []string{"imageRepository", "maxPods"})
	if len(got) != 1 ||
		!strings.Contains(got[0], "class quick-start gives maxPods the default 110") || !strings.Contains(got[0], "--set maxPods=110") {
		t.Fatalf("got %+v, want one refusal of maxPods naming its default", got)
	}
	if got := UnsetDefaulted(class, []string{"imageRepository"}); len(got) != 0 {
		t.Errorf("a variable without a default is refused: %+v", got)
	}
	if got := UnsetDefaulted(class, nil); len(got) != 0 {
		t.Errorf("a change that unsets nothing is refused: %+v", got)
	}
}
