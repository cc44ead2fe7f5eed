package variables

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/utils/lru"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// BuiltinsName is the reserved variable holding the builtin values.
const BuiltinsName = "builtin"

// wrapKey wraps a value in an object so that defaulting, pruning and CEL, which
// work on object properties, apply to the variable's root value too.
const wrapKey = "variableValue"

// Definition is one variable of a class with its schema compiled once, so that
// validating on every keystroke stays cheap.
type Definition struct {
	// Name of the variable.
	Name string
	// Required variables must be set on the topology.
	Required bool
	// Schema in apiextensions' internal form.
	Schema *apiextensions.JSONSchemaProps
	// Source is the definition as written in the class.
	Source v1alpha2.ClusterClassVariable

	wrapped   *structuralschema.Structural
	validator validation.SchemaValidator
	hasCEL    bool // whether any node of the schema has x-kubernetes-validations

	celOnce sync.Once
	cel     *cel.Validator

	// valid remembers values found valid without an old value, the
	// maxValidValues last used: a class's clusters mostly share their
	// values, and the agent checks every Topology's on every pass. Without
	// an old value the answer depends on the value alone, transition rules
	// aside.
	valid *lru.Cache
}

// maxValidValues bounds the values each definition remembers as valid.
const maxValidValues = 1024

// Catalog is the set of variables of a class, compiled.
type Catalog struct {
	defs  map[string]*Definition
	order []string
}

// NewCatalog compiles the variables of a class. Errors name the field of the
// class (spec.variables[i].schema...) that makes a variable unusable.
func NewCatalog(vars []v1alpha2.ClusterClassVariable) (*Catalog, field.ErrorList) {
	c := &Catalog{defs: make(map[string]*Definition, len(vars))}
	var errs field.ErrorList
	base := field.NewPath("spec", "variables")
	for i := range vars {
		v := vars[i]
		p := base.Index(i).Child("schema", "openAPIV3Schema")
		if _, dup := c.defs[v.Name]; dup {
			errs = append(errs, field.Duplicate(base.Index(i).Child("name"), v.Name))
			continue
		}
		d, e := compile(v, p)
		if len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		c.defs[v.Name] = d
		c.order = append(c.order, v.Name)
	}
	return c, errs
}

func compile(v v1alpha2.ClusterClassVariable, p *field.Path) (*Definition, field.ErrorList) {
	schema, errs := toAPIExtensions(&v.Schema.OpenAPIV3Schema, p)
	if len(errs) > 0 {
		return nil, errs
	}
	wrapped, err := structuralschema.NewStructural(&apiextensions.JSONSchemaProps{
		Type:       "object",
		Properties: map[string]apiextensions.JSONSchemaProps{wrapKey: *schema},
	})
	if err != nil {
		return nil, field.ErrorList{field.Invalid(p, "", fmt.Sprintf("schema of variable %q is not structural: %v", v.Name, err))}
	}
	validator, _, err := validation.NewSchemaValidator(schema)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(p, "", fmt.Sprintf("schema of variable %q cannot be used: %v", v.Name, err))}
	}
	return &Definition{Name: v.Name, Required: v.Required, Schema: schema, Source: v, wrapped: wrapped, validator: validator, hasCEL: hasCELRules(schema), valid: lru.New(maxValidValues)}, nil
}

// celValidator compiles the CEL rules of a definition on first use; nil when it has none.
func (d *Definition) celValidator() *cel.Validator {
	d.celOnce.Do(func() {
		d.cel = cel.NewValidator(d.wrapped, false, celconfig.PerCallLimit)
	})
	return d.cel
}

// Names returns the variable names in class order.
func (c *Catalog) Names() []string { return append([]string(nil), c.order...) }

// Get returns the definition of a variable.
func (c *Catalog) Get(name string) (*Definition, bool) {
	d, ok := c.defs[name]
	return d, ok
}

// Len is the number of variables.
func (c *Catalog) Len() int { return len(c.order) }

// Default fills in schema defaults. With createMissing (topology-level values)
// variables that are unset but have a default at the root are added, in class
// order after the given ones; overrides only default what they set. A value
// set twice or not defined in the class is left as it is for Validate to
// report once: defaulting the rest goes on, so that no required variable
// with a default reads as missing because of another's mistake.
func (c *Catalog) Default(values []v1alpha2.ClusterVariable, createMissing bool, p *field.Path) ([]v1alpha2.ClusterVariable, field.ErrorList) {
	seen := make(map[string]bool, len(values))
	var errs field.ErrorList
	out := make([]v1alpha2.ClusterVariable, 0, len(values)+len(c.order))
	for _, v := range values {
		d, ok := c.defs[v.Name]
		if seen[v.Name] || !ok {
			out = append(out, v)
			continue
		}
		seen[v.Name] = true
		dv, err := d.defaultValue(v.Value.Raw, true)
		if err != nil {
			errs = append(errs, field.Invalid(p.Key(v.Name).Child("value"), string(v.Value.Raw), err.Error()))
			continue
		}
		v.Value = apiextensionsv1.JSON{Raw: dv}
		out = append(out, v)
	}
	if createMissing {
		// Added in name order, as Cluster API's defaulting webhook adds them.
		sorted := append([]string(nil), c.order...)
		sort.Strings(sorted)
		for _, name := range sorted {
			d := c.defs[name]
			if seen[name] || d.Schema.Default == nil {
				continue
			}
			dv, err := d.defaultValue(nil, false)
			if err != nil {
				errs = append(errs, field.Invalid(p.Key(name), "", err.Error()))
				continue
			}
			out = append(out, v1alpha2.ClusterVariable{Name: name, Value: apiextensionsv1.JSON{Raw: dv}})
		}
	}
	return out, errs
}

