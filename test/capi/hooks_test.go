package capi

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestLifecycleHooks drives a cluster's whole life through upstream's own
// test extension, every blocking hook holding until the test answers it, as
// upstream's e2e (cluster_upgrade_runtimesdk.go) does: creation waits for
// BeforeClusterCreate; AfterControlPlaneInitialized is called once; an
// upgrade waits for BeforeClusterUpgrade (also while the extension is down,
// saying why) and for BeforeControlPlaneUpgrade, the workers for
// AfterControlPlaneUpgrade and BeforeWorkersUpgrade, the upgrade's end for
// AfterWorkersUpgrade and AfterClusterUpgrade; deletion waits for
// BeforeClusterDelete. At each hold, what it guards has not moved.
func TestLifecycleHooks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ex, err := fixture.ClassInNewNamespace(ctx, suite.K8s, "in-memory", "hooks")
	if err != nil {
		t.Fatal(err)
	}
	ns, name := ex.Topology.Namespace, ex.Topology.Name
	ext := suite.StartTestExtension(t, ns)
	topo := ex.Topology.DeepCopy()
	fixture.OneMachineEach(topo)
	if err := suite.K8s.Create(ctx, topo); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ext.Answer(t, ns, name, lifecycle.BeforeClusterDelete, 0)
		fixture.DeleteTopology(t, suite.K8s, ns, name)
	})

	// Creation: nothing is made while BeforeClusterCreate holds.
	ext.WaitAsked(t, ns, name, lifecycle.BeforeClusterCreate, 5)
	waitCondition(t, ns, name, "ClusterCreating", "Following hooks are blocking Cluster topology creation: BeforeClusterCreate")
	if objs, err := suite.List(ctx, ns, "KubeadmControlPlane"); err != nil || len(objs) != 0 {
		t.Fatalf("a control plane was made while BeforeClusterCreate held: %d (%v)", len(objs), err)
	}
	report := suite.StatusReport(t, name, "-n", ns)
	if h := report.Items[0].Hooks; h == nil || len(h.Holding) != 1 || h.Holding[0].Hook != lifecycle.BeforeClusterCreate || h.Holding[0].Handlers[0] != "before-cluster-create."+ext.Name || h.Holding[0].NextCall == nil {
		t.Errorf("status -o json does not say BeforeClusterCreate of %s holds, and when it is asked again: %+v", ext.Name, h)
	}
	fixture.Eventually(t, time.Minute, "an Event says BeforeClusterCreate holds the creation", func(ctx context.Context) (bool, error) {
		events := &corev1.EventList{}
		if err := suite.K8s.List(ctx, events, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == "LifecycleHookBlocking" && e.InvolvedObject.Kind == "Topology" && strings.Contains(e.Message, lifecycle.BeforeClusterCreate+" (before-cluster-create."+ext.Name+") holds the creation") {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events, none about the hold", len(events.Items))
	})
	ext.Answer(t, ns, name, lifecycle.BeforeClusterCreate, 0)
	suite.Settle(t, ns, name)
	ext.WaitCalled(t, ns, name, lifecycle.AfterControlPlaneInitialized)

	// The preview lists the hooks the upgrade will call, in order.
	from, to := "v1.33.1", "v1.34.0"
	preview := suite.MustTopology(t, "upgrade", name, "-n", ns, "--version", to, "--dry-run")
	for _, hook := range []string{lifecycle.BeforeClusterUpgrade, lifecycle.BeforeControlPlaneUpgrade, lifecycle.AfterControlPlaneUpgrade, lifecycle.BeforeWorkersUpgrade, lifecycle.AfterWorkersUpgrade, lifecycle.AfterClusterUpgrade} {
		at := strings.Index(preview, hook+" ")
		if at < 0 || !strings.Contains(preview[at:], "."+ext.Name+")") {
			t.Fatalf("upgrade --dry-run does not list %s of %s in order:\n%s", hook, ext.Name, preview)
		}
		preview = preview[at:]
	}

	// So does a live plan of the Topology at the new version.
	proposed := topo.DeepCopy()
	proposed.Spec.Version = to
	proposed.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: "Topology"}
	proposed.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: name}
	doc, err := yaml.Marshal(proposed)
	if err != nil {
		t.Fatal(err)
	}
	planned, errOut, err := suite.Topology(string(doc), "plan", name, "-n", ns, "-f", "-")
	if err != nil || !strings.Contains(planned, "lifecycle hooks called, in order") || !strings.Contains(planned, lifecycle.BeforeClusterUpgrade+" "+from+" → "+to+" (before-cluster-upgrade."+ext.Name+")") {
		t.Fatalf("plan -f of the new version does not list the hooks: %v\n%s%s", err, planned, errOut)
	}

	// Upgrade: BeforeClusterUpgrade holds, also while the extension is down.
	suite.MustTopology(t, "upgrade", name, "-n", ns, "--version", to, "--yes")
	bcu := fixture.HookKey(lifecycle.BeforeClusterUpgrade, from, to)
	ext.WaitAsked(t, ns, name, bcu, 5)
	waitCondition(t, ns, name, "ClusterUpgrading", "Following hooks are blocking upgrade: BeforeClusterUpgrade")
	if out := suite.MustTopology(t, "get", name, "-n", ns); !strings.Contains(out, "HeldBy="+lifecycle.BeforeClusterUpgrade) {
		t.Errorf("get does not say BeforeClusterUpgrade holds the cluster:\n%s", out)
	}
	if err := ext.Stop(); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, ns, name, "ReconcileFailed", "lifecycle hook BeforeClusterUpgrade")
	out, _ := suite.MustTopologyOutput(t, "status", name, "-n", ns)
	if !strings.Contains(out, "BeforeClusterUpgrade") {
		t.Errorf("status does not say the extension holds the upgrade:\n%s", out)
	}
	assertVersions(t, ns, from, from)
	if err := ext.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, ns, name, "ClusterUpgrading", "Following hooks are blocking upgrade: BeforeClusterUpgrade")
	assertVersions(t, ns, from, from)

	// Each hold in turn, and what it keeps in place.
	steps := []struct {
		key                string
		controlPlane, pool string // versions while it holds
	}{
		{bcu, from, from},
		{fixture.HookKey(lifecycle.BeforeControlPlaneUpgrade, from, to), from, from},
		{fixture.HookKey(lifecycle.AfterControlPlaneUpgrade, to), to, from},
		{fixture.HookKey(lifecycle.BeforeWorkersUpgrade, from, to), to, from},
		{fixture.HookKey(lifecycle.AfterWorkersUpgrade, to), to, to},
		{fixture.HookKey(lifecycle.AfterClusterUpgrade, to), to, to},
	}
	for _, step := range steps {
		ext.WaitAsked(t, ns, name, step.key, 5)
		assertVersions(t, ns, step.controlPlane, step.pool)
		if strings.HasPrefix(step.key, lifecycle.AfterClusterUpgrade) {
			// No new upgrade while the last one's AfterClusterUpgrade holds:
			// the webhook refuses it, as upstream's refuses it.
			err := fixture.ChangeTopology(ctx, suite.K8s, client.ObjectKey{Namespace: ns, Name: name}, func(topo *v1alpha2.Topology) { topo.Spec.Version = "v1.35.0" })
			if err == nil || !strings.Contains(err.Error(), "while the AfterClusterUpgrade hook") {
				t.Fatalf("a new version while AfterClusterUpgrade holds: %v, want the webhook's refusal", err)
			}
		}
		ext.Answer(t, ns, name, step.key, 0)
		ext.WaitAsked(t, ns, name, step.key, 0)
	}
	fixture.Eventually(t, time.Minute, "no hook is owed once the upgrade is over", func(ctx context.Context) (bool, error) {
		got := &v1alpha2.Topology{}
		if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			return false, err
		}
		pending := got.Annotations[runtimev1.PendingHooksAnnotation]
		return pending == "", fmt.Errorf("still owed: %q", pending)
	})
	calls, err := ext.Calls(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{lifecycle.AfterControlPlaneInitialized, steps[2].key, lifecycle.AfterWorkersUpgrade + "-" + to, lifecycle.BeforeClusterCreate, bcu, steps[1].key, steps[3].key, steps[5].key}
	slices.Sort(want)
	if !slices.Equal(calls, want) {
		t.Errorf("the extension was called for %q; want exactly %q", calls, want)
	}

	// Deletion: the Cluster stays while BeforeClusterDelete holds.
	if err := suite.K8s.Delete(ctx, &v1alpha2.Topology{ObjectMeta: topo.ObjectMeta}); err != nil {
		t.Fatal(err)
	}
	ext.WaitAsked(t, ns, name, lifecycle.BeforeClusterDelete, 5)
	waitCondition(t, ns, name, "Deleting", "Following hooks are blocking delete: BeforeClusterDelete")
	cluster := &unstructured.Unstructured{}
	cluster.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	cluster.SetKind("Cluster")
	if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cluster); err != nil || !cluster.GetDeletionTimestamp().IsZero() {
		t.Fatalf("the Cluster was deleted while BeforeClusterDelete held (err %v)", err)
	}
	ext.Answer(t, ns, name, lifecycle.BeforeClusterDelete, 0)
	fixture.Eventually(t, fixture.SettleTimeout, "the Cluster is gone once BeforeClusterDelete lets it go", func(ctx context.Context) (bool, error) {
		err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cluster)
		return apierrors.IsNotFound(err), err
	})
}

