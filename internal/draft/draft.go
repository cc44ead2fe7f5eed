// Package draft is a user's edit of a Topology, with no UI: the changes
// kubectl topology makes (version, replicas, pools, variables and
// overrides), the settings that tell what an edit changes, setting by
// setting, and the rebase of an edit onto a newer Topology when the server
// changed meanwhile. The editor, scale, set variable and upgrade all edit
// through it, and write through Write, so they agree on what "changed" means.
package draft

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Part kinds a Scope can name.
const (
	ControlPlane      = "ControlPlane"
	MachineDeployment = "MachineDeployment"
	MachinePool       = "MachinePool"
)

// Scope is where a variable value lives: the Topology's own variables
// (Kind empty) or one part's overrides.
type Scope struct {
	Kind, Name string
}

func (s Scope) String() string { return s.Kind + "/" + s.Name }

// Label names the part for people: "control plane", "md-a".
func (s Scope) Label() string {
	switch s.Kind {
	case "":
		return "the Topology"
	case ControlPlane:
		return "control plane"
	}
	return s.Name
}

// VariableList is the list that holds a Scope's variables; with create it
// makes a part's empty override list. It is nil for a part that does not exist.
func VariableList(t *v1alpha2.Topology, s Scope, create bool) *[]v1alpha2.ClusterVariable {
	switch s.Kind {
	case "":
		return &t.Spec.Variables
	case ControlPlane:
		if t.Spec.ControlPlane.Variables == nil {
			if !create {
				return nil
			}
			t.Spec.ControlPlane.Variables = &v1alpha2.ControlPlaneVariables{}
		}
		return &t.Spec.ControlPlane.Variables.Overrides
	case MachineDeployment:
		if md := t.MachineDeployment(s.Name); md != nil {
			if md.Variables == nil {
				if !create {
					return nil
				}
				md.Variables = &v1alpha2.MachineDeploymentVariables{}
			}
			return &md.Variables.Overrides
		}
	case MachinePool:
		if mp := t.MachinePool(s.Name); mp != nil {
			if mp.Variables == nil {
				if !create {
					return nil
				}
				mp.Variables = &v1alpha2.MachinePoolVariables{}
			}
			return &mp.Variables.Overrides
		}
	}
	return nil
}

// dropEmptyOverrides removes a part's override list once its last override
// is gone, so that removing what was added leaves the spec as it was.
func dropEmptyOverrides(t *v1alpha2.Topology, s Scope) {
	switch s.Kind {
	case ControlPlane:
		if v := t.Spec.ControlPlane.Variables; v != nil && len(v.Overrides) == 0 {
			t.Spec.ControlPlane.Variables = nil
		}
	case MachineDeployment:
		if md := t.MachineDeployment(s.Name); md != nil && md.Variables != nil && len(md.Variables.Overrides) == 0 {
			md.Variables = nil
		}
	case MachinePool:
		if mp := t.MachinePool(s.Name); mp != nil && mp.Variables != nil && len(mp.Variables.Overrides) == 0 {
			mp.Variables = nil
		}
	}
}

// Replicas points at a part's replicas; nil when the part does not exist.
func Replicas(t *v1alpha2.Topology, s Scope) **int32 {
	switch s.Kind {
	case ControlPlane:
		return &t.Spec.ControlPlane.Replicas
	case MachineDeployment:
		if md := t.MachineDeployment(s.Name); md != nil {
			return &md.Replicas
		}
	case MachinePool:
		if mp := t.MachinePool(s.Name); mp != nil {
			return &mp.Replicas
		}
	}
	return nil
}

// Pin points at a pool's pinned version ("" when it follows the
// Topology's), or is nil for the control plane and an unknown pool.
func Pin(t *v1alpha2.Topology, s Scope) *string {
	switch s.Kind {
	case MachineDeployment:
		if md := t.MachineDeployment(s.Name); md != nil {
			return &md.Version
		}
	case MachinePool:
		if mp := t.MachinePool(s.Name); mp != nil {
			return &mp.Version
		}
	}
	return nil
}

// PinLabel names a pool's pin in a list of changes.
func PinLabel(name string) string { return name + " pinned version" }

// VariableValue decodes a Scope's variable; ok is false when it is unset.
func VariableValue(t *v1alpha2.Topology, s Scope, name string) (any, bool) {
	list := VariableList(t, s, false)
	if list == nil {
		return nil, false
	}
	for _, v := range *list {
		if v.Name == name {
			return DecodeJSON(v.Value.Raw)
		}
	}
	return nil, false
}

