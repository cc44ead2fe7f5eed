package cachetransform

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/apply"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/core"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
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
	if err := u.UnmarshalJSON([]byte(doc)); err != nil {
		panic(err)
	}
	return u
}

// TestTransformUnstructured: other managers' ownership and the last-applied
// copy go; the agent's ownership keeps what NeedsApply reads, one copy for
// the MachineDeployments of every cluster, and NeedsApply decides as on
// the object the watch delivered.
func TestTransformUnstructured(t *testing.T) {
	transform := New(apply.FieldManager)
	var trimmed []*unstructured.Unstructured
	var trees []*metav1.FieldsV1
	for c := range 3 {
		out, err := transform(machineDeployment(c))
		if err != nil {
			t.Fatal(err)
		}
		if mfs := out.(*Compact).ManagedFields; len(mfs) == 1 {
			trees = append(trees, mfs[0].FieldsV1)
		}
		trimmed = append(trimmed, cached(t, out))
	}
	got := trimmed[1]
	mfs := got.GetManagedFields()
	if len(mfs) != 1 || mfs[0].Manager != apply.FieldManager || mfs[0].Operation != metav1.ManagedFieldsOperationApply {
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
	if trees[0] != trees[1] || trees[1] != trees[2] {
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
		if got := apply.NeedsApply(watched, desired, apply.FieldManager); got != tc.want {
			t.Errorf("%s: NeedsApply on the watched object = %v, want %v", tc.name, got, tc.want)
		}
		if got := apply.NeedsApply(trimmed[1], desired, apply.FieldManager); got != tc.want {
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
	out, err := New(apply.FieldManager)(u)
	if err != nil {
		t.Fatal(err)
	}
	if got := cached(t, out); got.GetManagedFields() != nil {
		t.Errorf("managedFields of an object the agent never wrote are still cached: %v", got.GetManagedFields())
	}
}

// TestTransformTyped: typed objects, which the agent never applies, keep no
// field ownership and no last-applied copy.
func TestTransformTyped(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "keep": "1"},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "kubectl", Operation: "Update", FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)},
			{Manager: apply.FieldManager, Operation: "Apply", FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:a":{}}}`)},
		}}}
	out, err := New(apply.FieldManager)(cm)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.ConfigMap)
	if got.ManagedFields != nil {
		t.Errorf("managed fields: %+v, want none", got.ManagedFields)
	}
	if !reflect.DeepEqual(got.Annotations, map[string]string{"keep": "1"}) {
		t.Errorf("annotations: %v, want only keep", got.Annotations)
	}
}

