package capi

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine"
	"github.com/kubectl-topology/kubectl-topology/test/fixture"
)

// TestUpgradeConcurrencyDeferAndRebase upgrades a cluster of four pools
// with the upgrade-concurrency annotation at 2 and one pool deferred: two
// pools roll at a time, never three, and the deferred one waits until its
// annotation goes. Then the cluster is rebased onto another class whose
// worker template differs, and Cluster API replaces the workers' machines
// and leaves the control plane's.
func TestUpgradeConcurrencyDeferAndRebase(t *testing.T) {
	t.Parallel()
	ns := inMemoryCluster(t, "concurrency", func(topo *v1alpha2.Topology) {
		topo.Annotations = map[string]string{engine.UpgradeConcurrencyAnnotation: "2"}
		topo.Spec.ControlPlane.Replicas = ptr.To[int32](1)
		topo.Spec.Workers.MachineDeployments = nil
		for _, name := range []string{"md-a", "md-b", "md-c", "md-d"} {
			topo.Spec.Workers.MachineDeployments = append(topo.Spec.Workers.MachineDeployments,
				v1alpha2.MachineDeploymentTopology{Class: "default-worker", Name: name, Replicas: ptr.To[int32](1)})
		}
		topo.Spec.Workers.MachineDeployments[3].Metadata.Annotations = map[string]string{engine.DeferUpgradeAnnotation: ""}
	})
	ctx := context.Background()
	settle(t, ns, "dev", 4*time.Minute)

	mustPlugin(t, "upgrade", "dev", "-n", ns, "--version", "v1.34.0", "--yes")
	// A pool rolls from the moment its MachineDeployment asks for the new
	// version until its machine runs it.
	maxRolling, rolledAt := 0, map[string]bool{}
	deadline := time.Now().Add(4 * time.Minute)
	for {
		mds, err := list(ctx, ns, "MachineDeployment")
		if err != nil {
			t.Fatal(err)
		}
		ms, err := machines(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		rolling, done := 0, 0
		for _, md := range mds {
			pool := md.GetLabels()[engine.MachineDeploymentNameLabel]
			if v, _, _ := unstructured.NestedString(md.Object, "spec", "template", "spec", "version"); v != "v1.34.0" {
				continue
			}
			rolledAt[pool] = true
			if running, all := count(ms, pool, "v1.34.0"); running == 1 && all == 1 {
				done++
			} else {
				rolling++
			}
		}
		maxRolling = max(maxRolling, rolling)
		if done == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 4m, %d of md-a, md-b, md-c run v1.34.0; pools that asked for it: %v", done, rolledAt)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if maxRolling != 2 {
		t.Errorf("with upgrade-concurrency 2, at most %d pools rolled at once; want 2", maxRolling)
	}
	if rolledAt["md-d"] {
		t.Error("md-d, deferred, was upgraded")
	}
	// A deferred pool keeps the rollout open: a bounded watch says so.
	out, errOut, err := plugin("", "status", "dev", "-n", ns, "--watch", "--interval", "500ms", "--timeout", "3s")
	if err == nil || !strings.Contains(errOut, "md-d upgrade to version v1.34.0 deferred") || !strings.Contains(out, "Deferred") {
		t.Errorf("status --watch with md-d deferred: %v\n%s%s", err, out, errOut)
	}
	ms, err := machines(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if running, all := count(ms, "md-d", "v1.33.1"); running != 1 || all != 1 {
		t.Errorf("md-d, deferred: %d of %d machines running v1.33.1, want 1 of 1", running, all)
	}
	changeTopology(t, ns, func(topo *v1alpha2.Topology) {
		delete(topo.MachineDeployment("md-d").Metadata.Annotations, engine.DeferUpgradeAnnotation)
	})
	eventually(t, 3*time.Minute, "md-d runs v1.34.0 once no longer deferred", func(ctx context.Context) (bool, error) {
		ms, err := machines(ctx, ns)
		running, all := count(ms, "md-d", "v1.34.0")
		return err == nil && running == 1 && all == 1, fmt.Errorf("md-d %d/%d (%v)", running, all, err)
	})
	settle(t, ns, "dev", 2*time.Minute)

	// Rebase onto a class whose worker machines start their node slower.
	before, err := machines(ctx, ns)
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
	if err := other.CreateClass(ctx, k8s); err != nil {
		t.Fatal(err)
	}
	changeTopology(t, ns, func(topo *v1alpha2.Topology) { topo.Spec.ClassRef.Name = "in-memory-b" })
	eventually(t, 3*time.Minute, "the workers are replaced", func(ctx context.Context) (bool, error) {
		ms, err := machines(ctx, ns)
		if err != nil {
			return false, err
		}
		for _, old := range before {
			for _, m := range ms {
				if m.name == old.name && !old.controlPlane {
					return false, fmt.Errorf("worker machine %s is still there", m.name)
				}
			}
		}
		return true, nil
	})
	after := settle(t, ns, "dev", 3*time.Minute)
	if !strings.Contains(after, "in-memory-b") {
		t.Errorf("status after the rebase does not name the new class:\n%s", after)
	}
	ms, err = machines(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, old := range before {
		if !old.controlPlane {
			continue
		}
		kept := false
		for _, m := range ms {
			kept = kept || m.name == old.name
		}
		if !kept {
			t.Errorf("the control plane machine %s was replaced by a rebase that changes only the workers", old.name)
		}
	}
}
