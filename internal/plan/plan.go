// Package plan compares the desired objects of a topology with the objects
// that exist and says what applying it changes: objects created, modified
// (with a merge patch, RFC 6902 operations and a unified diff) and deleted.
package plan

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/aymanbagabas/go-udiff"
	jsonpatch "github.com/evanphx/json-patch/v5"
	rfc6902 "gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/apply"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Action is what happens to an object.
type Action string

// Actions, in the order changes are listed.
const (
	Created  Action = "created"
	Modified Action = "modified"
	Deleted  Action = "deleted"
	// Pending is an object the agent creates later: a pool waiting for the
	// control plane. Its Reason says what it waits for.
	Pending Action = "pending"
)

// Change is one object that changes.
type Change struct {
	// Action taken.
	Action Action `json:"action"`
	// Object is the object after the change; for deletions, the object removed.
	Object *unstructured.Unstructured `json:"object"`
	// Before is the object before a modification.
	Before *unstructured.Unstructured `json:"before,omitempty"`
	// MergePatch turns Before into Object (RFC 7386), as upstream's .jsonpatch file holds.
	MergePatch json.RawMessage `json:"mergePatch,omitempty"`
	// Operations turn Before into Object (RFC 6902).
	Operations []rfc6902.Operation `json:"operations,omitempty"`
	// Diff is a unified diff of Before and Object as YAML, labelled with the
	// file names of the output layout (see FileBase).
	Diff string `json:"diff,omitempty"`
	// Reason says why a Pending object waits.
	Reason string `json:"reason,omitempty"`
}

// Key identifies the changed object.
func (c Change) Key() clusterstate.Key { return clusterstate.KeyOf(c.Object) }

// Plan is every change for one topology.
type Plan struct {
	// Changes sorted: created, modified, deleted; then by kind, namespace and name.
	Changes []Change `json:"changes"`
}

// Count returns how many changes have an action.
func (p *Plan) Count(a Action) int {
	n := 0
	for _, c := range p.Changes {
		if c.Action == a {
			n++
		}
	}
	return n
}

// Input is what Compute compares.
type Input struct {
	// Desired is the engine's desired state.
	Desired *clusterstate.State
	// Current are the objects that exist now (any of them; unrelated ones are ignored).
	Current []*unstructured.Unstructured
	// Cluster is the CAPI Cluster name; objects the topology generated for it
	// (contract.Generated) that are not desired are deleted.
	Cluster string
	// Class is the class the desired state is of: which of its kinds are a
	// MachinePool's, whose like Cluster API also makes for Machines. Nil
	// knows of no MachinePool.
	Class *v1alpha2.TopologyClass
	// Namespace of the topology.
	Namespace string
	// Summary skips RFC 6902 operations and unified diffs: for previews that
	// list changes on every keystroke and show a diff only on request.
	Summary bool
	// Pending are desired objects the agent holds back (desiredstate.Result.Pending):
	// those that do not exist yet are listed as Pending, not Created.
	Pending []desiredstate.Pending
	// MachineSets lists the cluster's MachineSets on the server, asked at
	// the first object not desired: a template one of them uses is kept, as
	// the agent keeps it (desiredstate.InUse). Nil knows of none (a plan
	// from files).
	MachineSets func() ([]*unstructured.Unstructured, error)
}

// Compute builds the plan.
func Compute(in Input) (*Plan, error) {
	current := make(map[clusterstate.Key]*unstructured.Unstructured, len(in.Current))
	for _, o := range in.Current {
		current[clusterstate.KeyOf(o)] = o
	}
	p := &Plan{}
	desired := map[clusterstate.Key]bool{}
	pending := make(map[clusterstate.Key]desiredstate.Pending, len(in.Pending))
	for _, w := range in.Pending {
		pending[clusterstate.KeyOf(w.Object)] = w
	}
	for _, d := range in.Desired.Objects() {
		k := clusterstate.KeyOf(d)
		desired[k] = true
		cur, ok := current[k]
		if w, waits := pending[k]; waits && !ok {
			p.Changes = append(p.Changes, Change{Action: Pending, Object: d, Reason: w.Part + ": " + w.Reason})
			continue
		}
		if !ok {
			p.Changes = append(p.Changes, Change{Action: Created, Object: d})
			continue
		}
		if !apply.NeedsApply(cur, d, "") {
			continue // every field desired sets is as wanted: nothing to show
		}
		ch, changed, err := modification(cur, d, in.Summary)
		if err != nil {
			return nil, fmt.Errorf("comparing %s: %w", k, err)
		}
		if changed {
			p.Changes = append(p.Changes, ch)
		}
	}
	var poolKinds map[string]bool
	if in.Class != nil {
		poolKinds = contract.MachinePoolKinds(in.Class)
	}
	// What the desired pools and control plane refer to is desired itself;
	// only MachineSets can hold on to a template that is not.
	var inUse map[clusterstate.Key]bool
	for _, o := range in.Current {
		k := clusterstate.KeyOf(o)
		if desired[k] || o.GetNamespace() != in.Namespace || !contract.Generated(o, in.Cluster, poolKinds) {
			continue
		}
		if inUse == nil {
			var users []*unstructured.Unstructured
			if in.MachineSets != nil {
				var err error
				if users, err = in.MachineSets(); err != nil {
					return nil, fmt.Errorf("listing the MachineSets of Cluster %s/%s: %w", in.Namespace, in.Cluster, err)
				}
			}
			var err error
			if inUse, err = desiredstate.InUse(users, in.Namespace); err != nil {
				return nil, fmt.Errorf("reading what the MachineSets of Cluster %s/%s use: %w", in.Namespace, in.Cluster, err)
			}
		}
		if inUse[k] {
			continue // the agent keeps it until no MachineSet uses it
		}
		p.Changes = append(p.Changes, Change{Action: Deleted, Object: o})
	}
	sortChanges(p.Changes)
	return p, nil
}

