// Package cachetransform shapes the objects the agent's informers keep: only
// what the agent reads of them, and one copy of what objects of a class
// share. At a thousand Topologies the informer cache is most of the agent's
// memory, and most of that was field ownership nobody reads.
package cachetransform

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/apply"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
)

// maxSharedTrees bounds the shared ownership trees. Objects made from one
// class share a handful; past the bound the table starts over, which costs
// sharing for a while, never correctness.
const maxSharedTrees = 4096

// New is the cache transform of an agent writing as fieldManager. It drops
// other managers' field ownership (only the agent's own tells it that a field
// it set is no longer wanted) and kubectl's last-applied copy; of the agent's
// own ownership of an unstructured object it keeps apply.OwnedFieldNames,
// one copy per distinct tree, and of a typed one nothing.
// It also drops what the agent never reads of Cluster API's objects: the
// conversion webhooks' copy of fields a read version cannot hold, all of a
// status the engine does not read, and of MachineSets and Machines all of
// the spec but what keeps a template in use and a Machine's version. What
// is left of an unstructured object is kept Compact. It is idempotent, as
// client-go's streaming lists need: they apply it twice.
//
// Shared trees are safe because the cache hands out copies; the agent never
// writes a cached object back whole (only patches computed from two copies,
// and applies of objects it built), so the trimmed managedFields never reach
// the API server.
func New(fieldManager string) toolscache.TransformFunc {
	t := &transform{fieldManager: fieldManager, fields: &sharedFields{trees: map[string]sharedTree{}}, strings: newInterner()}
	return t.apply
}

type transform struct {
	fieldManager string
	strings      *interner
	fields       *sharedFields
}

func (t *transform) apply(obj any) (any, error) {
	switch o := obj.(type) {
	case *Compact:
		return o, nil // transformed already
	case *unstructured.Unstructured:
		t.trim(o)
		c, err := compact(o, t.fields)
		if err != nil {
			// Metadata the API server would not serve; kept as it came,
			// which costs memory, never a read.
			return o, nil //nolint:nilerr // a cache transform's error loses the object
		}
		return c, nil
	case metav1.Object:
		t.trimTyped(o)
	}
	return obj, nil
}

