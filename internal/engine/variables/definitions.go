package variables

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

var validTypes = map[string]bool{"object": true, "array": true, "string": true, "integer": true, "number": true, "boolean": true}

// ValidateDefinitions checks the variables a class declares: names unique and
// usable, schemas structural, defaults, examples and enum values valid for
// their schema, CEL rules compiling. p is the path of spec.variables.
func ValidateDefinitions(ctx context.Context, vars []v1alpha2.ClusterClassVariable, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i := range vars {
		v := &vars[i]
		vp := p.Index(i)
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(vp.Child("name"), "variable name must be set"))
			continue
		case v.Name == BuiltinsName:
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, `"builtin" is reserved for builtin variables`))
			continue
		case strings.Contains(v.Name, "."):
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, `variable names cannot contain "."; it separates the parts of a variable path`))
			continue
		case seen[v.Name]:
			errs = append(errs, field.Duplicate(vp.Child("name"), v.Name))
			continue
		}
		seen[v.Name] = true
		errs = append(errs, validateSchema(ctx, v, vp.Child("schema", "openAPIV3Schema"))...)
	}
	return errs
}

func validateSchema(ctx context.Context, v *v1alpha2.ClusterClassVariable, p *field.Path) field.ErrorList {
	if errs := validateTypes(&v.Schema.OpenAPIV3Schema, p); len(errs) > 0 {
		return errs
	}
	d, errs := compile(*v, p)
	if len(errs) > 0 {
		return errs
	}
	if errs := structuralschema.ValidateStructural(p, d.wrapped); len(errs) > 0 {
		for _, e := range errs {
			e.Field = strings.Replace(e.Field, p.String()+".properties["+wrapKey+"]", p.String(), 1)
		}
		return errs
	}
	// Defaults are checked on the wrapped schema, as values are: CEL rules
	// of a root that is not an object (a list, a string) only compile there.
	if errs, err := structuraldefaulting.ValidateDefaults(ctx, p, d.wrapped, false, true); err != nil {
		return field.ErrorList{field.Invalid(p, "", err.Error())}
	} else if len(errs) > 0 {
		for _, e := range errs {
			e.Field = strings.Replace(e.Field, p.String()+".properties["+wrapKey+"]", p.String(), 1)
		}
		return errs
	}
	errs = append(errs, compileRules(d.Schema, p)...)
	if len(errs) > 0 {
		return errs
	}
	return validateExamples(d.Schema, p)
}

