package plan

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func object(kind, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"kind": kind, "metadata": map[string]any{"name": name}, "spec": spec}}
}

func TestReplacements(t *testing.T) {
	md := func(replicas int64, image string) *unstructured.Unstructured {
		return object("MachineDeployment", "md", map[string]any{"replicas": replicas, "template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"a": image}}, "spec": map[string]any{"version": image}}})
	}
	kcp := func(replicas int64, version, san string) *unstructured.Unstructured {
		return object("KubeadmControlPlane", "cp", map[string]any{"replicas": replicas, "version": version,
			"kubeadmConfigSpec": map[string]any{"clusterConfiguration": map[string]any{"apiServer": map[string]any{"certSANs": []any{san}}}}})
	}
	other := func(version string) *unstructured.Unstructured {
		return object("AcmeControlPlane", "acme", map[string]any{"replicas": int64(3), "version": version, "tuning": version})
	}
	p := &Plan{Changes: []Change{
		{Action: Modified, Before: md(2, "v1"), Object: md(4, "v1")},             // replicas only
		{Action: Modified, Before: kcp(3, "v1", "a"), Object: kcp(3, "v1", "b")}, // kubeadm config
		{Action: Modified, Before: kcp(1, "v1", "a"), Object: kcp(5, "v2", "a")}, // version
		{Action: Modified, Before: md(2, "v1"), Object: md(2, "v2")},             // template spec
		{Action: Modified, Before: other("v1"), Object: other("v2")},             // provider's control plane
		{Action: Created, Object: md(2, "v1")},                                   // new: nothing replaced
		// A reference read back in its group's newest version is the same reference.
		{Action: Modified, Before: withRef(md(2, "v1"), "infrastructure.cluster.x-k8s.io/v1beta2", "spec", "template", "spec", "infrastructureRef"),
			Object: withRef(md(3, "v1"), "infrastructure.cluster.x-k8s.io/v1beta1", "spec", "template", "spec", "infrastructureRef")},
		{Action: Modified, Before: withRef(kcp(1, "v1", "a"), "infrastructure.cluster.x-k8s.io/v1beta2", "spec", "machineTemplate", "infrastructureRef"),
			Object: withRef(kcp(5, "v1", "a"), "infrastructure.cluster.x-k8s.io/v1beta1", "spec", "machineTemplate", "infrastructureRef")},
		{Action: Modified, Before: object("DockerCluster", "x", nil), Object: object("DockerCluster", "x", map[string]any{"a": "b"})},
	}}
	got := Replacements(p, "AcmeControlPlane")
	want := []string{
		"KubeadmControlPlane cp: 3 machine(s) replaced (spec.kubeadmConfigSpec changes)",
		"KubeadmControlPlane cp: 1 machine(s) replaced (spec.version changes)",
		"MachineDeployment md: 2 machine(s) replaced (spec.template.spec changes)",
		"AcmeControlPlane acme: 3 machine(s) replaced (spec.version changes)",
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("replacement %d: %q, want %q", i, got[i], want[i])
		}
	}
	if n := len(Replacements(p, "KubeadmControlPlane")); n != 3 {
		t.Errorf("with kubeadm's control plane, %d replacements; want 3 (AcmeControlPlane is then not one)", n)
	}
}

// withRef sets a reference to template "t" of apiVersion at path in o.
func withRef(o *unstructured.Unstructured, apiVersion string, path ...string) *unstructured.Unstructured {
	_ = unstructured.SetNestedMap(o.Object, map[string]any{"apiVersion": apiVersion, "kind": "DevMachineTemplate", "name": "t"}, path...)
	return o
}
