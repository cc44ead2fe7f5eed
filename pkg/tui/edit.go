package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine/names"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine/plan"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine/variables"
)

// ErrConflict is what an Applier returns, with the server's latest Topology,
// when the Topology changed since it was read.
var ErrConflict = errors.New("the Topology changed on the server")

// Applier writes the edited Topology, guarded by its resourceVersion. On a
// conflict it returns ErrConflict and the server's latest version.
type Applier func(ctx context.Context, edited *v1alpha1.Topology) (*v1alpha1.Topology, error)

// Inputs are what the editor works on, read once when it opens.
type Inputs struct {
	// Topology as read from the server.
	Topology *v1alpha1.Topology
	// Class, its templates and the objects generated for the Topology.
	Class     *v1alpha1.TopologyClass
	Templates *engine.TemplateIndex
	Current   []*unstructured.Unstructured
}

type fieldKind int

const (
	kindText fieldKind = iota
	kindInt
	kindBool
	kindEnum
	kindJSON
)

// editField is one editable value of the Topology.
type editField struct {
	label, path, hint string
	kind              fieldKind
	options           []string
	value, original   string
	required          bool
	set               func(t *v1alpha1.Topology, value string) error
}

// EditModel is the Topology editor: fields on top, checks and the rollout
// preview below, recomputed with the engine on every keystroke.
type EditModel struct {
	in       Inputs
	catalog  *variables.Catalog
	keys     KeyMap
	styles   Styles
	help     help.Model
	apply    Applier
	readOnly bool

	fields []editField
	cursor int
	// pools added and removed by the user, replayed on the server's
	// Topology when recomputing and after a conflict.
	added   []v1alpha1.MachineDeploymentTopology
	removed map[string]bool
	// diffIndex is the change whose diff is shown; -1 shows the list.
	diffIndex int
	width     int
	height    int

	fieldErrs  map[int][]string
	checks     []string
	changes    []plan.Change
	rollout    []string
	edited     *v1alpha1.Topology
	confirming bool
	applying   bool
	message    string
	quitting   bool
	// Applied is true once an apply succeeded.
	Applied bool
}

// NewEditModel opens the editor on in; apply writes the result.
func NewEditModel(ctx context.Context, in Inputs, apply Applier, readOnly bool) (*EditModel, error) {
	cat, err := engine.CompileClass(ctx, in.Class)
	if err != nil {
		return nil, err
	}
	m := &EditModel{in: in, catalog: cat, keys: DefaultKeyMap(), styles: DefaultStyles(), help: help.New(), apply: apply, readOnly: readOnly, width: 80, height: 24, removed: map[string]bool{}, diffIndex: -1}
	m.fields = buildFields(in.Topology, in.Class, cat)
	m.recompute(ctx)
	return m, nil
}

// SetSize fits the editor to the terminal.
func (m *EditModel) SetSize(w, h int) {
	m.width, m.height = w, h
	m.help.Width = w
}

