package desiredstate

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
)

// InUse keys what a control plane (either contract's path) and a pool refer
// to as their Machines' templates, and nothing else.
func TestInUseKeysEveryTemplateReferred(t *testing.T) {
	cp := &unstructured.Unstructured{Object: map[string]any{"kind": "KubeadmControlPlane", "spec": map[string]any{"machineTemplate": map[string]any{"spec": map[string]any{
		"infrastructureRef": map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachineTemplate", "name": "dev-cp-1"},
	}}}}}
	oldCP := &unstructured.Unstructured{Object: map[string]any{"kind": "KubeadmControlPlane", "spec": map[string]any{"machineTemplate": map[string]any{
		"infrastructureRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "DockerMachineTemplate", "name": "dev-cp-0"},
	}}}}
	md := &unstructured.Unstructured{Object: map[string]any{"kind": "MachineDeployment", "spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"infrastructureRef": map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachineTemplate", "name": "dev-md-1"},
		"bootstrap":         map[string]any{"configRef": map[string]any{"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": "dev-md-boot-1"}}}}}}}
	got := InUse([]*unstructured.Unstructured{cp, oldCP, md}, "ns")
	for _, want := range []contract.ObjectKey{
		{Group: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachineTemplate", Namespace: "ns", Name: "dev-cp-1"},
		{Group: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachineTemplate", Namespace: "ns", Name: "dev-cp-0"},
		{Group: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachineTemplate", Namespace: "ns", Name: "dev-md-1"},
		{Group: "bootstrap.cluster.x-k8s.io", Kind: "KubeadmConfigTemplate", Namespace: "ns", Name: "dev-md-boot-1"},
	} {
		if !got[want] {
			t.Errorf("%s is not in use; got %v", want, got)
		}
	}
	if len(got) != 4 {
		t.Errorf("got %d in use, want 4: %v", len(got), got)
	}
}
