package engine

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
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
	if current == nil {
		return true
	}
	for _, k := range []string{"spec", "data", "stringData"} {
		if w, ok := desired.Object[k]; ok && !contains(current.Object[k], w) {
			return true
		}
	}
	if !contains(stringMapToAny(current.GetLabels()), stringMapToAny(desired.GetLabels())) ||
		!contains(stringMapToAny(current.GetAnnotations()), stringMapToAny(desired.GetAnnotations())) {
		return true
	}
	if !hasOwners(current, desired) {
		return true
	}
	return ownsMoreThan(current, desired, fieldManager, false)
}

// needsClusterPatch is NeedsApply for a Cluster written by merge patch: the
// fields fieldManager owns by update count as well as those it applied.
func needsClusterPatch(current, desired *unstructured.Unstructured, fieldManager string) bool {
	if w, ok := desired.Object["spec"]; ok && !contains(current.Object["spec"], w) {
		return true
	}
	if !contains(stringMapToAny(current.GetLabels()), stringMapToAny(desired.GetLabels())) ||
		!contains(stringMapToAny(current.GetAnnotations()), stringMapToAny(desired.GetAnnotations())) ||
		!hasOwners(current, desired) {
		return true
	}
	return ownsMoreThan(current, desired, fieldManager, true)
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

// ownsMoreThan reports whether fieldManager's applied fields on current reach
// a field that desired does not set. Lists are compared as a whole: a managed
// path into a list only needs the list itself to be set.
func ownsMoreThan(current, desired *unstructured.Unstructured, fieldManager string, updatesToo bool) bool {
	for _, mf := range current.GetManagedFields() {
		if mf.Manager != fieldManager || (mf.Operation != "Apply" && !updatesToo) || mf.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(mf.FieldsV1.GetRawReader()); err != nil {
			return true
		}
		extra := false
		set.Leaves().Iterate(func(p fieldpath.Path) {
			if extra {
				return
			}
			var node any = desired.Object
			for _, el := range p {
				if el.FieldName == nil {
					return // into a list item: the list is set, which is enough
				}
				m, ok := node.(map[string]any)
				if !ok {
					return
				}
				if node, ok = m[*el.FieldName]; !ok {
					extra = true
					return
				}
			}
		})
		if extra {
			return true
		}
	}
	return false
}
