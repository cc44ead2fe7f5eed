package apply

import (
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// FieldManager is the server-side apply field manager of everything the
// agent writes; previews dry-run as it, so they see its field ownership.
const FieldManager = "kubectl-topology"

// NeedsApply says whether desired has to be written over current: when current
// does not exist, when a field desired sets differs (a hand edit to reconcile
// away), or when fieldManager still owns a field desired no longer sets (the
// class dropped it). Fields others set, and fields the API server defaulted,
// do not count, so a steady state issues no writes at all.
func NeedsApply(current, desired *unstructured.Unstructured, fieldManager string) bool {
	return current == nil || needsWrite(current, desired, fieldManager, false)
}

// needsWrite is NeedsApply for an existing object; updatesToo counts the
// fields fieldManager wrote by update (a patch) as its own too, as for the
// Cluster, which is merge-patched.
func needsWrite(current, desired *unstructured.Unstructured, fieldManager string, updatesToo bool) bool {
	for _, k := range []string{"spec", "data", "stringData"} {
		if w, ok := desired.Object[k]; ok && !containsAsStored(current.Object[k], w) {
			return true
		}
	}
	if !Contains(StringMapToAny(current.GetLabels()), StringMapToAny(desired.GetLabels())) ||
		!Contains(StringMapToAny(current.GetAnnotations()), StringMapToAny(desired.GetAnnotations())) {
		return true
	}
	if !hasOwners(current, desired) || staleTopologyOwner(current, desired) {
		return true
	}
	return ownsMoreThan(current, desired, fieldManager, updatesToo)
}

// staleTopologyOwner reports whether current still names a Topology as an
// owner that desired no longer does: Cluster API added the Cluster as owner
// before the agent handed the object over (it stopped in between, or was
// slower), so every owner desired wants is there. Only the agent names a
// Topology as owner; see WithoutStaleTopologyOwners for how it goes.
func staleTopologyOwner(current, desired *unstructured.Unstructured) bool {
	return len(WithoutStaleTopologyOwners(current, desired)) < len(current.GetOwnerReferences())
}

// WithoutStaleTopologyOwners is current's owners less the Topologies desired
// does not name. An apply alone cannot drop them when Cluster API added its
// owner with a patch of the whole list: that made its manager a co-owner of
// every entry, so the agent writes this list with a patch of its own.
func WithoutStaleTopologyOwners(current, desired *unstructured.Unstructured) []metav1.OwnerReference {
	wanted := map[types.UID]bool{}
	for _, w := range desired.GetOwnerReferences() {
		wanted[w.UID] = true
	}
	var kept []metav1.OwnerReference
	for _, h := range current.GetOwnerReferences() {
		gv, _ := schema.ParseGroupVersion(h.APIVersion)
		if h.Kind == v1alpha2.TopologyKind && gv.Group == v1alpha2.GroupVersion.Group && !wanted[h.UID] {
			continue
		}
		kept = append(kept, h)
	}
	return kept
}

// hasOwners reports whether every owner of desired is an owner of current.
func hasOwners(current, desired *unstructured.Unstructured) bool {
	have := current.GetOwnerReferences()
	for _, w := range desired.GetOwnerReferences() {
		found := false
		for _, h := range have {
			if h.UID == w.UID && h.Kind == w.Kind && h.Name == w.Name && boolPtrEqual(h.Controller, w.Controller) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func boolPtrEqual(a, b *bool) bool {
	return (a != nil && *a) == (b != nil && *b)
}

// ownsMoreThan reports whether fieldManager's fields on current (applied,
// and with updatesToo patched) reach a field that desired does not set.
// Lists are compared as a whole: a managed path into a list only needs the
// list itself to be set. It walks the managedFields trees as current holds
// them, since converting them to typed entries and field sets took a sixth
// of a no-op reconcile's CPU.
func ownsMoreThan(current, desired *unstructured.Unstructured, fieldManager string, updatesToo bool) bool {
	meta, _ := current.Object["metadata"].(map[string]any)
	entries, _ := meta["managedFields"].([]any)
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		if entry["manager"] != fieldManager || (entry["operation"] != string(metav1.ManagedFieldsOperationApply) && !updatesToo) {
			continue
		}
		if fields, ok := entry["fieldsV1"].(map[string]any); ok && ownsMissing(fields, desired.Object) {
			return true
		}
	}
	return false
}

// ownsMissing tells whether a fieldsV1 tree reaches a field obj lacks: a
// field ("f:name") obj's map does not have, at any depth. Below a list item
// ("k:", "v:", "i:") nothing counts, and neither does anything below a value
// that is not a map, as for missingIn.
func ownsMissing(fields map[string]any, obj any) bool {
	m, ok := obj.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range fields {
		name, isField := strings.CutPrefix(k, "f:")
		if !isField {
			continue
		}
		child, present := m[name]
		if !present {
			return true
		}
		if sub, ok := v.(map[string]any); ok && ownsMissing(sub, child) {
			return true
		}
	}
	return false
}

// OwnedFieldNames is what NeedsApply and ClusterMergePatch read of a
// managedFields entry's fieldsV1 tree: its field names ("f:" keys) down to
// the first list element, without the "." self markers. Ownership inside a
// list item never decides a write (the list is set as a whole), so a cache can
// keep this in place of the whole tree; trees of objects made from one class
// then come out equal, with no owner UIDs or list keys in them.
func OwnedFieldNames(fieldsV1 map[string]any) map[string]any {
	out := make(map[string]any, len(fieldsV1))
	for k, v := range fieldsV1 {
		if !strings.HasPrefix(k, "f:") {
			continue
		}
		child, _ := v.(map[string]any)
		out[k] = OwnedFieldNames(child)
	}
	return out
}

// Contains reports whether every field set in want is set to the same value in
// have; fields the API server defaulted into have do not count as changes.
func Contains(have, want any) bool { return contains(have, want, false) }

// containsAsStored is Contains where an object in want holding no value counts
// as contained where have has nothing: an API server whose schema omits empty
// objects stores nothing for it (v1beta2 reads a v1beta1 template's
// `nodeRegistration: {}` back as absent), and counting it rewrote the object on
// every pass. It decides writes only: an empty object the class swapped in for
// another (`inMemory: {}` for `docker: {}`) is still written, because the agent
// owns the field it replaces (ownsMoreThan); a template's rotation compares
// with Contains.
func containsAsStored(have, want any) bool { return contains(have, want, true) }

func contains(have, want any, emptyAbsent bool) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		ref := isReference(w)
		for k, v := range w {
			if ref && k == "apiVersion" {
				if !sameGroup(h[k], v) {
					return false
				}
				continue
			}
			hv, present := h[k]
			if !present && emptyAbsent && holdsNoValue(v) {
				continue
			}
			if !contains(hv, v, emptyAbsent) {
				return false
			}
		}
		return true
	case []any:
		// Item by item, so fields the API server defaulted inside list items
		// (containers, files, ...) do not count as changes either.
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(h[i], w[i], emptyAbsent) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(normalizeNumber(have), normalizeNumber(want))
	}
}

// holdsNoValue tells an object that holds only objects holding no value, at
// any depth ({} or {a: {}}); a list or a scalar, even empty or zero, is a value.
func holdsNoValue(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, e := range m {
		if !holdsNoValue(e) {
			return false
		}
	}
	return true
}

// StringMapToAny is m as unstructured content holds it.
func StringMapToAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// isReference tells an object reference (apiVersion, kind, name) apart.
func isReference(m map[string]any) bool {
	_, av := m["apiVersion"].(string)
	_, kind := m["kind"].(string)
	_, name := m["name"].(string)
	return av && kind && name
}

// sameGroup compares two apiVersions by group only. Cluster API v1beta2
// stores a reference by group and serves it in v1beta1 with the group's
// newest version, so a reference written as .../v1beta1 reads back as
// .../v1beta2; comparing versions too made every pass rewrite it.
func sameGroup(have, want any) bool {
	h, _ := have.(string)
	w, _ := want.(string)
	return h != "" && w != "" && referenceGroup(h) == referenceGroup(w)
}

func referenceGroup(apiVersion string) string {
	return schema.FromAPIVersionAndKind(apiVersion, "").Group
}

// ReferencesByGroup is a copy of v with every object reference in it cut
// to its group, for comparing objects the way NeedsApply does (see sameGroup).
func ReferencesByGroup(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = ReferencesByGroup(e)
		}
		if isReference(t) {
			out["apiVersion"] = referenceGroup(t["apiVersion"].(string))
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = ReferencesByGroup(e)
		}
		return out
	}
	return v
}

func normalizeNumber(v any) any {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case int:
		return float64(n)
	case int32:
		return float64(n)
	case []any:
		out := make([]any, len(n))
		for i := range n {
			out[i] = normalizeNumber(n[i])
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(n))
		for k, x := range n {
			out[k] = normalizeNumber(x)
		}
		return out
	}
	return v
}
