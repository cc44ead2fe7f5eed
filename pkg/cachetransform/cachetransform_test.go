package cachetransform

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/pkg/engine"
)

// agentFields is the agent's apply ownership of a MachineDeployment as the
// API server records it: owner and list items by key, self markers.
const agentFields = `{"f:metadata":{"f:annotations":{".":{},"f:topology.cluster.x-k8s.io/managed-field-paths":{}},` +
	`"f:labels":{".":{},"f:cluster.x-k8s.io/cluster-name":{},"f:topology.cluster.x-k8s.io/deployment-name":{},"f:topology.cluster.x-k8s.io/owned":{}},` +
	`"f:ownerReferences":{".":{},"k:{\"uid\":\"%s\"}":{}}},` +
	`"f:spec":{"f:clusterName":{},"f:replicas":{},"f:selector":{"f:matchLabels":{"f:cluster.x-k8s.io/cluster-name":{},"f:topology.cluster.x-k8s.io/deployment-name":{}}},` +
	`"f:template":{"f:metadata":{"f:labels":{"f:cluster.x-k8s.io/cluster-name":{},"f:topology.cluster.x-k8s.io/deployment-name":{}}},` +
	`"f:spec":{"f:bootstrap":{"f:configRef":{"f:apiGroup":{},"f:kind":{},"f:name":{}}},"f:clusterName":{},` +
	`"f:infrastructureRef":{"f:apiGroup":{},"f:kind":{},"f:name":{}},"f:version":{},` +
	`"f:readinessGates":{".":{},"k:{\"conditionType\":\"Ready\"}":{".":{},"f:conditionType":{}}}}}}}`

// machineDeployment is one MachineDeployment of cluster c as the watch
// delivers it: the agent's ownership, the MachineSet controller's, a user's
// kubectl apply with its last-applied copy.
func machineDeployment(c int) *unstructured.Unstructured {
	owner := fmt.Sprintf("0000-%04d", c)
	doc := fmt.Sprintf(`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineDeployment",
"metadata":{"name":"c%[1]d-md-0-x7k2p","namespace":"bench","uid":"md-%[1]d","resourceVersion":"%[1]d",
 "labels":{"cluster.x-k8s.io/cluster-name":"c%[1]d","topology.cluster.x-k8s.io/deployment-name":"md-0","topology.cluster.x-k8s.io/owned":"","team":"a"},
 "annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"metadata\":{\"labels\":{\"team\":\"a\"}}}","topology.cluster.x-k8s.io/managed-field-paths":""},
 "ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","name":"c%[1]d","uid":"%[2]s"}],
 "managedFields":[
  {"manager":"kubectl-topology","operation":"Apply","apiVersion":"cluster.x-k8s.io/v1beta2","time":"2026-11-24T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":%[3]s},
  {"manager":"manager","operation":"Update","apiVersion":"cluster.x-k8s.io/v1beta2","time":"2026-11-24T10:00:05Z","fieldsType":"FieldsV1","subresource":"status",
   "fieldsV1":{"f:status":{".":{},"f:availableReplicas":{},"f:readyReplicas":{},"f:replicas":{},"f:selector":{},"f:upToDateReplicas":{},
   "f:conditions":{".":{},"k:{\"type\":\"Available\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}},
   "k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}}}}},
  {"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"cluster.x-k8s.io/v1beta2","time":"2026-11-24T10:01:00Z","fieldsType":"FieldsV1",
   "fieldsV1":{"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/last-applied-configuration":{}},"f:labels":{"f:team":{}}}}}]},
"spec":{"clusterName":"c%[1]d","replicas":1,"selector":{"matchLabels":{"cluster.x-k8s.io/cluster-name":"c%[1]d","topology.cluster.x-k8s.io/deployment-name":"md-0"}},
 "template":{"metadata":{"labels":{"cluster.x-k8s.io/cluster-name":"c%[1]d","topology.cluster.x-k8s.io/deployment-name":"md-0"}},
  "spec":{"clusterName":"c%[1]d","version":"v1.34.1","bootstrap":{"configRef":{"apiGroup":"bootstrap.cluster.x-k8s.io","kind":"KubeadmConfigTemplate","name":"c%[1]d-md-0-b4x9z"}},
   "infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DevMachineTemplate","name":"c%[1]d-md-0-q8w2e"},
   "readinessGates":[{"conditionType":"Ready"}]}}},
"status":{"replicas":1,"readyReplicas":1,"availableReplicas":1,"upToDateReplicas":1}}`, c, owner, fmt.Sprintf(agentFields, owner))
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(doc), &u.Object); err != nil {
		panic(err)
	}
	return u
}

