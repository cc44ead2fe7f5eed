package capi

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/apply"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestUpgradeConcurrencyDeferAndRebase upgrades a cluster of four pools
// with the upgrade-concurrency annotation at 2 and one pool deferred: two
// pools roll at a time, never three, and the deferred one waits until its
// annotation goes. Then the cluster is rebased onto another class whose
// worker template differs, and Cluster API replaces the workers' machines
// and leaves the control plane's.
func TestUpgradeConcurrencyDeferAndRebase(t *testing.T) {
	t.Parallel()
	ns := suite.InMemoryCluster(t, "concurrency", func(topo *v1alpha2.Topology) {
		topo.Annotations = map[string]string{clusterv1.ClusterTopologyUpgradeConcurrencyAnnotation: "2"}
		topo.Spec.ControlPlane.Replicas = ptr.To[int32](1)
		topo.Spec.Workers.MachineDeployments = nil
		for _, name := range []string{"md-a", "md-b", "md-c", "md-d"} {
			topo.Spec.Workers.MachineDeployments = append(topo.Spec.Workers.MachineDeployments,
				v1alpha2.MachineDeploymentTopology{Class: "default-worker", Name: name, Replicas: ptr.To[int32](1)})
		}
		topo.Spec.Workers.MachineDeployments[3].Metadata.Annotations = map[string]string{clusterv1.ClusterTopologyDeferUpgradeAnnotation: ""}
	})
	ctx := context.Background()
	suite.Settle(t, ns, "dev")

	suite.MustTopology(t, "upgrade", "dev", "-n", ns, "--version", "v1.34.0", "--yes")
	// A pool rolls from the moment its MachineDeployment asks for the new
	// version until its machine runs it.
	maxRolling, rolledAt := 0, map[string]bool{}
	fixture.EventuallyEvery(t, 250*time.Millisecond, fixture.SettleTimeout, "md-a, md-b and md-c run v1.34.0", func(ctx context.Context) (bool, error) {
		mds, err := suite.List(ctx, ns, "MachineDeployment")
		if err != nil {
			return false, err
		}
		ms, err := suite.Machines(ctx, ns)
		if err != nil {
			return false, err
		}
		rolling, done := 0, 0
		for _, md := range mds {
			pool := md.GetLabels()[clusterv1.ClusterTopologyMachineDeploymentNameLabel]
			if v, _, _ := unstructured.NestedString(md.Object, "spec", "template", "spec", "version"); v != "v1.34.0" {
				continue
			}
			rolledAt[pool] = true
			if running, all := fixture.Count(ms, pool, "v1.34.0"); running == 1 && all == 1 {
				done++
			} else {
				rolling++
			}
		}
		maxRolling = max(maxRolling, rolling)
		return done == 3, fmt.Errorf("%d of md-a, md-b, md-c run v1.34.0; pools that asked for it: %v", done, rolledAt)
	})
	if maxRolling != 2 {
		t.Errorf("with upgrade-concurrency 2, at most %d pools rolled at once; want 2", maxRolling)
	}
	if rolledAt["md-d"] {
		t.Error("md-d, deferred, was upgraded")
	}
	// A deferred pool keeps the rollout open: a bounded watch says so.
	out, errOut, err := suite.Topology("", "status", "dev", "-n", ns, "--watch", "--interval", "500ms", "--timeout", "3s")
	if err == nil || !strings.Contains(errOut, "md-d upgrade to version v1.34.0 deferred") || !strings.Contains(out, "Deferred") {
		t.Errorf("status --watch with md-d deferred: %v\n%s%s", err, out, errOut)
	}
	ms, err := suite.Machines(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if running, all := fixture.Count(ms, "md-d", "v1.33.1"); running != 1 || all != 1 {
		t.Errorf("md-d, deferred: %d of %d machines running v1.33.1, want 1 of 1", running, all)
	}
	suite.ChangeTopology(t, ns, func(topo *v1alpha2.Topology) {
		delete(topo.MachineDeployment("md-d").Metadata.Annotations, clusterv1.ClusterTopologyDeferUpgradeAnnotation)
	})
	fixture.Eventually(t, fixture.SettleTimeout, "md-d runs v1.34.0 once no longer deferred", func(ctx context.Context) (bool, error) {
		ms, err := suite.Machines(ctx, ns)
		running, all := fixture.Count(ms, "md-d", "v1.34.0")
		return err == nil && running == 1 && all == 1, fmt.Errorf("md-d %d/%d (%v)", running, all, err)
	})
	suite.Settle(t, ns, "dev")

	// Rebase onto a class whose worker machines start their node slower.
	before, err := suite.Machines(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	other, err := fixture.LoadExampleDir("in-memory", ns)
	if err != nil {
		t.Fatal(err)
	}
	other.Class.Name = "in-memory-b"
	other.Class.Spec.Workers.MachineDeployments[0].Infrastructure.TemplateRef.Name = "in-memory-worker-b"
	var templates []*unstructured.Unstructured
	for _, tpl := range other.Templates {
		if tpl.GetKind() == "DevMachineTemplate" && tpl.GetName() == "in-memory-worker" {
			tpl.SetName("in-memory-worker-b")
			_ = unstructured.SetNestedField(tpl.Object, "2s", "spec", "template", "spec", "backend", "inMemory", "node", "provisioning", "startupDuration")
			templates = append(templates, tpl)
		}
	}
	other.Templates = templates
	if err := other.CreateClass(ctx, suite.K8s); err != nil {
		t.Fatal(err)
	}
	suite.ChangeTopology(t, ns, func(topo *v1alpha2.Topology) { topo.Spec.ClassRef.Name = "in-memory-b" })
	fixture.Eventually(t, fixture.SettleTimeout, "the workers are replaced", func(ctx context.Context) (bool, error) {
		ms, err := suite.Machines(ctx, ns)
		if err != nil {
			return false, err
		}
		for _, old := range before {
			for _, m := range ms {
				if m.Name == old.Name && !old.ControlPlane {
					return false, fmt.Errorf("worker machine %s is still there", m.Name)
				}
			}
		}
		return true, nil
	})
	after := suite.Settle(t, ns, "dev")
	if !strings.Contains(after, "in-memory-b") {
		t.Errorf("status after the rebase does not name the new class:\n%s", after)
	}
	ms, err = suite.Machines(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, old := range before {
		if !old.ControlPlane {
			continue
		}
		kept := false
		for _, m := range ms {
			kept = kept || m.Name == old.Name
		}
		if !kept {
			t.Errorf("the control plane machine %s was replaced by a rebase that changes only the workers", old.Name)
		}
	}
}

// TestChainedUpgradeThroughPlugin upgrades a cluster two minors at once
// with `kubectl topology upgrade`, as a user would, on a class that lists
// the versions in between. The preview shows the chain, Cluster API's
// controllers take the control plane through v1.32.3 before v1.33.1 and
// the pool straight to v1.33.1, `status` shows the plan meanwhile, and the
// Cluster carries the upgrade-step annotation only while it lasts. The
// Cluster is written by merge patch, as upstream v1.14 writes it, so a
// label the Topology drops goes from the Cluster too.
func TestChainedUpgradeThroughPlugin(t *testing.T) {
	t.Parallel()
	ns := suite.InMemoryCluster(t, "chained", func(topo *v1alpha2.Topology) {
		topo.Spec.Version = "v1.31.6"
		fixture.OneMachineEach(topo)
		topo.Labels = map[string]string{"tier": "gold"}
	}, func(ex *fixture.Example) {
		ex.Class.Spec.KubernetesVersions = []string{"v1.31.6", "v1.32.0", "v1.32.3", "v1.33.1"}
	})
	ctx := context.Background()
	suite.Settle(t, ns, "dev")
	cluster := func() *unstructured.Unstructured {
		items, err := suite.List(ctx, ns, "Cluster")
		if err != nil || len(items) != 1 {
			t.Fatalf("the Cluster of %s: %d, %v", ns, len(items), err)
		}
		return &items[0]
	}
	if cluster().GetLabels()["tier"] != "gold" {
		t.Fatalf("the Cluster lacks the Topology's label: %v", cluster().GetLabels())
	}

	preview := suite.MustTopology(t, "upgrade", "dev", "-n", ns, "--version", "v1.33.1", "--dry-run")
	for _, want := range []string{
		"chained over 2 minors, as the class's kubernetesVersions allow: v1.31.6 → v1.32.3 → v1.33.1",
		"control plane", "v1.31.6 → v1.32.3", "v1.32.3 → v1.33.1",
		"md-a (default-worker) v1.31.6 → v1.33.1: 1 machine(s) replaced",
	} {
		if !strings.Contains(preview, want) {
			t.Errorf("the preview lacks %q:\n%s", want, preview)
		}
	}
	suite.MustTopology(t, "upgrade", "dev", "-n", ns, "--version", "v1.33.1", "--yes")

	steps := map[string]bool{}
	cpVersions, mdVersions := map[string]bool{}, map[string]bool{}
	sawPlan, stepPatched := false, false
	fixture.Eventually(t, fixture.SettleTimeout, "every machine runs v1.33.1 and the upgrade step is cleared", func(ctx context.Context) (bool, error) {
		if c := cluster(); c.GetAnnotations()[clusterv1.ClusterTopologyUpgradeStepAnnotation] != "" {
			steps[c.GetAnnotations()[clusterv1.ClusterTopologyUpgradeStepAnnotation]] = true
			if ownedByUpdate(c, clusterv1.ClusterTopologyUpgradeStepAnnotation) {
				stepPatched = true
			}
		}
		ms, err := suite.Machines(ctx, ns)
		if err != nil {
			return false, err
		}
		for _, m := range ms {
			if m.ControlPlane {
				cpVersions[m.Version] = true
			} else {
				mdVersions[m.Version] = true
			}
		}
		if !sawPlan {
			out, _, err := suite.Topology("", "status", "dev", "-n", ns)
			// v1.32.3 leaves the plan once the control plane is given it.
			sawPlan = err == nil && strings.Contains(out, "upgrade plan: control plane v1.33.1 · workers v1.33.1")
		}
		cpRunning, cpAll := fixture.Count(ms, "", "v1.33.1")
		mdRunning, mdAll := fixture.Count(ms, "md-a", "v1.33.1")
		_, stepping := cluster().GetAnnotations()[clusterv1.ClusterTopologyUpgradeStepAnnotation]
		return cpRunning == 1 && cpAll == 1 && mdRunning == 1 && mdAll == 1 && !stepping,
			fmt.Errorf("control plane %d/%d, md-a %d/%d at v1.33.1, upgrade step annotated: %v", cpRunning, cpAll, mdRunning, mdAll, stepping)
	})
	if !cpVersions["v1.32.3"] {
		t.Errorf("the control plane's machines ran %v; the chain goes through v1.32.3", cpVersions)
	}
	if mdVersions["v1.32.3"] || mdVersions["v1.32.0"] {
		t.Errorf("md-a's machines ran %v; within the skew rules it goes straight to v1.33.1", mdVersions)
	}
	if !steps["v1.32.3"] {
		t.Errorf("the Cluster's upgrade-step annotation read %v; it names the control plane's step, v1.32.3 among them", steps)
	}
	if !sawPlan {
		t.Error("`status` never showed the upgrade plan (v1.33.1 left for both) while the control plane was on its way")
	}
	// The agent writes the existing Cluster by merge patch, as upstream's
	// controller does: what it adds is owned by an Update, not an Apply.
	if !stepPatched {
		t.Error("the upgrade-step annotation was never owned by the agent's Update (merge patch) of the Cluster")
	}

	// A label the Topology adds later is patched onto the Cluster; labels
	// it drops, whether set at creation or patched since, leave it.
	suite.ChangeTopology(t, ns, func(topo *v1alpha2.Topology) { topo.Labels["zone"] = "a" })
	fixture.Eventually(t, time.Minute, "the new label reaches the Cluster, by patch", func(context.Context) (bool, error) {
		c := cluster()
		return c.GetLabels()["zone"] == "a" && ownedByUpdate(c, "zone"), fmt.Errorf("labels %v, managed fields %v", c.GetLabels(), c.GetManagedFields())
	})
	suite.ChangeTopology(t, ns, func(topo *v1alpha2.Topology) { topo.Labels = nil })
	fixture.Eventually(t, time.Minute, "the dropped labels leave the Cluster", func(context.Context) (bool, error) {
		labels := cluster().GetLabels()
		_, tier := labels["tier"]
		_, zone := labels["zone"]
		return !tier && !zone && labels[clusterv1.ClusterNameLabel] == "dev", fmt.Errorf("labels %v", labels)
	})
}

// ownedByUpdate tells whether the agent owns a label or annotation key of
// obj through an Update (a patch) rather than an Apply.
func ownedByUpdate(obj *unstructured.Unstructured, key string) bool {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == apply.FieldManager && mf.Operation == "Update" && mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), `"f:`+key+`"`) {
			return true
		}
	}
	return false
}
