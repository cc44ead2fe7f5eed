package apply

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// The reading ClusterMergePatch and ownsMoreThan replaced, kept as their
// reference: typed managedFields entries parsed into field sets, whose
// leaves are looked up in desired.

// ownedFields is every field fieldManager owns on obj by apply and, with
// updatesToo, by update.
func ownedFields(obj *unstructured.Unstructured, fieldManager string, updatesToo bool) (*fieldpath.Set, error) {
	owned := &fieldpath.Set{}
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager != fieldManager || (mf.Operation != "Apply" && !updatesToo) || mf.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(mf.FieldsV1.GetRawReader()); err != nil {
			return nil, err
		}
		owned = owned.Union(set)
	}
	return owned, nil
}

// missingIn tells whether obj lacks the field at p; a path into a list item
// is never missing: the list is set as a whole.
func missingIn(obj map[string]any, p fieldpath.Path) bool {
	var node any = obj
	for _, el := range p {
		if el.FieldName == nil {
			return false
		}
		m, ok := node.(map[string]any)
		if !ok {
			return false
		}
		if node, ok = m[*el.FieldName]; !ok {
			return true
		}
	}
	return false
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