// DecodeJSON decodes a variable value; it keeps numbers as json.Number so that they are written back as typed.
func DecodeJSON(raw []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

// SetVariable sets (present) or removes the value at sub inside a Scope's
// variable, creating the variable and the objects on the way as needed.
func SetVariable(t *v1alpha2.Topology, s Scope, name string, sub []any, value any, present bool) error {
	list := VariableList(t, s, present)
	if list == nil {
		if !present {
			return nil
		}
		return fmt.Errorf("%s does not exist", s.Label())
	}
	idx := -1
	for i, v := range *list {
		if v.Name == name {
			idx = i
		}
	}
	var root any
	if idx >= 0 {
		root, _ = DecodeJSON((*list)[idx].Value.Raw)
	}
	switch {
	case len(sub) == 0 && !present:
		if idx >= 0 {
			*list = append((*list)[:idx], (*list)[idx+1:]...)
		}
		dropEmptyOverrides(t, s)
		return nil
	case len(sub) == 0:
		root = value
	case idx < 0 && !present:
		return nil
	default:
		root = setAt(root, sub, value, present)
	}
	raw, err := json.Marshal(root)
	if err != nil {
		return fmt.Errorf("variable %s: %w", name, err)
	}
	if idx >= 0 {
		(*list)[idx].Value = apiextensionsv1.JSON{Raw: raw}
		return nil
	}
	*list = append(*list, v1alpha2.ClusterVariable{Name: name, Value: apiextensionsv1.JSON{Raw: raw}})
	return nil
}

// setAt returns node with the value at sub set, or removed when not present;
// a removed list item closes the gap.
func setAt(node any, sub []any, value any, present bool) any {
	switch k := sub[0].(type) {
	case string:
		m, ok := node.(map[string]any)
		if !ok {
			m = map[string]any{}
		}
		switch {
		case len(sub) > 1:
			m[k] = setAt(m[k], sub[1:], value, present)
		case present:
			m[k] = value
		default:
			delete(m, k)
		}
		return m
	case int:
		l, _ := node.([]any)
		if len(sub) == 1 && !present {
			if k < len(l) {
				l = append(l[:k:k], l[k+1:]...)
			}
			return l
		}
		for len(l) <= k {
			l = append(l, nil)
		}
		if len(sub) > 1 {
			l[k] = setAt(l[k], sub[1:], value, present)
		} else {
			l[k] = value
		}
		return l
	}
	return node
}

// Lookup finds the value at sub; ok is false when it is not there.
func Lookup(node any, sub []any) (any, bool) {
	for _, k := range sub {
		switch k := k.(type) {
		case string:
			m, ok := node.(map[string]any)
			if !ok {
				return nil, false
			}
			if node, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			l, ok := node.([]any)
			if !ok || k >= len(l) {
				return nil, false
			}
			node = l[k]
		}
	}
	return node, true
}

// Setting is one thing the editor can change, as its canonical value, with
// how to copy it into another Topology or remove it there. Re-basing edits
// on a newer Topology works Setting by Setting.
type Setting struct {
	label string
	value string
	copy  func(dst *v1alpha2.Topology)
	drop  func(dst *v1alpha2.Topology)
}

// Settings lists, by key, everything the editor edits in t. Keys sort a
// part before its replicas and overrides, which is the order to apply them.
func Settings(t *v1alpha2.Topology) map[string]Setting {
	out := map[string]Setting{}
	nop := func(*v1alpha2.Topology) {}
	out["version"] = Setting{label: "version", value: t.Spec.Version, copy: func(d *v1alpha2.Topology) { d.Spec.Version = t.Spec.Version }, drop: nop}
	out["paused"] = Setting{label: "paused", value: strconv.FormatBool(t.Spec.Paused), copy: func(d *v1alpha2.Topology) { d.Spec.Paused = t.Spec.Paused }, drop: nop}
	replicas := func(s Scope, label string, r *int32) {
		v := ""
		if r != nil {
			v = strconv.Itoa(int(*r))
		}
		out[s.String()+" replicas"] = Setting{label: label, value: v,
			copy: func(d *v1alpha2.Topology) {
				if p := Replicas(d, s); p != nil {
					*p = CopyInt(r)
				}
			}, drop: nop}
	}
	overrides := func(s Scope) {
		list := VariableList(t, s, false)
		if list == nil {
			return
		}
		for _, v := range *list {
			name := v.Name
			val, _ := VariableValue(t, s, name)
			out[s.String()+" variables["+name+"]"] = Setting{label: "override " + name + " of " + s.Label(), value: Canonical(val),
				copy: func(d *v1alpha2.Topology) { _ = SetVariable(d, s, name, nil, val, true) },
				drop: func(d *v1alpha2.Topology) { _ = SetVariable(d, s, name, nil, nil, false) }}
		}
	}
	pin := func(s Scope, v string) {
		out[s.String()+" version"] = Setting{label: PinLabel(s.Name), value: v,
			copy: func(d *v1alpha2.Topology) {
				if p := Pin(d, s); p != nil {
					*p = v
				}
			}, drop: nop}
	}
	cp := Scope{Kind: ControlPlane}
	replicas(cp, "control plane replicas", t.Spec.ControlPlane.Replicas)
	overrides(cp)
	if w := t.Spec.Workers; w != nil {
		for _, md := range w.MachineDeployments {
			s, md := Scope{MachineDeployment, md.Name}, md
			out[s.String()] = Setting{label: "MachineDeployment " + md.Name, value: md.Class,
				copy: func(d *v1alpha2.Topology) {
					if d.MachineDeployment(md.Name) == nil {
						if d.Spec.Workers == nil {
							d.Spec.Workers = &v1alpha2.WorkersTopology{}
						}
						d.Spec.Workers.MachineDeployments = append(d.Spec.Workers.MachineDeployments, *md.DeepCopy())
					}
				},
				drop: func(d *v1alpha2.Topology) {
					if d.Spec.Workers != nil {
						d.Spec.Workers.MachineDeployments = RemoveMachineDeployment(d.Spec.Workers.MachineDeployments, md.Name)
					}
				}}
			replicas(s, PoolLabel(md.Name, md.Class), md.Replicas)
			pin(s, md.Version)
			overrides(s)
		}
		for _, mp := range w.MachinePools {
			s, mp := Scope{MachinePool, mp.Name}, mp
			out[s.String()] = Setting{label: "MachinePool " + mp.Name, value: mp.Class,
				copy: func(d *v1alpha2.Topology) {
					if d.MachinePool(mp.Name) == nil {
						if d.Spec.Workers == nil {
							d.Spec.Workers = &v1alpha2.WorkersTopology{}
						}
						d.Spec.Workers.MachinePools = append(d.Spec.Workers.MachinePools, *mp.DeepCopy())
					}
				},
				drop: func(d *v1alpha2.Topology) {
					if d.Spec.Workers != nil {
						d.Spec.Workers.MachinePools = RemoveMachinePool(d.Spec.Workers.MachinePools, mp.Name)
					}
				}}
			replicas(s, PoolLabel(mp.Name, mp.Class), mp.Replicas)
			pin(s, mp.Version)
			overrides(s)
		}
	}
	cluster := Scope{}
	for _, v := range t.Spec.Variables {
		name := v.Name
		val, _ := VariableValue(t, cluster, name)
		out["/ variables["+name+"]"] = Setting{label: name, value: Canonical(val),
			copy: func(d *v1alpha2.Topology) { _ = SetVariable(d, cluster, name, nil, val, true) },
			drop: func(d *v1alpha2.Topology) { _ = SetVariable(d, cluster, name, nil, nil, false) }}
	}
	return out
}

// PoolLabel names a pool's replicas setting for people.
func PoolLabel(name, class string) string { return fmt.Sprintf("%s (%s) replicas", name, class) }

// CopyInt copies an optional replica count.
func CopyInt(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// RemoveMachineDeployment returns l without the pool name.
func RemoveMachineDeployment(l []v1alpha2.MachineDeploymentTopology, name string) []v1alpha2.MachineDeploymentTopology {
	var out []v1alpha2.MachineDeploymentTopology
	for _, x := range l {
		if x.Name != name {
			out = append(out, x)
		}
	}
	return out
}

// RemoveMachinePool returns l without the pool name.
func RemoveMachinePool(l []v1alpha2.MachinePoolTopology, name string) []v1alpha2.MachinePoolTopology {
	var out []v1alpha2.MachinePoolTopology
	for _, x := range l {
		if x.Name != name {
			out = append(out, x)
		}
	}
	return out
}

// Canonical is JSON with sorted keys, so equal values compare equal.
func Canonical(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}

// Change is a Setting that differs between two Topologies.
type Change struct {
	// Key identifies the setting; Label names it for people.
	Key, Label string
	// From and To are its values before and after; nil when it did not or
	// no longer exists.
	From, To *string
}

// String says what changed: "md-a (general) replicas: 2 → 4"; variables
// show as JSON.
func (c Change) String() string {
	show := func(s *string) string {
		switch {
		case s == nil:
			return "(none)"
		case *s == "":
			return "(unset)"
		}
		return *s
	}
	return fmt.Sprintf("%s: %s → %s", c.Label, show(c.From), show(c.To))
}

// Diff lists, sorted by key, the settings that differ from a to b.
// A part added or removed is one change: its replicas and overrides go with it.
func Diff(a, b map[string]Setting) []Change {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []Change
	whole := ""
	for _, k := range sortedKeys(keys) {
		if whole != "" && strings.HasPrefix(k, whole+" ") {
			continue
		}
		sa, inA := a[k]
		sb, inB := b[k]
		if inA == inB && sa.value == sb.value {
			continue
		}
		c := Change{Key: k}
		if inA {
			c.Label, c.From = sa.label, &sa.value
		}
		if inB {
			c.Label, c.To = sb.label, &sb.value
		}
		if inA != inB {
			whole = k
		}
		out = append(out, c)
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Rebase puts the user's changes (draft against orig) on top of latest.
// It returns the merged Topology, what changed on the server, and the
// settings both changed differently, where the user's value is kept.
func Rebase(orig, draft, latest *v1alpha2.Topology) (*v1alpha2.Topology, []Change, []string) {
	o, d, l := Settings(orig), Settings(draft), Settings(latest)
	merged := latest.DeepCopy()
	var both []string
	for _, c := range Diff(o, d) {
		if c.To != nil {
			d[c.Key].copy(merged)
		} else {
			o[c.Key].drop(merged)
		}
		if lv, ok := l[c.Key]; (ok != (c.From != nil) || (ok && lv.value != *c.From)) && (ok != (c.To != nil) || (ok && lv.value != *c.To)) {
			both = append(both, c.Label)
		}
	}
	return merged, Diff(o, l), both
}
