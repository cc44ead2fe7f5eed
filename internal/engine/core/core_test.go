package core

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/yaml"
)

func fromYAML(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// The same Machine, as a v1beta2 core serves it and as a v1beta1 core
// (with v1beta2 conditions beside its own) serves it.
const (
	machineV1Beta2 = `
apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata: {name: dev-md-a-2, namespace: default, labels: {cluster.x-k8s.io/deployment-name: dev-md-a}}
spec:
  clusterName: dev
  version: v1.33.1
  bootstrap: {configRef: {apiGroup: bootstrap.cluster.x-k8s.io, kind: KubeadmConfig, name: dev-md-a-2}}
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerMachine, name: dev-md-a-2}
status:
  phase: Running
  nodeRef: {name: dev-md-a-2}
  nodeInfo: {kubeletVersion: v1.33.1}
  conditions:
  - {type: Ready, status: "False", reason: NotReady, message: "* NodeHealthy: Node dev-md-a-2 is not ready", lastTransitionTime: "2026-11-23T11:50:00Z"}
`
	machineV1Beta1 = `
apiVersion: cluster.x-k8s.io/v1beta1
kind: Machine
metadata: {name: dev-md-a-2, namespace: default, labels: {cluster.x-k8s.io/deployment-name: dev-md-a}}
spec:
  clusterName: dev
  version: v1.33.1
  bootstrap: {configRef: {apiVersion: bootstrap.cluster.x-k8s.io/v1beta1, kind: KubeadmConfig, name: dev-md-a-2}}
  infrastructureRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: DockerMachine, name: dev-md-a-2}
status:
  phase: Running
  nodeRef: {apiVersion: v1, kind: Node, name: dev-md-a-2}
  nodeInfo: {kubeletVersion: v1.33.1}
  conditions:
  - {type: Ready, status: "False", severity: Warning, reason: NodeNotReady, lastTransitionTime: "2026-11-23T11:50:00Z"}
  v1beta2:
    conditions:
    - {type: Ready, status: "False", reason: NotReady, message: "* NodeHealthy: Node dev-md-a-2 is not ready", lastTransitionTime: "2026-11-23T11:50:00Z"}
`
)

// TestMachineReadsBothCoreVersionsAlike: what health reads of a Machine
// (version, Node, kubelet, conditions, references) is the same whichever
// core version served it.
func TestMachineReadsBothCoreVersionsAlike(t *testing.T) {
	for name, doc := range map[string]string{"v1beta2": machineV1Beta2, "v1beta1": machineV1Beta1} {
		m, err := Machine(fromYAML(t, doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m.Spec.Version != "v1.33.1" || !m.Status.NodeRef.IsDefined() || m.Status.NodeInfo == nil || m.Status.NodeInfo.KubeletVersion != "v1.33.1" {
			t.Errorf("%s: version %q, nodeRef %+v, nodeInfo %+v", name, m.Spec.Version, m.Status.NodeRef, m.Status.NodeInfo)
		}
		if len(m.Status.Conditions) != 1 || m.Status.Conditions[0].Reason != "NotReady" {
			t.Errorf("%s: conditions %+v, want the v1beta2 Ready condition", name, m.Status.Conditions)
		}
		infra := clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachine", Name: "dev-md-a-2"}
		if m.Spec.InfrastructureRef != infra {
			t.Errorf("%s: infrastructureRef %+v, want %+v", name, m.Spec.InfrastructureRef, infra)
		}
		if m.Spec.Bootstrap.ConfigRef.APIGroup != "bootstrap.cluster.x-k8s.io" {
			t.Errorf("%s: bootstrap.configRef %+v, want its group", name, m.Spec.Bootstrap.ConfigRef)
		}
		if m.GroupVersionKind() != clusterv1.GroupVersion.WithKind("Machine") {
			t.Errorf("%s: read as %s, want v1beta2 Machine", name, m.GroupVersionKind())
		}
	}
}

// TestMachineKeepsV1Beta1ConditionsApart: a v1beta1 Machine's own
// conditions are upstream's deprecated ones, not its v1beta2 conditions.
func TestMachineKeepsV1Beta1ConditionsApart(t *testing.T) {
	m, err := Machine(fromYAML(t, machineV1Beta1))
	if err != nil {
		t.Fatal(err)
	}
	if d := m.Status.Deprecated; d == nil || d.V1Beta1 == nil || len(d.V1Beta1.Conditions) != 1 || d.V1Beta1.Conditions[0].Reason != "NodeNotReady" { //nolint:staticcheck // the deprecated field is what this holds
		t.Errorf("deprecated conditions %+v, want the v1beta1 Ready condition", m.Status.Deprecated)
	}
}

// TestMachineNamesWhatCannotBeRead: a Machine whose fields have the wrong
// shape is an error naming it, not a Machine with those fields empty.
func TestMachineNamesWhatCannotBeRead(t *testing.T) {
	bad := fromYAML(t, machineV1Beta2)
	bad.Object["spec"].(map[string]any)["version"] = map[string]any{"major": 1}
	if _, err := Machines([]*unstructured.Unstructured{fromYAML(t, machineV1Beta1), bad}); err == nil || !strings.Contains(err.Error(), "Machine default/dev-md-a-2") {
		t.Errorf("got %v, want an error naming Machine default/dev-md-a-2", err)
	}
}

// TestClusterConvertsItsReferences: a v1beta1 Cluster's references name an
// apiVersion; read as v1beta2 they name the group, as upstream's conversion
// webhook writes them.
func TestClusterConvertsItsReferences(t *testing.T) {
	c, err := Cluster(fromYAML(t, `
apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata: {name: dev, namespace: default}
spec:
  controlPlaneRef: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: KubeadmControlPlane, name: dev-cp}
  infrastructureRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: DockerCluster, name: dev}
  topology: {class: quick-start, version: v1.33.1}
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Spec.ControlPlaneRef.APIGroup != "controlplane.cluster.x-k8s.io" || c.Spec.ControlPlaneRef.Name != "dev-cp" || c.Spec.InfrastructureRef.APIGroup != "infrastructure.cluster.x-k8s.io" {
		t.Errorf("references %+v and %+v, want their groups", c.Spec.ControlPlaneRef, c.Spec.InfrastructureRef)
	}
	if c.Spec.Topology.ClassRef.Name != "quick-start" || c.Spec.Topology.Version != "v1.33.1" {
		t.Errorf("topology %+v", c.Spec.Topology)
	}
}

// BenchmarkMachine is what reading a Machine as upstream's type costs the
// agent per Machine and reconcile, at each core version.
func BenchmarkMachine(b *testing.B) {
	for name, doc := range map[string]string{"v1beta2": machineV1Beta2, "v1beta1": machineV1Beta1} {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Machine(u); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
