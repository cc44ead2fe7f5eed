// Package form is the editor's form: the rows a Topology and its class give
// (version, replicas, variables nested by their schemas), how typed text is
// parsed into a value, and how the rows are drawn with their problems.
package form

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kubectl-topology/kubectl-topology/internal/draft"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// FieldKind says how a field is edited.
type FieldKind int

const (
	// KindText is free text: the version, or a string variable.
	KindText FieldKind = iota
	// KindNumber is replicas, or an integer or number variable.
	KindNumber
	// KindChoice is picked from options: booleans and enums.
	KindChoice
	// KindJSON is typed as JSON: maps and anything else without a form.
	KindJSON
	// KindObject heads an object's fields, which follow it indented.
	KindObject
	// KindList heads a list's items, which follow it indented.
	KindList
	// KindMap heads a map's entries (additionalProperties), which follow it indented.
	KindMap
)

// FieldRole says which part of the Topology a field edits.
type FieldRole int

// The parts a field edits: spec.version, a part's replicas, a variable.
const (
	RoleVersion FieldRole = iota
	RoleReplicas
	RoleVariable
	// RolePin is a pool's pinned version; empty, it follows the Topology's.
	RolePin
)

// Field is one row of the form.
type Field struct {
	// Key identifies the field across rebuilds; Label is what is shown.
	Key, Label string
	// Path is the field Path the engine and webhook name in errors.
	Path  string
	Hint  string
	Depth int
	Kind  FieldKind
	Role  FieldRole
	// Options and their JSON, for kindChoice; "" is the unset choice.
	Options []string
	Raws    [][]byte
	// Value as shown and typed; present is false when the Value is unset.
	Value    string
	Present  bool
	Required bool
	// Original and originalPresent are the server's, to mark changes.
	Original        string
	OriginalPresent bool
	// Scope, variable and sub locate a variable field's value.
	Scope    draft.Scope
	Variable string
	Sub      []any
	Schema   *v1alpha2.JSONSchemaProps
	// OverrideRoot marks the first row of a part's override.
	OverrideRoot bool
	// Entry marks a list item or map Entry: never unset, only removed.
	Entry bool
	// Unset says what an unset value means, where "(unset)" would not.
	Unset string
}

// Marked tells whether the field is shown as required: list items and map
// entries always are, so they carry no mark.
func (f *Field) Marked() bool {
	return f.Required && !f.Entry
}

// Changed tells whether the field differs from the server's.
func (f *Field) Changed() bool {
	return f.Value != f.Original || f.Present != f.OriginalPresent
}

// Editable tells whether typing changes the field.
func (f *Field) Editable() bool {
	return f.Kind == KindText || f.Kind == KindNumber || f.Kind == KindJSON
}

// formBuilder turns a Topology and its class into the form's rows.
type formBuilder struct {
	defs   map[string]*v1alpha2.ClusterClassVariable
	fields []Field
}