func buildFields(t *v1alpha1.Topology, c *v1alpha1.TopologyClass, cat *variables.Catalog) []editField {
	var fs []editField
	fs = append(fs, editField{label: "version", path: "spec.version", kind: kindText, value: t.Spec.Version, hint: "Kubernetes version, e.g. v1.34.0",
		set: func(t *v1alpha1.Topology, v string) error { t.Spec.Version = v; return nil }})
	replicas := func(label, path string, cur *int32, set func(*v1alpha1.Topology, *int32)) editField {
		v := ""
		if cur != nil {
			v = strconv.Itoa(int(*cur))
		}
		return editField{label: label, path: path, kind: kindInt, value: v, hint: "replicas; empty leaves them to the class or an autoscaler",
			set: func(t *v1alpha1.Topology, s string) error {
				if s == "" {
					set(t, nil)
					return nil
				}
				n, err := strconv.Atoi(s)
				if err != nil || n < 0 {
					return fmt.Errorf("must be a whole number, 0 or more")
				}
				v := int32(n)
				set(t, &v)
				return nil
			}}
	}
	fs = append(fs, replicas("control plane replicas", "spec.controlPlane.replicas", t.Spec.ControlPlane.Replicas, func(t *v1alpha1.Topology, v *int32) { t.Spec.ControlPlane.Replicas = v }))
	if w := t.Spec.Workers; w != nil {
		for i, md := range w.MachineDeployments {
			fs = append(fs, replicas(fmt.Sprintf("%s (%s) replicas", md.Name, md.Class), fmt.Sprintf("spec.workers.machineDeployments[%d].replicas", i), md.Replicas,
				func(t *v1alpha1.Topology, v *int32) { t.Spec.Workers.MachineDeployments[i].Replicas = v }))
		}
		for i, mp := range w.MachinePools {
			fs = append(fs, replicas(fmt.Sprintf("%s (%s) replicas", mp.Name, mp.Class), fmt.Sprintf("spec.workers.machinePools[%d].replicas", i), mp.Replicas,
				func(t *v1alpha1.Topology, v *int32) { t.Spec.Workers.MachinePools[i].Replicas = v }))
		}
	}
	current := map[string]string{}
	for _, v := range t.Spec.Variables {
		current[v.Name] = string(v.Value.Raw)
	}
	for _, def := range c.Spec.Variables {
		s := def.Schema.OpenAPIV3Schema
		f := editField{label: def.Name, path: "spec.variables[" + def.Name + "]", required: def.Required, hint: variableHint(def)}
		raw, isSet := current[def.Name]
		switch {
		case len(s.Enum) > 0:
			f.kind = kindEnum
			for _, e := range s.Enum {
				var v any
				_ = json.Unmarshal(e.Raw, &v)
				f.options = append(f.options, fmt.Sprint(v))
			}
		case s.Type == "boolean":
			f.kind, f.options = kindBool, []string{"false", "true"}
		case s.Type == "integer" || s.Type == "number":
			f.kind = kindInt
		case s.Type == "string":
			f.kind = kindText
		default:
			f.kind = kindJSON
		}
		if isSet {
			f.value = displayValue(raw, f.kind)
		}
		name, kind := def.Name, f.kind
		f.set = func(t *v1alpha1.Topology, v string) error {
			raw, err := rawValue(v, kind)
			if err != nil {
				return err
			}
			for i := range t.Spec.Variables {
				if t.Spec.Variables[i].Name == name {
					if raw == nil {
						t.Spec.Variables = append(t.Spec.Variables[:i], t.Spec.Variables[i+1:]...)
						return nil
					}
					t.Spec.Variables[i].Value = apiextensionsv1.JSON{Raw: raw}
					return nil
				}
			}
			if raw != nil {
				t.Spec.Variables = append(t.Spec.Variables, v1alpha1.ClusterVariable{Name: name, Value: apiextensionsv1.JSON{Raw: raw}})
			}
			return nil
		}
		fs = append(fs, f)
	}
	for i := range fs {
		fs[i].original = fs[i].value
	}
	return fs
}

func variableHint(def v1alpha1.ClusterClassVariable) string {
	s := def.Schema.OpenAPIV3Schema
	parts := []string{s.Type}
	if def.Required {
		parts = append(parts, "required")
	}
	if s.Default != nil {
		parts = append(parts, "default "+string(s.Default.Raw))
	}
	if s.Description != "" {
		parts = append(parts, s.Description)
	}
	return strings.Join(parts, " · ")
}

// displayValue shows strings bare and everything else as JSON.
func displayValue(raw string, kind fieldKind) string {
	if kind == kindText || kind == kindEnum {
		var s string
		if json.Unmarshal([]byte(raw), &s) == nil {
			return s
		}
	}
	return raw
}

// rawValue turns what was typed into the variable's JSON; empty unsets it.
func rawValue(v string, kind fieldKind) ([]byte, error) {
	if v == "" && kind != kindText {
		return nil, nil
	}
	switch kind {
	case kindText, kindEnum:
		return json.Marshal(v)
	case kindJSON, kindInt, kindBool:
		if !json.Valid([]byte(v)) {
			return nil, fmt.Errorf("not valid JSON")
		}
	}
	return []byte(v), nil
}

