package cachetransform

import (
	"bytes"
	"fmt"
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	cbor "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
)

// Compact is how the cache keeps an object the agent reads as unstructured:
// its metadata typed, for the informer's indexes and the event handlers, and
// the rest encoded as CBOR (apimachinery's, which keeps integers int64 as
// unstructured objects have them, and decodes faster than JSON). Held as
// maps, a Cluster API object took three times the memory.
//
// Reads through controller-runtime's cache get an *unstructured.Unstructured
// all the same: the cache reader hands out DeepCopyObject's result, and that
// is the object decoded anew. client-go's mutation detector, which compares
// cached objects with their deep copies, cannot be used with it.
type Compact struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	// body is the object but apiVersion, kind and metadata, as CBOR.
	body []byte
	// trees are the ManagedFields' trees decoded, shared as they are:
	// decoding them anew on every read was half its cost.
	trees []map[string]any
}

var _ runtime.Object = &Compact{}

// compact encodes u, whose strings and managed fields the transform has
// already shared: the typed metadata keeps those copies.
func compact(u *unstructured.Unstructured, fields *sharedFields) (*Compact, error) {
	c := &Compact{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}}
	meta, _ := u.Object["metadata"].(map[string]any)
	entries, _ := meta["managedFields"].([]any)
	meta = maps.Clone(meta)
	delete(meta, "managedFields")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(meta, &c.ObjectMeta); err != nil {
		return nil, fmt.Errorf("reading the metadata of %s %s/%s: %w", c.Kind, u.GetNamespace(), u.GetName(), err)
	}
	for _, e := range entries {
		entry, ok := e.(map[string]any)
		if !ok {
			continue
		}
		tree := entry["fieldsV1"]
		entry = maps.Clone(entry)
		delete(entry, "fieldsV1")
		var mf metav1.ManagedFieldsEntry
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(entry, &mf); err != nil {
			return nil, fmt.Errorf("reading the managed fields of %s %s/%s: %w", c.Kind, u.GetNamespace(), u.GetName(), err)
		}
		var decoded map[string]any
		if tree, ok := tree.(map[string]any); ok {
			mf.FieldsV1, decoded = fields.of(tree)
		}
		c.ManagedFields = append(c.ManagedFields, mf)
		c.trees = append(c.trees, decoded)
	}
	rest := make(map[string]any, len(u.Object))
	for k, v := range u.Object {
		if k != "apiVersion" && k != "kind" && k != "metadata" {
			rest[k] = v
		}
	}
	if len(rest) > 0 {
		body, err := cbor.Marshal(rest)
		if err != nil {
			return nil, fmt.Errorf("encoding %s %s/%s for the cache: %w", c.Kind, u.GetNamespace(), u.GetName(), err)
		}
		c.body = body
	}
	return c, nil
}

// Unstructured decodes the object anew: a copy nothing else holds.
func (c *Compact) Unstructured() (*unstructured.Unstructured, error) {
	obj := map[string]any{}
	if len(c.body) > 0 {
		if err := cbor.Unmarshal(c.body, &obj); err != nil {
			return nil, fmt.Errorf("decoding cached %s %s/%s: %w", c.Kind, c.Namespace, c.Name, err)
		}
	}
	om := c.ObjectMeta // a shallow copy: readers share the cached object
	om.ManagedFields = nil
	meta, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&om)
	if err != nil {
		return nil, fmt.Errorf("decoding the metadata of cached %s %s/%s: %w", c.Kind, c.Namespace, c.Name, err)
	}
	if len(c.ManagedFields) > 0 {
		entries := make([]any, len(c.ManagedFields))
		for i, mf := range c.ManagedFields {
			entries[i] = managedFieldsEntry(mf, c.trees[i])
		}
		meta["managedFields"] = entries
	}
	obj["metadata"] = meta
	obj["apiVersion"], obj["kind"] = c.APIVersion, c.Kind
	return &unstructured.Unstructured{Object: obj}, nil
}

// managedFieldsEntry is mf as the API server serves it, with a copy of its
// decoded tree.
func managedFieldsEntry(mf metav1.ManagedFieldsEntry, tree map[string]any) map[string]any {
	e := map[string]any{}
	for k, v := range map[string]string{"manager": mf.Manager, "operation": string(mf.Operation), "apiVersion": mf.APIVersion,
		"fieldsType": mf.FieldsType, "subresource": mf.Subresource} {
		if v != "" {
			e[k] = v
		}
	}
	if mf.Time != nil {
		e["time"] = mf.Time.UTC().Format(time.RFC3339)
	}
	if tree != nil {
		e["fieldsV1"] = runtime.DeepCopyJSONValue(tree)
	}
	return e
}

// DeepCopyObject returns the object as an *unstructured.Unstructured, the
// type every reader of the cache asks for. Decoding what compact encoded
// fails only on a defect, which a reconcile's panic handler reports.
func (c *Compact) DeepCopyObject() runtime.Object {
	u, err := c.Unstructured()
	if err != nil {
		panic(err)
	}
	return u
}

// Unchanged tells whether an update from old to new, both as the cache keeps
// them, changed nothing the cache keeps: the same body, and the same metadata
// but for the resourceVersion. Such an update carried only what the transform
// drops (another manager's fields, status the agent does not read), so a
// reconcile on it would read what the previous one read. A resync (the same
// resourceVersion) and an object not kept compact count as changed.
func Unchanged(old, new any) bool {
	o, ok := old.(*Compact)
	n, ok2 := new.(*Compact)
	if !ok || !ok2 || o.ResourceVersion == n.ResourceVersion {
		return false
	}
	if o.TypeMeta != n.TypeMeta || !bytes.Equal(o.body, n.body) {
		return false
	}
	om, nm := o.ObjectMeta, n.ObjectMeta // shallow copies, to leave the versions out
	om.ResourceVersion, nm.ResourceVersion = "", ""
	return equality.Semantic.DeepEqual(om, nm)
}
