package variables

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
)

var validTypes = map[string]bool{"object": true, "array": true, "string": true, "integer": true, "number": true, "boolean": true}

// ValidateDefinitions checks the variables a class declares: names unique and
// usable, schemas structural, defaults, examples and enum values valid for
// their schema, CEL rules compiling. p is the path of spec.variables.
func ValidateDefinitions(ctx context.Context, vars []v1alpha1.ClusterClassVariable, p *field.Path) field.ErrorList {
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

func validateSchema(ctx context.Context, v *v1alpha1.ClusterClassVariable, p *field.Path) field.ErrorList {
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
	root := d.wrapped.Properties[wrapKey]
	if errs, err := structuraldefaulting.ValidateDefaults(ctx, p, &root, false, true); err != nil {
		return field.ErrorList{field.Invalid(p, "", err.Error())}
	} else if len(errs) > 0 {
		return errs
	}
	errs = append(errs, compileRules(&root, p)...)
	if len(errs) > 0 {
		return errs
	}
	if ex := d.Schema.Example; ex != nil {
		for _, e := range validation.ValidateCustomResource(p.Child("example"), *ex, d.validator) {
			e.Detail = strings.TrimPrefix(e.Detail, " in body ")
			errs = append(errs, e)
		}
	}
	for i, en := range d.Schema.Enum {
		for _, e := range validation.ValidateCustomResource(p.Child("enum").Index(i), en, d.validator) {
			e.Detail = strings.TrimPrefix(e.Detail, " in body ")
			errs = append(errs, e)
		}
	}
	return errs
}

// validateTypes rejects types the variable subset does not know, before the
// structural checks give a vaguer message.
func validateTypes(s *v1alpha1.JSONSchemaProps, p *field.Path) field.ErrorList {
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

// compileRules compiles every x-kubernetes-validations rule so a class with a
// broken rule is rejected when it is written, not when a topology uses it.
func compileRules(s *structuralschema.Structural, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(s.XValidations) > 0 {
		envSet := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
		results, err := cel.Compile(s, model.SchemaDeclType(s, false), celconfig.PerCallLimit, envSet, cel.NewExpressionsEnvLoader())
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("x-kubernetes-validations"), "", fmt.Sprintf("CEL rules cannot be compiled: %v", err)))
		}
		for i, r := range results {
			if r.Error != nil {
				errs = append(errs, field.Invalid(p.Child("x-kubernetes-validations").Index(i).Child("rule"), s.XValidations[i].Rule, r.Error.Detail))
			}
			if r.MessageExpressionError != nil {
				errs = append(errs, field.Invalid(p.Child("x-kubernetes-validations").Index(i).Child("messageExpression"), s.XValidations[i].MessageExpression, r.MessageExpressionError.Detail))
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(s.Properties)) {
		prop := s.Properties[n]
		errs = append(errs, compileRules(&prop, p.Child("properties").Key(n))...)
	}
	if s.Items != nil {
		errs = append(errs, compileRules(s.Items, p.Child("items"))...)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		errs = append(errs, compileRules(s.AdditionalProperties.Structural, p.Child("additionalProperties"))...)
	}
	return errs
}