// TestSharedTreesBounded: distinct trees past the bound start the table
// over instead of growing it.
func TestSharedTreesBounded(t *testing.T) {
	fields := &sharedFields{trees: map[string]sharedTree{}}
	for i := range maxSharedTrees + 10 {
		fields.of(map[string]any{fmt.Sprintf("f:x%d", i): map[string]any{}})
	}
	if n := len(fields.trees); n != 10 {
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
		{"transformed", New(apply.FieldManager)},
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

// TestTransformTrimsUnread: the conversion webhooks' copy, what the engine
// does not read of a status, all of a MachineSet but its template references
// and all of a Machine's spec but its version leave the cache; what the agent
// reads of each object stays, and a second pass changes nothing.
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
		"a v1beta2 Machine keeps its version, phase, Node and the conditions its health reads",
		`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"m","labels":{"cluster.x-k8s.io/deployment-name":"md"}},
		  "spec":{"clusterName":"c","version":"v1.34.1","bootstrap":{"dataSecretName":"s"},"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachine","name":"i"}},
		  "status":{"phase":"Running","nodeRef":{"name":"n"},"addresses":[{"type":"InternalIP","address":"10.0.0.1"}],"nodeInfo":{"kernelVersion":"6.1"},
		    "conditions":[{"type":"Ready","status":"True"},{"type":"NodeHealthy","status":"True","message":"long"},{"type":"HealthCheckSucceeded","status":"False","reason":"UnhealthyNode"}]}}`,
		`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"m","labels":{"cluster.x-k8s.io/deployment-name":"md"}},
		  "spec":{"version":"v1.34.1"},
		  "status":{"phase":"Running","nodeRef":{"name":"n"},"conditions":[{"type":"Ready","status":"True"},{"type":"HealthCheckSucceeded","status":"False","reason":"UnhealthyNode"}]}}`,
	}, {
		"a v1beta1 Machine keeps both lists of conditions, each found even when none is read",
		`{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"Machine","metadata":{"name":"m"},"spec":{"clusterName":"c"},
		  "status":{"phase":"Pending","conditions":[{"type":"BootstrapReady","status":"False","severity":"Info"}],"v1beta2":{"conditions":[{"type":"Deleting","status":"False"}]}}}`,
		`{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"Machine","metadata":{"name":"m"},
		  "status":{"phase":"Pending","conditions":[{"type":"BootstrapReady","status":"False","severity":"Info"}],"v1beta2":{"conditions":[]}}}`,
	}, {
		"a Cluster keeps of its status what the engine reads, and the conditions of its types",
		`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","metadata":{"name":"c"},"spec":{"paused":false},
		  "status":{"phase":"Provisioned","initialization":{"infrastructureProvisioned":true,"controlPlaneInitialized":true},"controlPlane":{"replicas":3},
		    "conditions":[{"type":"Available","status":"True"},{"type":"RemoteConnectionProbe","status":"True"},{"type":"ScalingUp","status":"False"}]}}`,
		`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","metadata":{"name":"c"},"spec":{"paused":false},
		  "status":{"phase":"Provisioned","initialization":{"controlPlaneInitialized":true,"infrastructureProvisioned":true},"conditions":[{"type":"Available","status":"True"}]}}`,
	}, {
		"a ClusterClass keeps its status: its variables are read from it",
		`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"ClusterClass","metadata":{"name":"cc"},"status":{"variables":[{"name":"v"}],"conditions":[{"type":"VariablesReady","status":"True"}]}}`,
		`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"ClusterClass","metadata":{"name":"cc"},"status":{"variables":[{"name":"v"}],"conditions":[{"type":"VariablesReady","status":"True"}]}}`,
	}, {
		"a MachineSet of another group is not Cluster API's",
		`{"apiVersion":"example.com/v1","kind":"MachineSet","metadata":{"name":"ms"},"spec":{"replicas":1},"status":{"replicas":1}}`,
		`{"apiVersion":"example.com/v1","kind":"MachineSet","metadata":{"name":"ms"},"spec":{"replicas":1},"status":{"replicas":1}}`,
	}} {
		in, want := &unstructured.Unstructured{}, map[string]any{}
		if err := in.UnmarshalJSON([]byte(tc.in)); err != nil {
			t.Fatal(err)
		}
		if err := utiljson.Unmarshal([]byte(tc.want), &want); err != nil {
			t.Fatal(err)
		}
		out, err := New(apply.FieldManager)(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := cached(t, out).Object; !reflect.DeepEqual(got, want) {
			gotJSON, _ := json.Marshal(got)
			t.Errorf("%s:\n got %s\nwant %s", tc.name, gotJSON, tc.want)
		}
		// Streaming lists apply the transform again to what it returned.
		again, err := New(apply.FieldManager)(out)
		if err != nil {
			t.Fatal(err)
		}
		if again != out {
			t.Errorf("%s: transformed twice, the cached object was replaced", tc.name)
		}
		// A transformed object decoded and transformed again is the same.
		again, err = New(apply.FieldManager)(cached(t, out))
		if err != nil {
			t.Fatal(err)
		}
		if got := cached(t, again).Object; !reflect.DeepEqual(got, want) {
			gotJSON, _ := json.Marshal(got)
			t.Errorf("%s, transformed twice:\n got %s\nwant %s", tc.name, gotJSON, tc.want)
		}
	}
}

