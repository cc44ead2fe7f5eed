package engine

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// prune drops nulls and empty objects, recursively, the way upstream's
// topology controller ends up writing objects: a template that renders
// `imageTag: ""`-less YAML must not produce `dns: {imageTag: null}`.
// Empty lists are kept; they can be meaningful.
func prune(o *unstructured.Unstructured) *unstructured.Unstructured {
	if o == nil {
		return nil
	}
	pruneMap(o.Object)
	return o
}

func pruneMap(m map[string]any) bool {
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
