package capi

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestPinnedPoolSitsOutAnUpgradeAndMovesAlone pins md-b at v1.33.1 and
// upgrades the Topology to v1.34.0 with the plugin: Cluster API's
// controllers roll the control plane and md-a and replace not one md-b
// Machine, and status reports md-b Pinned. Moving md-b's pin to v1.34.0
// then rolls md-b alone. An upgrade that would leave md-b more minors
// behind than a kubelet may be is refused at admission, naming md-b.
func TestPinnedPoolSitsOutAnUpgradeAndMovesAlone(t *testing.T) {
	t.Parallel()
	ns := suite.InMemoryCluster(t, "pin", func(topo *v1alpha2.Topology) {
		topo.Spec.ControlPlane.Replicas = ptr.To[int32](1)
		topo.Spec.Workers.MachineDeployments = []v1alpha2.MachineDeploymentTopology{
			{Class: "default-worker", Name: "md-a", Replicas: ptr.To[int32](1)},
			{Class: "default-worker", Name: "md-b", Replicas: ptr.To[int32](2), Version: "v1.33.1"},
		}
	})
	ctx := context.Background()
	suite.Settle(t, ns, "dev")
	names := func(pool string, cp bool) []string {
		t.Helper()
		ms, err := suite.Machines(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			if m.Pool == pool && m.ControlPlane == cp {
				out = append(out, m.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	mdB, mdA, cp := names("md-b", false), names("md-a", false), names("", true)
	if len(mdB) != 2 || len(mdA) != 1 || len(cp) != 1 {
		t.Fatalf("before the upgrade: md-b %v, md-a %v, control plane %v; want 2, 1 and 1 Machines", mdB, mdA, cp)
	}

	preview := suite.MustTopology(t, "upgrade", "dev", "-n", ns, "--version", "v1.34.0", "--dry-run")
	if !strings.Contains(preview, "not upgraded: md-b is pinned to v1.33.1") {
		t.Errorf("upgrade --dry-run does not list md-b as staying:\n%s", preview)
	}
	suite.MustTopology(t, "upgrade", "dev", "-n", ns, "--version", "v1.34.0", "--yes")
	fixture.Eventually(t, fixture.SettleTimeout, "the control plane and md-a run v1.34.0", func(ctx context.Context) (bool, error) {
		ms, err := suite.Machines(ctx, ns)
		if err != nil {
			return false, err
		}
		cpRunning, cpAll := fixture.Count(ms, "", "v1.34.0")
		aRunning, aAll := fixture.Count(ms, "md-a", "v1.34.0")
		return cpRunning == 1 && cpAll == 1 && aRunning == 1 && aAll == 1, fmt.Errorf("control plane %d/%d, md-a %d/%d at v1.34.0", cpRunning, cpAll, aRunning, aAll)
	})
	status := suite.Settle(t, ns, "dev")
	if !strings.Contains(status, "v1.33.1 (pinned)") || !strings.Contains(status, "pinned to v1.33.1") {
		t.Errorf("status does not show md-b pinned:\n%s", status)
	}
	if got := names("md-b", false); !slices.Equal(got, mdB) {
		t.Errorf("md-b, pinned, had its Machines replaced by the upgrade: %v, then %v", mdB, got)
	}
	if got := names("md-a", false); slices.Equal(got, mdA) {
		t.Errorf("md-a kept its Machines %v through the upgrade", got)
	}
	var topo v1alpha2.Topology
	if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, &topo); err != nil {
		t.Fatal(err)
	}
	if st := topo.Status.MachineDeployments; len(st) != 2 || st[1].Phase != v1alpha2.PhasePinned || !st[1].Pinned || st[1].DesiredVersion != "v1.33.1" {
		t.Errorf("md-b's status %+v, want phase Pinned, pinned, desired v1.33.1", st)
	}
	wide := suite.MustTopology(t, "get", "dev", "-n", ns, "-o", "wide")
	if !strings.Contains(wide, "md-b=v1.33.1") {
		t.Errorf("get -o wide does not list md-b's pin:\n%s", wide)
	}

	// Move the pin: md-b rolls, and nothing else does.
	mdA, cp = names("md-a", false), names("", true)
	suite.MustTopology(t, "set", "version", "dev", "-n", ns, "md-b=v1.34.0", "--yes")
	fixture.Eventually(t, fixture.SettleTimeout, "md-b runs v1.34.0", func(ctx context.Context) (bool, error) {
		ms, err := suite.Machines(ctx, ns)
		running, all := fixture.Count(ms, "md-b", "v1.34.0")
		return err == nil && running == 2 && all == 2, fmt.Errorf("md-b %d/%d at v1.34.0 (%v)", running, all, err)
	})
	suite.Settle(t, ns, "dev")
	if got := names("md-a", false); !slices.Equal(got, mdA) {
		t.Errorf("moving md-b's pin replaced md-a's Machines: %v, then %v", mdA, got)
	}
	if got := names("", true); !slices.Equal(got, cp) {
		t.Errorf("moving md-b's pin replaced the control plane's Machines: %v, then %v", cp, got)
	}

	// Four minors past the pin: refused at admission, md-b named, nothing changed.
	err := fixture.ChangeTopology(ctx, suite.K8s, client.ObjectKey{Namespace: ns, Name: "dev"}, func(t *v1alpha2.Topology) { t.Spec.Version = "v1.38.0" })
	if err == nil || !strings.Contains(err.Error(), "spec.workers.machineDeployments[1].version") || !strings.Contains(err.Error(), "upgrading to v1.38.0 would leave MachineDeployment md-b, pinned to v1.34.0, 4 minors behind") {
		t.Errorf("an upgrade four minors past md-b's pin: %v; want it refused naming md-b", err)
	}
	if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, &topo); err != nil || topo.Spec.Version != "v1.34.0" {
		t.Errorf("after the refused upgrade the Topology is at %s (%v), want v1.34.0", topo.Spec.Version, err)
	}
	// And a pin newer than the control plane, through the plugin.
	if out, errOut, err := suite.Topology("", "set", "version", "dev", "-n", ns, "md-b=v1.35.0", "--yes"); err == nil || !strings.Contains(errOut, "MachineDeployment md-b is pinned to v1.35.0, newer than the control plane's v1.34.0") {
		t.Errorf("set version md-b=v1.35.0: %v\n%s%s", err, out, errOut)
	}
}

// TestFleetRolloutLeavesPinnedPoolsAlone rolls three clusters to v1.34.0,
// one of which has a second pool pinned at v1.33.1: the dry run says the
// pool stays, the rollout completes, every other Machine runs v1.34.0, and
// the pinned pool's Machine is the one it had.
func TestFleetRolloutLeavesPinnedPoolsAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	names := []string{"f1", "f2", "f3"}
	ns, _ := suite.InMemoryFleet(t, "fleetpin", names...)
	if err := fixture.ChangeTopology(ctx, suite.K8s, client.ObjectKey{Namespace: ns, Name: "f2"}, func(topo *v1alpha2.Topology) {
		topo.Spec.Workers.MachineDeployments = append(topo.Spec.Workers.MachineDeployments,
			v1alpha2.MachineDeploymentTopology{Class: "default-worker", Name: "md-db", Replicas: ptr.To[int32](1), Version: "v1.33.1"})
	}); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		suite.Settle(t, ns, name)
	}
	pinned := func() []fixture.Machine {
		t.Helper()
		ms, err := suite.Machines(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		var out []fixture.Machine
		for _, m := range ms {
			if m.Cluster == "f2" && m.Pool == "md-db" {
				out = append(out, m)
			}
		}
		return out
	}
	before := pinned()
	if len(before) != 1 {
		t.Fatalf("f2's md-db has Machines %+v, want one", before)
	}
	name := "pin-" + ns
	args := []string{"rollout", "create", name, "-l", "fleet=" + ns, "--version", "v1.34.0", "--waves", "1,100%", "--max-in-flight", "3", "--cluster-timeout", "6m"}
	preview := suite.MustTopology(t, append(args, "--dry-run")...)
	if !strings.Contains(preview, "topology/"+ns+"/f2: version is v1.33.1 (the rollout sets v1.34.0); md-db stays at its pinned v1.33.1") {
		t.Errorf("the dry run does not say f2's md-db stays:\n%s", preview)
	}
	suite.MustTopology(t, append(args, "--yes")...)
	t.Cleanup(func() {
		_ = suite.K8s.Delete(context.Background(), &v1alpha2.TopologyRollout{ObjectMeta: objectMeta(name)})
	})
	ro := suite.WaitRollout(t, name, fixture.SettleTimeout, "completed", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutCompleted || ro.Status.Phase == v1alpha2.RolloutHalted
	})
	if ro.Status.Phase != v1alpha2.RolloutCompleted || ro.Status.Succeeded != 3 {
		t.Fatalf("the rollout ended %s with %d succeeded: %+v", ro.Status.Phase, ro.Status.Succeeded, ro.Status.Clusters)
	}
	ms, err := suite.Machines(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Pool == "md-db" {
			continue
		}
		if m.Version != "v1.34.0" || m.Phase != "Running" {
			t.Errorf("%s's Machine %s (%s) is %s at %s after the rollout, want Running at v1.34.0", m.Cluster, m.Name, m.Pool, m.Phase, m.Version)
		}
	}
	if after := pinned(); len(after) != 1 || after[0].Name != before[0].Name || after[0].Version != "v1.33.1" {
		t.Errorf("f2's pinned md-db: %+v before the rollout, %+v after; want the same Machine at v1.33.1", before, after)
	}

	// A version md-db's pin could not stay under refuses f2 by name, and
	// the rollout is not created.
	_, errOut, err := suite.Topology("", "rollout", "create", "far-"+ns, "-l", "fleet="+ns, "--version", "v1.37.0", "--yes")
	if err == nil || !strings.Contains(errOut, "Topology/"+ns+"/f2: upgrading to v1.37.0 would leave MachineDeployment md-db, pinned to v1.33.1, 4 minors behind") {
		t.Errorf("a rollout four minors past f2's pin: %v\n%s", err, errOut)
	}
	if err := suite.K8s.Get(ctx, client.ObjectKey{Name: "far-" + ns}, &v1alpha2.TopologyRollout{}); err == nil {
		t.Error("the refused rollout was created")
	}
}
