package variables

import (
	"context"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestValidateRemembersOnlyValidValues checks that the values a definition
// remembers change no answer: a valid value stays valid, an invalid one is
// refused each time, and a transition rule still sees the old value.
func TestValidateRemembersOnlyValidValues(t *testing.T) {
	cat, errs := NewCatalog([]v1alpha2.ClusterClassVariable{{
		Name: "size",
		Schema: v1alpha2.VariableSchema{OpenAPIV3Schema: v1alpha2.JSONSchemaProps{
			Type: "integer",
			XValidations: []v1alpha2.ValidationRule{
				{Rule: "self < 10"},
				{Rule: "self >= oldSelf", Message: "size may not shrink"},
			},
		}},
	}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p := field.NewPath("spec", "variables")
	value := func(raw string) []v1alpha2.ClusterVariable {
		return []v1alpha2.ClusterVariable{{Name: "size", Value: apiextensionsv1.JSON{Raw: []byte(raw)}}}
	}
	for i := range 2 {
		if errs := cat.Validate(context.Background(), value("5"), nil, true, p); len(errs) > 0 {
			t.Fatalf("pass %d: 5 refused: %v", i, errs)
		}
		if errs := cat.Validate(context.Background(), value("12"), nil, true, p); len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "self < 10") {
			t.Fatalf("pass %d: 12 admitted or refused for the wrong reason: %v", i, errs)
		}
	}
	// 5 is remembered as valid without an old value; with one it is checked.
	errs = cat.Validate(context.Background(), value("5"), value("7"), true, p)
	if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "size may not shrink") {
		t.Fatalf("5 after 7: %v, want the transition rule's message", errs)
	}
	if got := cat.defs["size"].valid.Len(); got != 1 {
		t.Errorf("remembered %d values, want 1 (5 alone)", got)
	}
}

// TestValidateRemembersAtMostTheLimit checks the bound on remembered values.
func TestValidateRemembersAtMostTheLimit(t *testing.T) {
	cat, errs := NewCatalog([]v1alpha2.ClusterClassVariable{{Name: "n", Schema: v1alpha2.VariableSchema{OpenAPIV3Schema: v1alpha2.JSONSchemaProps{Type: "integer"}}}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p := field.NewPath("spec", "variables")
	for i := range maxValidValues + 10 {
		raw := []byte(strconv.Itoa(i))
		if errs := cat.Validate(context.Background(), []v1alpha2.ClusterVariable{{Name: "n", Value: apiextensionsv1.JSON{Raw: raw}}}, nil, true, p); len(errs) > 0 {
			t.Fatal(errs)
		}
	}
	if got := cat.defs["n"].valid.Len(); got != maxValidValues {
		t.Errorf("remembered %d values, want the limit %d", got, maxValidValues)
	}
}

// TestCELSeesNumbersAsTheAPIServerDecodesThem checks that a whole number is
// an int to CEL for an integer variable and still a number for a number one,
// as the API server and upstream's validation decode them.
func TestCELSeesNumbersAsTheAPIServerDecodesThem(t *testing.T) {
	cat, errs := NewCatalog([]v1alpha2.ClusterClassVariable{
		{Name: "replicas", Schema: v1alpha2.VariableSchema{OpenAPIV3Schema: v1alpha2.JSONSchemaProps{Type: "integer", XValidations: []v1alpha2.ValidationRule{{Rule: "self % 2 == 1", Message: "replicas must be odd"}}}}},
		{Name: "ratio", Schema: v1alpha2.VariableSchema{OpenAPIV3Schema: v1alpha2.JSONSchemaProps{Type: "number", XValidations: []v1alpha2.ValidationRule{{Rule: "self < 1.5", Message: "ratio must be under 1.5"}}}}},
	})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p := field.NewPath("spec", "variables")
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"replicas", "3", ""},
		{"replicas", "4", "replicas must be odd"},
		{"ratio", "1", ""},
		{"ratio", "1.25", ""},
		{"ratio", "2", "ratio must be under 1.5"},
	} {
		errs := cat.Validate(context.Background(), []v1alpha2.ClusterVariable{{Name: tc.name, Value: apiextensionsv1.JSON{Raw: []byte(tc.raw)}}}, nil, false, p)
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%s=%s refused: %v", tc.name, tc.raw, errs)
		case tc.want != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want)):
			t.Errorf("%s=%s: %v, want %q", tc.name, tc.raw, errs, tc.want)
		}
	}
}
