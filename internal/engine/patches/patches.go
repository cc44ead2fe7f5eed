// Package patches applies a class's patches to the templates a topology is
// built from: selectors, enabledIf, value / valueFrom.variable /
// valueFrom.template, in class order, with RFC 6902 JSON patches.
package patches

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/lru"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Role is the place a template has in the topology; selectors match on it.
type Role int

// Roles of templates.
const (
	InfrastructureCluster Role = iota
	ControlPlane
	ControlPlaneMachineInfrastructure
	MachineDeploymentBootstrap
	MachineDeploymentInfrastructure
	MachinePoolBootstrap
	MachinePoolInfrastructure
)

// Target is one template to patch, with the variables specific to it.
type Target struct {
	// Object is the template; patches change its spec in place.
	Object *unstructured.Unstructured
	// Role is where the template is used.
	Role Role
	// WorkerClass is the MachineDeployment or MachinePool class, for worker roles.
	WorkerClass string
	// Builtins specific to this target (controlPlane, machineDeployment, machinePool).
	Builtins *Builtins
	// Overrides are the variable overrides of the control plane or pool.
	Overrides []v1alpha2.ClusterVariable
	// Description names the target in errors, e.g. `MachineDeployment "md-0" infrastructure template`.
	Description string
	// Holder is where the template is used, as external patches are told.
	Holder Holder
}

// Holder is the object that will refer to what is made from a template, and
// the field it refers to it by.
type Holder struct {
	APIVersion, Kind, Namespace, Name, FieldPath string
}

// ExternalInput is what an external patch sees: the topology's variables,
// the builtins every target shares, and the targets as the patches before
// it left them.
type ExternalInput struct {
	Variables []v1alpha2.ClusterVariable
	Builtins  Builtins
	Targets   []*Target
}

// External calls external (Runtime SDK) patches. The agent provides one;
// offline callers pass nil and external patches are reported.
type External interface {
	// Generate calls the patch's generate extension and applies the patches
	// it returns to the targets.
	Generate(ctx context.Context, patch *v1alpha2.ClusterClassPatch, in ExternalInput) error
	// Validate calls the patch's validate extension on the patched targets.
	Validate(ctx context.Context, patch *v1alpha2.ClusterClassPatch, in ExternalInput) error
}

// Error is a patch that could not be applied, with the class field that holds it.
type Error struct {
	// Field is the path in the class, e.g. spec.patches[2].definitions[0].jsonPatches[1].
	Field string
	// Patch is the name of the patch.
	Patch string
	// Target names the template.
	Target string
	// Err is the reason.
	Err error
}

func (e *Error) Error() string { return e.Field + ": " + e.Reason() }

