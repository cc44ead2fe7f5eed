// Package cachetransform shapes the objects the agent's informers keep: only
// what the agent reads of them, and one copy of what objects of a class
// share. At a thousand Topologies the informer cache is most of the agent's
// memory, and most of that was field ownership nobody reads.
package cachetransform

import (
	"encoding/json"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/kubectl-topology/kubectl-topology/pkg/engine"
)

// maxSharedTrees bounds the shared ownership trees. Objects made from one
// class share a handful; past the bound the table starts over, which costs
// sharing for a while, never correctness.
const maxSharedTrees = 4096

// New is the cache transform of an agent writing as fieldManager. It drops
// other managers' field ownership (only the agent's own tells it that a field
// it set is no longer wanted) and kubectl's last-applied copy; of the agent's
// own ownership it keeps engine.OwnedFieldNames, one copy per distinct tree.
//
// Shared trees are safe because the cache hands out deep copies; the agent
// never writes a cached object back whole (only patches computed from two
// copies, and applies of objects it built), so the trimmed managedFields
// never reach the API server.
func New(fieldManager string) toolscache.TransformFunc {
	t := &transform{fieldManager: fieldManager, trees: map[string]map[string]any{}}
	return t.apply
}

type transform struct {
	fieldManager string

	mu    sync.Mutex
	trees map[string]map[string]any // JSON of a tree → its one copy
}

func (t *transform) apply(obj any) (any, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		t.trimUnstructured(o.Object)
	case metav1.Object:
		t.trimTyped(o)
	}
	return obj, nil
}

// trimUnstructured works on the map itself: going through
// SetManagedFields would decode and re-encode every kept tree.
func (t *transform) trimUnstructured(obj map[string]any) {
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return
	}
	if entries, ok := meta["managedFields"].([]any); ok {
		var kept []any
		for _, e := range entries {
			entry, ok := e.(map[string]any)
			if !ok || entry["manager"] != t.fieldManager {
				continue
			}
			if tree, ok := entry["fieldsV1"].(map[string]any); ok {
				entry["fieldsV1"] = t.shared(engine.OwnedFieldNames(tree))
			}
			kept = append(kept, entry)
		}
		if len(kept) == 0 {
			delete(meta, "managedFields")
		} else {
			meta["managedFields"] = kept
		}
	}
	if annotations, ok := meta["annotations"].(map[string]any); ok {
		delete(annotations, corev1.LastAppliedConfigAnnotation)
	}
}

// trimTyped is the same for the agent's own typed objects, which are few.
func (t *transform) trimTyped(o metav1.Object) {
	var kept []metav1.ManagedFieldsEntry
	for _, mf := range o.GetManagedFields() {
		if mf.Manager == t.fieldManager {
			kept = append(kept, mf)
		}
	}
	if len(kept) != len(o.GetManagedFields()) {
		o.SetManagedFields(kept)
	}
	if a := o.GetAnnotations(); a != nil {
		if _, ok := a[corev1.LastAppliedConfigAnnotation]; ok {
			delete(a, corev1.LastAppliedConfigAnnotation)
			o.SetAnnotations(a)
		}
	}
}

// shared is the one copy of tree: the first tree seen with the same content.
func (t *transform) shared(tree map[string]any) map[string]any {
	key, err := json.Marshal(tree) // map keys sorted: equal trees, equal keys
	if err != nil {
		return tree
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if one, ok := t.trees[string(key)]; ok {
		return one
	}
	if len(t.trees) >= maxSharedTrees {
		clear(t.trees)
	}
	t.trees[string(key)] = tree
	return tree
}
