package plan

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func generated(kind, name, cluster string, spec map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "x.io/v1", "kind": kind, "spec": spec}}
	o.SetName(name)
	o.SetNamespace("ns")
	o.SetLabels(map[string]string{clusterv1.ClusterTopologyOwnedLabel: "", clusterv1.ClusterNameLabel: cluster})
	return o
}

func TestCompute(t *testing.T) {
	desiredInfra := generated("DockerCluster", "dev-infra", "dev", map[string]any{"loadBalancer": map[string]any{"image": "new"}})
	desiredCP := generated("KubeadmControlPlane", "dev-cp", "dev", map[string]any{"replicas": int64(3)})
	desiredNew := generated("DockerMachineTemplate", "dev-new", "dev", map[string]any{"a": "b"})
	desired := &clusterstate.State{InfrastructureCluster: desiredInfra,
		ControlPlane: clusterstate.ControlPlane{Object: desiredCP, InfrastructureMachineTemplate: desiredNew}}

	curInfra := generated("DockerCluster", "dev-infra", "dev", map[string]any{"loadBalancer": map[string]any{"image": "old"}, "set-by-provider": true})
	curCP := generated("KubeadmControlPlane", "dev-cp", "dev", map[string]any{"replicas": int64(3), "version": "v1"})
	stale := generated("DockerMachineTemplate", "dev-old", "dev", nil)
	otherCluster := generated("DockerMachineTemplate", "prod-old", "prod", nil)
	unowned := generated("DockerMachineTemplate", "dev-hand-made", "dev", nil)
	unowned.SetLabels(map[string]string{clusterv1.ClusterNameLabel: "dev"})
	otherNamespace := generated("DockerMachineTemplate", "dev-elsewhere", "dev", nil)
	otherNamespace.SetNamespace("elsewhere")

	p, err := Compute(Input{Desired: desired, Current: []*unstructured.Unstructured{curInfra, curCP, stale, otherCluster, unowned, otherNamespace}, Cluster: "dev", Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range p.Changes {
		got = append(got, string(c.Action)+" "+c.Object.GetKind()+" "+c.Object.GetName())
	}
	want := "created DockerMachineTemplate dev-new, modified DockerCluster dev-infra, deleted DockerMachineTemplate dev-old"
	if strings.Join(got, ", ") != want {
		t.Fatalf("changes:\n%s\nwant\n%s", strings.Join(got, ", "), want)
	}
	if p.Count(Created) != 1 || p.Count(Modified) != 1 || p.Count(Deleted) != 1 {
		t.Errorf("counts %d/%d/%d", p.Count(Created), p.Count(Modified), p.Count(Deleted))
	}
	mod := p.Changes[1]
	if string(mod.MergePatch) != `{"spec":{"loadBalancer":{"image":"new"}}}` {
		t.Errorf("merge patch %s", mod.MergePatch)
	}
	ops, _ := json.Marshal(mod.Operations)
	if string(ops) != `[{"op":"replace","path":"/spec/loadBalancer/image","value":"new"}]` {
		t.Errorf("operations %s", ops)
	}
	if keep, _, _ := unstructured.NestedBool(mod.Object.Object, "spec", "set-by-provider"); !keep {
		t.Error("the field the provider set is dropped from the modified object")
	}
	for _, line := range []string{"--- DockerCluster_ns_dev-infra.original.yaml", "+++ DockerCluster_ns_dev-infra.modified.yaml", "-    image: old", "+    image: new"} {
		if !strings.Contains(mod.Diff, line) {
			t.Errorf("the diff lacks %q:\n%s", line, mod.Diff)
		}
	}

	summary, err := Compute(Input{Desired: desired, Current: []*unstructured.Unstructured{curInfra, curCP}, Cluster: "dev", Namespace: "ns", Summary: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range summary.Changes {
		if c.Action == Modified && (c.Diff != "" || c.Operations != nil || c.MergePatch == nil || c.Before == nil) {
			t.Errorf("a summary change carries diff %q, ops %v, merge patch %s", c.Diff, c.Operations, c.MergePatch)
		}
	}
}

// TestMachinesBootstrapConfigsAreNotDeleted: a class with a MachinePool of
// KubeadmConfigs, and among the existing objects a Machine's KubeadmConfig,
// labelled for the Cluster and owned as Cluster API labels it, but without
// the pool-name label. It is Cluster API's, not the topology's: no plan —
// offline from files, live or in the editor — lists it as deleted, while the
// pool's own KubeadmConfig that is no longer desired is.
func TestMachinesBootstrapConfigsAreNotDeleted(t *testing.T) {
	class := &v1alpha2.TopologyClass{}
	class.Name = "c"
	class.Spec.Workers.MachinePools = []v1alpha2.MachinePoolClass{{Class: "mp"}}
	class.Spec.Workers.MachinePools[0].Bootstrap.TemplateRef = v1alpha2.ClusterClassTemplateReference{APIVersion: "bootstrap.cluster.x-k8s.io/v1beta2", Kind: "KubeadmConfigTemplate", Name: "mp-bootstrap"}
	machines := generated("KubeadmConfig", "dev-md-a-x7k2p", "dev", nil)
	pools := generated("KubeadmConfig", "dev-mp-old", "dev", nil)
	pools.SetLabels(map[string]string{clusterv1.ClusterTopologyOwnedLabel: "", clusterv1.ClusterNameLabel: "dev", clusterv1.ClusterTopologyMachinePoolNameLabel: "mp-old"})

	p, err := Compute(Input{Desired: &clusterstate.State{}, Current: []*unstructured.Unstructured{machines, pools}, Cluster: "dev", Namespace: "ns", Class: class})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 1 || p.Changes[0].Action != Deleted || p.Changes[0].Object.GetName() != "dev-mp-old" {
		t.Errorf("changes %+v: want only the pool's KubeadmConfig deleted", p.Changes)
	}
}

// TestTemplatesStillInUseAreNotDeleted: a template no longer desired that a
// MachineSet on the server still uses is kept, as the agent keeps it
// (desiredstate.InUse), and is not listed as deleted; one nothing uses is.
// The MachineSets are asked for once, and only when something is not desired.
func TestTemplatesStillInUseAreNotDeleted(t *testing.T) {
	rolling := generated("DockerMachineTemplate", "dev-md-a-old", "dev", nil)
	unused := generated("DockerMachineTemplate", "dev-md-a-older", "dev", nil)
	bootstrap := generated("KubeadmConfigTemplate", "dev-md-a-boot-old", "dev", nil)
	ms := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet", "spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"infrastructureRef": map[string]any{"apiGroup": "x.io", "kind": "DockerMachineTemplate", "name": "dev-md-a-old"},
		"bootstrap":         map[string]any{"configRef": map[string]any{"apiGroup": "x.io", "kind": "KubeadmConfigTemplate", "name": "dev-md-a-boot-old"}},
	}}}}}
	ms.SetName("dev-md-a-7x9k2")
	ms.SetNamespace("ns")
	asked := 0
	machineSets := func() ([]*unstructured.Unstructured, error) {
		asked++
		return []*unstructured.Unstructured{ms}, nil
	}
	p, err := Compute(Input{Desired: &clusterstate.State{}, Current: []*unstructured.Unstructured{rolling, unused, bootstrap}, Cluster: "dev", Namespace: "ns", MachineSets: machineSets})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 1 || p.Changes[0].Action != Deleted || p.Changes[0].Object.GetName() != "dev-md-a-older" {
		t.Errorf("changes %+v: want only dev-md-a-older deleted; the MachineSet still uses the others", p.Changes)
	}
	if asked != 1 {
		t.Errorf("the MachineSets were asked for %d times, want once", asked)
	}
	asked = 0
	if _, err := Compute(Input{Desired: &clusterstate.State{ControlPlane: clusterstate.ControlPlane{Object: rolling}}, Current: []*unstructured.Unstructured{rolling}, Cluster: "dev", Namespace: "ns", MachineSets: machineSets}); err != nil {
		t.Fatal(err)
	}
	if asked != 0 {
		t.Error("the MachineSets were asked for though every object is desired")
	}
}