// validateExamples checks every example and enum value, at every level of
// the schema, against the schema it belongs to: a wrong-typed enum value
// deep in an object would otherwise make that value impossible to pick.
func validateExamples(s *apiextensions.JSONSchemaProps, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Example != nil || len(s.Enum) > 0 {
		v, _, err := validation.NewSchemaValidator(s)
		if err != nil {
			return field.ErrorList{field.Invalid(p, "", fmt.Sprintf("schema cannot be used: %v", err))}
		}
		check := func(value any, vp *field.Path) {
			for _, e := range validation.ValidateCustomResource(vp, value, v) {
				e.Detail = strings.TrimPrefix(e.Detail, " in body ")
				errs = append(errs, e)
			}
		}
		if s.Example != nil {
			check(*s.Example, p.Child("example"))
		}
		for i, en := range s.Enum {
			check(en, p.Child("enum").Index(i))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(s.Properties)) {
		prop := s.Properties[n]
		errs = append(errs, validateExamples(&prop, p.Child("properties").Key(n))...)
	}
	if s.Items != nil && s.Items.Schema != nil {
		errs = append(errs, validateExamples(s.Items.Schema, p.Child("items"))...)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		errs = append(errs, validateExamples(s.AdditionalProperties.Schema, p.Child("additionalProperties"))...)
	}
	return errs
}

// validateTypes rejects types the variable subset does not know, before the
// structural checks give a vaguer message.
func validateTypes(s *v1alpha2.JSONSchemaProps, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Type != "" && !validTypes[s.Type] {
		errs = append(errs, field.NotSupported(p.Child("type"), s.Type, []string{"array", "boolean", "integer", "number", "object", "string"}))
	}
	for _, n := range slices.Sorted(maps.Keys(s.Properties)) {
		prop := s.Properties[n]
		errs = append(errs, validateTypes(&prop, p.Child("properties").Key(n))...)
	}
	if s.Items != nil {
		errs = append(errs, validateTypes(s.Items, p.Child("items"))...)
	}
	if s.AdditionalProperties != nil {
		errs = append(errs, validateTypes(s.AdditionalProperties, p.Child("additionalProperties"))...)
	}
	return errs
}

// compileRules compiles every x-kubernetes-validations rule and estimates its
// cost the way the API server does for a CRD: a rule over budget (an
// unbounded list or string, a quadratic rule) is refused when the class is
// written, rather than taking seconds to evaluate at every admission.
func compileRules(root *apiextensions.JSONSchemaProps, p *field.Path) field.ErrorList {
	if !hasCELRules(root) {
		return nil
	}
	// Wrapped as a property, as the catalog evaluates it: CEL's type
	// declarations only take an object at the root.
	wrapper := &apiextensions.JSONSchemaProps{Type: "object", Properties: map[string]apiextensions.JSONSchemaProps{wrapKey: *root}}
	prop := wrapper.Properties[wrapKey]
	cc := apiextensionsvalidation.RootCELContext(wrapper).ChildPropertyContext(&prop, wrapKey)
	envSet := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	errs := walkRules(root, p, cc, envSet)
	if total := cc.TotalCost; total != nil && total.Total > apiextensionsvalidation.StaticEstimatedCRDCostLimit {
		for _, expensive := range total.MostExpensive {
			errs = append(errs, field.Forbidden(expensive.Path, "contributes to an estimated cost of the variable's rules over the limit for a whole schema"))
		}
		errs = append(errs, field.Forbidden(p, costMessage("estimated cost of all x-kubernetes-validations rules", total.Total, apiextensionsvalidation.StaticEstimatedCRDCostLimit)))
	}
	return errs
}

func walkRules(s *apiextensions.JSONSchemaProps, p *field.Path, cc *apiextensionsvalidation.CELSchemaContext, envSet *environment.EnvSet) field.ErrorList {
	var errs field.ErrorList
	if len(s.XValidations) > 0 {
		errs = append(errs, compileNode(s, p.Child("x-kubernetes-validations"), cc, envSet)...)
	}
	for _, n := range slices.Sorted(maps.Keys(s.Properties)) {
		prop := s.Properties[n]
		errs = append(errs, walkRules(&prop, p.Child("properties").Key(n), cc.ChildPropertyContext(&prop, n), envSet)...)
	}
	if s.Items != nil && s.Items.Schema != nil {
		errs = append(errs, walkRules(s.Items.Schema, p.Child("items"), cc.ChildItemsContext(s.Items.Schema), envSet)...)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		errs = append(errs, walkRules(s.AdditionalProperties.Schema, p.Child("additionalProperties"), cc.ChildAdditionalPropertiesContext(s.AdditionalProperties.Schema), envSet)...)
	}
	return errs
}

func compileNode(s *apiextensions.JSONSchemaProps, p *field.Path, cc *apiextensionsvalidation.CELSchemaContext, envSet *environment.EnvSet) field.ErrorList {
	ti, err := cc.TypeInfo()
	if err != nil || ti == nil {
		return field.ErrorList{field.Invalid(p, "", fmt.Sprintf("CEL rules cannot be checked against this schema: %v", err))}
	}
	results, err := cel.Compile(ti.Schema, ti.DeclType, celconfig.PerCallLimit, envSet, cel.NewExpressionsEnvLoader())
	if err != nil {
		return field.ErrorList{field.Invalid(p, "", fmt.Sprintf("CEL rules cannot be compiled: %v", err))}
	}
	var errs field.ErrorList
	for i, r := range results {
		rp := p.Index(i)
		if r.Error != nil {
			errs = append(errs, field.Invalid(rp.Child("rule"), s.XValidations[i].Rule, r.Error.Detail))
		} else {
			cost := ruleCost(r, cc)
			if cost > apiextensionsvalidation.StaticEstimatedCostLimit {
				errs = append(errs, field.Forbidden(rp.Child("rule"), costMessage("estimated rule cost", cost, apiextensionsvalidation.StaticEstimatedCostLimit)))
			}
			cc.TotalCost.ObserveExpressionCost(rp.Child("rule"), cost)
		}
		if r.MessageExpressionError != nil {
			errs = append(errs, field.Invalid(rp.Child("messageExpression"), s.XValidations[i].MessageExpression, r.MessageExpressionError.Detail))
		} else if r.MessageExpression != nil {
			if r.MessageExpressionMaxCost > apiextensionsvalidation.StaticEstimatedCostLimit {
				errs = append(errs, field.Forbidden(rp.Child("messageExpression"), costMessage("estimated messageExpression cost", r.MessageExpressionMaxCost, apiextensionsvalidation.StaticEstimatedCostLimit)))
			}
			cc.TotalCost.ObserveExpressionCost(rp.Child("messageExpression"), r.MessageExpressionMaxCost)
		}
	}
	return errs
}

// ruleCost is a rule's worst-case cost times the number of times it can run:
// bounded by the maxItems/maxProperties above it, or unbounded.
func ruleCost(r cel.CompilationResult, cc *apiextensionsvalidation.CELSchemaContext) uint64 {
	cardinality := r.MaxCardinality
	if cc.MaxCardinality != nil {
		cardinality = *cc.MaxCardinality
	}
	if r.MaxCost == 0 {
		return 0
	}
	if math.MaxUint64/r.MaxCost < cardinality {
		return math.MaxUint64
	}
	return r.MaxCost * cardinality
}

func costMessage(what string, cost, limit uint64) string {
	factor := float64(cost) / float64(limit)
	f := fmt.Sprintf("%.1fx", factor)
	if factor > 100 {
		f = "more than 100x"
	}
	return fmt.Sprintf("%s exceeds the budget by a factor of %s: simplify the rule, or bound the values it reads with maxItems, maxProperties and maxLength", what, f)
}
