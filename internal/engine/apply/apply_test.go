package apply

import (
	"encoding/json"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

func TestNeedsApply(t *testing.T) {
	desired := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
			"metadata": map[string]any{"name": "md", "namespace": "ns", "labels": map[string]any{"a": "1"}},
			"spec": map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{
				"files":             []any{map[string]any{"path": "/etc/x"}},
				"infrastructureRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "DevMachineTemplate", "name": "t"},
			}}},
		}}
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "cluster.x-k8s.io/v1beta1", Kind: "Cluster", Name: "c", UID: "u1"}})
		return u
	}
	managed := func(o *unstructured.Unstructured, manager, fields string) {
		o.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: manager, Operation: "Apply", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}})
	}
	cases := []struct {
		name   string
		change func(cur *unstructured.Unstructured)
		want   bool
	}{
		{"identical", func(*unstructured.Unstructured) {}, false},
		{"server defaults and others' fields", func(cur *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(cur.Object, "Foreground", "spec", "strategy")
			_ = unstructured.SetNestedSlice(cur.Object, []any{map[string]any{"path": "/etc/x", "permissions": "0644"}}, "spec", "template", "spec", "files")
			cur.SetLabels(map[string]string{"a": "1", "added-by": "hand"})
			refs := append(cur.GetOwnerReferences(), metav1.OwnerReference{Kind: "MachineSet", Name: "ms", UID: "u2"})
			cur.SetOwnerReferences(refs)
		}, false},
		{"a hand edit of a set field", func(cur *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(cur.Object, int64(7), "spec", "replicas")
		}, true},
		{"a list item changed", func(cur *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(cur.Object, []any{map[string]any{"path": "/etc/y"}}, "spec", "template", "spec", "files")
		}, true},
		{"a reference read back in the group's newest version (v1beta2 stores only the group)", func(cur *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(cur.Object, "infrastructure.cluster.x-k8s.io/v1beta2", "spec", "template", "spec", "infrastructureRef", "apiVersion")
		}, false},
		{"a reference to another group", func(cur *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(cur.Object, "infrastructure.example.com/v1beta1", "spec", "template", "spec", "infrastructureRef", "apiVersion")
		}, true},
		{"a reference to another template", func(cur *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(cur.Object, "u", "spec", "template", "spec", "infrastructureRef", "name")
		}, true},
		{"a label removed", func(cur *unstructured.Unstructured) { cur.SetLabels(nil) }, true},
		{"owner missing", func(cur *unstructured.Unstructured) { cur.SetOwnerReferences(nil) }, true},
		{"the Topology still an owner beside the Cluster, as a hand-over cut short leaves it", func(cur *unstructured.Unstructured) {
			cur.SetOwnerReferences(append([]metav1.OwnerReference{{APIVersion: "topology.kubectl-topology.io/v1alpha2", Kind: "Topology", Name: "c", UID: "t1"}}, cur.GetOwnerReferences()...))
		}, true},
		{"a field the agent set is no longer desired", func(cur *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(cur.Object, int64(30), "spec", "minReadySeconds")
			managed(cur, "kubectl-topology", `{"f:spec":{"f:replicas":{},"f:minReadySeconds":{}}}`)
		}, true},
		{"someone else's extra field", func(cur *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(cur.Object, int64(30), "spec", "minReadySeconds")
			managed(cur, "someone", `{"f:spec":{"f:minReadySeconds":{}}}`)
		}, false},
		{"the agent's fields into list items", func(cur *unstructured.Unstructured) {
			managed(cur, "kubectl-topology", `{"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"u1\"}":{}}},"f:spec":{"f:template":{"f:spec":{"f:files":{}}}}}`)
		}, false},
		{"the agent's fields into list items, with self markers", func(cur *unstructured.Unstructured) {
			managed(cur, "kubectl-topology", `{"f:metadata":{"f:labels":{".":{},"f:a":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"u1\"}":{".":{},"f:uid":{}}}},`+
				`"f:spec":{".":{},"f:replicas":{},"f:template":{"f:spec":{"f:files":{".":{},"k:{\"path\":\"/etc/x\"}":{".":{},"f:path":{}}}}}}}`)
		}, false},
		{"a list the agent set is no longer desired", func(cur *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(cur.Object, []any{"echo hi"}, "spec", "template", "spec", "preKubeadmCommands")
			managed(cur, "kubectl-topology", `{"f:spec":{"f:template":{"f:spec":{"f:preKubeadmCommands":{".":{},"v:\"echo hi\"":{}}}}}}`)
		}, true},
		{"a label the agent set is no longer desired", func(cur *unstructured.Unstructured) {
			cur.SetLabels(map[string]string{"a": "1", "b": "2"})
			managed(cur, "kubectl-topology", `{"f:metadata":{"f:labels":{".":{},"f:a":{},"f:b":{}}}}`)
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cur := desired()
			tc.change(cur)
			if got := NeedsApply(cur, desired(), "kubectl-topology"); got != tc.want {
				t.Errorf("NeedsApply = %v, want %v", got, tc.want)
			}
			if got := NeedsApply(withOwnedFieldNames(t, cur), desired(), "kubectl-topology"); got != tc.want {
				t.Errorf("NeedsApply with the managed fields cut to OwnedFieldNames = %v, want %v", got, tc.want)
			}
		})
	}
	if !NeedsApply(nil, desired(), "kubectl-topology") {
		t.Error("a missing object needs applying")
	}
}