// machinesAsServed are Machines of one pool and of the control plane as
// Cluster API v1.14 serves them, every field set: healthy, without a Node,
// failing its health check, being deleted, and read as v1beta1.
const machinesAsServed = `[
{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"md-1","creationTimestamp":"2026-11-25T10:00:00Z","labels":{"cluster.x-k8s.io/cluster-name":"c","cluster.x-k8s.io/deployment-name":"c-md"},"annotations":{"machine.cluster.x-k8s.io/certificates-expiry":"2027-11-25T10:00:00Z"}},
 "spec":{"clusterName":"c","version":"v1.33.1","providerID":"docker:////c-md-1","bootstrap":{"configRef":{"apiGroup":"bootstrap.cluster.x-k8s.io","kind":"KubeadmConfig","name":"md-1"},"dataSecretName":"md-1"},"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachine","name":"md-1"},"readinessGates":[{"conditionType":"Ready"}]},
 "status":{"phase":"Running","nodeRef":{"name":"c-md-1"},"addresses":[{"type":"InternalIP","address":"172.18.0.4"}],"nodeInfo":{"kubeletVersion":"v1.33.1","osImage":"Debian"},"initialization":{"bootstrapDataSecretCreated":true,"infrastructureProvisioned":true},
  "conditions":[{"type":"Available","status":"True","reason":"Available","lastTransitionTime":"2026-11-25T10:02:00Z"},{"type":"Ready","status":"True","reason":"Ready","lastTransitionTime":"2026-11-25T10:02:00Z"},{"type":"UpToDate","status":"True","reason":"UpToDate"},{"type":"NodeHealthy","status":"True","reason":"NodeHealthy"},{"type":"HealthCheckSucceeded","status":"True","reason":"HealthCheckSucceeded"}],
  "deprecated":{"v1beta1":{"conditions":[{"type":"Ready","status":"True"}]}}}},
{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"md-2","creationTimestamp":"2026-11-25T10:05:00Z","labels":{"cluster.x-k8s.io/cluster-name":"c","cluster.x-k8s.io/deployment-name":"c-md"}},
 "spec":{"clusterName":"c","version":"v1.34.1","bootstrap":{"configRef":{"apiGroup":"bootstrap.cluster.x-k8s.io","kind":"KubeadmConfig","name":"md-2"}},"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachine","name":"md-2"}},
 "status":{"phase":"Provisioning","conditions":[{"type":"Ready","status":"False","reason":"NotReady","message":"* InfrastructureReady: waiting","lastTransitionTime":"2026-11-25T10:05:00Z"},{"type":"InfrastructureReady","status":"False","reason":"NotProvisioned","message":"waiting"},{"type":"BootstrapConfigReady","status":"True","reason":"Ready"}]}},
{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"md-3","creationTimestamp":"2026-11-25T10:00:00Z","labels":{"cluster.x-k8s.io/cluster-name":"c","cluster.x-k8s.io/deployment-name":"c-md"}},
 "spec":{"clusterName":"c","version":"v1.33.1"},
 "status":{"phase":"Running","nodeRef":{"name":"c-md-3"},"conditions":[{"type":"Ready","status":"False","reason":"NotReady","lastTransitionTime":"2026-11-25T10:09:00Z"},{"type":"HealthCheckSucceeded","status":"False","reason":"UnhealthyNode","message":"Node c-md-3 NotReady for 5m","lastTransitionTime":"2026-11-25T10:10:00Z"}]}},
{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"cp-1","creationTimestamp":"2026-11-25T10:00:00Z","deletionTimestamp":"2026-11-25T10:20:00Z","labels":{"cluster.x-k8s.io/cluster-name":"c","cluster.x-k8s.io/control-plane":""}},
 "spec":{"clusterName":"c","version":"v1.33.1"},"status":{"phase":"Deleting","nodeRef":{"name":"c-cp-1"}}},
{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"Machine","metadata":{"name":"cp-2","creationTimestamp":"2026-11-25T10:00:00Z","labels":{"cluster.x-k8s.io/cluster-name":"c","cluster.x-k8s.io/control-plane":""}},
 "spec":{"clusterName":"c","version":"v1.33.1"},
 "status":{"phase":"Failed","conditions":[{"type":"Ready","status":"False","severity":"Error","reason":"Failed"}],"v1beta2":{"conditions":[{"type":"Ready","status":"False","reason":"Failed","message":"the provider failed it"},{"type":"Deleting","status":"False"}]}}}
]`

