package apply

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// ClusterMergePatch is the JSON merge patch that brings an existing Cluster
// to desired, or nil when there is nothing to write. Upstream v1.14 writes
// the Cluster with a merge patch rather than server-side apply, so that its
// controller does not take ownership of the Cluster's fields; the agent does
// the same on v1beta2. Only labels, annotations, owners and the spec fields
// desired sets are written, overlaid on what is there, so fields others set
// or the API server defaulted stay; a field fieldManager wrote earlier (by
// apply or by patch) that desired no longer has is removed.
func ClusterMergePatch(current, desired *unstructured.Unstructured, fieldManager string) ([]byte, error) {
	// Values the API server normalised (defaults inside list items, say)
	// would otherwise be patched back on every pass.
	if !needsWrite(current, desired, fieldManager, true) {
		return nil, nil
	}
	target := current.DeepCopy()
	if want := desired.GetLabels(); len(want) > 0 {
		target.SetLabels(withEntries(target.GetLabels(), want))
	}
	if want := desired.GetAnnotations(); len(want) > 0 {
		target.SetAnnotations(withEntries(target.GetAnnotations(), want))
	}
	target.SetOwnerReferences(withOwners(current, desired))
	if want, ok := desired.Object["spec"].(map[string]any); ok {
		have, _ := target.Object["spec"].(map[string]any)
		target.Object["spec"] = overlay(have, want)
	}
	removeDropped(current, desired, target, fieldManager)
	from, err := json.Marshal(current.Object)
	if err != nil {
		return nil, err
	}
	to, err := json.Marshal(target.Object)
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatch.CreateMergePatch(from, to)
	if err != nil {
		return nil, fmt.Errorf("computing the merge patch of Cluster %s/%s: %w", current.GetNamespace(), current.GetName(), err)
	}
	if string(patch) == "{}" {
		return nil, nil
	}
	return patch, nil
}

// withEntries is a copy of have with want's entries set.
func withEntries(have, want map[string]string) map[string]string {
	out := make(map[string]string, len(have)+len(want))
	maps.Copy(out, have)
	maps.Copy(out, want)
	return out
}

// overlay sets want's keys on a copy of have, maps merged key by key, other
// values (lists included) replaced whole.
func overlay(have, want map[string]any) map[string]any {
	out := make(map[string]any, len(have)+len(want))
	for k, v := range have {
		out[k] = v
	}
	for k, w := range want {
		wm, wIsMap := w.(map[string]any)
		hm, hIsMap := out[k].(map[string]any)
		if wIsMap && hIsMap {
			out[k] = overlay(hm, wm)
			continue
		}
		out[k] = runtime.DeepCopyJSONValue(w)
	}
	return out
}

// withOwners is current's owner references with any of desired's missing
// added.
func withOwners(current, desired *unstructured.Unstructured) []metav1.OwnerReference {
	refs := current.GetOwnerReferences()
	for _, w := range desired.GetOwnerReferences() {
		found := false
		for _, h := range refs {
			if h.UID == w.UID {
				found = true
				break
			}
		}
		if !found {
			refs = append(refs, w)
		}
	}
	return refs
}

// removeDropped removes from target each field fieldManager owns on current
// (by apply or by patch) under the labels, the annotations or the spec that
// desired no longer sets. It walks the managedFields trees as current holds
// them, as ownsMoreThan does: a field is removed at its deepest owned name,
// so what others set beside it under a dropped parent stays, and a list is
// removed whole.
func removeDropped(current, desired, target *unstructured.Unstructured, fieldManager string) {
	meta, _ := current.Object["metadata"].(map[string]any)
	entries, _ := meta["managedFields"].([]any)
	// One tree of all the manager's entries: a field one entry owns whole
	// and another owns parts of is not a leaf.
	fields := map[string]any{}
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		if tree, ok := entry["fieldsV1"].(map[string]any); ok && entry["manager"] == fieldManager {
			mergeFieldNames(fields, tree)
		}
	}
	for _, root := range [][]string{{"metadata", "labels"}, {"metadata", "annotations"}, {"spec"}} {
		tree, wanted, found := alongside(fields, desired.Object, root)
		switch found {
		case present:
			removeMissing(tree, wanted, root, target.Object)
		case missing:
			eachLeaf(tree, root, func(path []string) { unstructured.RemoveNestedField(target.Object, path...) })
		}
	}
}

// mergeFieldNames adds the field names ("f:" keys) of tree to into, at
// every depth; into's maps are its own, tree is not changed.
func mergeFieldNames(into, tree map[string]any) {
	for k, v := range tree {
		if !strings.HasPrefix(k, "f:") {
			continue
		}
		child, ok := into[k].(map[string]any)
		if !ok {
			child = map[string]any{}
			into[k] = child
		}
		sub, _ := v.(map[string]any)
		mergeFieldNames(child, sub)
	}
}

// reach is how far alongside got in obj.
type reach int

const (
	notOwned    reach = iota // the tree owns nothing at the path
	present                  // obj has a value at the path
	missing                  // a map on the way lacks the next name
	belowAValue              // a value on the way is not a map: set whole
)

// alongside follows path in a fieldsV1 tree and in obj together: the owned
// subtree, obj's value there, and how far obj went.
func alongside(fields map[string]any, obj any, path []string) (map[string]any, any, reach) {
	tree, value, found := fields, obj, present
	for _, name := range path {
		var ok bool
		if tree, ok = tree["f:"+name].(map[string]any); !ok {
			return nil, nil, notOwned
		}
		if found != present {
			continue // obj ended above: the tree's rest of the path decides
		}
		m, isMap := value.(map[string]any)
		if !isMap {
			return nil, nil, belowAValue
		}
		if value, ok = m[name]; !ok {
			value, found = nil, missing
		}
	}
	return tree, value, found
}

// removeMissing removes from target every owned leaf below fields whose
// path obj lacks. Below a list item, or a value of obj that is not a map,
// nothing is missing: those are set whole.
func removeMissing(fields map[string]any, obj any, path []string, target map[string]any) {
	m, ok := obj.(map[string]any)
	if !ok {
		return
	}
	for k, v := range fields {
		name, isField := strings.CutPrefix(k, "f:")
		if !isField {
			continue
		}
		sub, _ := v.(map[string]any)
		at := append(slices.Clip(path), name)
		child, present := m[name]
		if !present {
			eachLeaf(sub, at, func(leaf []string) { unstructured.RemoveNestedField(target, leaf...) })
			continue
		}
		removeMissing(sub, child, at, target)
	}
}

// eachLeaf calls visit with the path of each owned leaf of the tree at path:
// a field with no field below it (list items, "." markers and values count
// as none).
func eachLeaf(fields map[string]any, path []string, visit func([]string)) {
	leaf := true
	for k, v := range fields {
		name, isField := strings.CutPrefix(k, "f:")
		if !isField {
			continue
		}
		leaf = false
		sub, _ := v.(map[string]any)
		eachLeaf(sub, append(slices.Clip(path), name), visit)
	}
	if leaf {
		visit(path)
	}
}
