package engine_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/pkg/engine"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine/bundle"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine/names"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine/variables"
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
	c := class.TopologyClass.DeepCopy()
	t := topo.Topology.DeepCopy()
	base := c.Spec.Variables[0]
	for i := 0; len(c.Spec.Variables) < 100; i++ {
		v := *base.DeepCopy()
		v.Name = fmt.Sprintf("var%03d", i)
		c.Spec.Variables = append(c.Spec.Variables, v)
	}
	for i := 0; len(c.Spec.Patches) < 200; i++ {
		p := *c.Spec.Patches[i%5].DeepCopy() // the 6th removes a field: applied twice it fails, as it should
		p.Name = fmt.Sprintf("%s-%03d", p.Name, i)
		c.Spec.Patches = append(c.Spec.Patches, p)
	}
	mds := t.Spec.Workers.MachineDeployments
	for i := 0; len(mds) < 20; i++ {
		md := *mds[i%2].DeepCopy()
		md.Name = fmt.Sprintf("md-%02d", i)
		mds = append(mds, md)
	}
	t.Spec.Workers.MachineDeployments = mds
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
