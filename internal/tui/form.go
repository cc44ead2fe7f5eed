package tui

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-topology/kubectl-topology/internal/draft"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// fieldKind says how a field is edited.
type fieldKind int

const (
	// kindText is free text: the version, or a string variable.
	kindText fieldKind = iota
	// kindNumber is replicas, or an integer or number variable.
	kindNumber
	// kindChoice is picked from options: booleans and enums.
	kindChoice
	// kindJSON is typed as JSON: maps and anything else without a form.
	kindJSON
	// kindObject heads an object's fields, which follow it indented.
	kindObject
	// kindList heads a list's items, which follow it indented.
	kindList
	// kindMap heads a map's entries (additionalProperties), which follow it indented.
	kindMap
)

// fieldRole says which part of the Topology a field edits.
type fieldRole int

const (
	roleVersion fieldRole = iota
	roleReplicas
	roleVariable
)

// editField is one row of the form.
type editField struct {
	// key identifies the field across rebuilds; label is what is shown.
	key, label string
	// path is the field path the engine and webhook name in errors.
	path  string
	hint  string
	depth int
	kind  fieldKind
	role  fieldRole
	// options and their JSON, for kindChoice; "" is the unset choice.
	options []string
	raws    [][]byte
	// value as shown and typed; present is false when the value is unset.
	value    string
	present  bool
	required bool
	// original and originalPresent are the server's, to mark changes.
	original        string
	originalPresent bool
	// scope, variable and sub locate a variable field's value.
	scope    draft.Scope
	variable string
	sub      []any
	schema   *v1alpha2.JSONSchemaProps
	// overrideRoot marks the first row of a part's override.
	overrideRoot bool
	// entry marks a list item or map entry: never unset, only removed.
	entry bool
}

// marked tells whether the field is shown as required: list items and map
// entries always are, so they carry no mark.
func (f *editField) marked() bool {
	return f.required && !f.entry
}

func (f *editField) changed() bool {
	return f.value != f.original || f.present != f.originalPresent
}

// editable tells whether typing changes the field.
func (f *editField) editable() bool {
	return f.kind == kindText || f.kind == kindNumber || f.kind == kindJSON
}

// formBuilder turns a Topology and its class into the form's rows.
type formBuilder struct {
	defs   map[string]*v1alpha2.ClusterClassVariable
	fields []editField
}

// buildForm lists the rows for t: version, the control plane, each pool with
// its overrides, then the class's variables, nested by their schemas.
func buildForm(t *v1alpha2.Topology, c *v1alpha2.TopologyClass) []editField {
	b := &formBuilder{defs: map[string]*v1alpha2.ClusterClassVariable{}}
	for i := range c.Spec.Variables {
		b.defs[c.Spec.Variables[i].Name] = &c.Spec.Variables[i]
	}
	b.fields = append(b.fields, editField{key: "version", label: "version", path: "spec.version", kind: kindText, role: roleVersion,
		value: t.Spec.Version, present: true, hint: "Kubernetes version, e.g. v1.34.0"})
	cp := draft.Scope{Kind: draft.ControlPlane}
	b.part(t, cp, "control plane replicas", "spec.controlPlane", t.Spec.ControlPlane.Replicas)
	if w := t.Spec.Workers; w != nil {
		for i, md := range w.MachineDeployments {
			b.part(t, draft.Scope{Kind: draft.MachineDeployment, Name: md.Name}, draft.PoolLabel(md.Name, md.Class), fmt.Sprintf("spec.workers.machineDeployments[%d]", i), md.Replicas)
		}
		for i, mp := range w.MachinePools {
			b.part(t, draft.Scope{Kind: draft.MachinePool, Name: mp.Name}, draft.PoolLabel(mp.Name, mp.Class), fmt.Sprintf("spec.workers.machinePools[%d]", i), mp.Replicas)
		}
	}
	cluster := draft.Scope{}
	set := map[string]bool{}
	for _, v := range t.Spec.Variables {
		set[v.Name] = true
	}
	for _, def := range c.Spec.Variables {
		b.variable(t, cluster, def.Name, def.Name, "spec.variables["+def.Name+"]", 0, def.Required)
	}
	for _, v := range t.Spec.Variables {
		if _, ok := b.defs[v.Name]; !ok { // shown so that it can be fixed: the engine names it
			b.variable(t, cluster, v.Name, v.Name, "spec.variables["+v.Name+"]", 0, false)
		}
	}
	return b.fields
}

// part adds a part's replicas row and its overrides.
func (b *formBuilder) part(t *v1alpha2.Topology, s draft.Scope, label, path string, replicas *int32) {
	v := ""
	if replicas != nil {
		v = strconv.Itoa(int(*replicas))
	}
	b.fields = append(b.fields, editField{key: s.String() + " replicas", label: label, path: path, kind: kindNumber, role: roleReplicas,
		scope: s, value: v, present: replicas != nil,
		hint: "replicas (empty: class default or autoscaler) · ctrl+o overrides a variable"})
	list := draft.VariableList(t, s, false)
	if list == nil {
		return
	}
	for _, o := range *list {
		root := len(b.fields)
		b.variable(t, s, o.Name, "override "+o.Name, path+".variables.overrides["+o.Name+"]", 1, false)
		b.fields[root].overrideRoot = true
	}
}