// modification merges the desired labels, annotations and spec into the
// current object, as an apply by the topology controller does.
func modification(cur, desired *unstructured.Unstructured, summary bool) (Change, bool, error) {
	after := cur.DeepCopy()
	merge := map[string]any{}
	if l := desired.GetLabels(); len(l) > 0 {
		merge["metadata"] = map[string]any{"labels": l}
	}
	if a := desired.GetAnnotations(); len(a) > 0 {
		m, _ := merge["metadata"].(map[string]any)
		if m == nil {
			m = map[string]any{}
			merge["metadata"] = m
		}
		m["annotations"] = a
	}
	if spec, ok := desired.Object["spec"]; ok {
		merge["spec"] = spec
	}
	if refs := desired.GetOwnerReferences(); len(refs) > 0 && len(cur.GetOwnerReferences()) == 0 {
		after.SetOwnerReferences(refs)
	}
	curJSON, err := json.Marshal(after.Object)
	if err != nil {
		return Change{}, false, err
	}
	mergeJSON, err := json.Marshal(merge)
	if err != nil {
		return Change{}, false, err
	}
	afterJSON, err := jsonpatch.MergePatch(curJSON, mergeJSON)
	if err != nil {
		return Change{}, false, err
	}
	if err := after.UnmarshalJSON(afterJSON); err != nil {
		return Change{}, false, err
	}
	beforeJSON, err := json.Marshal(cur.Object)
	if err != nil {
		return Change{}, false, err
	}
	mp, err := jsonpatch.CreateMergePatch(beforeJSON, afterJSON)
	if err != nil {
		return Change{}, false, err
	}
	if string(mp) == "{}" {
		return Change{}, false, nil
	}
	if summary {
		return Change{Action: Modified, Object: after, Before: cur, MergePatch: mp}, true, nil
	}
	ops, err := rfc6902.CreatePatch(beforeJSON, afterJSON)
	if err != nil {
		return Change{}, false, err
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Path < ops[j].Path })
	base := FileBase(after)
	diff, err := UnifiedDiff(cur, after, base+".original.yaml", base+".modified.yaml")
	if err != nil {
		return Change{}, false, err
	}
	return Change{Action: Modified, Object: after, Before: cur, MergePatch: mp, Operations: ops, Diff: diff}, true, nil
}

// FileBase names an object's files in the output layout of upstream's removed
// `clusterctl alpha topology plan`: <Kind>_<namespace>_<name>.
func FileBase(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s_%s_%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

// UnifiedDiff renders a unified diff between two objects as YAML.
func UnifiedDiff(before, after *unstructured.Unstructured, beforeName, afterName string) (string, error) {
	b, err := ObjectYAML(before.Object)
	if err != nil {
		return "", err
	}
	a, err := ObjectYAML(after.Object)
	if err != nil {
		return "", err
	}
	return udiff.Unified(beforeName, afterName, string(b), string(a)), nil
}

var actionOrder = map[Action]int{Created: 0, Modified: 1, Deleted: 2, Pending: 3}

func sortChanges(cs []Change) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if actionOrder[a.Action] != actionOrder[b.Action] {
			return actionOrder[a.Action] < actionOrder[b.Action]
		}
		ka, kb := a.Key(), b.Key()
		if ka.Kind != kb.Kind {
			return ka.Kind < kb.Kind
		}
		if ka.Namespace != kb.Namespace {
			return ka.Namespace < kb.Namespace
		}
		return ka.Name < kb.Name
	})
}
