package membership

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/printer"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// inMemoryFleet is n copies of examples/in-memory's Topology (three control
// plane machines, pools of 2 and 1) and its class, read as the plugin reads them.
func inMemoryFleet(tb testing.TB, n int) ([]*v1alpha2.Topology, *v1alpha2.TopologyClass) {
	tb.Helper()
	read := func(path string) []byte {
		data, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		return data
	}
	topo := &v1alpha2.Topology{}
	if err := yaml.Unmarshal(read("../../examples/in-memory/topology.yaml"), topo); err != nil {
		tb.Fatal(err)
	}
	class := &v1alpha2.TopologyClass{}
	for _, doc := range strings.Split(string(read("../../examples/in-memory/class.yaml")), "\n---") {
		if strings.Contains(doc, "kind: TopologyClass") {
			if err := yaml.Unmarshal([]byte(doc), class); err != nil {
				tb.Fatal(err)
			}
		}
	}
	out := make([]*v1alpha2.Topology, n)
	for i := range out {
		t := topo.DeepCopy()
		t.Name, t.Namespace = fmt.Sprintf("c-%04d", i), fmt.Sprintf("team-%d", i%10)
		out[i] = t
	}
	return out, class
}

func TestRolloutPreviewCountsEachWavesMachines(t *testing.T) {
	fleet, class := inMemoryFleet(t, 20)
	fleet[5].Spec.Version = "v1.34.0" // already there: nothing changes
	classOf := func(context.Context, *v1alpha2.Topology) (*v1alpha2.TopologyClass, error) { return class, nil }
	p, err := buildPreview(context.Background(), fixture.VersionRollout(), fleet, classOf, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	printer.RolloutPreview(&out, fixture.VersionRollout(), p)
	for _, want := range []string{
		"TopologyRollout to-134: version v1.34.0 over 20 cluster(s)",
		"Wave 1 (canary): 1 cluster(s), 6 machine(s) replaced",
		"Wave 2: 2 cluster(s), 12 machine(s) replaced",
		"Wave 3: 17 cluster(s), 96 machine(s) replaced",
		"topology/team-0/c-0000: version is v1.33.1 (the rollout sets v1.34.0); 6 machine(s) replaced",
		"topology/team-5/c-0005: already as the rollout sets it; nothing changes",
		"Fleet: 20 cluster(s) in 3 wave(s), 114 machine(s) replaced in all.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the preview lacks %q:\n%s", want, out.String())
		}
	}
}