// provisionedStatus are statuses of a cluster well under way, as Cluster API
// v1.14 reports them: a control plane read as v1beta1 with v1beta2's
// conditions and counts beside, a pool rolling out, its infrastructure up.
var provisionedStatus = map[string]string{
	"KubeadmControlPlane": `{"initialized":true,"ready":true,"version":"v1.33.1","replicas":3,"readyReplicas":3,"updatedReplicas":2,"unavailableReplicas":0,"observedGeneration":2,
	  "selector":"cluster.x-k8s.io/cluster-name=c-0005","lastRemediation":{"machine":"c-0005-cp-x","retryCount":1,"timestamp":"2026-11-25T10:00:00Z"},
	  "conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-11-25T10:00:00Z"},{"type":"EtcdClusterHealthy","status":"False","severity":"Error","reason":"EtcdClusterUnhealthy"}],
	  "v1beta2":{"availableReplicas":3,"upToDateReplicas":2,"conditions":[
	    {"type":"Available","status":"True","reason":"Available","lastTransitionTime":"2026-11-25T10:00:00Z"},
	    {"type":"EtcdClusterHealthy","status":"False","reason":"EtcdClusterNotHealthy","message":"* Machine c-0005-cp-a:\n  * EtcdMemberHealthy: etcd member is unhealthy","lastTransitionTime":"2026-11-25T11:46:00Z"},
	    {"type":"ControlPlaneComponentsHealthy","status":"True","reason":"Healthy"},{"type":"CertificatesAvailable","status":"True","reason":"Available"},
	    {"type":"Remediating","status":"True","reason":"Remediating","message":"Machine c-0005-cp-x is being remediated","lastTransitionTime":"2026-11-25T11:40:00Z"},
	    {"type":"RollingOut","status":"True","reason":"RollingOut","message":"Rolling out 1 not up-to-date replicas"},{"type":"MachinesReady","status":"True","reason":"Ready"}]}}`,
	"MachineDeployment": `{"observedGeneration":1,"phase":"Running","replicas":2,"readyReplicas":2,"availableReplicas":1,"upToDateReplicas":2,"selector":"x=y",
	  "conditions":[{"type":"Available","status":"False","reason":"NotAvailable","message":"1 available replicas, at least 2 required","lastTransitionTime":"2026-11-25T11:50:00Z"},
	    {"type":"MachinesReady","status":"False","reason":"NotReady","message":"* Machine md-1: not ready"},{"type":"RollingOut","status":"True","reason":"RollingOut"}],
	  "deprecated":{"v1beta1":{"updatedReplicas":1,"availableReplicas":1,"readyReplicas":2,"unavailableReplicas":1,"conditions":[{"type":"Ready","status":"False","severity":"Warning"}]}}}`,
	"DockerCluster": `{"ready":true,"failureDomains":{"fd1":{"controlPlane":true}},"conditions":[{"type":"Ready","status":"True"},{"type":"LoadBalancerAvailable","status":"True"}]}`,
	"Cluster":       `{"phase":"Provisioned","initialization":{"infrastructureProvisioned":false,"controlPlaneInitialized":true},"controlPlane":{"replicas":3},"workers":{"replicas":2},"conditions":[{"type":"Available","status":"True"}]}`,
}

// TestTrimmedSameObservation: what the agent makes of a cluster's rollout,
// health and infrastructure from trimmed objects is what it makes of them as
// served, so a status field or condition the engine starts to read cannot be
// trimmed unnoticed. The objects are one cluster as Cluster API v1.14 served
// it at 1,000 with idle providers (testdata), and the same cluster with the
// statuses of one well under way and its Machines.
func TestTrimmedSameObservation(t *testing.T) {
	idle, machines := servedCluster(t)
	var provisioned []map[string]any
	for _, o := range idle {
		o = (&unstructured.Unstructured{Object: o}).DeepCopy().Object
		status := map[string]any{}
		if err := json.Unmarshal([]byte(provisionedStatus[fmt.Sprint(o["kind"])]), &status); err != nil {
			t.Fatal(err)
		}
		o["status"] = status
		provisioned = append(provisioned, o)
	}
	for _, m := range machines {
		m = (&unstructured.Unstructured{Object: m}).DeepCopy().Object
		labels := m["metadata"].(map[string]any)["labels"].(map[string]any)
		if _, ok := labels["cluster.x-k8s.io/deployment-name"]; ok {
			labels["cluster.x-k8s.io/deployment-name"] = "c-0005-md-a-rvmfv"
		}
		provisioned = append(provisioned, m)
	}

	for name, objs := range map[string][]map[string]any{"idle providers": idle, "provisioned": provisioned} {
		served, trimmed := observe(t, objs, false), observe(t, objs, true)
		if !reflect.DeepEqual(trimmed, served) {
			t.Errorf("%s: trimmed objects are observed otherwise:\n got %+v\nwant %+v", name, trimmed, served)
		}
	}
	// The provisioned case must exercise what is read, or it proves nothing.
	got := observe(t, provisioned, false)
	cp, md := got.Observed.ControlPlane, got.Observed.MachineDeployments["md-a"]
	if got.Infrastructure != v1alpha2.InfrastructureProvisioned || cp.StatusVersion != "v1.33.1" || cp.AvailableReplicas != 3 || cp.UpToDateReplicas != 2 || len(cp.Problems) < 3 ||
		md.UpToDateReplicas != 1 || md.AvailableReplicas != 1 || len(md.Problems) < 3 || md.Provisioning != 1 {
		t.Errorf("the provisioned cluster does not exercise the reads: infrastructure %s, control plane %+v, md-a %+v", got.Infrastructure, cp, md)
	}
}