// trim drops from u what the agent does not read, and shares the strings of
// its metadata with the objects cached before it.
func (t *transform) trim(u *unstructured.Unstructured) {
	t.trimUnstructured(u.Object)
	trimUnread(u)
	if meta, ok := u.Object["metadata"].(map[string]any); ok {
		u.Object["metadata"] = t.strings.object(meta)
	}
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
				entry["fieldsV1"] = apply.OwnedFieldNames(tree)
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

// trimTyped drops all field ownership of the typed objects (Topologies and
// their classes, a thousand at scale): the agent only ever patches them,
// with patches computed from two copies, and never applies them.
func (t *transform) trimTyped(o metav1.Object) {
	o.SetManagedFields(nil)
	if a := o.GetAnnotations(); a != nil {
		if _, ok := a[corev1.LastAppliedConfigAnnotation]; ok {
			delete(a, corev1.LastAppliedConfigAnnotation)
			o.SetAnnotations(a)
		}
	}
}

// sharedFields keeps one copy of each distinct ownership tree, encoded and
// decoded: the objects made from one class share a handful.
type sharedFields struct {
	mu    sync.Mutex
	trees map[string]sharedTree // JSON of a tree → its one copy
}

type sharedTree struct {
	encoded *metav1.FieldsV1
	decoded map[string]any
}

// of is the one copy of tree, encoded and decoded; nothing may change either.
func (s *sharedFields) of(tree map[string]any) (*metav1.FieldsV1, map[string]any) {
	key, err := json.Marshal(tree) // map keys sorted: equal trees, equal keys
	if err != nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if one, ok := s.trees[string(key)]; ok {
		return one.encoded, one.decoded
	}
	if len(s.trees) >= maxSharedTrees {
		clear(s.trees)
	}
	one := sharedTree{encoded: metav1.NewFieldsV1(string(key)), decoded: tree}
	s.trees[string(key)] = one
	return one.encoded, one.decoded
}

// keptPaths are, per kind of Cluster API core, all the agent reads of its
// spec: of a MachineSet, which templates its Machines are made from (the
// agent watches MachineSets by their metadata and reads this from the API
// server; a reader without one reads it here), and of thousands of
// Machines, their version, for the health of their parts.
var keptPaths = map[string][][]string{
	"MachineSet": contract.PoolTemplateRefPaths,
	"Machine":    {{"spec", "version"}},
}

// conditionPaths are where, under status, a Cluster API object keeps its
// conditions: v1beta2's, and v1beta1's with v1beta2's beside them.
var conditionPaths = [][]string{{"conditions"}, {"v1beta2", "conditions"}}

// trimUnread drops what the agent never reads of Cluster API's and its
// providers' objects: of a status, all but health.StatusRead, conditions
// of health.ConditionsRead's types only (a Cluster carries a dozen, each
// with its message); of a MachineSet or a Machine, the spec but keptPaths.
// At a thousand clusters these were most of the cache. Safe for the reason
// trimmed managedFields are: no cached object is ever written back whole,
// and the one status field the agent writes (a Cluster's TopologyReconciled
// condition) is written by server-side apply of that condition alone.
func trimUnread(u *unstructured.Unstructured) {
	if a, ok := nestedMap(u.Object, "metadata", "annotations"); ok {
		delete(a, contract.ConversionDataAnnotation)
	}
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil {
		return
	}
	if gv.Group == clusterAPIGroup && u.GetKind() == "ClusterClass" {
		return // its status holds the variables a class is read with
	}
	trimStatus(u.Object)
	paths, ok := keptPaths[u.GetKind()]
	if gv.Group != clusterAPIGroup || !ok {
		return
	}
	kept := map[string]any{"apiVersion": u.Object["apiVersion"], "kind": u.Object["kind"], "metadata": u.Object["metadata"]}
	if status, ok := u.Object["status"]; ok && u.GetKind() != "MachineSet" {
		kept["status"] = status
	}
	for _, path := range paths {
		if v, found, err := unstructured.NestedFieldNoCopy(u.Object, path...); found && err == nil {
			setNoCopy(kept, v, path...)
		}
	}
	u.Object = kept
}

// trimStatus keeps of obj's status what health.StatusRead names.
func trimStatus(obj map[string]any) {
	status, ok := obj["status"].(map[string]any)
	if !ok {
		return
	}
	kept := map[string]any{}
	for _, path := range health.StatusRead {
		if v, found, err := unstructured.NestedFieldNoCopy(status, path...); found && err == nil {
			setNoCopy(kept, v, path...)
		}
	}
	for _, path := range conditionPaths {
		keepConditions(kept, health.ConditionsRead, path...)
	}
	obj["status"] = kept
}

// keepConditions drops from the conditions at path those of types not in
// read.
func keepConditions(obj map[string]any, read []string, path ...string) {
	conds, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	list, ok := conds.([]any)
	if !found || err != nil || !ok {
		return
	}
	out := []any{} // still found: Conditions falls back to v1beta1's only when absent
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && slices.Contains(read, fmt.Sprint(m["type"])) {
			out = append(out, c)
		}
	}
	setNoCopy(obj, out, path...)
}

// setNoCopy sets v at path in obj, making the maps on the way: the values
// come from the object being trimmed, which nothing else holds.
func setNoCopy(obj map[string]any, v any, path ...string) {
	for _, field := range path[:len(path)-1] {
		next, ok := obj[field].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[field] = next
		}
		obj = next
	}
	obj[path[len(path)-1]] = v
}

// clusterAPIGroup is Cluster API core's API group.
const clusterAPIGroup = "cluster.x-k8s.io"

// nestedMap is the map at path in obj, without copying it.
func nestedMap(obj map[string]any, path ...string) (map[string]any, bool) {
	v, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	if !found || err != nil {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}