// variable adds the rows of one variable in a scope.
func (b *formBuilder) variable(t *v1alpha2.Topology, s draft.Scope, name, label, path string, depth int, required bool) {
	v, present := draft.VariableValue(t, s, name)
	var schema *v1alpha2.JSONSchemaProps
	hint := ""
	if def, ok := b.defs[name]; ok {
		schema = &def.Schema.OpenAPIV3Schema
	} else {
		hint = fmt.Sprintf("variable %q is not defined in the class: ctrl+u removes it", name)
	}
	b.walk(editField{key: s.String() + " variables[" + name + "]", label: label, path: path, depth: depth, role: roleVariable,
		scope: s, variable: name, required: required, hint: hint}, schema, v, present, path+".value")
}

// walk adds a row for a value and, for objects with properties and lists,
// rows for what they hold. valuePath is where the engine reports the value.
func (b *formBuilder) walk(f editField, s *v1alpha2.JSONSchemaProps, v any, present bool, valuePath string) {
	f.present = present
	if s == nil {
		s = &v1alpha2.JSONSchemaProps{}
	} else if f.hint == "" {
		f.hint = schemaHint(s, f.required)
	}
	f.schema = s
	switch {
	case s.XIntOrString:
		f.kind = kindJSON
		if present {
			f.value = draft.Canonical(v)
		}
	case len(s.Enum) > 0 || s.Type == "boolean":
		f.kind = kindChoice
		if !f.required {
			f.options, f.raws = []string{""}, [][]byte{nil}
		}
		enum := s.Enum
		if len(enum) == 0 {
			enum = []apiextensionsv1.JSON{{Raw: []byte("false")}, {Raw: []byte("true")}}
		}
		for _, e := range enum {
			f.options = append(f.options, display(e.Raw))
			f.raws = append(f.raws, e.Raw)
		}
		if present {
			f.value = displayValue(v)
		}
	case s.Type == "integer" || s.Type == "number":
		f.kind = kindNumber
		if present {
			f.value = displayValue(v)
		}
	case s.Type == "string":
		f.kind = kindText
		if str, ok := v.(string); ok {
			f.value = str
		} else if present {
			f.value = draft.Canonical(v)
		}
	case isForm(s) && s.Type == "object" && len(s.Properties) > 0:
		f.kind = kindObject
		b.fields = append(b.fields, f)
		props := make([]string, 0, len(s.Properties))
		for p := range s.Properties {
			props = append(props, p)
		}
		sort.Strings(props)
		required := map[string]bool{}
		for _, r := range s.Required {
			required[r] = true
		}
		for _, p := range props {
			ps := s.Properties[p]
			cv, cok := draft.Lookup(v, []any{p})
			b.walk(editField{key: f.key + "." + p, label: p, path: valuePath + "." + p, depth: f.depth + 1, role: roleVariable,
				scope: f.scope, variable: f.variable, sub: appendSub(f.sub, p), required: required[p] && present}, &ps, cv, cok && present, valuePath+"."+p)
		}
		return
	case isForm(s) && s.Type == "array":
		f.kind = kindList
		items, _ := v.([]any)
		f.value = fmt.Sprintf("%d item(s)", len(items))
		f.hint = strings.TrimPrefix(f.hint+" · ctrl+n adds an item, ctrl+x removes one", " · ")
		b.fields = append(b.fields, f)
		for i, item := range items {
			idx := "[" + strconv.Itoa(i) + "]"
			b.walk(editField{key: f.key + idx, label: idx, path: valuePath + idx, depth: f.depth + 1, role: roleVariable,
				scope: f.scope, variable: f.variable, sub: appendSub(f.sub, i), required: true, entry: true}, s.Items, item, true, valuePath+idx)
		}
		return
	case isMap(s):
		f.kind = kindMap
		entries, _ := v.(map[string]any)
		f.value = count(len(entries), "entry", "entries")
		f.hint = strings.TrimPrefix(f.hint+" · ctrl+n adds an entry, ctrl+x removes one", " · ")
		b.fields = append(b.fields, f)
		keys := make([]string, 0, len(entries))
		for k := range entries {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.walk(editField{key: f.key + "." + k, label: k, path: valuePath + "." + k, depth: f.depth + 1, role: roleVariable,
				scope: f.scope, variable: f.variable, sub: appendSub(f.sub, k), required: true, entry: true}, s.AdditionalProperties, entries[k], true, valuePath+"."+k)
		}
		return
	default:
		f.kind = kindJSON
		if present {
			f.value = draft.Canonical(v)
		}
	}
	b.fields = append(b.fields, f)
}