// observation is what the agent reads of a cluster's objects.
type observation struct {
	Observed       *upgrade.Observed
	Infrastructure v1alpha2.InfrastructurePhase
}

func observe(t *testing.T, objs []map[string]any, trim bool) observation {
	t.Helper()
	transform := New(apply.FieldManager)
	var all, machines []*unstructured.Unstructured
	for _, o := range objs {
		u := (&unstructured.Unstructured{Object: o}).DeepCopy()
		if trim {
			out, err := transform(u)
			if err != nil {
				t.Fatal(err)
			}
			u = cached(t, out)
		}
		if u.GetKind() == "Machine" {
			machines = append(machines, u)
		} else {
			all = append(all, u)
		}
	}
	s := desiredstate.StateFromObjects("c-0005", "scale", all)
	if s.ControlPlane.Object == nil || s.InfrastructureCluster == nil || len(s.MachineDeployments) != 2 {
		t.Fatalf("the objects do not make a cluster's state: %+v", s)
	}
	typed, err := core.Machines(machines)
	if err != nil {
		t.Fatal(err)
	}
	observed, err := health.ObserveState(s)
	if err != nil {
		t.Fatal(err)
	}
	return observation{Observed: health.WithMachines(observed, s, typed), Infrastructure: health.InfrastructurePhase(s)}
}

// TestInternedStrings: two objects decoded apart keep one copy of each
// label key and value, owner kind and finalizer in their cached metadata; a
// long annotation keeps its own, and the content is unchanged.
func TestInternedStrings(t *testing.T) {
	long := strings.Repeat("m", maxInternedValue+1)
	doc := `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineDeployment","metadata":{"name":"md","labels":{"cluster.x-k8s.io/cluster-name":"c"},
	  "annotations":{"note":"` + long + `"},"finalizers":["cluster.x-k8s.io/machinedeployment"],
	  "ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","name":"c","uid":"u"}]},
	  "spec":{"template":{"spec":{"version":"v1.34.1"}}},"status":{"conditions":[{"type":"Available","status":"True","message":"m"}]}}`
	decode := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		return u
	}
	want := decode().Object
	transform := New(apply.FieldManager)
	var objs []*Compact
	for range 2 {
		out, err := transform(decode())
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, out.(*Compact))
	}
	if got := cached(t, objs[0]).Object; !reflect.DeepEqual(got, want) {
		t.Fatalf("interning changed the object: %v", got)
	}
	labelKey := func(c *Compact) *byte {
		for key := range c.Labels {
			return unsafe.StringData(key)
		}
		t.Fatal("no label")
		return nil
	}
	same := func(what string, a, b string) {
		t.Helper()
		if unsafe.StringData(a) != unsafe.StringData(b) {
			t.Errorf("%s is held twice", what)
		}
	}
	if labelKey(objs[0]) != labelKey(objs[1]) {
		t.Error("a label key is held twice")
	}
	same("a label value", objs[0].Labels["cluster.x-k8s.io/cluster-name"], objs[1].Labels["cluster.x-k8s.io/cluster-name"])
	same("an owner's kind", objs[0].OwnerReferences[0].Kind, objs[1].OwnerReferences[0].Kind)
	same("a finalizer", objs[0].Finalizers[0], objs[1].Finalizers[0])
	if unsafe.StringData(objs[0].Annotations["note"]) == unsafe.StringData(objs[1].Annotations["note"]) {
		t.Error("a long annotation was interned")
	}
}

