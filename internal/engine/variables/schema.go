// Package variables validates and defaults topology variables against the
// OpenAPI schemas a class declares, with the same apiextensions-apiserver
// machinery (structural schemas, defaulting, pruning, CEL) a CRD uses.
package variables

import (
	"encoding/json"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// toAPIExtensions converts a variable schema to the internal apiextensions form
// the structural-schema, validation and CEL packages take.
func toAPIExtensions(s *v1alpha2.JSONSchemaProps, p *field.Path) (*apiextensions.JSONSchemaProps, field.ErrorList) {
	var errs field.ErrorList
	out := &apiextensions.JSONSchemaProps{
		Description:      s.Description,
		Type:             s.Type,
		Required:         s.Required,
		MaxProperties:    s.MaxProperties,
		MinProperties:    s.MinProperties,
		MaxItems:         s.MaxItems,
		MinItems:         s.MinItems,
		UniqueItems:      s.UniqueItems,
		Format:           s.Format,
		MaxLength:        s.MaxLength,
		MinLength:        s.MinLength,
		Pattern:          s.Pattern,
		ExclusiveMaximum: s.ExclusiveMaximum,
		ExclusiveMinimum: s.ExclusiveMinimum,
		XIntOrString:     s.XIntOrString,
	}
	if s.XPreserveUnknownFields {
		t := true
		out.XPreserveUnknownFields = &t
	}
	decode := func(raw []byte, child *field.Path, what string) (apiextensions.JSON, bool) {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			errs = append(errs, field.Invalid(child, string(raw), fmt.Sprintf("%s is not valid JSON: %v", what, err)))
			return nil, false
		}
		return v, true
	}
	if s.Default != nil && s.Default.Raw != nil {
		if v, ok := decode(s.Default.Raw, p.Child("default"), "default"); ok {
			out.Default = &v
		}
	}
	if s.Example != nil && s.Example.Raw != nil {
		if v, ok := decode(s.Example.Raw, p.Child("example"), "example"); ok {
			out.Example = &v
		}
	}
	for i, e := range s.Enum {
		if e.Raw == nil {
			continue
		}
		if v, ok := decode(e.Raw, p.Child("enum").Index(i), "enum value"); ok {
			out.Enum = append(out.Enum, v)
		}
	}
	if s.Maximum != nil {
		f := float64(*s.Maximum)
		out.Maximum = &f
	}
	if s.Minimum != nil {
		f := float64(*s.Minimum)
		out.Minimum = &f
	}
	if s.AdditionalProperties != nil {
		sub, e := toAPIExtensions(s.AdditionalProperties, p.Child("additionalProperties"))
		errs = append(errs, e...)
		if sub != nil {
			out.AdditionalProperties = &apiextensions.JSONSchemaPropsOrBool{Allows: true, Schema: sub}
		}
	}
	if len(s.Properties) > 0 {
		out.Properties = make(map[string]apiextensions.JSONSchemaProps, len(s.Properties))
		for name, prop := range s.Properties {
			sub, e := toAPIExtensions(&prop, p.Child("properties").Key(name))
			errs = append(errs, e...)
			if sub != nil {
				out.Properties[name] = *sub
			}
		}
	}
	if s.Items != nil {
		sub, e := toAPIExtensions(s.Items, p.Child("items"))
		errs = append(errs, e...)
		if sub != nil {
			out.Items = &apiextensions.JSONSchemaPropsOrArray{Schema: sub}
		}
	}
	convertList := func(in []v1alpha2.JSONSchemaProps, name string) []apiextensions.JSONSchemaProps {
		if len(in) == 0 {
			return nil
		}
		res := make([]apiextensions.JSONSchemaProps, 0, len(in))
		for i := range in {
			sub, e := toAPIExtensions(&in[i], p.Child(name).Index(i))
			errs = append(errs, e...)
			if sub != nil {
				res = append(res, *sub)
			}
		}
		return res
	}
	out.AllOf = convertList(s.AllOf, "allOf")
	out.OneOf = convertList(s.OneOf, "oneOf")
	out.AnyOf = convertList(s.AnyOf, "anyOf")
	if s.Not != nil {
		sub, e := toAPIExtensions(s.Not, p.Child("not"))
		errs = append(errs, e...)
		out.Not = sub
	}
	for _, r := range s.XValidations {
		rule := apiextensions.ValidationRule{
			Rule:              r.Rule,
			Message:           r.Message,
			MessageExpression: r.MessageExpression,
			FieldPath:         r.FieldPath,
		}
		if r.Reason != "" {
			reason := apiextensions.FieldValueErrorReason(r.Reason)
			rule.Reason = &reason
		}
		out.XValidations = append(out.XValidations, rule)
	}
	return out, errs
}
