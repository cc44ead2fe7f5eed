package webhook

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// classWebhook is the TopologyClass webhook over a cache holding the example
// class and n Topologies of it (and one of another class), indexed by class
// as the agent's cache is.
func classWebhook(tb testing.TB, n int) (*TopologyClass, fixture.Example) {
	tb.Helper()
	ex, err := fixture.LoadExample("default")
	if err != nil {
		tb.Fatal(err)
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha2.AddToScheme(scheme))
	objs := []client.Object{ex.Class.DeepCopy()}
	for i := range n {
		t := ex.Topology.DeepCopy()
		t.Name = fmt.Sprintf("t-%04d", i)
		objs = append(objs, t)
	}
	other := ex.Topology.DeepCopy()
	other.Name, other.Spec.ClassRef.Name = "other", "another-class"
	objs = append(objs, other)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&v1alpha2.Topology{}, v1alpha2.ClassKeyField, func(o client.Object) []string { return v1alpha2.ClassKeyOf(o.(*v1alpha2.Topology)) }).Build()
	return &TopologyClass{Client: c}, ex
}

func TestClassChangesCannotStrandTopologies(t *testing.T) {
	w, ex := classWebhook(t, 2)
	changed := ex.Class.DeepCopy()
	for i := range changed.Spec.Variables {
		if changed.Spec.Variables[i].Name == "auditPolicy" {
			p := changed.Spec.Variables[i].Schema.OpenAPIV3Schema.Properties["level"]
			p.Enum = []apiextensionsv1.JSON{{Raw: []byte(`"None"`)}, {Raw: []byte(`"Metadata"`)}}
			changed.Spec.Variables[i].Schema.OpenAPIV3Schema.Properties["level"] = p
		}
	}
	_, err := w.ValidateUpdate(context.Background(), ex.Class, changed)
	if err == nil || !strings.Contains(err.Error(), "Topology default/t-0000 would become invalid") || !strings.Contains(err.Error(), "default/t-0001") || strings.Contains(err.Error(), "other") {
		t.Errorf("got %v, want both Topologies of the class named, and no other", err)
	}
	_, err = w.ValidateDelete(context.Background(), ex.Class)
	if err == nil || !strings.Contains(err.Error(), "[default/t-0000 default/t-0001]") {
		t.Errorf("deleting a class in use: got %v", err)
	}
	moved := ex.Class.DeepCopy()
	moved.Annotations = map[string]string{contract.DeleteForMoveAnnotation: ""}
	if _, err := w.ValidateDelete(context.Background(), moved); err != nil {
		t.Errorf("clusterctl move deleting the source's copy of a class in use: got %v, want it allowed", err)
	}
}

// BenchmarkClassUpdateWithThousandTopologies is the class webhook checking an
// update against the 1,000 Topologies of the class, read from the cache.
func BenchmarkClassUpdateWithThousandTopologies(b *testing.B) {
	w, ex := classWebhook(b, 1000)
	changed := ex.Class.DeepCopy()
	changed.Spec.Workers.MachineDeployments[0].MinReadySeconds = nil
	for b.Loop() {
		if _, err := w.ValidateUpdate(context.Background(), ex.Class, changed); err != nil {
			b.Fatal(err)
		}
	}
}
