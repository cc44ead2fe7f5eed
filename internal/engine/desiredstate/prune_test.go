package desiredstate

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
)

func TestPruneKeepsEmptyObjectsOfTheTemplate(t *testing.T) {
	got := prune(&unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"backend": map[string]any{"inMemory": map[string]any{}},
			"dns":     map[string]any{"imageTag": nil},
			"files":   []any{map[string]any{"owner": nil, "path": "/a"}},
			"empty":   []any{},
		},
	}})
	want := map[string]any{
		"spec": map[string]any{
			"backend": map[string]any{"inMemory": map[string]any{}},
			"files":   []any{map[string]any{"path": "/a"}},
			"empty":   []any{},
		},
	}
	if !reflect.DeepEqual(want, got.Object) {
		t.Errorf("prune gave\n%v\nwant\n%v", got.Object, want)
	}
}

func TestDropUnsetEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint map[string]any
		keep     bool
	}{
		{"zero from conversion", map[string]any{"host": "", "port": int64(0)}, false},
		{"empty", map[string]any{}, false},
		{"set by the template", map[string]any{"host": "lb.example.com", "port": int64(6443)}, true},
		{"port only", map[string]any{"host": "", "port": int64(6443)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"controlPlaneEndpoint": tc.endpoint}}}
			dropUnsetEndpoint(obj)
			_, found, _ := unstructured.NestedMap(obj.Object, "spec", "controlPlaneEndpoint")
			if found != tc.keep {
				t.Errorf("endpoint %v kept: %v, want %v", tc.endpoint, found, tc.keep)
			}
		})
	}
}

func TestObserveStaleStatus(t *testing.T) {
	md := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
		"metadata": map[string]any{"name": "dev-md-a", "generation": int64(3)},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"version": "v1.34.0"}}},
		"status":   map[string]any{"observedGeneration": int64(2), "replicas": int64(2), "readyReplicas": int64(2), "updatedReplicas": int64(2)},
	}}
	obs, err := health.ObserveState(&clusterstate.State{MachineDeployments: map[string]*clusterstate.Worker{"md-a": {Object: md}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := obs.MachineDeployments["md-a"]; got.UpToDateReplicas != 0 || !got.Upgrading {
		t.Errorf("a MachineDeployment whose controller has not seen generation 3 reads %+v, want no replica up to date and upgrading", got)
	}
	_ = unstructured.SetNestedField(md.Object, int64(3), "status", "observedGeneration")
	if obs, err = health.ObserveState(&clusterstate.State{MachineDeployments: map[string]*clusterstate.Worker{"md-a": {Object: md}}}); err != nil {
		t.Fatal(err)
	}
	if got := obs.MachineDeployments["md-a"]; got.UpToDateReplicas != 2 || got.Upgrading {
		t.Errorf("an observed MachineDeployment reads %+v, want 2 up to date", got)
	}
}

func TestObservedChangedByAWrite(t *testing.T) {
	read := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
		"metadata": map[string]any{"name": "dev-md-a", "namespace": "ns", "generation": int64(2)},
		"status":   map[string]any{"observedGeneration": int64(2), "replicas": int64(3), "readyReplicas": int64(3), "updatedReplicas": int64(3)},
	}}
	state := &clusterstate.State{MachineDeployments: map[string]*clusterstate.Worker{"md-a": {Object: read}}}
	obs, err := health.ObserveState(state)
	if err != nil {
		t.Fatal(err)
	}
	same := read.DeepCopy()
	obs.Changed(state, same)
	if got := obs.MachineDeployments["md-a"]; got.UpToDateReplicas != 3 || got.Upgrading {
		t.Errorf("a write that changed nothing made md-a read %+v", got)
	}
	rotated := read.DeepCopy()
	rotated.SetGeneration(3)
	obs.Changed(state, rotated)
	if got := obs.MachineDeployments["md-a"]; got.UpToDateReplicas != 0 || !got.Upgrading {
		t.Errorf("after a write of a new spec md-a reads %+v, want no replica up to date and rolling out", got)
	}
}