// count says how many, as "1 entry" or "3 entries".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func appendSub(sub []any, k any) []any {
	out := make([]any, 0, len(sub)+1)
	return append(append(out, sub...), k)
}

// isMap tells whether a schema is a map (additionalProperties and no named
// properties) whose values are edited as rows.
func isMap(s *v1alpha2.JSONSchemaProps) bool {
	if s.Type != "object" || len(s.Properties) > 0 || s.AdditionalProperties == nil || s.XPreserveUnknownFields {
		return false
	}
	switch v := s.AdditionalProperties; v.Type {
	case "string", "integer", "number", "boolean":
		return !v.XIntOrString
	case "object", "array":
		return isForm(v) || isMap(v)
	}
	return false
}

// isForm tells whether a schema is edited as nested rows: objects with named
// properties and no others, lists of such things or of single values.
// Anything else (maps, free-form objects, lists of lists) is typed as JSON.
func isForm(s *v1alpha2.JSONSchemaProps) bool {
	switch s.Type {
	case "object":
		return len(s.Properties) > 0 && s.AdditionalProperties == nil && !s.XPreserveUnknownFields
	case "array":
		if s.Items == nil {
			return false
		}
		it := s.Items
		switch it.Type {
		case "string", "integer", "number", "boolean":
			return true
		case "object":
			return isForm(it) || isMap(it)
		}
	}
	return false
}

// schemaHint describes a schema in one line: type, required, default,
// example, description.
func schemaHint(s *v1alpha2.JSONSchemaProps, required bool) string {
	parts := []string{}
	if s.Type != "" {
		parts = append(parts, s.Type)
	}
	if required {
		parts = append(parts, "required")
	}
	if s.Default != nil {
		parts = append(parts, "default "+string(s.Default.Raw))
	}
	if s.Example != nil {
		parts = append(parts, "e.g. "+string(s.Example.Raw))
	}
	if s.Description != "" {
		parts = append(parts, s.Description)
	}
	if m := s.XMetadata; m != nil {
		parts = append(parts, metadataHint(m.Labels, m.Annotations)...)
	}
	return strings.Join(parts, " · ")
}

// metadataHint shows a schema's x-metadata, which classes use to tell
// tools more about a value, as sorted key=value pairs.
func metadataHint(labels, annotations map[string]string) []string {
	var out []string
	for _, m := range []map[string]string{labels, annotations} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out = append(out, k+"="+m[k])
		}
	}
	return out
}

// display shows a JSON value: strings bare, the rest as JSON.
func display(raw []byte) string {
	v, ok := draft.DecodeJSON(raw)
	if !ok {
		return string(raw)
	}
	return displayValue(v)
}

func displayValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return draft.Canonical(v)
}

// parse turns what was typed into a field's value; ok is false for unset.
// Emptying a field unsets it only where a value may be left out: not in a
// list item, an override (ctrl+x removes those) or a required field.
func (f *editField) parse(text string) (value any, ok bool, err error) {
	if text == "" && f.kind != kindText && (f.required || f.overrideRoot) {
		return nil, false, fmt.Errorf("needs a value")
	}
	switch f.kind {
	case kindText:
		return text, true, nil
	case kindNumber:
		if text == "" {
			return nil, false, nil
		}
		switch {
		case f.role == roleReplicas:
			if n, err := strconv.ParseInt(text, 10, 32); err != nil || n < 0 {
				return nil, false, fmt.Errorf("must be a whole number, 0 or more")
			}
		case f.schema != nil && f.schema.Type == "integer":
			if _, err := strconv.ParseInt(text, 10, 64); err != nil {
				return nil, false, fmt.Errorf("must be a whole number")
			}
		default:
			if _, err := strconv.ParseFloat(text, 64); err != nil {
				return nil, false, fmt.Errorf("must be a number")
			}
		}
		return json.Number(text), true, nil
	case kindJSON:
		if text == "" {
			return nil, false, nil
		}
		v, ok := draft.DecodeJSON([]byte(text))
		if !ok || !json.Valid([]byte(text)) {
			return nil, false, fmt.Errorf("not valid JSON")
		}
		return v, true, nil
	}
	return nil, false, fmt.Errorf("%s is not typed into", f.label)
}

// zeroValue is what a new list item or override starts as: the schema's
// default, or the empty value of its type.
func zeroValue(s *v1alpha2.JSONSchemaProps) any {
	if s == nil {
		return nil
	}
	if s.Default != nil {
		if v, ok := draft.DecodeJSON(s.Default.Raw); ok {
			return v
		}
	}
	switch s.Type {
	case "string":
		if len(s.Enum) > 0 {
			v, _ := draft.DecodeJSON(s.Enum[0].Raw)
			return v
		}
		return ""
	case "integer", "number":
		if s.Minimum != nil {
			return json.Number(strconv.FormatInt(*s.Minimum, 10))
		}
		return json.Number("0")
	case "boolean":
		return false
	case "array":
		return []any{}
	}
	return map[string]any{}
}