func (d *Definition) defaultValue(raw []byte, present bool) ([]byte, error) {
	wrapped := map[string]any{}
	if present {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("value is not valid JSON: %v", err)
		}
		wrapped[wrapKey] = v
	}
	structuraldefaulting.Default(wrapped, d.wrapped)
	return json.Marshal(wrapped[wrapKey])
}

// Validate checks values against the catalog: each is defined, set once and
// valid for its schema (types, formats, bounds, enum, unknown fields, CEL).
// requireAll also reports required variables that are missing (topology level);
// overrides pass false. old holds the previous values for CEL transition rules.
func (c *Catalog) Validate(ctx context.Context, values, old []v1alpha2.ClusterVariable, requireAll bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]bool, len(values))
	oldByName := make(map[string][]byte, len(old))
	for _, o := range old {
		oldByName[o.Name] = o.Value.Raw
	}
	for _, v := range values {
		vp := p.Key(v.Name)
		if seen[v.Name] {
			errs = append(errs, field.Duplicate(vp, v.Name))
			continue
		}
		seen[v.Name] = true
		if v.Name == BuiltinsName {
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, `"builtin" is reserved for builtin variables`))
			continue
		}
		d, ok := c.defs[v.Name]
		if !ok {
			errs = append(errs, field.Invalid(vp, string(v.Value.Raw), fmt.Sprintf("variable %q is not defined in the class", v.Name)))
			continue
		}
		errs = append(errs, d.Validate(ctx, v.Value.Raw, oldByName[v.Name], vp.Child("value"))...)
	}
	if requireAll {
		for _, name := range c.order {
			if c.defs[name].Required && !seen[name] {
				errs = append(errs, field.Required(p.Key(name), fmt.Sprintf("required variable %q must be set", name)))
			}
		}
	}
	return errs
}

// Validate checks one value against the definition; p is the path of the value.
func (d *Definition) Validate(ctx context.Context, raw, oldRaw []byte, p *field.Path) field.ErrorList {
	if len(raw) == 0 {
		return field.ErrorList{field.Required(p, fmt.Sprintf("variable %q needs a value", d.Name))}
	}
	if len(oldRaw) > 0 {
		return d.validate(ctx, raw, oldRaw, p)
	}
	if _, known := d.valid.Get(string(raw)); known {
		return nil
	}
	errs := d.validate(ctx, raw, nil, p)
	if len(errs) == 0 {
		d.valid.Add(string(raw), nil)
	}
	return errs
}

// validate checks one value against the schema, its pruning and its CEL rules.
func (d *Definition) validate(ctx context.Context, raw, oldRaw []byte, p *field.Path) field.ErrorList {
	// Whole numbers decode to int64, as the API server decodes them, so
	// that CEL sees an integer variable as an int, as upstream's
	// validation does.
	var value any
	if err := utiljson.Unmarshal(raw, &value); err != nil {
		return field.ErrorList{field.Invalid(p, string(raw), fmt.Sprintf("value is not valid JSON: %v", err))}
	}
	if errs := validation.ValidateCustomResource(p, value, d.validator); len(errs) > 0 {
		for _, e := range errs {
			e.Detail = strings.TrimPrefix(e.Detail, " in body ")
			e.Field = strings.ReplaceAll(e.Field, ".[", "[")
		}
		return errs
	}
	wrapped := map[string]any{wrapKey: value}
	// Pruning reports fields the schema does not name; it works on a copy
	// because it removes them.
	pruned := map[string]any{wrapKey: runtime.DeepCopyJSONValue(value)}
	if unknown := structuralpruning.PruneWithOptions(pruned, d.wrapped, false, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}); len(unknown) > 0 {
		for i := range unknown {
			unknown[i] = strings.TrimPrefix(unknown[i], wrapKey+".")
		}
		return field.ErrorList{field.Invalid(p, string(raw), fmt.Sprintf("field(s) %s are not in the schema of variable %q", strings.Join(unknown, ", "), d.Name))}
	}
	if !d.hasCEL {
		return nil
	}
	v := d.celValidator()
	if v == nil {
		return nil
	}
	var oldWrapped any
	if len(oldRaw) > 0 {
		var ov any
		if err := utiljson.Unmarshal(oldRaw, &ov); err == nil {
			oldWrapped = map[string]any{wrapKey: ov}
		}
	}
	errs, _ := v.Validate(ctx, p, d.wrapped, wrapped, oldWrapped, celconfig.RuntimeCELCostBudget)
	for _, e := range errs {
		e.Field = strings.Replace(e.Field, "value."+wrapKey, "value", 1)
		e.BadValue = string(raw)
	}
	return errs
}

func hasCELRules(s *apiextensions.JSONSchemaProps) bool {
	if s == nil {
		return false
	}
	if len(s.XValidations) > 0 {
		return true
	}
	for _, p := range s.Properties {
		if hasCELRules(&p) {
			return true
		}
	}
	if s.AdditionalProperties != nil && hasCELRules(s.AdditionalProperties.Schema) {
		return true
	}
	if s.Items != nil && hasCELRules(s.Items.Schema) {
		return true
	}
	return false
}