// An object in the desired state that holds no value is as good as absent
// where the server stored nothing for it; any value in it is not.
func TestContainsAnObjectHoldingNoValue(t *testing.T) {
	stored := map[string]any{"spec": map[string]any{"clusterConfiguration": map[string]any{"clusterName": "c"}}}
	cases := []struct {
		name string
		want map[string]any
		ok   bool
	}{
		{"an empty object the server dropped", map[string]any{"spec": map[string]any{"initConfiguration": map[string]any{"nodeRegistration": map[string]any{}}}}, true},
		{"nested empty objects", map[string]any{"spec": map[string]any{"joinConfiguration": map[string]any{"nodeRegistration": map[string]any{"kubeletExtraArgs": map[string]any{}}}}}, true},
		{"an empty object beside a stored value", map[string]any{"spec": map[string]any{"clusterConfiguration": map[string]any{"clusterName": "c", "apiServer": map[string]any{}}}}, true},
		{"an object holding a value", map[string]any{"spec": map[string]any{"initConfiguration": map[string]any{"nodeRegistration": map[string]any{"name": "n"}}}}, false},
		{"an empty list is a value", map[string]any{"spec": map[string]any{"files": []any{}}}, false},
		{"a zero scalar is a value", map[string]any{"spec": map[string]any{"replicas": int64(0)}}, false},
		{"a changed value beside an empty object", map[string]any{"spec": map[string]any{"clusterConfiguration": map[string]any{"clusterName": "d", "apiServer": map[string]any{}}}}, false},
	}
	for _, tc := range cases {
		if got := containsAsStored(stored, tc.want); got != tc.ok {
			t.Errorf("%s: containsAsStored = %v, want %v", tc.name, got, tc.ok)
		}
	}
	// Where the server did store something, the object still compares.
	if containsAsStored(map[string]any{"a": "x"}, map[string]any{"a": map[string]any{}}) {
		t.Error("an empty object in want matched a scalar in have")
	}
	// Contains, which decides a template's rotation, still sees a backend
	// swapped for another as a change.
	if Contains(map[string]any{"backend": map[string]any{"docker": map[string]any{}}}, map[string]any{"backend": map[string]any{"inMemory": map[string]any{}}}) {
		t.Error("Contains took an empty object swapped in for another as no change")
	}
}

// A write over a stored object lacking only empty objects is not needed; a
// backend swapped for another is, since the agent owns the one it replaces.
func TestNeedsApplyAnEmptyObjectTheServerDropped(t *testing.T) {
	obj := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
			"metadata": map[string]any{"name": "cp", "namespace": "ns"}, "spec": spec}}
	}
	desired := obj(map[string]any{"version": "v1.34.0", "kubeadmConfigSpec": map[string]any{"initConfiguration": map[string]any{"nodeRegistration": map[string]any{}}}})
	stored := obj(map[string]any{"version": "v1.34.0", "kubeadmConfigSpec": map[string]any{"format": "cloud-config"}})
	if NeedsApply(stored, desired, "kubectl-topology") {
		t.Error("an object lacking only what the server stores as nothing needs a write on every pass")
	}
	swapped := obj(map[string]any{"backend": map[string]any{"inMemory": map[string]any{}}})
	had := obj(map[string]any{"backend": map[string]any{"docker": map[string]any{}}})
	had.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl-topology", Operation: "Apply", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:backend":{"f:docker":{}}}}`)}})
	if !NeedsApply(had, swapped, "kubectl-topology") {
		t.Error("a backend swapped for another needs no write")
	}
}

// withOwnedFieldNames is a copy of o whose managedFields entries hold only
// OwnedFieldNames of their trees, as the agent's cache keeps them.
func withOwnedFieldNames(t *testing.T, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out := o.DeepCopy()
	entries, _, err := unstructured.NestedSlice(out.Object, "metadata", "managedFields")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		entry := e.(map[string]any)
		if tree, ok := entry["fieldsV1"].(map[string]any); ok {
			entry["fieldsV1"] = OwnedFieldNames(tree)
		}
	}
	if entries != nil {
		if err := unstructured.SetNestedSlice(out.Object, entries, "metadata", "managedFields"); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestOwnedFieldNames: field names stay, down to the first list element;
// list keys, values, indices and self markers go.
func TestOwnedFieldNames(t *testing.T) {
	var in map[string]any
	doc := `{"f:metadata":{"f:labels":{".":{},"f:a":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"u1\"}":{".":{},"f:uid":{}}}},` +
		`"f:spec":{".":{},"f:replicas":{},"f:args":{"i:0":{}},"f:cmds":{"v:\"x\"":{}}}}`
	if err := json.Unmarshal([]byte(doc), &in); err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(OwnedFieldNames(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"f:metadata":{"f:labels":{"f:a":{}},"f:ownerReferences":{}},"f:spec":{"f:args":{},"f:cmds":{},"f:replicas":{}}}`
	if string(got) != want {
		t.Errorf("OwnedFieldNames =\n%s\nwant\n%s", got, want)
	}
}

