package loader_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/names"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/loader"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// server is a fake API server holding the example's class and templates,
// what one reconcile of its Topology wrote, and Machines.
func server(t *testing.T, objs ...client.Object) (client.Client, fixture.Example) {
	t.Helper()
	ex, err := fixture.LoadExample("default")
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha2.AddToScheme(scheme))
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyClassKind), meta.RESTScopeNamespace)
	for _, gvk := range append(fixture.GeneratedKinds, contract.CoreV1Beta1.GroupVersion().WithKind("Machine")) {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	for _, o := range ex.Templates {
		mapper.Add(o.GroupVersionKind(), meta.RESTScopeNamespace)
		objs = append(objs, o.DeepCopy())
	}
	objs = append(objs, ex.Class.DeepCopy())
	return fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(objs...).Build(), ex
}

func TestLoadFindsWhatTheAgentMade(t *testing.T) {
	ex, err := fixture.LoadExample("default")
	if err != nil {
		t.Fatal(err)
	}
	topo := ex.Topology.DeepCopy()
	topo.UID = "topology-uid"
	res, err := desiredstate.Compute(context.Background(), desiredstate.Input{Topology: topo, Class: ex.Class, Templates: clusterstate.NewTemplateIndex(ex.Templates...), Names: names.NewSeeded(3)})
	if err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for _, o := range res.Desired.Objects() {
		if o.GetKind() != "Cluster" { // the agent was stopped before the Cluster
			objs = append(objs, o.DeepCopy())
		}
	}
	machine := &unstructured.Unstructured{}
	machine.SetGroupVersionKind(contract.CoreV1Beta1.GroupVersion().WithKind("Machine"))
	machine.SetNamespace("default")
	machine.SetName("m-1")
	machine.SetLabels(map[string]string{clusterv1.ClusterNameLabel: "dev", health.MachineDeploymentNameOfMachine: res.Desired.MachineDeployments["md-a"].Object.GetName()})
	_ = unstructured.SetNestedField(machine.Object, "v1.32.0", "spec", "version")
	objs = append(objs, machine)
	c, _ := server(t, objs...)

	l, err := (&loader.Loader{Reader: c}).Load(context.Background(), topo)
	if err != nil {
		t.Fatal(err)
	}
	if l.Class.Name != ex.Class.Name || l.Templates.Len() != len(ex.Templates) {
		t.Errorf("class %s with %d templates, want %s with %d", l.Class.Name, l.Templates.Len(), ex.Class.Name, len(ex.Templates))
	}
	if l.Current.ControlPlane.Object == nil || l.Current.ControlPlane.InfrastructureMachineTemplate == nil || l.Current.InfrastructureCluster == nil {
		t.Error("what was made before the Cluster is not adopted")
	}
	if !l.Observed.MachineDeployments["md-a"].Upgrading {
		t.Error("md-a has a Machine at another version but is not seen upgrading")
	}
}

func TestLoadSaysWhatIsMissing(t *testing.T) {
	c, ex := server(t)
	topo := ex.Topology.DeepCopy()
	topo.Spec.ClassRef.Name = "nope"
	_, err := (&loader.Loader{Reader: c}).Load(context.Background(), topo)
	var missing *loader.NotFoundError
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), "spec.classRef: TopologyClass default/nope not found") {
		t.Errorf("got %v, want the class named as not found", err)
	}
	for _, tpl := range ex.Templates {
		if tpl.GetKind() == "DockerClusterTemplate" {
			if err := c.Delete(context.Background(), tpl.DeepCopy()); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, err = (&loader.Loader{Reader: c}).Load(context.Background(), ex.Topology)
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), "spec.infrastructure.templateRef: DockerClusterTemplate default/") {
		t.Errorf("got %v, want the missing template and the class field naming it", err)
	}
}

// A reader for the templates of another namespace is asked for them alone.
func TestTemplateReaderIsAskedForTemplates(t *testing.T) {
	c, ex := server(t)
	asked := map[string]bool{}
	l := &loader.Loader{Reader: c, TemplateReader: func(ns string) client.Reader {
		asked[ns] = true
		return c
	}}
	if _, err := l.Templates(context.Background(), ex.Class); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || !asked["default"] {
		t.Errorf("asked for %v", asked)
	}
}

// TestObjectsAreNotMachinesBootstrapConfigs: the example's MachinePool has a
// KubeadmConfig, and Cluster API makes one per Machine with the Cluster's
// labels and the owned label. Only the pool's is the topology's, so neither
// the agent's pruning nor the live plan's deletions see the Machine's.
func TestObjectsAreNotMachinesBootstrapConfigs(t *testing.T) {
	ex, err := fixture.LoadExample("default")
	if err != nil {
		t.Fatal(err)
	}
	res, err := desiredstate.Compute(context.Background(), desiredstate.Input{Topology: ex.Topology, Class: ex.Class, Templates: clusterstate.NewTemplateIndex(ex.Templates...), Names: names.NewSeeded(3)})
	if err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	var poolConfig *unstructured.Unstructured
	for _, o := range res.Desired.Objects() {
		objs = append(objs, o.DeepCopy())
		if o.GetKind() == "KubeadmConfig" {
			poolConfig = o
		}
	}
	if poolConfig == nil {
		t.Fatal("the example's MachinePool has no KubeadmConfig")
	}
	machines := poolConfig.DeepCopy()
	machines.SetName("dev-control-plane-x7k2p")
	labels := machines.GetLabels()
	delete(labels, clusterv1.ClusterTopologyMachinePoolNameLabel)
	labels["cluster.x-k8s.io/control-plane"] = ""
	machines.SetLabels(labels)
	c, _ := server(t, append(objs, machines)...)

	l, err := (&loader.Loader{Reader: c}).Load(context.Background(), ex.Topology)
	if err != nil {
		t.Fatal(err)
	}
	var configs []string
	for _, o := range l.Objects {
		if o.GetKind() == "KubeadmConfig" {
			configs = append(configs, o.GetName())
		}
	}
	if len(configs) != 1 || configs[0] != poolConfig.GetName() {
		t.Errorf("KubeadmConfigs read as the topology's: %v, want only the pool's %s", configs, poolConfig.GetName())
	}
}
