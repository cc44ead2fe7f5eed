package apply

import (
	"encoding/json"
	"fmt"
	"maps"

	jsonpatch "github.com/evanphx/json-patch/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
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
	owned, err := ownedFields(current, fieldManager, true)
	if err != nil {
		return nil, fmt.Errorf("reading the field ownership of Cluster %s/%s: %w", current.GetNamespace(), current.GetName(), err)
	}
	owned.Leaves().Iterate(func(p fieldpath.Path) {
		if !under(p, "metadata", "labels") && !under(p, "metadata", "annotations") && !under(p, "spec") {
			return
		}
		if missingIn(desired.Object, p) {
			unstructured.RemoveNestedField(target.Object, fieldNames(p)...)
		}
	})
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

// under tells whether p starts with the field names prefix.
func under(p fieldpath.Path, prefix ...string) bool {
	if len(p) < len(prefix) {
		return false
	}
	for i, name := range prefix {
		if p[i].FieldName == nil || *p[i].FieldName != name {
			return false
		}
	}
	return true
}

// fieldNames is p up to its first list element: where p goes into a list
// item, the list is removed as a whole.
func fieldNames(p fieldpath.Path) []string {
	names := make([]string, 0, len(p))
	for _, el := range p {
		if el.FieldName == nil {
			break
		}
		names = append(names, *el.FieldName)
	}
	return names
}
