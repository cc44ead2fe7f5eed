package editor

import (
	"fmt"
	"strings"

	"github.com/kubectl-topology/kubectl-topology/internal/tui/form"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/picker"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/prompt"

	"github.com/kubectl-topology/kubectl-topology/internal/draft"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// The editor's structural actions: adding and removing pools, list items,
// map entries and overrides; undo, unset and re-basing on the server's
// latest Topology.

// add adds an item to the list, or an entry to the map, the cursor is in;
// elsewhere it asks which worker class to add a pool of, then its name.
func (m *Model) add() {
	if c := m.enclosingCollection(); c != nil {
		m.addEntry(c)
		return
	}
	type choice struct{ kind, class string }
	var choices []choice
	for _, md := range m.in.Class.Spec.Workers.MachineDeployments {
		choices = append(choices, choice{draft.MachineDeployment, md.Class})
	}
	for _, mp := range m.in.Class.Spec.Workers.MachinePools {
		choices = append(choices, choice{draft.MachinePool, mp.Class})
	}
	if len(choices) == 0 {
		m.bar.Message = "the class has no worker classes to add a pool of"
		return
	}
	options := make([]string, 0, len(choices))
	for _, c := range choices {
		options = append(options, c.kind+" of class "+c.class)
	}
	m.openPicker(picker.New(m.common, "Add a pool", options), func(i int) {
		c := choices[i]
		m.openPrompt(prompt.New(m.common, "Name of the new "+c.kind, m.freePoolName(c.kind), m.checkPoolName), func(name string) {
			one := int32(1)
			if m.work.topology.Spec.Workers == nil {
				m.work.topology.Spec.Workers = &v1alpha2.WorkersTopology{}
			}
			if c.kind == draft.MachineDeployment {
				m.work.topology.Spec.Workers.MachineDeployments = append(m.work.topology.Spec.Workers.MachineDeployments, v1alpha2.MachineDeploymentTopology{Name: name, Class: c.class, Replicas: &one})
			} else {
				m.work.topology.Spec.Workers.MachinePools = append(m.work.topology.Spec.Workers.MachinePools, v1alpha2.MachinePoolTopology{Name: name, Class: c.class, Replicas: &one})
			}
			m.work.focus = draft.Scope{Kind: c.kind, Name: name}.String() + " replicas"
			m.bar.Message = fmt.Sprintf("added %s %s (%s); ctrl+x removes it", c.kind, name, c.class)
		})
	})
}

// checkPoolName refuses what the webhook would (rules.PoolNameErrors) and
// names another pool has.
func (m *Model) checkPoolName(name string) error {
	if errs := rules.PoolNameErrors(name); len(errs) > 0 {
		return fmt.Errorf("%q %s", name, strings.Join(errs, "; "))
	}
	if m.work.topology.MachineDeployment(name) != nil || m.work.topology.MachinePool(name) != nil {
		return fmt.Errorf("a pool named %s exists already", name)
	}
	return nil
}

// addEntry appends an item to a list, or asks for the key of a new map entry.
func (m *Model) addEntry(c *form.Field) {
	if c.Kind == form.KindList {
		v, _ := lookupVariable(m.work.topology, c)
		items, _ := v.([]any)
		n := len(items)
		if err := draft.SetVariable(m.work.topology, c.Scope, c.Variable, form.AppendSub(c.Sub, n), form.ZeroValue(c.Schema.Items), true); err != nil {
			m.bar.Message = err.Error()
			return
		}
		m.forget(c.Key)
		m.work.focus = fmt.Sprintf("%s[%d]", c.Key, n)
		m.bar.Message = fmt.Sprintf("added %s[%d]", c.Label, n)
		m.refresh()
		return
	}
	header := *c // the form is rebuilt before the prompt answers
	m.openPrompt(prompt.New(m.common, "Key of the new entry in "+c.Label, "", func(k string) error {
		entries, _ := lookupVariable(m.work.topology, &header)
		if k == "" {
			return fmt.Errorf("the key must not be empty")
		}
		if _, taken := entries.(map[string]any)[k]; taken {
			return fmt.Errorf("%s has an entry %q already", header.Label, k)
		}
		return nil
	}), func(k string) {
		if err := draft.SetVariable(m.work.topology, header.Scope, header.Variable, form.AppendSub(header.Sub, k), form.ZeroValue(header.Schema.AdditionalProperties), true); err != nil {
			m.bar.Message = err.Error()
			return
		}
		m.forget(header.Key)
		m.work.focus = header.Key + "." + k
		m.bar.Message = fmt.Sprintf("added %s to %s", k, header.Label)
	})
}

// freePoolName is md-N or mp-N with the first N no pool has.
func (m *Model) freePoolName(kind string) string {
	prefix := "md-"
	if kind == draft.MachinePool {
		prefix = "mp-"
	}
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s%d", prefix, i)
		if m.work.topology.MachineDeployment(name) == nil && m.work.topology.MachinePool(name) == nil {
			return name
		}
	}
}

// enclosingCollection is the list or map whose header or entry the cursor is on.
func (m *Model) enclosingCollection() *form.Field {
	f := &m.form.Fields[m.form.Cursor]
	if f.Kind == form.KindList || f.Kind == form.KindMap {
		return f
	}
	if !f.Entry {
		return nil
	}
	for i := m.form.Cursor - 1; i >= 0; i-- {
		if g := &m.form.Fields[i]; g.Depth < f.Depth {
			return g
		}
	}
	return nil
}

