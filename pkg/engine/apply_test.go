package engine

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cur := desired()
			tc.change(cur)
			if got := NeedsApply(cur, desired(), "kubectl-topology"); got != tc.want {
				t.Errorf("NeedsApply = %v, want %v", got, tc.want)
			}
		})
	}
	if !NeedsApply(nil, desired(), "kubectl-topology") {
		t.Error("a missing object needs applying")
	}
}
