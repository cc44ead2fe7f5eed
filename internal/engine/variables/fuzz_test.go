package variables

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func fuzzCatalog(f *testing.F) *Catalog {
	min := int64(1)
	cat, errs := NewCatalog([]v1alpha2.ClusterClassVariable{{
		Name: "v",
		Schema: v1alpha2.VariableSchema{OpenAPIV3Schema: v1alpha2.JSONSchemaProps{
			Type: "object",
			Properties: map[string]v1alpha2.JSONSchemaProps{
				"n":    {Type: "integer", Minimum: &min, Default: &apiextensionsv1.JSON{Raw: []byte("3")}},
				"s":    {Type: "string", Pattern: "^[a-z]+$"},
				"list": {Type: "array", Items: &v1alpha2.JSONSchemaProps{Type: "string"}},
			},
			XValidations: []v1alpha2.ValidationRule{{Rule: "!has(self.s) || size(self.s) < 10"}},
		}},
	}})
	if len(errs) > 0 {
		f.Fatal(errs)
	}
	return cat
}

// FuzzValidateAndDefault feeds arbitrary JSON values: errors are fine, panics are not,
// and a value that validates must still validate after defaulting.
func FuzzValidateAndDefault(f *testing.F) {
	cat := fuzzCatalog(f)
	for _, s := range []string{`{}`, `{"n":0}`, `{"s":"abc","list":["x"]}`, `{"s":"ABCDEFGHIJKLMN"}`, `[]`, `null`, `{"x":1}`, `"str"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		vals := []v1alpha2.ClusterVariable{{Name: "v", Value: apiextensionsv1.JSON{Raw: []byte(raw)}}}
		p := field.NewPath("spec", "variables")
		errs := cat.Validate(context.Background(), vals, nil, true, p)
		defaulted, derrs := cat.Default(vals, true, p)
		if len(errs) == 0 && len(derrs) == 0 {
			if after := cat.Validate(context.Background(), defaulted, nil, true, p); len(after) > 0 {
				t.Fatalf("valid value %s became invalid after defaulting: %v", raw, after)
			}
		}
	})
}

func TestDefaultFillsNested(t *testing.T) {
	cat, _ := NewCatalog([]v1alpha2.ClusterClassVariable{{Name: "v", Schema: v1alpha2.VariableSchema{OpenAPIV3Schema: v1alpha2.JSONSchemaProps{
		Type: "object", Default: &apiextensionsv1.JSON{Raw: []byte(`{}`)},
		Properties: map[string]v1alpha2.JSONSchemaProps{"n": {Type: "integer", Default: &apiextensionsv1.JSON{Raw: []byte("3")}}},
	}}}})
	out, errs := cat.Default(nil, true, field.NewPath("spec", "variables"))
	if len(errs) > 0 || len(out) != 1 || string(out[0].Value.Raw) != `{"n":3}` {
		t.Fatalf("got %v %v, want v={\"n\":3}", out, errs)
	}
}
