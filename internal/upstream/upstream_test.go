package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/draft"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
)

const clusterYAML = `
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: dev
  namespace: team-a
  resourceVersion: "42"
  generation: 3
  labels: {env: prod}
spec:
  paused: false
  clusterNetwork:
    pods: {cidrBlocks: [192.168.0.0/16]}
  topology:
    classRef: {name: quick-start}
    version: v1.33.1
    controlPlane: {replicas: 3}
    workers:
      machineDeployments:
      - {class: default-worker, name: md-a, replicas: 2}
    variables:
    - {name: imageRepository, value: registry.example}
status:
  observedGeneration: 2
  conditions:
  - {type: Paused, status: "False", reason: NotPaused, lastTransitionTime: "2026-11-20T10:00:00Z"}
  - {type: TopologyReconciled, status: "False", reason: ControlPlaneUpgradePending, message: "Control plane rollout and upgrade to version v1.34.0 on hold.", observedGeneration: 3, lastTransitionTime: "2026-11-20T10:00:00Z"}
  - {type: Available, status: "True", reason: Available, observedGeneration: 3, lastTransitionTime: "2026-11-20T10:00:00Z"}
  controlPlane:
    upgradePlan: [{version: v1.34.0}]
  workers:
    upgradePlan: [{version: v1.34.0}]
`

func cluster(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(clusterYAML))
	if err != nil {
		t.Fatal(err)
	}
	// As the API client decodes it: integers as int64.
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestFromClusterCarriesWhatStatusAndWritesNeed(t *testing.T) {
	topo, err := FromCluster(cluster(t))
	if err != nil {
		t.Fatal(err)
	}
	if !IsCluster(topo) || contract.KindOf(topo) != "Cluster" {
		t.Errorf("kind %q: a Topology read from a Cluster must say it is one", topo.Kind)
	}
	if topo.ResourceVersion != "42" || topo.Generation != 3 || topo.Status.ObservedGeneration != 2 {
		t.Errorf("resourceVersion %q generation %d observed %d, want 42, 3, 2", topo.ResourceVersion, topo.Generation, topo.Status.ObservedGeneration)
	}
	if topo.Spec.Version != "v1.33.1" || *topo.Spec.ControlPlane.Replicas != 3 || topo.Spec.ClassRef.Name != "quick-start" {
		t.Errorf("spec not converted: %+v", topo.Spec)
	}
	var types []string
	for _, c := range topo.Status.Conditions {
		types = append(types, c.Type)
	}
	// Paused=False is no problem: only conditions that are true when all is well are kept.
	if want := []string{"TopologyReconciled", "Available"}; !reflect.DeepEqual(types, want) {
		t.Errorf("conditions %v, want %v", types, want)
	}
	if c := topo.Status.Conditions[0]; c.ObservedGeneration != 3 || c.Reason != "ControlPlaneUpgradePending" {
		t.Errorf("TopologyReconciled carried as %+v", c)
	}
	if p := topo.Status.UpgradePlan; p == nil || !reflect.DeepEqual(p.ControlPlane, []string{"v1.34.0"}) || !reflect.DeepEqual(p.Workers, []string{"v1.34.0"}) {
		t.Errorf("upgrade plan %+v, want v1.34.0 for both", p)
	}
}

func TestFromClusterRefusesAClusterWithoutTopology(t *testing.T) {
	u := cluster(t)
	unstructured.RemoveNestedField(u.Object, "spec", "topology")
	if _, err := FromCluster(u); err == nil || !strings.Contains(err.Error(), "has no spec.topology") {
		t.Fatalf("got %v, want the Cluster refused for having no spec.topology", err)
	}
}

func TestPatchCarriesOnlyTheEditAndTheResourceVersion(t *testing.T) {
	orig, err := FromCluster(cluster(t))
	if err != nil {
		t.Fatal(err)
	}
	edited := orig.DeepCopy()
	edited.Spec.Version = "v1.34.0"
	edited.Spec.Workers.MachineDeployments[0].Replicas = ptr.To[int32](4)
	edited.Spec.Paused = true
	got, err := Patch(orig, edited)
	if err != nil {
		t.Fatal(err)
	}
	var patch map[string]any
	if err := json.Unmarshal(got, &patch); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"metadata": map[string]any{"resourceVersion": "42"},
		"spec": map[string]any{
			"paused": true,
			"topology": map[string]any{
				"version": "v1.34.0",
				// A list is replaced whole by a merge patch: every pool is sent.
				"workers": map[string]any{"machineDeployments": []any{map[string]any{"class": "default-worker", "name": "md-a", "replicas": float64(4)}}},
			},
		},
	}
	if !reflect.DeepEqual(patch, want) {
		t.Errorf("patch\n%s\nwant\n%v", got, want)
	}

	same, err := Patch(orig, orig.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if string(same) != `{"metadata":{"resourceVersion":"42"}}` {
		t.Errorf("an edit that changes nothing patches %s, want only the precondition", same)
	}

	resumed := edited.DeepCopy()
	resumed.Spec.Paused = false
	back, err := Patch(edited, resumed)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(back), `"paused":null`) {
		t.Errorf("resuming patches %s, want spec.paused removed", back)
	}
}

func TestDryRunPatchHasNoPrecondition(t *testing.T) {
	got, err := withoutResourceVersion([]byte(`{"metadata":{"resourceVersion":"42"},"spec":{"paused":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"spec":{"paused":true}}` {
		t.Errorf("got %s", got)
	}
}

func TestWriteToAClusterChangedMeanwhileIsAConflictWithARebase(t *testing.T) {
	ctx := context.Background()
	u := cluster(t)
	u.SetResourceVersion("")
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(u.GroupVersionKind(), meta.RESTScopeNamespace)
	c := fake.NewClientBuilder().WithRESTMapper(mapper).WithObjects(u).Build()
	store := Store{Client: c, CoreVersion: contract.CoreV1Beta2}
	key := client.ObjectKeyFromObject(u)

	orig, err := store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// Someone scales the control plane meanwhile.
	theirs := orig.DeepCopy()
	theirs.Spec.ControlPlane.Replicas = ptr.To[int32](5)
	if _, err := store.Update(ctx, orig, theirs, false); err != nil {
		t.Fatal(err)
	}
	mine := orig.DeepCopy()
	mine.Spec.Version = "v1.34.0"
	_, err = draft.Write(ctx, store, orig, mine)
	var conflict *draft.ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("got %v, want a conflict", err)
	}
	if !strings.HasPrefix(conflict.Error(), "Cluster team-a/dev changed on the server") {
		t.Errorf("the conflict names %q, want the Cluster", conflict.Error())
	}
	if r := conflict.Rebased; r.Spec.Version != "v1.34.0" || *r.Spec.ControlPlane.Replicas != 5 {
		t.Errorf("rebased edit has version %s and %d control plane replicas, want v1.34.0 and 5", r.Spec.Version, *r.Spec.ControlPlane.Replicas)
	}
	stored, err := store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Spec.Version != "v1.33.1" {
		t.Errorf("the conflicting write changed the version to %s", stored.Spec.Version)
	}
	if _, err := draft.Write(ctx, store, conflict.Latest, conflict.Rebased); err != nil {
		t.Fatalf("writing the rebased edit: %v", err)
	}
	if stored, _ = store.Get(ctx, key); stored.Spec.Version != "v1.34.0" || *stored.Spec.ControlPlane.Replicas != 5 {
		t.Errorf("after the rebased write: version %s, %d replicas", stored.Spec.Version, *stored.Spec.ControlPlane.Replicas)
	}
}
