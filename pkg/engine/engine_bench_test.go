package engine_test

import (
	"context"
	"os"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/pkg/engine"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine/bundle"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine/names"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine/variables"
	"github.com/kubectl-topology/kubectl-topology/test/fixture"
)

func loadExample(tb testing.TB) (*bundle.Bundle, *bundle.Topology, *bundle.Class) {
	tb.Helper()
	b := bundle.New()
	for _, f := range []string{"../../examples/docker/class.yaml", "../../examples/docker/topology.yaml"} {
		fh, err := os.Open(f)
		if err != nil {
			tb.Fatal(err)
		}
		if err := b.Read(fh, f, "default"); err != nil {
			tb.Fatal(err)
		}
		fh.Close()
	}
	t := b.Topologies[0]
	c, err := b.ClassFor(t)
	if err != nil {
		tb.Fatal(err)
	}
	return b, t, c
}

func TestComputeExample(t *testing.T) {
	b, topo, class := loadExample(t)
	res, err := engine.Compute(context.Background(), engine.Input{Topology: topo.Topology, Class: class.TopologyClass, Templates: b.Templates(), Names: names.NewSeeded(1)})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(res.Desired.Objects()); got != 15 {
		t.Fatalf("want 15 objects, got %d", got)
	}
	if res.Desired.MachineDeployments["md-gpu"].MachineHealthCheck != nil {
		t.Error("md-gpu disables its health check but got one")
	}
	if res.Desired.MachineDeployments["md-a"].MachineHealthCheck == nil {
		t.Error("md-a inherits the class health check but has none")
	}
}

// BenchmarkComputeExample measures the desired state of the example class,
// with the variable catalog compiled once as the agent and TUI do.
func BenchmarkComputeExample(b *testing.B) {
	bn, topo, class := loadExample(b)
	cat, _ := variables.NewCatalog(class.Spec.Variables)
	ix := bn.Templates()
	gen := names.NewSeeded(1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := engine.Compute(context.Background(), engine.Input{Topology: topo.Topology, Class: class.TopologyClass, Templates: ix, Names: gen, Catalog: cat}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkComputeStress is the stress class: 100 variables, 200 patches, 20 MachineDeployments.
func BenchmarkComputeStress(b *testing.B) {
	bn, topo, class := loadExample(b)
	c, t := fixture.Stress(class.TopologyClass, topo.Topology)
	cat, errs := variables.NewCatalog(c.Spec.Variables)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	ix := bn.Templates()
	gen := names.NewSeeded(1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := engine.Compute(context.Background(), engine.Input{Topology: t, Class: c, Templates: ix, Names: gen, Catalog: cat}); err != nil {
			b.Fatal(err)
		}
	}
}
