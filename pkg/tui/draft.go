package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
)

// Part kinds a scope can name.
const (
	partControlPlane      = "ControlPlane"
	partMachineDeployment = "MachineDeployment"
	partMachinePool       = "MachinePool"
)

// scope is where a variable value lives: the Topology's own variables
// (Kind empty) or one part's overrides.
type scope struct {
	Kind, Name string
}

func (s scope) String() string { return s.Kind + "/" + s.Name }

// label names the part for people: "control plane", "md-a".
func (s scope) label() string {
	switch s.Kind {
	case "":
		return "the Topology"
	case partControlPlane:
		return "control plane"
	}
	return s.Name
}

// variableList is the list that holds a scope's variables; with create it
// makes a part's empty override list. It is nil for a part that does not exist.
func variableList(t *v1alpha1.Topology, s scope, create bool) *[]v1alpha1.ClusterVariable {
	switch s.Kind {
	case "":
		return &t.Spec.Variables
	case partControlPlane:
		if t.Spec.ControlPlane.Variables == nil {
			if !create {
				return nil
			}
			t.Spec.ControlPlane.Variables = &v1alpha1.ControlPlaneVariables{}
		}
		return &t.Spec.ControlPlane.Variables.Overrides
	case partMachineDeployment:
		if md := t.MachineDeployment(s.Name); md != nil {
			if md.Variables == nil {
				if !create {
					return nil
				}
				md.Variables = &v1alpha1.MachineDeploymentVariables{}
			}
			return &md.Variables.Overrides
		}
	case partMachinePool:
		if mp := t.MachinePool(s.Name); mp != nil {
			if mp.Variables == nil {
				if !create {
					return nil
				}
				mp.Variables = &v1alpha1.MachinePoolVariables{}
			}
			return &mp.Variables.Overrides
		}
	}
	return nil
}

// dropEmptyOverrides removes a part's override list once its last override
// is gone, so that removing what was added leaves the spec as it was.
func dropEmptyOverrides(t *v1alpha1.Topology, s scope) {
	switch s.Kind {
	case partControlPlane:
		if v := t.Spec.ControlPlane.Variables; v != nil && len(v.Overrides) == 0 {
			t.Spec.ControlPlane.Variables = nil
		}
	case partMachineDeployment:
		if md := t.MachineDeployment(s.Name); md != nil && md.Variables != nil && len(md.Variables.Overrides) == 0 {
			md.Variables = nil
		}
	case partMachinePool:
		if mp := t.MachinePool(s.Name); mp != nil && mp.Variables != nil && len(mp.Variables.Overrides) == 0 {
			mp.Variables = nil
		}
	}
}

// replicasOf points at a part's replicas; nil when the part does not exist.
func replicasOf(t *v1alpha1.Topology, s scope) **int32 {
	switch s.Kind {
	case partControlPlane:
		return &t.Spec.ControlPlane.Replicas
	case partMachineDeployment:
		if md := t.MachineDeployment(s.Name); md != nil {
			return &md.Replicas
		}
	case partMachinePool:
		if mp := t.MachinePool(s.Name); mp != nil {
			return &mp.Replicas
		}
	}
	return nil
}

// variableValue decodes a scope's variable; ok is false when it is unset.
func variableValue(t *v1alpha1.Topology, s scope, name string) (any, bool) {
	list := variableList(t, s, false)
	if list == nil {
		return nil, false
	}
	for _, v := range *list {
		if v.Name == name {
			return decodeJSON(v.Value.Raw)
		}
	}
	return nil, false
}