// Build lists the rows for t: version, the control plane, each pool with
// its overrides, then the class's variables, nested by their schemas.
func Build(t *v1alpha2.Topology, c *v1alpha2.TopologyClass) []Field {
	b := &formBuilder{defs: map[string]*v1alpha2.ClusterClassVariable{}}
	for i := range c.Spec.Variables {
		b.defs[c.Spec.Variables[i].Name] = &c.Spec.Variables[i]
	}
	b.fields = append(b.fields, Field{Key: "version", Label: "version", Path: "spec.version", Kind: KindText, Role: RoleVersion,
		Value: t.Spec.Version, Present: true, Hint: "Kubernetes version, e.g. v1.34.0"})
	cp := draft.Scope{Kind: draft.ControlPlane}
	b.part(t, cp, "control plane replicas", "spec.controlPlane", t.Spec.ControlPlane.Replicas, nil)
	if w := t.Spec.Workers; w != nil {
		for i, md := range w.MachineDeployments {
			s, path := draft.Scope{Kind: draft.MachineDeployment, Name: md.Name}, fmt.Sprintf("spec.workers.machineDeployments[%d]", i)
			b.part(t, s, draft.PoolLabel(md.Name, md.Class), path, md.Replicas, &md.Version)
		}
		for i, mp := range w.MachinePools {
			s, path := draft.Scope{Kind: draft.MachinePool, Name: mp.Name}, fmt.Sprintf("spec.workers.machinePools[%d]", i)
			b.part(t, s, draft.PoolLabel(mp.Name, mp.Class), path, mp.Replicas, &mp.Version)
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

// pin adds a pool's pinned-version row: empty, the pool follows the
// Topology's version.
func (b *formBuilder) pin(s draft.Scope, path, version string) {
	b.fields = append(b.fields, Field{Key: s.String() + " version", Label: "pinned version", Path: path + ".version", Kind: KindText, Role: RolePin,
		Scope: s, Value: version, Present: version != "", Depth: 1, Unset: "follows the Topology",
		Hint: "a version of its own, kept through upgrades (empty: follows the Topology's version)"})
}

// part adds a part's replicas row, a pool's pinned version (pin, nil for
// the control plane), and its overrides.
func (b *formBuilder) part(t *v1alpha2.Topology, s draft.Scope, label, path string, replicas *int32, pin *string) {
	v := ""
	if replicas != nil {
		v = strconv.Itoa(int(*replicas))
	}
	b.fields = append(b.fields, Field{Key: s.String() + " replicas", Label: label, Path: path, Kind: KindNumber, Role: RoleReplicas,
		Scope: s, Value: v, Present: replicas != nil,
		Hint: "replicas (empty: class default or autoscaler) · ctrl+o overrides a variable"})
	if pin != nil {
		b.pin(s, path, *pin)
	}
	list := draft.VariableList(t, s, false)
	if list == nil {
		return
	}
	for _, o := range *list {
		root := len(b.fields)
		b.variable(t, s, o.Name, "override "+o.Name, path+".variables.overrides["+o.Name+"]", 1, false)
		b.fields[root].OverrideRoot = true
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
	b.walk(Field{Key: s.String() + " variables[" + name + "]", Label: label, Path: path, Depth: depth, Role: RoleVariable,
		Scope: s, Variable: name, Required: required, Hint: hint}, schema, v, present, path+".value")
}

// walk adds a row for a value and, for objects with properties and lists,
// rows for what they hold. valuePath is where the engine reports the value.
func (b *formBuilder) walk(f Field, s *v1alpha2.JSONSchemaProps, v any, present bool, valuePath string) {
	f.Present = present
	if s == nil {
		s = &v1alpha2.JSONSchemaProps{}
	} else if f.Hint == "" {
		f.Hint = schemaHint(s, f.Required)
	}
	f.Schema = s
	switch {
	case s.XIntOrString:
		f.Kind = KindJSON
		if present {
			f.Value = draft.Canonical(v)
		}
	case len(s.Enum) > 0 || s.Type == "boolean":
		f.Kind = KindChoice
		if !f.Required {
			f.Options, f.Raws = []string{""}, [][]byte{nil}
		}
		enum := s.Enum
		if len(enum) == 0 {
			enum = []apiextensionsv1.JSON{{Raw: []byte("false")}, {Raw: []byte("true")}}
		}
		for _, e := range enum {
			f.Options = append(f.Options, display(e.Raw))
			f.Raws = append(f.Raws, e.Raw)
		}
		if present {
			f.Value = displayValue(v)
		}
	case s.Type == "integer" || s.Type == "number":
		f.Kind = KindNumber
		if present {
			f.Value = displayValue(v)
		}
	case s.Type == "string":
		f.Kind = KindText
		if str, ok := v.(string); ok {
			f.Value = str
		} else if present {
			f.Value = draft.Canonical(v)
		}
	case isForm(s) && s.Type == "object" && len(s.Properties) > 0:
		f.Kind = KindObject
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
			b.walk(Field{Key: f.Key + "." + p, Label: p, Path: valuePath + "." + p, Depth: f.Depth + 1, Role: RoleVariable,
				Scope: f.Scope, Variable: f.Variable, Sub: AppendSub(f.Sub, p), Required: required[p] && present}, &ps, cv, cok && present, valuePath+"."+p)
		}
		return
	case isForm(s) && s.Type == "array":
		f.Kind = KindList
		items, _ := v.([]any)
		f.Value = fmt.Sprintf("%d item(s)", len(items))
		f.Hint = strings.TrimPrefix(f.Hint+" · ctrl+n adds an item, ctrl+x removes one", " · ")
		b.fields = append(b.fields, f)
		for i, item := range items {
			idx := "[" + strconv.Itoa(i) + "]"
			b.walk(Field{Key: f.Key + idx, Label: idx, Path: valuePath + idx, Depth: f.Depth + 1, Role: RoleVariable,
				Scope: f.Scope, Variable: f.Variable, Sub: AppendSub(f.Sub, i), Required: true, Entry: true}, s.Items, item, true, valuePath+idx)
		}
		return
	case isMap(s):
		f.Kind = KindMap
		entries, _ := v.(map[string]any)
		f.Value = count(len(entries), "entry", "entries")
		f.Hint = strings.TrimPrefix(f.Hint+" · ctrl+n adds an entry, ctrl+x removes one", " · ")
		b.fields = append(b.fields, f)
		keys := make([]string, 0, len(entries))
		for k := range entries {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.walk(Field{Key: f.Key + "." + k, Label: k, Path: valuePath + "." + k, Depth: f.Depth + 1, Role: RoleVariable,
				Scope: f.Scope, Variable: f.Variable, Sub: AppendSub(f.Sub, k), Required: true, Entry: true}, s.AdditionalProperties, entries[k], true, valuePath+"."+k)
		}
		return
	default:
		f.Kind = KindJSON
		if present {
			f.Value = draft.Canonical(v)
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

// AppendSub is the path sub to a value with k, an index or key, added.
func AppendSub(sub []any, k any) []any {
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

// Parse turns what was typed into a field's value; ok is false for unset.
// Emptying a field unsets it only where a value may be left out: not in a
// list item, an override (ctrl+x removes those) or a required field.
func (f *Field) Parse(text string) (value any, ok bool, err error) {
	if text == "" && f.Kind != KindText && (f.Required || f.OverrideRoot) {
		return nil, false, fmt.Errorf("needs a value")
	}
	switch f.Kind {
	case KindText:
		return text, true, nil
	case KindNumber:
		if text == "" {
			return nil, false, nil
		}
		switch {
		case f.Role == RoleReplicas:
			if n, err := strconv.ParseInt(text, 10, 32); err != nil || n < 0 {
				return nil, false, fmt.Errorf("must be a whole number, 0 or more")
			}
		case f.Schema != nil && f.Schema.Type == "integer":
			if _, err := strconv.ParseInt(text, 10, 64); err != nil {
				return nil, false, fmt.Errorf("must be a whole number")
			}
		default:
			if _, err := strconv.ParseFloat(text, 64); err != nil {
				return nil, false, fmt.Errorf("must be a number")
			}
		}
		return json.Number(text), true, nil
	case KindJSON:
		if text == "" {
			return nil, false, nil
		}
		v, ok := draft.DecodeJSON([]byte(text))
		if !ok || !json.Valid([]byte(text)) {
			return nil, false, fmt.Errorf("not valid JSON")
		}
		return v, true, nil
	}
	return nil, false, fmt.Errorf("%s is not typed into", f.Label)
}

// ZeroValue is what a new list item or override starts as: the schema's
// default, or the empty value of its type.
func ZeroValue(s *v1alpha2.JSONSchemaProps) any {
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

// Model is the form: a row per field, the field selected, and the problems
// found with each, under the field they are about.
type Model struct {
	common *common.Common
	// Fields are the rows, rebuilt from the draft by Build.
	Fields []Field
	// Cursor is the index of the field selected.
	Cursor int
	// Errs are each field's problems, by index.
	Errs map[int][]string
	// height is how many rows the form shows.
	height int
}

// New returns an empty form over c.
func New(c *common.Common) *Model {
	return &Model{common: c, Errs: map[int][]string{}, height: c.Height}
}

// SetSize sets how many rows the form shows (the width is the terminal's,
// which the editor cuts every line to).
func (m *Model) SetSize(_, height int) { m.height = height }

// Window is what the form shows in its height: the selected field's rows,
// with as many rows before them as fit, and which field each row shows.
func (m *Model) Window() (rows []string, owners []int) {
	rows, owners, first, last := m.Rows()
	start := 0
	if last >= m.height {
		start = min(first, last-m.height+1)
	}
	end := max(start, min(len(rows), start+m.height))
	return rows[start:end], owners[start:end]
}

// View is the form's window, a line a row.
func (m *Model) View() string {
	rows, _ := m.Window()
	return strings.Join(rows, "\n")
}

var _ tea.Model = &Model{}

// Init implements tea.Model: the form starts nothing.
func (m *Model) Init() tea.Cmd { return nil }

// Update implements tea.Model: the form's own keys move the cursor (up and
// down round the ends, enter to the next field) and the wheel scrolls it.
// Keys that change the draft are the editor's.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if len(m.Fields) == 0 {
		return m, nil
	}
	k := m.common.Keys
	switch msg := msg.(type) {
	case tea.KeyMsg:
		switch {
		case key.Matches(msg, k.Up):
			m.Move(-1)
		case key.Matches(msg, k.Down), key.Matches(msg, k.Select):
			m.Move(1)
		}
	case tea.MouseMsg:
		if msg.Action != tea.MouseActionPress {
			break
		}
		switch msg.Button {
		case tea.MouseButtonWheelUp:
			m.Cursor = max(0, m.Cursor-1)
		case tea.MouseButtonWheelDown:
			m.Cursor = min(len(m.Fields)-1, m.Cursor+1)
		}
	}
	return m, nil
}

// ShortHelp is the form's help line.
func (m *Model) ShortHelp() []key.Binding {
	k := m.common.Keys
	return []key.Binding{k.Down, k.Left, k.Reset, k.Unset}
}

// FullHelp is the form's full help.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.common.Keys
	return [][]key.Binding{{k.Up, k.Down, k.Left, k.Select}, {k.Reset, k.Unset, k.Add, k.Remove, k.Override}}
}

// Selected is the field the cursor is on.
func (m *Model) Selected() *Field { return &m.Fields[m.Cursor] }

// Move moves the cursor step rows, round the ends.
func (m *Model) Move(step int) {
	m.Cursor = (m.Cursor + step + len(m.Fields)) % len(m.Fields)
}

// Rows renders every field (a line each, indented by depth, followed by
// a line per error) and says which field each line belongs to and which
// lines the selected field spans.
func (m *Model) Rows() (rows []string, owners []int, first, last int) {
	labelWidth := 0
	for _, f := range m.Fields {
		labelWidth = max(labelWidth, 2*f.Depth+len(f.Label)+1)
	}
	for i, f := range m.Fields {
		marker, label := "  ", m.common.Styles.Label
		if i == m.Cursor {
			marker, label = "> ", m.common.Styles.Selected
			first = len(rows)
		}
		name := strings.Repeat("  ", f.Depth) + f.Label
		if f.Marked() {
			name += "*"
		}
		value := f.Value
		switch {
		case f.Kind == KindObject && f.Present:
			value = m.common.Styles.Hint.Render("object")
		case f.Kind == KindList || f.Kind == KindMap:
			value = m.common.Styles.Hint.Render(value)
		case !f.Present:
			unset := "(unset)"
			if f.Unset != "" {
				unset = "(" + f.Unset + ")"
			}
			value = m.common.Styles.Hint.Render(unset)
			if f.Kind == KindChoice {
				value = "‹ " + value + " ›"
			}
		case f.Kind == KindChoice:
			value = "‹ " + value + " ›"
		case value == "" && f.Kind == KindText:
			value = `""`
		}
		if f.Changed() {
			value = m.common.Styles.Changed.Render(value)
		}
		rows = append(rows, marker+label.Render(fmt.Sprintf("%-*s", labelWidth, name))+" "+value)
		owners = append(owners, i)
		for _, e := range m.Errs[i] {
			rows = append(rows, "    "+strings.Repeat("  ", f.Depth)+m.common.Styles.Error.Render("✗ "+e))
			owners = append(owners, i)
		}
		if i == m.Cursor {
			last = len(rows) - 1
		}
	}
	return rows, owners, first, last
}