// lookupVariable is the value at a field's place in the draft.
func lookupVariable(t *v1alpha2.Topology, f *form.Field) (any, bool) {
	v, ok := draft.VariableValue(t, f.Scope, f.Variable)
	if !ok {
		return nil, false
	}
	return draft.Lookup(v, f.Sub)
}

// remove removes the list item, override or pool the cursor is on.
func (m *Model) remove(f *form.Field) {
	switch {
	case f.Entry:
		parent := m.enclosingCollection()
		if err := draft.SetVariable(m.work.topology, f.Scope, f.Variable, f.Sub, nil, false); err != nil {
			m.bar.Message = err.Error()
			return
		}
		m.forget(parent.Key)
		m.bar.Message = fmt.Sprintf("removed %s from %s", f.Label, parent.Label)
	case f.OverrideRoot:
		_ = draft.SetVariable(m.work.topology, f.Scope, f.Variable, nil, nil, false)
		m.forget(f.Key)
		m.bar.Message = fmt.Sprintf("removed the override of %s for %s", f.Variable, f.Scope.Label())
	case f.Role == form.RoleReplicas && f.Scope.Kind == draft.MachineDeployment:
		m.work.topology.Spec.Workers.MachineDeployments = draft.RemoveMachineDeployment(m.work.topology.Spec.Workers.MachineDeployments, f.Scope.Name)
		m.forget(f.Scope.String())
		m.bar.Message = fmt.Sprintf("removed MachineDeployment %s; its Machines will be deleted", f.Scope.Name)
	case f.Role == form.RoleReplicas && f.Scope.Kind == draft.MachinePool:
		m.work.topology.Spec.Workers.MachinePools = draft.RemoveMachinePool(m.work.topology.Spec.Workers.MachinePools, f.Scope.Name)
		m.forget(f.Scope.String())
		m.bar.Message = fmt.Sprintf("removed MachinePool %s; its Machines will be deleted", f.Scope.Name)
	default:
		m.bar.Message = "select a pool's replicas, a list item or an override to remove it"
		return
	}
	m.refresh()
}

// override asks which variable to override for the part the cursor is in.
func (m *Model) override(f *form.Field) {
	s := f.Scope
	if s.Kind == "" {
		m.bar.Message = "select the control plane or a pool to override a variable for it"
		return
	}
	taken := map[string]bool{}
	if list := draft.VariableList(m.work.topology, s, false); list != nil {
		for _, v := range *list {
			taken[v.Name] = true
		}
	}
	var options []string
	for _, def := range m.in.Class.Spec.Variables {
		if !taken[def.Name] {
			options = append(options, def.Name)
		}
	}
	if len(options) == 0 {
		m.bar.Message = "every variable is already overridden for " + s.Label()
		return
	}
	m.openPicker(picker.New(m.common, "Override a variable for "+s.Label(), options), func(i int) {
		name := options[i]
		// The override starts as the value the part has now.
		v, ok := draft.VariableValue(m.work.topology, draft.Scope{}, name)
		if !ok {
			for _, def := range m.in.Class.Spec.Variables {
				if def.Name == name {
					v = form.ZeroValue(&def.Schema.OpenAPIV3Schema)
				}
			}
		}
		if err := draft.SetVariable(m.work.topology, s, name, nil, v, true); err != nil {
			m.bar.Message = err.Error()
			return
		}
		m.work.focus = s.String() + " variables[" + name + "]"
		m.bar.Message = fmt.Sprintf("%s now overrides %s; ctrl+x on it removes the override", s.Label(), name)
	})
}

// undo puts the server's value back into the field and what it holds.
func (m *Model) undo(f *form.Field) {
	orig := m.in.Topology
	switch f.Role {
	case form.RoleVersion:
		m.work.topology.Spec.Version = orig.Spec.Version
	case form.RoleReplicas:
		if from, to := draft.Replicas(orig, f.Scope), draft.Replicas(m.work.topology, f.Scope); from != nil && to != nil {
			*to = draft.CopyInt(*from)
		}
	case form.RolePin:
		if from, to := draft.Pin(orig, f.Scope), draft.Pin(m.work.topology, f.Scope); from != nil && to != nil {
			*to = *from
		}
	case form.RoleVariable:
		v, ok := draft.VariableValue(orig, f.Scope, f.Variable)
		if ok {
			v, ok = draft.Lookup(v, f.Sub)
		}
		_ = draft.SetVariable(m.work.topology, f.Scope, f.Variable, f.Sub, v, ok)
	}
	m.forget(f.Key)
	m.refresh()
}

// unset removes the field's value, where the field is optional.
func (m *Model) unset(f *form.Field) {
	if f.Marked() || f.Role == form.RoleVersion {
		m.bar.Message = f.Label + " is required"
		return
	}
	m.forget(f.Key)
	if err := m.write(f, nil, false); err != nil {
		m.bar.Message = err.Error()
	}
	m.refresh()
}

// rebase takes the server's latest Topology as the new base and keeps the
// user's edits on top, saying what changed on the server and where both
// changed the same setting.
func (m *Model) rebase(c *draft.ConflictError) {
	m.in.Topology = c.Latest
	m.work.topology = c.Rebased
	m.setOriginal()
	m.bar.Message = c.Error()
	m.refresh()
}