// ownsMoreThanByFieldSet is the reading ownsMoreThan replaced: typed
// managedFields entries, parsed into field sets, their leaves looked up in
// desired. The two must agree.
func ownsMoreThanByFieldSet(current, desired *unstructured.Unstructured, fieldManager string, updatesToo bool) bool {
	owned, err := ownedFields(current, fieldManager, updatesToo)
	if err != nil {
		return true
	}
	extra := false
	owned.Leaves().Iterate(func(p fieldpath.Path) {
		extra = extra || missingIn(desired.Object, p)
	})
	return extra
}

// TestOwnsMoreThanReadsManagedFieldsAsFieldSetsDo: walking the fieldsV1 trees
// as stored decides as the field-set reading does, for trees with "."
// markers, list items, several entries of one manager, updates and other
// managers, and for the trimmed trees the cache keeps.
func TestOwnsMoreThanReadsManagedFieldsAsFieldSetsDo(t *testing.T) {
	desired := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"a": "1"}},
		"spec": map[string]any{
			"replicas": int64(2),
			"list":     []any{map[string]any{"name": "x", "v": "1"}},
			"scalar":   "s",
			"nested":   map[string]any{"kept": "k"},
		},
	}}
	trees := map[string]string{
		"all set":                  `{"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{".":{},"f:replicas":{},"f:nested":{"f:kept":{}}}}`,
		"a dropped field":          `{"f:spec":{"f:replicas":{},"f:gone":{}}}`,
		"a dropped label":          `{"f:metadata":{"f:labels":{"f:b":{}}}}`,
		"a dropped nested field":   `{"f:spec":{"f:nested":{".":{},"f:kept":{},"f:gone":{}}}}`,
		"inside a list item":       `{"f:spec":{"f:list":{"k:{\"name\":\"x\"}":{".":{},"f:name":{},"f:other":{}}}}}`,
		"a dropped list":           `{"f:spec":{"f:otherList":{"k:{\"name\":\"x\"}":{"f:name":{}}}}}`,
		"below a scalar":           `{"f:spec":{"f:scalar":{"f:deeper":{}}}}`,
		"a dropped parent, marked": `{"f:spec":{"f:gone":{".":{}}}}`,
		"only a self marker":       `{".":{}}`,
		"empty":                    `{}`,
	}
	entries := func(fields ...string) []metav1.ManagedFieldsEntry {
		var out []metav1.ManagedFieldsEntry
		for i, f := range fields {
			op := metav1.ManagedFieldsOperationApply
			if i%2 == 1 {
				op = metav1.ManagedFieldsOperationUpdate
			}
			out = append(out, metav1.ManagedFieldsEntry{Manager: "m", Operation: op, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(f)})
		}
		return append(out, metav1.ManagedFieldsEntry{Manager: "other", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:theirs":{}}}`)})
	}
	names := make([]string, 0, len(trees))
	for name := range trees {
		names = append(names, name)
	}
	slices.Sort(names)
	missed := 0
	for _, a := range names {
		for _, b := range names {
			for _, updatesToo := range []bool{false, true} {
				current := &unstructured.Unstructured{Object: map[string]any{}}
				current.SetManagedFields(entries(trees[a], trees[b]))
				want := ownsMoreThanByFieldSet(current, desired, "m", updatesToo)
				if got := ownsMoreThan(current, desired, "m", updatesToo); got != want {
					t.Errorf("apply %q, update %q, updates counted %v: %v, the field sets say %v", a, b, updatesToo, got, want)
				}
				if got := ownsMoreThan(withOwnedFieldNames(t, current), desired, "m", updatesToo); got != want {
					t.Errorf("apply %q, update %q, updates counted %v, trimmed as cached: %v, the field sets say %v", a, b, updatesToo, got, want)
				}
				if want {
					missed++
				}
			}
		}
	}
	if missed == 0 {
		t.Error("no case owns a field desired lacks: the comparison proves nothing")
	}
}