// TestInternedBounded: distinct strings past the bound start a table over.
func TestInternedBounded(t *testing.T) {
	in := newInterner()
	for i := range maxInterned + 10 {
		in.object(map[string]any{fmt.Sprintf("k%d", i): fmt.Sprintf("v%d", i)})
	}
	if len(in.keys) != 10 || len(in.values) != 10 {
		t.Errorf("%d keys and %d values interned after %d distinct ones, want 10 each (the tables restarted at %d)", len(in.keys), len(in.values), maxInterned+10, maxInterned)
	}
}

// cached is what a read of out through the cache returns, failing the test
// unless out is kept compact.
func cached(t *testing.T, out any) *unstructured.Unstructured {
	t.Helper()
	c, ok := out.(*Compact)
	if !ok {
		t.Fatalf("the transform kept %T, want *Compact", out)
	}
	u, ok := c.DeepCopyObject().(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("a cached object copies to %T, want *unstructured.Unstructured", c.DeepCopyObject())
	}
	return u
}

// servedCluster is one cluster's objects as Cluster API v1.14 served them at
// 1,000 with idle providers (testdata), and machinesAsServed, decoded as a
// client decodes them: whole numbers are int64.
func servedCluster(t *testing.T) (cluster, machines []map[string]any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "cluster-idle-providers.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := utiljson.Unmarshal(data, &cluster); err != nil {
		t.Fatal(err)
	}
	if err := utiljson.Unmarshal([]byte(machinesAsServed), &machines); err != nil {
		t.Fatal(err)
	}
	return cluster, machines
}

// TestCompactRoundTrip: every object of a cluster as Cluster API v1.14
// served it, Machines and the agent's managed fields included, reads back
// from the cache exactly as trimmed, with its metadata typed for the
// informer's indexes and handlers, and each read is a copy of its own.
func TestCompactRoundTrip(t *testing.T) {
	objs, machines := servedCluster(t)
	objs = append(objs, machines...)
	objs = append(objs, machineDeployment(7).Object)
	tr := &transform{fieldManager: apply.FieldManager, fields: &sharedFields{trees: map[string]sharedTree{}}, strings: newInterner()}
	for _, o := range objs {
		in := &unstructured.Unstructured{Object: o}
		out, err := tr.apply(in.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		want := in.DeepCopy()
		tr.trim(want)
		got := cached(t, out)
		if !reflect.DeepEqual(got.Object, want.Object) {
			gotJSON, _ := json.Marshal(got.Object)
			wantJSON, _ := json.Marshal(want.Object)
			t.Errorf("%s %s reads back otherwise:\n got %s\nwant %s", in.GetKind(), in.GetName(), gotJSON, wantJSON)
		}
		c := out.(*Compact)
		if c.GetName() != in.GetName() || c.GetNamespace() != in.GetNamespace() || !reflect.DeepEqual(c.GetLabels(), in.GetLabels()) ||
			!reflect.DeepEqual(c.GetOwnerReferences(), in.GetOwnerReferences()) || c.GroupVersionKind() != in.GroupVersionKind() {
			t.Errorf("%s %s: the typed metadata is not the object's: %+v %+v", in.GetKind(), in.GetName(), c.TypeMeta, c.ObjectMeta)
		}
		got.SetLabels(map[string]string{"changed": "by a reader"})
		_ = unstructured.SetNestedField(got.Object, "changed", "spec", "changed")
		if again := cached(t, out); !reflect.DeepEqual(again.Object, want.Object) {
			t.Errorf("%s %s: a reader's change reached the cache", in.GetKind(), in.GetName())
		}
	}
}

// BenchmarkRead reports what one read of a cached MachineDeployment costs:
// the copy the cache hands out, before (a deep copy of the maps) and now
// (decoded from the compact form).
func BenchmarkRead(b *testing.B) {
	trimmed := machineDeployment(1)
	(&transform{fieldManager: apply.FieldManager, fields: &sharedFields{trees: map[string]sharedTree{}}, strings: newInterner()}).trim(trimmed)
	out, err := New(apply.FieldManager)(machineDeployment(1))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		cached k8sruntime.Object
	}{{"maps", trimmed}, {"compact", out.(*Compact)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = bc.cached.DeepCopyObject()
			}
		})
	}
}

