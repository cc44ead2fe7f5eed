package upstream

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/parity"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// upstreamCluster creates testdata/parity/in-memory as upstream's objects — a
// ClusterClass and a Cluster with spec.topology, which the core manager's own
// topology controller (ClusterTopology on) reconciles — in a new namespace,
// the Cluster's topology changed by shape. It returns the namespace.
func upstreamCluster(t *testing.T, prefix string, shape func(topology map[string]any)) string {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join("..", "..", "testdata", "parity", "in-memory")
	var docs []byte
	for _, f := range []string{"class.yaml", "cluster.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(append(docs, data...), "\n---\n"...)
	}
	objs, err := parity.Decode(docs)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := suite.K8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	var cluster *unstructured.Unstructured
	for _, o := range objs {
		o.SetNamespace(ns.Name)
		if o.GetKind() == "Cluster" {
			cluster = o
			continue
		}
		if err := suite.K8s.Create(ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	topology, _, _ := unstructured.NestedMap(cluster.Object, "spec", "topology")
	shape(topology)
	if err := unstructured.SetNestedMap(cluster.Object, topology, "spec", "topology"); err != nil {
		t.Fatal(err)
	}
	if err := suite.K8s.Create(ctx, cluster); err != nil {
		t.Fatalf("creating Cluster %s/%s: %v", ns.Name, cluster.GetName(), err)
	}
	t.Cleanup(func() {
		// A paused Cluster is never deleted: Cluster API's controllers leave it alone.
		_ = suite.K8s.Patch(ctx, cluster.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":null}}`)))
		_ = suite.K8s.Delete(ctx, cluster.DeepCopy())
		fixture.Eventually(t, fixture.SettleTimeout, "the Cluster is deleted", func(ctx context.Context) (bool, error) {
			err := suite.K8s.Get(ctx, client.ObjectKeyFromObject(cluster), cluster.DeepCopy())
			return apierrors.IsNotFound(err), err
		})
	})
	return ns.Name
}

// TestUpstreamClusterThroughPlugin drives the plugin on a Cluster with
// spec.topology that Cluster API's own topology controller reconciles: found
// by name and as cluster/NAME, listed with who manages it, followed with
// status until upstream has provisioned it, scaled and upgraded through a
// guarded write of spec.topology (refused with nothing written when the
// version is not allowed), paused and resumed. No Topology is involved.
func TestUpstreamClusterThroughPlugin(t *testing.T) {
	t.Parallel()
	ns := upstreamCluster(t, "upstream", func(topo map[string]any) {
		topo["version"] = "v1.32.3"
		topo["controlPlane"] = map[string]any{"replicas": int64(1)}
		workers := topo["workers"].(map[string]any)
		mds := workers["machineDeployments"].([]any)
		md := mds[0].(map[string]any)
		md["replicas"] = int64(1)
		workers["machineDeployments"] = []any{md}
	})
	ctx := context.Background()
	stored := func() *unstructured.Unstructured {
		items, err := suite.List(ctx, ns, "Cluster")
		if err != nil || len(items) != 1 {
			t.Fatalf("the Cluster of %s: %d, %v", ns, len(items), err)
		}
		return &items[0]
	}

	// Followed by its bare name (no Topology has it) until upstream's
	// controllers have provisioned every machine.
	out := suite.MustTopology(t, "status", "dev", "-n", ns, "--watch", "--interval", "1s", "--timeout", fixture.SettleTimeout.String())
	if !strings.Contains(out, "Cluster "+ns+"/dev (ClusterClass in-memory, Cluster API's topology controller)") {
		t.Errorf("status does not say it follows upstream's Cluster:\n%s", out)
	}
	status := suite.MustTopology(t, "status", "cluster/dev", "-n", ns)
	for _, want := range []string{"· Ready", "control-plane", "md-a (default-worker)", "v1.32.3"} {
		if !strings.Contains(status, want) {
			t.Errorf("status lacks %q:\n%s", want, status)
		}
	}
	if strings.Contains(status, "STALE") || strings.Contains(status, "agent") {
		t.Errorf("status of upstream's Cluster speaks of the agent:\n%s", status)
	}
	get := suite.MustTopology(t, "get", "-n", ns)
	if !strings.Contains(get, "MANAGED BY") || !strings.Contains(get, "cluster/dev") || !strings.Contains(get, "cluster-api") {
		t.Errorf("get does not list the Cluster with who manages it:\n%s", get)
	}

	// Bad input is refused before anything is written. Upstream's
	// controllers write the Cluster's status all along: its generation, and
	// its spec, tell whether anything else wrote it.
	before := stored()
	unchanged := func(what string) {
		t.Helper()
		after := stored()
		if after.GetGeneration() != before.GetGeneration() || !equality.Semantic.DeepEqual(after.Object["spec"], before.Object["spec"]) {
			t.Fatalf("%s wrote the Cluster's spec (generation %d → %d)", what, before.GetGeneration(), after.GetGeneration())
		}
	}
	for _, args := range [][]string{
		{"upgrade", "cluster/dev", "-n", ns, "--version", "v1.34.0", "--yes"},
		{"upgrade", "topology/dev", "-n", ns, "--version", "v1.33.1", "--yes"},
		{"scale", "cluster/dev", "-n", ns, "--worker", "md-z=2", "--yes"},
		{"upgrade", "machine/dev", "-n", ns, "--version", "v1.33.1", "--yes"},
	} {
		if out, errOut, err := suite.Topology("", args...); err == nil {
			t.Errorf("kubectl topology %s was accepted:\n%s%s", strings.Join(args, " "), out, errOut)
		}
	}
	unchanged("a refused command")

	preview := suite.MustTopology(t, "upgrade", "cluster/dev", "-n", ns, "--version", "v1.33.1", "--dry-run")
	for _, want := range []string{
		"Cluster " + ns + "/dev:", "version: v1.32.3 → v1.33.1", "Rollout of Cluster " + ns + "/dev to v1.33.1",
		"Cluster API's topology controller would then change:", "KubeadmControlPlane", "Dry run: nothing was changed.",
	} {
		if !strings.Contains(preview, want) {
			t.Errorf("the upgrade preview lacks %q:\n%s", want, preview)
		}
	}
	unchanged("a dry run")

	// Once the class lists the versions up to v1.34.0, an upgrade there is
	// chained, and upstream's own admission accepts it in a dry run.
	class := &unstructured.Unstructured{}
	class.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	class.SetKind("ClusterClass")
	if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "in-memory"}, class); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedStringSlice(class.Object, []string{"v1.32.3", "v1.33.1", "v1.34.0"}, "spec", "kubernetesVersions"); err != nil {
		t.Fatal(err)
	}
	if err := suite.K8s.Update(ctx, class); err != nil {
		t.Fatalf("listing kubernetesVersions in ClusterClass in-memory: %v", err)
	}
	chained := suite.MustTopology(t, "upgrade", "cluster/dev", "-n", ns, "--version", "v1.34.0", "--dry-run")
	if want := "chained over 2 minors, as the class's kubernetesVersions allow: v1.32.3 → v1.33.1 → v1.34.0"; !strings.Contains(chained, want) {
		t.Errorf("the chained upgrade preview lacks %q:\n%s", want, chained)
	}
	unchanged("a chained dry run")

	// Cluster API v1.14 has no per-pool version: its API server prunes it,
	// so a pin is refused with the version that brings it, never lost.
	if out, errOut, err := suite.Topology("", "set", "version", "cluster/dev", "-n", ns, "md-a=v1.32.3", "--yes"); err == nil || !strings.Contains(errOut, "need Cluster API v1.15 or later with its ClusterTopologyWorkerVersionPinning gate on") {
		t.Errorf("set version on a v1.14 Cluster: %v\n%s%s", err, out, errOut)
	}
	unchanged("a pin Cluster API v1.14 cannot hold")

	suite.MustTopology(t, "scale", "cluster/dev", "-n", ns, "--worker", "md-a=2", "--yes")
	fixture.Eventually(t, fixture.SettleTimeout, "upstream scales md-a to 2 running machines", func(ctx context.Context) (bool, error) {
		ms, err := suite.Machines(ctx, ns)
		if err != nil {
			return false, err
		}
		running, all := fixture.Count(ms, "md-a", "v1.32.3")
		return running == 2 && all == 2, fmt.Errorf("md-a: %d of %d running", running, all)
	})

	upgrade := suite.MustTopology(t, "upgrade", "cluster/dev", "-n", ns, "--version", "v1.33.1", "--yes", "--wait", "--timeout", fixture.SettleTimeout.String())
	if !strings.Contains(upgrade, "Cluster API's topology controller starts with the control plane") {
		t.Errorf("upgrade output:\n%s", upgrade)
	}
	if v, _, _ := unstructured.NestedString(stored().Object, "spec", "topology", "version"); v != "v1.33.1" {
		t.Errorf("spec.topology.version is %q after the upgrade, want v1.33.1", v)
	}
	ms, err := suite.Machines(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if cp, cpAll := fixture.Count(ms, "", "v1.33.1"); cp != 1 || cpAll != 1 {
		t.Errorf("control plane: %d of %d machines run v1.33.1 after --wait", cp, cpAll)
	}
	if md, mdAll := fixture.Count(ms, "md-a", "v1.33.1"); md != 2 || mdAll != 2 {
		t.Errorf("md-a: %d of %d machines run v1.33.1 after --wait", md, mdAll)
	}

	suite.MustTopology(t, "pause", "cluster/dev", "-n", ns, "--yes")
	if p, _, _ := unstructured.NestedBool(stored().Object, "spec", "paused"); !p {
		t.Error("pause did not set the Cluster's spec.paused")
	}
	if out := suite.MustTopology(t, "status", "dev", "-n", ns); !strings.Contains(out, "· Paused") {
		t.Errorf("status of the paused Cluster:\n%s", out)
	}
	suite.MustTopology(t, "resume", "cluster/dev", "-n", ns, "--yes")
	if p, _, _ := unstructured.NestedBool(stored().Object, "spec", "paused"); p {
		t.Error("resume left the Cluster's spec.paused set")
	}
}

// TestAdoptUpstreamCluster hands a provisioned gate-on Cluster over to the
// agent with `adopt`: refused while it provisions, previewed with --dry-run,
// then done, with every Machine the one there was (same UIDs), the Cluster
// made again by the agent and owned by the Topology, and the agent in charge
// afterwards (a scale through the Topology adds a machine and keeps the rest).
func TestAdoptUpstreamCluster(t *testing.T) {
	t.Parallel()
	ns := upstreamCluster(t, "adopt", func(topo map[string]any) {
		topo["version"] = "v1.33.1"
		topo["controlPlane"] = map[string]any{"replicas": int64(1)}
		workers := topo["workers"].(map[string]any)
		md := workers["machineDeployments"].([]any)[0].(map[string]any)
		md["replicas"] = int64(1)
		workers["machineDeployments"] = []any{md}
	})
	ctx := context.Background()
	t.Cleanup(func() {
		_ = suite.K8s.Delete(ctx, &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev"}})
	})
	if out, errOut, err := suite.Topology("", "adopt", "cluster/dev", "-n", ns, "--yes"); err == nil || !strings.Contains(errOut, "not settled") {
		t.Fatalf("adopt of a provisioning Cluster was not refused as unsettled: %v\n%s%s", err, out, errOut)
	}
	suite.MustTopology(t, "status", "cluster/dev", "-n", ns, "--watch", "--interval", "1s", "--timeout", fixture.SettleTimeout.String())
	before := machineUIDs(t, ns)
	if len(before) != 2 {
		t.Fatalf("%d machines before adopting, want 2", len(before))
	}
	oldCluster := onlyCluster(t, ns)

	preview := suite.MustTopology(t, "adopt", "dev", "-n", ns, "--dry-run")
	for _, want := range []string{"Adopt Cluster " + ns + "/dev (ClusterClass in-memory) into Topology " + ns + "/dev", "Machines kept: 2", "Dry run: nothing was changed."} {
		if !strings.Contains(preview, want) {
			t.Errorf("the adopt preview lacks %q:\n%s", want, preview)
		}
	}
	if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, &v1alpha2.Topology{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a dry run created the Topology (%v)", err)
	}

	out := suite.MustTopology(t, "adopt", "cluster/dev", "-n", ns, "--yes", "--interval", "1s", "--timeout", fixture.SettleTimeout.String())
	t.Logf("adopt:\n%s", out)
	if !strings.Contains(out, "all 2 Machines are the ones there were") {
		t.Errorf("adopt output:\n%s", out)
	}
	if after := machineUIDs(t, ns); !equality.Semantic.DeepEqual(after, before) {
		t.Fatalf("machines before %v, after %v: adopting replaced some", before, after)
	}
	topo := &v1alpha2.Topology{}
	if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, topo); err != nil {
		t.Fatal(err)
	}
	cluster := onlyCluster(t, ns)
	if cluster.GetUID() == oldCluster.GetUID() {
		t.Error("the Cluster was not made again")
	}
	if _, has, _ := unstructured.NestedMap(cluster.Object, "spec", "topology"); has {
		t.Error("the agent's Cluster has spec.topology: upstream's controller would still act on it")
	}
	if owners := cluster.GetOwnerReferences(); len(owners) != 1 || owners[0].UID != topo.UID {
		t.Errorf("the Cluster is owned by %v, want Topology %s", owners, topo.UID)
	}
	for _, ref := range []string{"infrastructureRef", "controlPlaneRef"} {
		was, _, _ := unstructured.NestedString(oldCluster.Object, "spec", ref, "name")
		now, _, _ := unstructured.NestedString(cluster.Object, "spec", ref, "name")
		if was != now {
			t.Errorf("spec.%s names %s, upstream's Cluster named %s", ref, now, was)
		}
	}
	if _, errOut, err := suite.Topology("", "adopt", "dev", "-n", ns, "--yes"); err == nil || !strings.Contains(errOut, "already a Topology") {
		t.Errorf("adopting a Topology was not refused: %v %s", err, errOut)
	}

	// The agent is in charge now: a scale through the Topology adds a
	// machine and leaves the others.
	suite.MustTopology(t, "scale", "topology/dev", "-n", ns, "--worker", "md-a=2", "--yes")
	fixture.Eventually(t, fixture.SettleTimeout, "the agent scales md-a to 2 running machines", func(ctx context.Context) (bool, error) {
		ms, err := suite.Machines(ctx, ns)
		if err != nil {
			return false, err
		}
		running, all := fixture.Count(ms, "md-a", "v1.33.1")
		return running == 2 && all == 2, fmt.Errorf("md-a: %d of %d running", running, all)
	})
	after := machineUIDs(t, ns)
	for uid, name := range before {
		if after[uid] != name {
			t.Errorf("machine %s (%s) is gone after scaling up", name, uid)
		}
	}
}

// machineUIDs maps the namespace's Machines' UIDs to their names.
func machineUIDs(t *testing.T, ns string) map[string]string {
	t.Helper()
	items, err := suite.List(context.Background(), ns, "Machine")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range items {
		out[string(m.GetUID())] = m.GetName()
	}
	return out
}

// onlyCluster is the namespace's one Cluster.
func onlyCluster(t *testing.T, ns string) *unstructured.Unstructured {
	t.Helper()
	items, err := suite.List(context.Background(), ns, "Cluster")
	if err != nil || len(items) != 1 {
		t.Fatalf("the Cluster of %s: %d, %v", ns, len(items), err)
	}
	return &items[0]
}