// base is the server's Topology with the user's added and removed pools.
func (m *EditModel) base() *v1alpha1.Topology {
	t := m.in.Topology.DeepCopy()
	if len(m.added) == 0 && len(m.removed) == 0 {
		return t
	}
	if t.Spec.Workers == nil {
		t.Spec.Workers = &v1alpha1.WorkersTopology{}
	}
	var mds []v1alpha1.MachineDeploymentTopology
	for _, md := range t.Spec.Workers.MachineDeployments {
		if !m.removed[md.Name] {
			mds = append(mds, md)
		}
	}
	for _, md := range m.added {
		if !m.removed[md.Name] {
			mds = append(mds, *md.DeepCopy())
		}
	}
	t.Spec.Workers.MachineDeployments = mds
	return t
}

// restructure rebuilds the fields after pools were added or removed,
// keeping every value the user typed.
func (m *EditModel) restructure(ctx context.Context) {
	typed := map[string]editField{}
	for _, f := range m.fields {
		typed[f.label] = f
	}
	serverFields := map[string]string{}
	for _, f := range buildFields(m.in.Topology, m.in.Class, m.catalog) {
		serverFields[f.label] = f.original
	}
	cur := m.fields[m.cursor].label
	m.fields = buildFields(m.base(), m.in.Class, m.catalog)
	for i := range m.fields {
		f := &m.fields[i]
		if old, ok := typed[f.label]; ok {
			f.value = old.value
		}
		// A field of an added pool has no server value: it counts as changed.
		f.original = serverFields[f.label]
		if f.label == cur {
			m.cursor = i
		}
	}
	m.cursor = min(m.cursor, len(m.fields)-1)
	m.recompute(ctx)
}

// addPool adds a MachineDeployment of the class's first MachineDeployment class.
func (m *EditModel) addPool(ctx context.Context) {
	if len(m.in.Class.Spec.Workers.MachineDeployments) == 0 {
		m.message = "the class has no MachineDeployment classes"
		return
	}
	taken := map[string]bool{}
	for _, md := range m.base().Spec.Workers.MachineDeployments {
		taken[md.Name] = true
	}
	name := ""
	for i := len(taken); name == "" || taken[name]; i++ {
		name = fmt.Sprintf("md-%d", i)
	}
	one := int32(1)
	m.added = append(m.added, v1alpha1.MachineDeploymentTopology{Name: name, Class: m.in.Class.Spec.Workers.MachineDeployments[0].Class, Replicas: &one})
	m.message = fmt.Sprintf("added MachineDeployment %s (%s); ctrl+x removes it", name, m.added[len(m.added)-1].Class)
	m.restructure(ctx)
}

// removePool removes the MachineDeployment whose field is selected.
func (m *EditModel) removePool(ctx context.Context) {
	path := m.fields[m.cursor].path
	if !strings.HasPrefix(path, "spec.workers.machineDeployments[") {
		m.message = "select a MachineDeployment's replicas to remove it"
		return
	}
	name := strings.SplitN(m.fields[m.cursor].label, " ", 2)[0]
	m.removed[name] = true
	m.message = fmt.Sprintf("removed MachineDeployment %s; its Machines will be deleted", name)
	m.restructure(ctx)
}

func (m *EditModel) structureChanged() bool {
	return len(m.added) > 0 || len(m.removed) > 0
}