// Reason is the error without its field, for reports that give the field
// apart; a validator's refusal has no target, being of the whole topology.
func (e *Error) Reason() string {
	if e.Target == "" {
		return fmt.Sprintf("patch %q: %v", e.Patch, e.Err)
	}
	return fmt.Sprintf("patch %q on %s: %v", e.Patch, e.Target, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Input is what Apply needs.
type Input struct {
	// Patches of the class, applied in order.
	Patches []v1alpha2.ClusterClassPatch
	// Variables are the topology's (defaulted) variables.
	Variables []v1alpha2.ClusterVariable
	// Builtins common to every target (builtin.cluster).
	Builtins Builtins
	// Targets are the templates.
	Targets []*Target
	// External generates external patches; nil when none can be called.
	External External
}

// Apply applies every patch to every target it selects, in class order.
func Apply(ctx context.Context, in Input) error {
	if len(in.Patches) == 0 {
		return nil
	}
	globals, err := decodeVariables(in.Variables)
	if err != nil {
		return err
	}
	// Variables per target are computed once; patches only change objects.
	vars := make([]map[string]any, len(in.Targets))
	common := jsonMap(in.Builtins)
	for i, t := range in.Targets {
		v, err := targetVariables(globals, common, t)
		if err != nil {
			return fmt.Errorf("variables for %s: %w", t.Description, err)
		}
		vars[i] = v
	}
	// Operations only depend on variables, never on the object, so each
	// target's operations are collected and applied in one pass.
	batches := make([]batch, len(in.Targets))
	r := newRenderer()
	flush := func() error {
		for ti, t := range in.Targets {
			if err := batches[ti].flush(t); err != nil {
				return err
			}
		}
		return nil
	}
	for pi := range in.Patches {
		p := &in.Patches[pi]
		field := fmt.Sprintf("spec.patches[%d]", pi)
		if p.External != nil {
			if in.External == nil {
				return &Error{Field: field + ".external", Patch: p.Name, Err: fmt.Errorf("external patches need a Runtime SDK extension; run against the cluster where the agent can call it")}
			}
			if p.External.GeneratePatchesExtension == nil {
				continue // validation only: after every patch
			}
			// An external patch sees the objects as the patches before it left them.
			if err := flush(); err != nil {
				return err
			}
			ext := ExternalInput{Variables: in.Variables, Builtins: in.Builtins, Targets: in.Targets}
			if err := in.External.Generate(ctx, p, ext); err != nil {
				return &Error{Field: field + ".external.generateExtension", Patch: p.Name, Err: err}
			}
			continue
		}
		for ti, t := range in.Targets {
			if err := collectInline(r, p, field, t, vars[ti], &batches[ti]); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	// Validators see the templates as every patch left them, as upstream's do.
	for pi := range in.Patches {
		p := &in.Patches[pi]
		if p.External == nil || p.External.ValidateTopologyExtension == nil {
			continue
		}
		ext := ExternalInput{Variables: in.Variables, Builtins: in.Builtins, Targets: in.Targets}
		if err := in.External.Validate(ctx, p, ext); err != nil {
			return &Error{Field: fmt.Sprintf("spec.patches[%d].external.validateExtension", pi), Patch: p.Name, Err: err}
		}
	}
	return nil
}

// batch is the pending operations of one target, with the definition each came from.
type batch struct {
	ops   []map[string]any
	steps []step
}

// step is the operations one patch definition contributed to a batch.
type step struct {
	start, end int
	// patchField and definition name the definition; the field path is
	// only formatted when it is reported.
	patchField, patch string
	definition        int
}

func (s step) field() string { return fmt.Sprintf("%s.definitions[%d]", s.patchField, s.definition) }

// flush applies the batch. When it fails, the definitions are replayed one by
// one on a copy to name the one at fault; that is the rare, slow path.
func (b *batch) flush(t *Target) error {
	if len(b.ops) == 0 {
		return nil
	}
	err := applyOps(t.Object, b.ops)
	if err != nil {
		probe := t.Object.DeepCopy()
		for _, s := range b.steps {
			if e := applyOps(probe, b.ops[s.start:s.end]); e != nil {
				return &Error{Field: s.field(), Patch: s.patch, Target: t.Description, Err: e}
			}
		}
		return &Error{Target: t.Description, Err: err}
	}
	b.ops, b.steps = b.ops[:0], b.steps[:0]
	return nil
}

// collectInline adds the operations of an inline patch for one target to its batch.
func collectInline(r *renderer, p *v1alpha2.ClusterClassPatch, field string, t *Target, vars map[string]any, b *batch) error {
	var matching []int
	for di := range p.Definitions {
		if Matches(p.Definitions[di].Selector, t) {
			matching = append(matching, di)
		}
	}
	if len(matching) == 0 {
		return nil
	}
	if p.EnabledIf != nil {
		enabled, err := r.enabled(*p.EnabledIf, vars)
		if err != nil {
			return &Error{Field: field + ".enabledIf", Patch: p.Name, Target: t.Description, Err: err}
		}
		if !enabled {
			return nil
		}
	}
	for _, di := range matching {
		def := &p.Definitions[di]
		start := len(b.ops)
		for oi, op := range def.JSONPatches {
			entry := map[string]any{"op": op.Op, "path": op.Path}
			if op.Op == "add" || op.Op == "replace" {
				v, err := r.value(op, vars)
				if err != nil {
					opField := fmt.Sprintf("%s.definitions[%d].jsonPatches[%d]", field, di, oi)
					return &Error{Field: opField, Patch: p.Name, Target: t.Description, Err: err}
				}
				entry["value"] = v
			}
			b.ops = append(b.ops, entry)
		}
		b.steps = append(b.steps, step{start: start, end: len(b.ops), patchField: field, definition: di, patch: p.Name})
	}
	return nil
}

// applyOps applies RFC 6902 operations to obj; only the spec of the result is
// kept, as patches may not touch metadata.
func applyOps(obj *unstructured.Unstructured, ops []map[string]any) error {
	// Patch paths start with /spec/ (the class is validated for it), so the
	// document is the spec alone: metadata is neither read nor rewritten.
	doc, err := json.Marshal(map[string]any{"spec": obj.Object["spec"]})
	if err != nil {
		return err
	}
	// The operations are built as json-patch's own type, field by field,
	// rather than marshalled whole and decoded again.
	patch := make(jsonpatch.Patch, 0, len(ops))
	for _, op := range ops {
		o := make(jsonpatch.Operation, len(op))
		for k, v := range op {
			raw, err := json.Marshal(v)
			if err != nil {
				return err
			}
			rm := json.RawMessage(raw)
			o[k] = &rm
		}
		patch = append(patch, o)
	}
	out, err := patch.Apply(doc)
	if err != nil {
		raw, _ := json.Marshal(ops)
		return fmt.Errorf("applying JSON patch %s: %w", raw, err)
	}
	var patched map[string]any
	if err := json.Unmarshal(out, &patched); err != nil {
		return err
	}
	spec, ok := patched["spec"]
	if !ok {
		return fmt.Errorf("patch removed spec")
	}
	obj.Object["spec"] = spec
	return nil
}

// Matches tells whether a selector picks a target.
func Matches(s v1alpha2.PatchSelector, t *Target) bool {
	if t.Object.GetAPIVersion() != s.APIVersion || t.Object.GetKind() != s.Kind {
		return false
	}
	m := s.MatchResources
	switch t.Role {
	case InfrastructureCluster:
		return m.InfrastructureCluster
	case ControlPlane, ControlPlaneMachineInfrastructure:
		return m.ControlPlane
	case MachineDeploymentBootstrap, MachineDeploymentInfrastructure:
		return m.MachineDeploymentClass != nil && ClassMatches(m.MachineDeploymentClass.Names, t.WorkerClass)
	case MachinePoolBootstrap, MachinePoolInfrastructure:
		return m.MachinePoolClass != nil && ClassMatches(m.MachinePoolClass.Names, t.WorkerClass)
	}
	return false
}

// ClassMatches reports whether a worker class selector picks class: exact
// names, "*", "prefix*" and "*suffix".
func ClassMatches(names []string, class string) bool {
	for _, n := range names {
		switch {
		case n == "*" || n == class:
			return true
		case strings.HasPrefix(n, "*") && strings.HasSuffix(class, n[1:]):
			return true
		case strings.HasSuffix(n, "*") && strings.HasPrefix(class, n[:len(n)-1]):
			return true
		}
	}
	return false
}

// renderer renders templates and remembers what rendered text parsed to: the
// same output (an image tag, a flag) recurs across targets and patches, and
// parsing YAML is the costly part. Parsed values are only read afterwards.
type renderer struct {
	// parsed memoises template output read as YAML, by output text.
	parsed map[string]any
	// rendered memoises a template's value by the values it reads (see inputKey).
	rendered map[string]any
}

func newRenderer() *renderer {
	return &renderer{parsed: map[string]any{}, rendered: map[string]any{}}
}

// Enabled renders an enabledIf template; the patch applies when it yields true.
func Enabled(tpl string, vars map[string]any) (bool, error) {
	return (&renderer{}).enabled(tpl, vars)
}

func (r *renderer) enabled(tpl string, vars map[string]any) (bool, error) {
	v, err := r.render(tpl, vars)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	return ok && b, nil
}

// Value computes the value of an add or replace operation.
func Value(op v1alpha2.JSONPatch, vars map[string]any) (any, error) {
	return (&renderer{}).value(op, vars)
}

func (r *renderer) value(op v1alpha2.JSONPatch, vars map[string]any) (any, error) {
	switch {
	case op.Value == nil && op.ValueFrom == nil:
		return nil, fmt.Errorf("neither value nor valueFrom is set")
	case op.Value != nil && op.ValueFrom != nil:
		return nil, fmt.Errorf("both value and valueFrom are set")
	case op.Value != nil:
		var v any
		if err := json.Unmarshal(op.Value.Raw, &v); err != nil {
			return nil, fmt.Errorf("value is not valid JSON: %w", err)
		}
		return v, nil
	case op.ValueFrom.Variable != nil && op.ValueFrom.Template != nil:
		return nil, fmt.Errorf("both valueFrom.variable and valueFrom.template are set")
	case op.ValueFrom.Variable != nil:
		return Lookup(vars, *op.ValueFrom.Variable)
	case op.ValueFrom.Template != nil:
		return r.render(*op.ValueFrom.Template, vars)
	}
	return nil, fmt.Errorf("valueFrom sets neither variable nor template")
}

var (
	funcsOnce sync.Once
	funcs     template.FuncMap
	// parsed holds the templates last parsed, by their text; bounded, as
	// the class webhook parses whatever templates it is sent.
	parsed = lru.New(1024)
)

// Parse parses a patch template with sprig's hermetic functions, caching the
// result: the same class is rendered over and over.
func Parse(text string) (*template.Template, error) {
	e, err := parsedOf(text)
	if err != nil {
		return nil, err
	}
	return e.t, nil
}

// parsedTemplate is a parsed template with the values it reads, both
// derived from its text once.
type parsedTemplate struct {
	t     *template.Template
	reads readsEntry
}

func parsedOf(text string) (*parsedTemplate, error) {
	if e, ok := parsed.Get(text); ok {
		return e.(*parsedTemplate), nil
	}
	funcsOnce.Do(func() { funcs = sprig.HermeticTxtFuncMap() })
	t, err := template.New("patch").Funcs(funcs).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("template does not parse: %w", err)
	}
	paths, ok := templateReads(t)
	e := &parsedTemplate{t: t, reads: readsEntry{paths: paths, ok: ok}}
	parsed.Add(text, e)
	return e, nil
}

// Render executes a template over the variables and reads the output as YAML.
func Render(text string, vars map[string]any) (any, error) {
	return (&renderer{}).render(text, vars)
}

func (r *renderer) render(text string, vars map[string]any) (any, error) {
	e, err := parsedOf(text)
	if err != nil {
		return nil, err
	}
	t := e.t
	key, keyed := "", false
	if r.rendered != nil {
		if key, keyed = inputKey(text, e.reads, vars); keyed {
			if v, ok := r.rendered[key]; ok {
				return v, nil
			}
		}
	}
	v, err := r.execute(t, vars)
	if err == nil && keyed {
		r.rendered[key] = v
	}
	return v, err
}

func (r *renderer) execute(t *template.Template, vars map[string]any) (any, error) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, vars); err != nil {
		return nil, fmt.Errorf("template does not render: %w", err)
	}
	if v, ok := r.parsed[buf.String()]; ok {
		return v, nil
	}
	raw, err := yaml.YAMLToJSON(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("template output is not YAML: %w: %q", err, buf.String())
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("template output is not a value: %w", err)
	}
	if r.parsed != nil {
		r.parsed[buf.String()] = v
	}
	return v, nil
}

func decodeVariables(vs []v1alpha2.ClusterVariable) (map[string]any, error) {
	out := make(map[string]any, len(vs)+1)
	for _, v := range vs {
		if v.Name == "builtin" {
			continue
		}
		var x any
		if len(v.Value.Raw) > 0 {
			if err := json.Unmarshal(v.Value.Raw, &x); err != nil {
				return nil, fmt.Errorf("variable %q is not valid JSON: %w", v.Name, err)
			}
		}
		out[v.Name] = x
	}
	return out, nil
}

func targetVariables(globals, common map[string]any, t *Target) (map[string]any, error) {
	out := make(map[string]any, len(globals)+1)
	for k, v := range globals {
		out[k] = v
	}
	overrides, err := decodeVariables(t.Overrides)
	if err != nil {
		return nil, err
	}
	for k, v := range overrides {
		out[k] = v
	}
	out["builtin"] = withTargetBuiltins(common, t.Builtins)
	return out, nil
}

// withTargetBuiltins lays a target's own builtins over the common ones, in
// the generic form templates and lookups read. The common ones are converted
// once per pass and shared, as templates only read them: converting the
// cluster's for each target cost a tenth of a desired state.
func withTargetBuiltins(common map[string]any, own *Builtins) map[string]any {
	if own == nil {
		return common
	}
	out := maps.Clone(common)
	maps.Copy(out, jsonMap(*own))
	return out
}

// jsonMap is builtins in the generic form encoding/json decodes it to; a
// part left nil is absent.
func jsonMap(b Builtins) map[string]any {
	raw, _ := json.Marshal(b)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}
