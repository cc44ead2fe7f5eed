package desiredstate_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"

	"github.com/kubectl-topology/kubectl-topology/internal/bundle"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/names"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/variables"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
)

func loadExample(tb testing.TB) (*bundle.Bundle, *bundle.Topology, *bundle.Class) {
	tb.Helper()
	return loadFiles(tb, "../../../examples/docker/class.yaml", "../../../examples/docker/topology.yaml")
}

// loadFiles reads a class and one topology, in either dialect, defaulted as
// plan defaults them.
func loadFiles(tb testing.TB, files ...string) (*bundle.Bundle, *bundle.Topology, *bundle.Class) {
	tb.Helper()
	b := bundle.New()
	for _, f := range files {
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
	if t.Upstream != nil {
		cat, errs := variables.NewCatalog(c.Spec.Variables)
		if len(errs) > 0 {
			tb.Fatal(errs)
		}
		if err := t.Default(cat); err != nil {
			tb.Fatal(err)
		}
	}
	return b, t, c
}

func TestComputeUpstreamNeedsTheCluster(t *testing.T) {
	b, topo, class := loadFiles(t, "../../../testdata/parity/docker-kubeadm/class.yaml", "../../../testdata/parity/docker-kubeadm/cluster.yaml")
	_, err := desiredstate.Compute(context.Background(), desiredstate.Input{Topology: topo.Topology, Class: class.TopologyClass, Templates: b.Templates(), Names: names.NewSeeded(1), Dialect: contract.DialectUpstream})
	if err == nil || !strings.Contains(err.Error(), "the upstream dialect needs the Cluster object in Input.Current.Cluster") {
		t.Fatalf("error %v", err)
	}
}

func TestComputeExample(t *testing.T) {
	b, topo, class := loadExample(t)
	res, err := desiredstate.Compute(context.Background(), desiredstate.Input{Topology: topo.Topology, Class: class.TopologyClass, Templates: b.Templates(), Names: names.NewSeeded(1)})
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
		if _, err := desiredstate.Compute(context.Background(), desiredstate.Input{Topology: topo.Topology, Class: class.TopologyClass, Templates: ix, Names: gen, Catalog: cat}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchmarkCompute measures the desired state of a topology, with the
// variable catalog compiled once as the agent and TUI do.
func benchmarkCompute(b *testing.B, bn *bundle.Bundle, topo *bundle.Topology, class *bundle.Class) {
	cat, errs := variables.NewCatalog(class.Spec.Variables)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	ix := bn.Templates()
	gen := names.NewSeeded(1)
	current := &clusterstate.State{Cluster: topo.Upstream} // as plan gives it
	b.ReportAllocs()
	for b.Loop() {
		if _, err := desiredstate.Compute(context.Background(), desiredstate.Input{Topology: topo.Topology, Class: class.TopologyClass, Templates: ix, Names: gen, Catalog: cat, Dialect: topo.Dialect(), Current: current}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkComputeUpstream measures the in-repo upstream-dialect cases:
// docker-kubeadm is the size of CAPD's quick-start (one control plane, two
// MachineDeployments, a handful of patches), coverage is larger.
func BenchmarkComputeUpstream(b *testing.B) {
	for _, name := range []string{"docker-kubeadm", "coverage"} {
		b.Run(name, func(b *testing.B) {
			dir := "../../../testdata/parity/" + name
			bn, topo, class := loadFiles(b, dir+"/class.yaml", dir+"/cluster.yaml")
			benchmarkCompute(b, bn, topo, class)
		})
	}
}

// BenchmarkComputeQuickStart measures CAPD's own quick-start class and
// Cluster from ../shared, when that checkout is beside the repository
// (QUICKSTART_DIR names another place); the repository does not carry them.
func BenchmarkComputeQuickStart(b *testing.B) {
	dir := os.Getenv("QUICKSTART_DIR")
	if dir == "" {
		dir = "../../../../shared/fixtures/capi-v1beta1"
	}
	if _, err := os.Stat(dir + "/clusterclass-quick-start.yaml"); err != nil {
		b.Skipf("no quick-start fixtures at %s (set QUICKSTART_DIR)", dir)
	}
	bn, topo, class := loadFiles(b, dir+"/clusterclass-quick-start.yaml", dir+"/cluster-qs1.yaml")
	benchmarkCompute(b, bn, topo, class)
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
		if _, err := desiredstate.Compute(context.Background(), desiredstate.Input{Topology: t, Class: c, Templates: ix, Names: gen, Catalog: cat}); err != nil {
			b.Fatal(err)
		}
	}
}
