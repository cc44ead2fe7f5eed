package desiredstate

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
)

// InUse keys what a control plane (either contract's path), a pool and a
// MachineSet (read at either core version) refer to as their Machines'
// templates, and nothing else.
func TestInUseKeysEveryTemplateReferred(t *testing.T) {
	cp := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane", "spec": map[string]any{"machineTemplate": map[string]any{"spec": map[string]any{
		"infrastructureRef": map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachineTemplate", "name": "dev-cp-1"},
	}}}}}
	oldCP := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlane", "spec": map[string]any{"machineTemplate": map[string]any{
		"infrastructureRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "DockerMachineTemplate", "name": "dev-cp-0"},
	}}}}
	md := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment", "spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"infrastructureRef": map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachineTemplate", "name": "dev-md-1"},
		"bootstrap":         map[string]any{"configRef": map[string]any{"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": "dev-md-boot-1"}}}}}}}
	oldMS := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineSet", "spec": map[string]any{"clusterName": "dev", "template": map[string]any{"spec": map[string]any{
		"clusterName":       "dev",
		"infrastructureRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "DockerMachineTemplate", "name": "dev-md-0", "namespace": "ns"},
		"bootstrap":         map[string]any{"configRef": map[string]any{"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1", "kind": "KubeadmConfigTemplate", "name": "dev-md-boot-0"}}}}}}}
	got, err := InUse([]*unstructured.Unstructured{cp, oldCP, md, oldMS}, "ns")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []clusterstate.Key{
		{Group: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachineTemplate", Namespace: "ns", Name: "dev-cp-1"},
		{Group: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachineTemplate", Namespace: "ns", Name: "dev-cp-0"},
		{Group: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachineTemplate", Namespace: "ns", Name: "dev-md-1"},
		{Group: "bootstrap.cluster.x-k8s.io", Kind: "KubeadmConfigTemplate", Namespace: "ns", Name: "dev-md-boot-1"},
		{Group: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachineTemplate", Namespace: "ns", Name: "dev-md-0"},
		{Group: "bootstrap.cluster.x-k8s.io", Kind: "KubeadmConfigTemplate", Namespace: "ns", Name: "dev-md-boot-0"},
	} {
		if !got[want] {
			t.Errorf("%s is not in use; got %v", want, got)
		}
	}
	if len(got) != 6 {
		t.Errorf("got %d in use, want 6: %v", len(got), got)
	}

	// A MachineSet that is not one is named, not read as using nothing.
	bad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet", "metadata": map[string]any{"name": "dev-md-x", "namespace": "ns"}, "spec": map[string]any{"replicas": "three"}}}
	if _, err := InUse([]*unstructured.Unstructured{bad}, "ns"); err == nil || !strings.Contains(err.Error(), "dev-md-x") {
		t.Errorf("an unreadable MachineSet: %v", err)
	}
}