// recompute builds the edited Topology from the fields and runs the engine:
// field errors, compatibility checks, the objects that change and the rollout.
func (m *EditModel) recompute(ctx context.Context) {
	m.fieldErrs = map[int][]string{}
	m.checks, m.changes, m.rollout = nil, nil, nil
	t := m.base()
	for i, f := range m.fields {
		if err := f.set(t, f.value); err != nil {
			m.fieldErrs[i] = append(m.fieldErrs[i], err.Error())
		}
	}
	m.edited = t
	if len(m.fieldErrs) > 0 {
		return
	}
	if _, err := engine.ParseVersion(t.Spec.Version); err != nil {
		m.fieldErrs[0] = append(m.fieldErrs[0], "must be a Kubernetes version such as v1.34.0")
		return
	}
	spec := engine.SpecPath(engine.DialectTopology)
	check := t.DeepCopy()
	errs := engine.DefaultTopology(check, m.catalog, spec)
	errs = append(errs, engine.ValidateTopology(ctx, check, m.in.Class, m.catalog, spec)...)
	for _, fe := range errs {
		msg := fe.Detail // the webhook's message, without the value it quotes
		if msg == "" {
			msg = fe.ErrorBody()
		}
		m.attach(fe.Field, msg)
	}
	live := m.in.Topology.DeepCopy()
	live.Annotations = t.Annotations // the unsafe annotation, if the user set it
	for _, fe := range engine.UpgradePreflight(live, t.Spec.Version) {
		m.checks = append(m.checks, fe.Detail)
	}
	if len(m.fieldErrs) > 0 || len(m.checks) > 0 {
		return
	}
	res, err := engine.Compute(ctx, engine.Input{
		Topology: t, Class: m.in.Class, Templates: m.in.Templates,
		Current: engine.StateFromObjects(t.Name, t.Namespace, m.in.Current),
		Names:   names.NewSeeded(1), Dialect: engine.DialectTopology, Catalog: m.catalog,
	})
	if err != nil {
		m.checks = append(m.checks, err.Error())
		return
	}
	p, err := plan.Compute(plan.Input{Desired: res.Desired, Current: m.in.Current, Cluster: t.Name, Namespace: t.Namespace, Summary: true})
	if err != nil {
		m.checks = append(m.checks, err.Error())
		return
	}
	m.changes = p.Changes
	if m.diffIndex >= len(m.changes) {
		m.diffIndex = -1
	}
	if t.Spec.Version != m.in.Topology.Spec.Version {
		withStatus := m.in.Topology.DeepCopy()
		withStatus.Spec = t.Spec
		withStatus.Spec.Version = m.in.Topology.Spec.Version
		m.rollout = engine.PlanUpgrade(withStatus, t.Spec.Version).Lines()
	}
}

// attach puts an engine error on the field whose path it names.
func (m *EditModel) attach(path, msg string) {
	best, bestLen := -1, 0
	for i, f := range m.fields {
		if strings.HasPrefix(path, f.path) && len(f.path) > bestLen {
			best, bestLen = i, len(f.path)
		}
	}
	if best < 0 {
		m.checks = append(m.checks, path+": "+msg)
		return
	}
	m.fieldErrs[best] = append(m.fieldErrs[best], msg)
}

func (m *EditModel) dirty() []int {
	var out []int
	for i, f := range m.fields {
		if f.value != f.original {
			out = append(out, i)
		}
	}
	return out
}

// canApply reports whether apply is allowed: something changed and nothing is red.
func (m *EditModel) canApply() bool {
	return !m.readOnly && (len(m.dirty()) > 0 || m.structureChanged()) && len(m.fieldErrs) == 0 && len(m.checks) == 0
}

// Init implements tea.Model.
func (m *EditModel) Init() tea.Cmd { return nil }

type appliedMsg struct {
	latest *v1alpha1.Topology
	err    error
}

// Update implements tea.Model.
func (m *EditModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	ctx := context.Background()
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.SetSize(msg.Width, msg.Height)
		return m, nil
	case appliedMsg:
		m.applying = false
		switch {
		case errors.Is(msg.err, ErrConflict) && msg.latest != nil:
			m.rebase(ctx, msg.latest)
		case msg.err != nil:
			m.message = "apply failed: " + msg.err.Error()
		default:
			m.Applied = true
			m.message = fmt.Sprintf("Applied to %s/%s. Follow it with: kubectl topology status %s --watch", m.in.Topology.Namespace, m.in.Topology.Name, m.in.Topology.Name)
			m.in.Topology = msg.latest
			m.added, m.removed = nil, map[string]bool{}
			for i := range m.fields {
				m.fields[i].original = m.fields[i].value
			}
			m.recompute(ctx)
		}
		return m, nil
	case tea.KeyMsg:
		return m.onKey(ctx, msg)
	}
	return m, nil
}