// BenchmarkRolloutDryRun1000 is `rollout create --dry-run`'s work over
// 1,000 clusters once they are read: the waves, each cluster's upgrade
// plan and Machines replaced, and the printed preview.
func BenchmarkRolloutDryRun1000(b *testing.B) {
	fleet, class := inMemoryFleet(b, 1000)
	classOf := func(context.Context, *v1alpha2.Topology) (*v1alpha2.TopologyClass, error) { return class, nil }
	ro := fixture.VersionRollout()
	for b.Loop() {
		p, err := buildPreview(context.Background(), ro, fleet, classOf, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		printer.RolloutPreview(io.Discard, ro, p)
	}
}

// TestRolloutPreviewNamesEveryClusterRefusedAtPreflight: the dry run runs
// each changing cluster's preflight and lists the refused with the reason;
// a cluster that does not change is not preflighted.
func TestRolloutPreviewNamesEveryClusterRefusedAtPreflight(t *testing.T) {
	fleet, class := inMemoryFleet(t, 12)
	fleet[3].Spec.Version = "v1.34.0" // nothing to change, nothing to check
	classOf := func(context.Context, *v1alpha2.Topology) (*v1alpha2.TopologyClass, error) { return class, nil }
	ro := fixture.VersionRollout()
	p, err := buildPreview(context.Background(), ro, fleet, classOf, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	checked := map[string]bool{}
	refuse := func(_ context.Context, _ v1alpha2.RolloutChange, t *v1alpha2.Topology) error {
		mu.Lock()
		checked[t.Name] = true
		mu.Unlock()
		if t.Name == "c-0007" {
			return &PreflightError{Problems: []string{`the API server refused KubeadmControlPlane team-7/c-0007-x in a dry run: denied: freeze`}}
		}
		return nil
	}
	changeOf := func(v1alpha2.RolloutClusterRef) v1alpha2.RolloutChange { return ro.Spec.Change }
	if err := preflightPreview(context.Background(), p, fleet, changeOf, preflights{whole: refuse, topology: refuse}); err != nil {
		t.Fatal(err)
	}
	if len(checked) != 11 || checked["c-0003"] {
		t.Errorf("preflighted %d clusters (c-0003 %v), want the 11 that change", len(checked), checked["c-0003"])
	}
	var out strings.Builder
	printer.RolloutPreviewSummary(&out, ro, p)
	for _, want := range []string{
		"Preflight: 1 cluster(s) would be refused now; the agent fails each when its turn comes unless what refuses it changes:",
		"  topology/team-7/c-0007 (wave 3): the API server refused KubeadmControlPlane team-7/c-0007-x in a dry run: denied: freeze",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the preview lacks %q:\n%s", want, out.String())
		}
	}
}

// A variable change's live plan dry-runs every object: a refusal there lists
// the cluster as refused and the dry run goes on; a cluster whose plan passed
// is preflighted without sending its objects again; an answer the API server
// could not give now stops it.
func TestRolloutPreviewOfAVariableDryRunsEachObjectOnce(t *testing.T) {
	fleet, class := inMemoryFleet(t, 6)
	ro := fixture.VersionRollout()
	ro.Spec.Change = v1alpha2.RolloutChange{Variables: []v1alpha2.ClusterVariable{{Name: "maxPods", Value: apiextensionsv1.JSON{Raw: []byte("200")}}}}
	freeze := apierrors.NewForbidden(schema.GroupResource{Group: "controlplane.cluster.x-k8s.io", Resource: "kubeadmcontrolplanes"}, "c-0002-x", fmt.Errorf("denied: change freeze"))
	replaced := func(_ context.Context, edited *v1alpha2.Topology) (int64, error) {
		if edited.Name == "c-0002" {
			return 0, freeze
		}
		return 1, nil
	}
	of := func(context.Context, *v1alpha2.Topology) (*v1alpha2.TopologyClass, error) { return class, nil }
	p, err := buildPreview(context.Background(), ro, fleet, of, replaced, nil)
	if err != nil {
		t.Fatalf("a refusal in one cluster's live plan ended the dry run: %v", err)
	}
	var mu sync.Mutex
	whole, topology := map[string]bool{}, map[string]bool{}
	count := func(into map[string]bool) preflightSource {
		return func(_ context.Context, _ v1alpha2.RolloutChange, t *v1alpha2.Topology) error {
			mu.Lock()
			defer mu.Unlock()
			into[t.Name] = true
			return nil
		}
	}
	changeOf := func(v1alpha2.RolloutClusterRef) v1alpha2.RolloutChange { return ro.Spec.Change }
	if err := preflightPreview(context.Background(), p, fleet, changeOf, preflights{whole: count(whole), topology: count(topology)}); err != nil {
		t.Fatal(err)
	}
	if len(whole) != 0 || len(topology) != 5 || topology["c-0002"] {
		t.Errorf("preflights: whole %v, without the objects %v; want the 5 whose plan passed without the objects, c-0002 none", whole, topology)
	}
	var out strings.Builder
	printer.RolloutPreviewSummary(&out, ro, p)
	for _, want := range []string{
		"Fleet: 6 cluster(s) in 3 wave(s), 5 machine(s) replaced in all.",
		"Preflight: 1 cluster(s) would be refused now",
		"topology/" + fleet[2].Namespace + "/c-0002 (wave 3): kubeadmcontrolplanes.controlplane.cluster.x-k8s.io \"c-0002-x\" is forbidden: denied: change freeze",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the preview lacks %q:\n%s", want, out.String())
		}
	}
	busy := func(context.Context, *v1alpha2.Topology) (int64, error) {
		return 0, apierrors.NewTooManyRequests("busy", 1)
	}
	if _, err := buildPreview(context.Background(), ro, fleet, of, busy, nil); err == nil || !strings.Contains(err.Error(), "previewing the change") {
		t.Errorf("an answer the API server could not give now: %v, want the dry run stopped", err)
	}
}

// A pinned pool sits out a fleet's version change: the dry run says it
// stays, and its Machines are not counted among those replaced.
func TestRolloutPreviewLeavesPinnedPoolsOut(t *testing.T) {
	fleet, class := inMemoryFleet(t, 3)
	fleet[1].Spec.Workers.MachineDeployments[1].Version = "v1.33.1"
	classOf := func(context.Context, *v1alpha2.Topology) (*v1alpha2.TopologyClass, error) { return class, nil }
	p, err := buildPreview(context.Background(), fixture.VersionRollout(), fleet, classOf, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	printer.RolloutPreview(&out, fixture.VersionRollout(), p)
	pool := fleet[1].Spec.Workers.MachineDeployments[1]
	for _, want := range []string{
		"topology/team-0/c-0000: version is v1.33.1 (the rollout sets v1.34.0); 6 machine(s) replaced",
		fmt.Sprintf("topology/team-1/c-0001: version is v1.33.1 (the rollout sets v1.34.0); %s stays at its pinned v1.33.1; %d machine(s) replaced", pool.Name, 6-*pool.Replicas),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the preview lacks %q:\n%s", want, out.String())
		}
	}
}