// waitCondition waits until TopologyReconciled of ns/name has reason and a
// message containing text.
func waitCondition(t *testing.T, ns, name, reason, text string) {
	t.Helper()
	fixture.Eventually(t, 2*time.Minute, fmt.Sprintf("TopologyReconciled is %s saying %q", reason, text), func(ctx context.Context) (bool, error) {
		got := &v1alpha2.Topology{}
		if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha2.TopologyReconciledCondition)
		if c == nil {
			return false, fmt.Errorf("no condition yet")
		}
		return c.Reason == reason && strings.Contains(c.Message, text), fmt.Errorf("%s: %s", c.Reason, c.Message)
	})
}

// assertVersions checks the versions the control plane and the one pool
// of ns ask for.
func assertVersions(t *testing.T, ns, controlPlane, pool string) {
	t.Helper()
	ctx := context.Background()
	cps, err := suite.List(ctx, ns, "KubeadmControlPlane")
	if err != nil || len(cps) != 1 {
		t.Fatalf("listing the control plane: %d (%v)", len(cps), err)
	}
	mds, err := suite.List(ctx, ns, "MachineDeployment")
	if err != nil || len(mds) != 1 {
		t.Fatalf("listing the pool: %d (%v)", len(mds), err)
	}
	cp, _, _ := unstructured.NestedString(cps[0].Object, "spec", "version")
	md, _, _ := unstructured.NestedString(mds[0].Object, "spec", "template", "spec", "version")
	if cp != controlPlane || md != pool {
		t.Errorf("control plane at %s and pool at %s; want %s and %s", cp, md, controlPlane, pool)
	}
}