// TestTransformUnstructured: other managers' ownership and the last-applied
// copy go; the agent's ownership keeps what NeedsApply reads, one copy for
// the MachineDeployments of every cluster, and NeedsApply decides as on
// the object the watch delivered.
func TestTransformUnstructured(t *testing.T) {
	transform := New(engine.FieldManager)
	var trimmed []*unstructured.Unstructured
	for c := range 3 {
		out, err := transform(machineDeployment(c))
		if err != nil {
			t.Fatal(err)
		}
		trimmed = append(trimmed, out.(*unstructured.Unstructured))
	}
	got := trimmed[1]
	mfs := got.GetManagedFields()
	if len(mfs) != 1 || mfs[0].Manager != engine.FieldManager || mfs[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("managed fields after the transform: %+v, want only the agent's apply", mfs)
	}
	if want := `{"f:metadata":{"f:annotations":{"f:topology.cluster.x-k8s.io/managed-field-paths":{}},` +
		`"f:labels":{"f:cluster.x-k8s.io/cluster-name":{},"f:topology.cluster.x-k8s.io/deployment-name":{},"f:topology.cluster.x-k8s.io/owned":{}},"f:ownerReferences":{}},` +
		`"f:spec":{"f:clusterName":{},"f:replicas":{},"f:selector":{"f:matchLabels":{"f:cluster.x-k8s.io/cluster-name":{},"f:topology.cluster.x-k8s.io/deployment-name":{}}},` +
		`"f:template":{"f:metadata":{"f:labels":{"f:cluster.x-k8s.io/cluster-name":{},"f:topology.cluster.x-k8s.io/deployment-name":{}}},` +
		`"f:spec":{"f:bootstrap":{"f:configRef":{"f:apiGroup":{},"f:kind":{},"f:name":{}}},"f:clusterName":{},` +
		`"f:infrastructureRef":{"f:apiGroup":{},"f:kind":{},"f:name":{}},"f:readinessGates":{},"f:version":{}}}}}`; mfs[0].FieldsV1.GetRawString() != want {
		t.Errorf("the agent's ownership after the transform:\n%s\nwant\n%s", mfs[0].FieldsV1.GetRawString(), want)
	}
	if _, ok := got.GetAnnotations()[corev1.LastAppliedConfigAnnotation]; ok {
		t.Error("the last-applied annotation is still cached")
	}
	if got.GetLabels()["team"] != "a" || got.GetAnnotations()["topology.cluster.x-k8s.io/managed-field-paths"] != "" {
		t.Errorf("labels or other annotations changed: %v %v", got.GetLabels(), got.GetAnnotations())
	}
	tree := func(u *unstructured.Unstructured) uintptr {
		entries, _, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "managedFields")
		return reflect.ValueOf(entries.([]any)[0].(map[string]any)["fieldsV1"]).Pointer()
	}
	if tree(trimmed[0]) != tree(trimmed[1]) || tree(trimmed[1]) != tree(trimmed[2]) {
		t.Error("the MachineDeployments of three clusters of one class keep three ownership trees, want one shared")
	}

	// NeedsApply decides the same on the cached object as on the watched one.
	for _, tc := range []struct {
		name   string
		change func(d *unstructured.Unstructured)
		want   bool
	}{
		{"steady state", func(*unstructured.Unstructured) {}, false},
		{"the version moves", func(d *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(d.Object, "v1.35.0", "spec", "template", "spec", "version")
		}, true},
		{"the class drops replicas", func(d *unstructured.Unstructured) { unstructured.RemoveNestedField(d.Object, "spec", "replicas") }, true},
		{"the class drops the readiness gates", func(d *unstructured.Unstructured) {
			unstructured.RemoveNestedField(d.Object, "spec", "template", "spec", "readinessGates")
		}, true},
		{"the class drops a label", func(d *unstructured.Unstructured) {
			d.SetLabels(map[string]string{"cluster.x-k8s.io/cluster-name": "c1", "topology.cluster.x-k8s.io/owned": ""})
		}, true},
		{"a user's label is not desired", func(d *unstructured.Unstructured) {
			delete(d.Object["metadata"].(map[string]any)["labels"].(map[string]any), "team")
		}, false},
	} {
		watched := machineDeployment(1)
		desired := machineDeployment(1)
		desired.SetManagedFields(nil)
		desired.SetAnnotations(map[string]string{"topology.cluster.x-k8s.io/managed-field-paths": ""})
		delete(desired.Object, "status")
		tc.change(desired)
		if got := engine.NeedsApply(watched, desired, engine.FieldManager); got != tc.want {
			t.Errorf("%s: NeedsApply on the watched object = %v, want %v", tc.name, got, tc.want)
		}
		if got := engine.NeedsApply(trimmed[1], desired, engine.FieldManager); got != tc.want {
			t.Errorf("%s: NeedsApply on the cached object = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestTransformNotOwned: an object the agent never wrote keeps no field
// ownership at all.
func TestTransformNotOwned(t *testing.T) {
	u := machineDeployment(0)
	entries, _, _ := unstructured.NestedSlice(u.Object, "metadata", "managedFields")
	_ = unstructured.SetNestedSlice(u.Object, entries[1:], "metadata", "managedFields")
	out, err := New(engine.FieldManager)(u)
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(out.(*unstructured.Unstructured).Object, "metadata", "managedFields"); found {
		t.Errorf("managedFields of an object the agent never wrote are still cached: %v", out.(*unstructured.Unstructured).GetManagedFields())
	}
}

// TestTransformTyped: the agent's own typed objects lose others' ownership
// and the last-applied copy, and keep the agent's as written.
func TestTransformTyped(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "keep": "1"},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "kubectl", Operation: "Update", FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)},
			{Manager: engine.FieldManager, Operation: "Apply", FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:a":{}}}`)},
		}}}
	out, err := New(engine.FieldManager)(cm)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.ConfigMap)
	if len(got.ManagedFields) != 1 || got.ManagedFields[0].FieldsV1.GetRawString() != `{"f:data":{"f:a":{}}}` {
		t.Errorf("managed fields: %+v, want the agent's entry as written", got.ManagedFields)
	}
	if !reflect.DeepEqual(got.Annotations, map[string]string{"keep": "1"}) {
		t.Errorf("annotations: %v, want only keep", got.Annotations)
	}
}