// decodeJSON keeps numbers as json.Number so that they are written back as typed.
func decodeJSON(raw []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

// setVariable sets (present) or removes the value at sub inside a scope's
// variable, creating the variable and the objects on the way as needed.
func setVariable(t *v1alpha1.Topology, s scope, name string, sub []any, value any, present bool) error {
	list := variableList(t, s, present)
	if list == nil {
		if !present {
			return nil
		}
		return fmt.Errorf("%s does not exist", s.label())
	}
	idx := -1
	for i, v := range *list {
		if v.Name == name {
			idx = i
		}
	}
	var root any
	if idx >= 0 {
		root, _ = decodeJSON((*list)[idx].Value.Raw)
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
	*list = append(*list, v1alpha1.ClusterVariable{Name: name, Value: apiextensionsv1.JSON{Raw: raw}})
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

// lookup finds the value at sub; ok is false when it is not there.
func lookup(node any, sub []any) (any, bool) {
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

// setting is one thing the editor can change, as its canonical value, with
// how to copy it into another Topology or remove it there. Re-basing edits
// on a newer Topology works setting by setting.
type setting struct {
	label string
	value string
	copy  func(dst *v1alpha1.Topology)
	drop  func(dst *v1alpha1.Topology)
}

// settings lists, by key, everything the editor edits in t. Keys sort a
// part before its replicas and overrides, which is the order to apply them.
func settings(t *v1alpha1.Topology) map[string]setting {
	out := map[string]setting{}
	nop := func(*v1alpha1.Topology) {}
	out["version"] = setting{label: "version", value: t.Spec.Version, copy: func(d *v1alpha1.Topology) { d.Spec.Version = t.Spec.Version }, drop: nop}
	replicas := func(s scope, label string, r *int32) {
		v := ""
		if r != nil {
			v = strconv.Itoa(int(*r))
		}
		out[s.String()+" replicas"] = setting{label: label, value: v,
			copy: func(d *v1alpha1.Topology) {
				if p := replicasOf(d, s); p != nil {
					*p = copyInt(r)
				}
			}, drop: nop}
	}
	overrides := func(s scope) {
		list := variableList(t, s, false)
		if list == nil {
			return
		}
		for _, v := range *list {
			name := v.Name
			val, _ := variableValue(t, s, name)
			out[s.String()+" variables["+name+"]"] = setting{label: "override " + name + " of " + s.label(), value: canonical(val),
				copy: func(d *v1alpha1.Topology) { _ = setVariable(d, s, name, nil, val, true) },
				drop: func(d *v1alpha1.Topology) { _ = setVariable(d, s, name, nil, nil, false) }}
		}
	}
	cp := scope{Kind: partControlPlane}
	replicas(cp, "control plane replicas", t.Spec.ControlPlane.Replicas)
	overrides(cp)
	if w := t.Spec.Workers; w != nil {
		for _, md := range w.MachineDeployments {
			s, md := scope{partMachineDeployment, md.Name}, md
			out[s.String()] = setting{label: "MachineDeployment " + md.Name, value: md.Class,
				copy: func(d *v1alpha1.Topology) {
					if d.MachineDeployment(md.Name) == nil {
						if d.Spec.Workers == nil {
							d.Spec.Workers = &v1alpha1.WorkersTopology{}
						}
						d.Spec.Workers.MachineDeployments = append(d.Spec.Workers.MachineDeployments, *md.DeepCopy())
					}
				},
				drop: func(d *v1alpha1.Topology) {
					if d.Spec.Workers != nil {
						d.Spec.Workers.MachineDeployments = removeMD(d.Spec.Workers.MachineDeployments, md.Name)
					}
				}}
			replicas(s, poolLabel(md.Name, md.Class), md.Replicas)
			overrides(s)
		}
		for _, mp := range w.MachinePools {
			s, mp := scope{partMachinePool, mp.Name}, mp
			out[s.String()] = setting{label: "MachinePool " + mp.Name, value: mp.Class,
				copy: func(d *v1alpha1.Topology) {
					if d.MachinePool(mp.Name) == nil {
						if d.Spec.Workers == nil {
							d.Spec.Workers = &v1alpha1.WorkersTopology{}
						}
						d.Spec.Workers.MachinePools = append(d.Spec.Workers.MachinePools, *mp.DeepCopy())
					}
				},
				drop: func(d *v1alpha1.Topology) {
					if d.Spec.Workers != nil {
						d.Spec.Workers.MachinePools = removeMP(d.Spec.Workers.MachinePools, mp.Name)
					}
				}}
			replicas(s, poolLabel(mp.Name, mp.Class), mp.Replicas)
			overrides(s)
		}
	}
	cluster := scope{}
	for _, v := range t.Spec.Variables {
		name := v.Name
		val, _ := variableValue(t, cluster, name)
		out["/ variables["+name+"]"] = setting{label: name, value: canonical(val),
			copy: func(d *v1alpha1.Topology) { _ = setVariable(d, cluster, name, nil, val, true) },
			drop: func(d *v1alpha1.Topology) { _ = setVariable(d, cluster, name, nil, nil, false) }}
	}
	return out
}

func poolLabel(name, class string) string { return fmt.Sprintf("%s (%s) replicas", name, class) }

func copyInt(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func removeMD(l []v1alpha1.MachineDeploymentTopology, name string) []v1alpha1.MachineDeploymentTopology {
	var out []v1alpha1.MachineDeploymentTopology
	for _, x := range l {
		if x.Name != name {
			out = append(out, x)
		}
	}
	return out
}

func removeMP(l []v1alpha1.MachinePoolTopology, name string) []v1alpha1.MachinePoolTopology {
	var out []v1alpha1.MachinePoolTopology
	for _, x := range l {
		if x.Name != name {
			out = append(out, x)
		}
	}
	return out
}

// canonical is JSON with sorted keys, so equal values compare equal.
func canonical(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}

// settingChange is a setting that differs between two Topologies.
type settingChange struct {
	key, label string
	from, to   *string
}

func (c settingChange) String() string {
	show := func(s *string) string {
		if s == nil {
			return "(none)"
		}
		return strconv.Quote(*s)
	}
	return fmt.Sprintf("%s %s → %s", c.label, show(c.from), show(c.to))
}

// diffSettings lists, sorted by key, the settings that differ from a to b.
// A part added or removed is one change: its replicas and overrides go with it.
func diffSettings(a, b map[string]setting) []settingChange {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []settingChange
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
		c := settingChange{key: k}
		if inA {
			c.label, c.from = sa.label, &sa.value
		}
		if inB {
			c.label, c.to = sb.label, &sb.value
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

// rebaseDraft puts the user's changes (draft against orig) on top of latest.
// It returns the merged Topology, what changed on the server, and the
// settings both changed differently, where the user's value is kept.
func rebaseDraft(orig, draft, latest *v1alpha1.Topology) (*v1alpha1.Topology, []settingChange, []string) {
	o, d, l := settings(orig), settings(draft), settings(latest)
	merged := latest.DeepCopy()
	var both []string
	for _, c := range diffSettings(o, d) {
		if c.to != nil {
			d[c.key].copy(merged)
		} else {
			o[c.key].drop(merged)
		}
		if lv, ok := l[c.key]; (ok != (c.from != nil) || (ok && lv.value != *c.from)) && (ok != (c.to != nil) || (ok && lv.value != *c.to)) {
			both = append(both, c.label)
		}
	}
	return merged, diffSettings(o, l), both
}