func (m *EditModel) onKey(ctx context.Context, msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	if m.confirming {
		switch {
		case key.Matches(msg, m.keys.Yes):
			m.confirming, m.applying = false, true
			m.message = "applying..."
			edited := m.edited.DeepCopy()
			apply := m.apply
			return m, func() tea.Msg {
				latest, err := apply(context.Background(), edited)
				return appliedMsg{latest: latest, err: err}
			}
		case key.Matches(msg, m.keys.No):
			m.confirming = false
			m.message = "not applied"
		}
		return m, nil
	}
	switch {
	case key.Matches(msg, m.keys.Quit):
		m.quitting = true
		return m, tea.Quit
	case key.Matches(msg, m.keys.Help):
		m.help.ShowAll = !m.help.ShowAll
	case key.Matches(msg, m.keys.Up):
		m.cursor = (m.cursor + len(m.fields) - 1) % len(m.fields)
	case key.Matches(msg, m.keys.Down):
		m.cursor = (m.cursor + 1) % len(m.fields)
	case key.Matches(msg, m.keys.Apply):
		switch {
		case m.readOnly:
			m.message = "read-only: nothing can be applied"
		case m.canApply():
			m.confirming = true
			m.message = ""
		case len(m.dirty()) == 0 && !m.structureChanged():
			m.message = "nothing changed"
		default:
			m.message = "fix what is red first"
		}
	case m.readOnly:
		m.message = "read-only"
	case key.Matches(msg, m.keys.AddPool):
		m.addPool(ctx)
	case key.Matches(msg, m.keys.RemovePool):
		m.removePool(ctx)
	case key.Matches(msg, m.keys.Diff):
		m.diffIndex++
		if m.diffIndex >= len(m.changes) {
			m.diffIndex = -1
		}
	case key.Matches(msg, m.keys.Reset):
		f := &m.fields[m.cursor]
		f.value = f.original
		m.recompute(ctx)
	case key.Matches(msg, m.keys.Left), key.Matches(msg, m.keys.Right):
		f := &m.fields[m.cursor]
		if len(f.options) > 0 {
			step := 1
			if key.Matches(msg, m.keys.Left) {
				step = len(f.options) - 1
			}
			i := indexOf(f.options, f.value)
			f.value = f.options[(i+step)%len(f.options)]
			m.recompute(ctx)
		}
	case msg.Type == tea.KeyBackspace:
		f := &m.fields[m.cursor]
		if len(f.options) == 0 && f.value != "" {
			r := []rune(f.value)
			f.value = string(r[:len(r)-1])
			m.recompute(ctx)
		}
	case msg.Type == tea.KeyRunes || msg.Type == tea.KeySpace:
		f := &m.fields[m.cursor]
		if len(f.options) == 0 {
			f.value += string(msg.Runes)
			if msg.Type == tea.KeySpace {
				f.value += " "
			}
			m.recompute(ctx)
		} else if msg.Type == tea.KeySpace {
			f.value = f.options[(indexOf(f.options, f.value)+1)%len(f.options)]
			m.recompute(ctx)
		}
	}
	return m, nil
}

func indexOf(options []string, v string) int {
	for i, o := range options {
		if o == v {
			return i
		}
	}
	return -1
}

// rebase takes the server's latest Topology as the new base and keeps the
// user's edits (values and added or removed pools) on top, naming what
// changed on the server.
func (m *EditModel) rebase(ctx context.Context, latest *v1alpha1.Topology) {
	serverNew := map[string]string{}
	for _, f := range buildFields(latest, m.in.Class, m.catalog) {
		serverNew[f.label] = f.original
	}
	var changed []string
	for i := range m.fields {
		f := &m.fields[i]
		now, ok := serverNew[f.label]
		if !ok {
			continue
		}
		if now != f.original {
			changed = append(changed, fmt.Sprintf("%s %q → %q", f.label, f.original, now))
		}
		if f.value == f.original {
			f.value = now // untouched: follow the server
		}
	}
	sort.Strings(changed)
	m.in.Topology = latest
	m.message = "The Topology changed on the server meanwhile (" + strings.Join(changed, "; ") + "). Your edits are kept on top of it; check and apply again."
	m.restructure(ctx)
}