// TestTrimmedPoolReadsAsServedAtEitherCoreVersion: a pool's counts are read
// from where each core version keeps them (v1beta1: status.v1beta2 and its
// own; v1beta2: status.deprecated.v1beta1 and its own), and the cache keeps
// every one of them.
func TestTrimmedPoolReadsAsServedAtEitherCoreVersion(t *testing.T) {
	for version, status := range map[string]map[string]any{
		"v1beta1": {"observedGeneration": int64(4), "replicas": int64(3), "readyReplicas": int64(3), "availableReplicas": int64(3), "updatedReplicas": int64(3),
			"v1beta2": map[string]any{"readyReplicas": int64(2), "availableReplicas": int64(2), "upToDateReplicas": int64(1)}},
		"v1beta2": {"observedGeneration": int64(4), "replicas": int64(3), "upToDateReplicas": int64(3),
			"deprecated": map[string]any{"v1beta1": map[string]any{"updatedReplicas": int64(1), "readyReplicas": int64(2), "availableReplicas": int64(2)}}},
	} {
		md := machineDeployment(1)
		md.SetAPIVersion("cluster.x-k8s.io/" + version)
		md.SetGeneration(4)
		md.Object["status"] = status
		out, err := New(apply.FieldManager)(md.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		read := func(u *unstructured.Unstructured) upgrade.PartObserved {
			obs, err := health.ObserveState(&clusterstate.State{MachineDeployments: map[string]*clusterstate.Worker{"md-a": {Object: u}}})
			if err != nil {
				t.Fatal(err)
			}
			return obs.MachineDeployments["md-a"]
		}
		served, trimmed := read(md), read(cached(t, out))
		if !reflect.DeepEqual(trimmed, served) || served.ReadyReplicas != 2 || served.UpToDateReplicas != 1 {
			t.Errorf("%s: trimmed reads %+v, served %+v; want both 2 ready and 1 up to date", version, trimmed, served)
		}
	}
}

// TestUnchanged: an update that changed only what the transform drops is
// unchanged as the cache keeps it; one that changed anything kept is not,
// nor is a resync (the same resourceVersion) or an object not kept compact.
func TestUnchanged(t *testing.T) {
	transform := New(apply.FieldManager)
	kept := func(change func(u *unstructured.Unstructured)) any {
		t.Helper()
		u := machineDeployment(1)
		change(u)
		out, err := transform(u)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	nextVersion := func(u *unstructured.Unstructured) { u.SetResourceVersion("2") }
	old := kept(func(*unstructured.Unstructured) {})
	for _, tc := range []struct {
		name   string
		change func(u *unstructured.Unstructured)
		want   bool
	}{
		{"another manager's status fields the agent does not read", func(u *unstructured.Unstructured) {
			nextVersion(u)
			mf := u.GetManagedFields()
			mf[1].Time = &metav1.Time{Time: mf[1].Time.Add(time.Minute)}
			u.SetManagedFields(mf)
			_ = unstructured.SetNestedField(u.Object, "4", "status", "deprecated", "v1beta1", "selector")
		}, true},
		{"a resync: the same resourceVersion", func(*unstructured.Unstructured) {}, false},
		{"a status field the agent reads", func(u *unstructured.Unstructured) {
			nextVersion(u)
			_ = unstructured.SetNestedField(u.Object, int64(0), "status", "readyReplicas")
		}, false},
		{"the spec", func(u *unstructured.Unstructured) {
			nextVersion(u)
			_ = unstructured.SetNestedField(u.Object, int64(2), "spec", "replicas")
		}, false},
		{"a label", func(u *unstructured.Unstructured) {
			nextVersion(u)
			u.SetLabels(map[string]string{"team": "b"})
		}, false},
		{"the generation", func(u *unstructured.Unstructured) {
			nextVersion(u)
			u.SetGeneration(7)
		}, false},
		{"the agent's own apply", func(u *unstructured.Unstructured) {
			nextVersion(u)
			mf := u.GetManagedFields()
			mf[0].Time = &metav1.Time{Time: mf[0].Time.Add(time.Minute)}
			u.SetManagedFields(mf)
		}, false},
	} {
		if got := Unchanged(old, kept(tc.change)); got != tc.want {
			t.Errorf("%s: Unchanged = %v, want %v", tc.name, got, tc.want)
		}
	}
	plain := machineDeployment(1)
	if Unchanged(plain, kept(nextVersion)) {
		t.Error("an object not kept compact counts as unchanged")
	}
}