// TestSharedTreesBounded: distinct trees past the bound start the table
// over instead of growing it.
func TestSharedTreesBounded(t *testing.T) {
	tr := &transform{fieldManager: engine.FieldManager, trees: map[string]map[string]any{}}
	for i := range maxSharedTrees + 10 {
		tr.shared(map[string]any{fmt.Sprintf("f:x%d", i): map[string]any{}})
	}
	if n := len(tr.trees); n != 10 {
		t.Errorf("%d shared trees after %d distinct ones, want 10 (the table restarted at %d)", n, maxSharedTrees+10, maxSharedTrees)
	}
}

// BenchmarkRetained reports the heap a thousand cached MachineDeployments
// keep, as the watch delivers them and after the transform.
func BenchmarkRetained(b *testing.B) {
	for _, bc := range []struct {
		name      string
		transform func(any) (any, error)
	}{
		{"as-watched", func(o any) (any, error) { return o, nil }},
		{"transformed", New(engine.FieldManager)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			const n = 1000
			for b.Loop() {
				objs := make([]any, n)
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for i := range objs {
					objs[i], _ = bc.transform(machineDeployment(i))
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "retained-B/object")
				runtime.KeepAlive(objs)
			}
		})
	}
}

// TestTransformTrimsUnread: the conversion webhooks' copy, v1beta1
// conditions beside v1beta2's and all of a MachineSet but its template
// references leave the cache; what the agent reads of each object stays.
func TestTransformTrimsUnread(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{{
		"a template read as v1beta1 loses the stored version's copy",
		`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta1","kind":"DockerMachineTemplate","metadata":{"name":"t","annotations":{"cluster.x-k8s.io/conversion-data":"{\"spec\":{}}","team":"a"}},"spec":{"template":{"spec":{"extraMounts":[]}}}}`,
		`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta1","kind":"DockerMachineTemplate","metadata":{"name":"t","annotations":{"team":"a"}},"spec":{"template":{"spec":{"extraMounts":[]}}}}`,
	}, {
		"a MachineDeployment keeps its v1beta2 conditions and the v1beta1 count the rollout reads",
		`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineDeployment","metadata":{"name":"md"},"spec":{"replicas":1},
		  "status":{"upToDateReplicas":1,"conditions":[{"type":"Available","status":"True"}],"deprecated":{"v1beta1":{"updatedReplicas":1,"conditions":[{"type":"Ready","status":"True"}]}}}}`,
		`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineDeployment","metadata":{"name":"md"},"spec":{"replicas":1},
		  "status":{"upToDateReplicas":1,"conditions":[{"type":"Available","status":"True"}],"deprecated":{"v1beta1":{"updatedReplicas":1}}}}`,
	}, {
		"a MachineSet keeps its metadata and template references only",
		`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineSet","metadata":{"name":"ms","labels":{"cluster.x-k8s.io/cluster-name":"c"}},
		  "spec":{"clusterName":"c","replicas":1,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"clusterName":"c","version":"v1.34.1",
		    "bootstrap":{"configRef":{"apiGroup":"bootstrap.cluster.x-k8s.io","kind":"KubeadmConfigTemplate","name":"b"}},
		    "infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachineTemplate","name":"i"}}}},
		  "status":{"replicas":1,"conditions":[{"type":"Ready","status":"True"}]}}`,
		`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineSet","metadata":{"name":"ms","labels":{"cluster.x-k8s.io/cluster-name":"c"}},
		  "spec":{"template":{"spec":{"bootstrap":{"configRef":{"apiGroup":"bootstrap.cluster.x-k8s.io","kind":"KubeadmConfigTemplate","name":"b"}},
		    "infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachineTemplate","name":"i"}}}}}`,
	}, {
		"a MachineSet of another group is not Cluster API's",
		`{"apiVersion":"example.com/v1","kind":"MachineSet","metadata":{"name":"ms"},"spec":{"replicas":1},"status":{"replicas":1}}`,
		`{"apiVersion":"example.com/v1","kind":"MachineSet","metadata":{"name":"ms"},"spec":{"replicas":1},"status":{"replicas":1}}`,
	}} {
		in, want := &unstructured.Unstructured{}, map[string]any{}
		if err := json.Unmarshal([]byte(tc.in), &in.Object); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
			t.Fatal(err)
		}
		out, err := New(engine.FieldManager)(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := out.(*unstructured.Unstructured).Object; !reflect.DeepEqual(got, want) {
			gotJSON, _ := json.Marshal(got)
			t.Errorf("%s:\n got %s\nwant %s", tc.name, gotJSON, tc.want)
		}
	}
}
