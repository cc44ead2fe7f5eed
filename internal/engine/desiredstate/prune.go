package desiredstate

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// prune drops nulls, recursively, and the objects left empty by dropping
// them, the way upstream's topology controller ends up writing objects: a
// template that renders `imageTag: null` must not produce `dns: {imageTag:
// null}`. An object that was empty in the template stays: `inMemory: {}`
// picks a provider's backend by being there. Empty lists are kept too.
func prune(o *unstructured.Unstructured) *unstructured.Unstructured {
	if o == nil {
		return nil
	}
	pruneMap(o.Object)
	return o
}

// pruneMap drops the nulls of m and reports whether that left m empty.
func pruneMap(m map[string]any) bool {
	if len(m) == 0 {
		return false
	}
	for k, v := range m {
		switch t := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			if pruneMap(t) {
				delete(m, k)
			}
		case []any:
			for _, item := range t {
				if im, ok := item.(map[string]any); ok {
					pruneMap(im)
				}
			}
		}
	}
	return len(m) == 0
}
