package capi

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestFleetPreflightDryRunsEveryObject refuses, by an admission policy, the
// one object the agent would write first for cluster p1 of a version
// rollout: its KubeadmControlPlane, not its Topology. `rollout create
// --dry-run` names p1 and the policy; the rollout fails p1 at preflight
// with nothing of it written and halts before p2; `upgrade` refuses the
// same change the same way; and the halted rollout's version cannot be
// undone.
func TestFleetPreflightDryRunsEveryObject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns, _ := suite.InMemoryFleet(t, "preflight", "p1", "p2")
	for _, n := range []string{"p1", "p2"} {
		suite.Settle(t, ns, n)
	}
	kcp := controlPlaneOf(t, ns, "p1")
	fixture.AdmissionPolicy(t, suite.K8s, "kcp-freeze-"+ns, ns,
		[]any{fixture.PolicyRule("controlplane.cluster.x-k8s.io", "kubeadmcontrolplanes", "UPDATE")},
		"!('cluster.x-k8s.io/cluster-name' in object.metadata.labels) || object.metadata.labels['cluster.x-k8s.io/cluster-name'] != 'p1' || object.spec.version == oldObject.spec.version",
		"control plane change freeze on p1")
	name := "to-134-" + ns
	args := []string{"rollout", "create", name, "-l", "fleet=" + ns, "--version", "v1.34.0", "--waves", "1,100%"}
	fixture.Eventually(t, time.Minute, "the dry run names p1's refusal", func(context.Context) (bool, error) {
		out, errOut, err := suite.Topology("", append(args, "--dry-run")...)
		return err == nil && strings.Contains(out, "Preflight: 1 cluster(s) would be refused now") &&
			strings.Contains(out, "topology/"+ns+"/p1 (wave 1): the API server refused KubeadmControlPlane "+ns+"/"+kcp.GetName()) &&
			strings.Contains(out, "control plane change freeze on p1") && !strings.Contains(out, "/p2 (wave"), fmt.Errorf("%v\n%s%s", err, out, errOut)
	})

	// upgrade, scale and set preflight everything they write, too.
	_, errOut, err := suite.Topology("", "upgrade", "p1", "-n", ns, "--version", "v1.34.0", "--yes")
	if err == nil || !strings.Contains(errOut, "the change is refused; nothing was changed") || !strings.Contains(errOut, "control plane change freeze on p1") {
		t.Errorf("upgrade of p1 under the freeze: %v\n%s", err, errOut)
	}

	suite.MustTopology(t, "rollout", "create", name, "-l", "fleet="+ns, "--version", "v1.34.0", "--waves", "1,100%", "--yes")
	t.Cleanup(func() {
		_ = suite.K8s.Delete(context.Background(), &v1alpha2.TopologyRollout{ObjectMeta: objectMeta(name)})
	})
	ro := suite.WaitRollout(t, name, 2*time.Minute, "halted on p1's preflight", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutHalted
	})
	p1 := fixture.RolloutCluster(ro, "p1")
	if p1.Phase != v1alpha2.ClusterFailed || p1.Reason != "Preflight" || p1.Applied ||
		!strings.Contains(p1.Message, "KubeadmControlPlane "+ns+"/"+kcp.GetName()) || !strings.Contains(p1.Message, "control plane change freeze on p1") {
		t.Errorf("p1: %+v", p1)
	}
	if p2 := fixture.RolloutCluster(ro, "p2"); p2.Phase != v1alpha2.ClusterPending || p2.Attempt != 0 {
		t.Errorf("p2, in the wave after the halt: %+v", p2)
	}
	// Nothing of p1 was written: its Topology and its control plane are as they were.
	for _, n := range []string{"p1", "p2"} {
		topo := &v1alpha2.Topology{}
		if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, topo); err != nil || topo.Spec.Version != "v1.33.1" {
			t.Errorf("%s after the refusal: version %s (%v), want v1.33.1", n, topo.Spec.Version, err)
		}
	}
	if after := controlPlaneOf(t, ns, "p1"); after.GetGeneration() != kcp.GetGeneration() {
		t.Errorf("p1's KubeadmControlPlane went from generation %d to %d", kcp.GetGeneration(), after.GetGeneration())
	}
	list := suite.MustTopology(t, "rollout", "list")
	if line := lineWith(list, name); !strings.Contains(line, "Halted") || !strings.Contains(line, "Preflight 1") {
		t.Errorf("rollout list, the line of %s: %q\n%s", name, line, list)
	}

	// A version has no undo.
	_, errOut, err = suite.Topology("", "rollout", "undo", name, "--dry-run")
	if err == nil || !strings.Contains(errOut, "spec.undo") || !strings.Contains(errOut, "Kubernetes has no downgrade") {
		t.Errorf("undo of a version rollout: %v\n%s", err, errOut)
	}
}

// TestFleetRolloutFailsARefusedClusterWithinTheTolerance starts f1 of a
// version rollout, its only pool held, and then installs an admission
// policy that refuses f1's MachineDeployment version change. Once the
// control plane is done and the hold is lifted, the agent's write of the
// pool is refused: f1 fails within the health tolerance with the policy's
// message, not at the cluster timeout, and the rollout halts before f2.
func TestFleetRolloutFailsARefusedClusterWithinTheTolerance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns, _ := suite.InMemoryFleet(t, "refused", "f1", "f2")
	key := client.ObjectKey{Namespace: ns, Name: "f1"}
	if err := fixture.ChangeTopology(ctx, suite.K8s, key, func(topo *v1alpha2.Topology) {
		topo.Spec.Workers.MachineDeployments[0].Metadata.Annotations = map[string]string{clusterv1.ClusterTopologyHoldUpgradeSequenceAnnotation: ""}
	}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"f1", "f2"} {
		suite.Settle(t, ns, n)
	}
	name := "refused-" + ns
	suite.MustTopology(t, "rollout", "create", name, "-l", "fleet="+ns, "--version", "v1.34.0", "--waves", "1,100%",
		"--health-tolerance", "30s", "--cluster-timeout", "30m", "--yes")
	t.Cleanup(func() {
		_ = suite.K8s.Delete(context.Background(), &v1alpha2.TopologyRollout{ObjectMeta: objectMeta(name)})
	})
	suite.WaitRollout(t, name, 2*time.Minute, "f1 started", func(ro *v1alpha2.TopologyRollout) bool {
		return fixture.RolloutCluster(ro, "f1").Applied
	})
	fixture.Eventually(t, fixture.SettleTimeout, "f1's control plane is at v1.34.0 and its pool held", func(ctx context.Context) (bool, error) {
		topo := &v1alpha2.Topology{}
		if err := suite.K8s.Get(ctx, key, topo); err != nil {
			return false, err
		}
		cp, md := topo.Status.ControlPlane, topo.Status.MachineDeployments
		return cp != nil && cp.Version == "v1.34.0" && len(md) == 1 && md[0].Phase == v1alpha2.PhaseHeld, fmt.Errorf("control plane %+v, pools %+v", cp, md)
	})

	// The freeze comes after the cluster started: its preflight could not see it.
	fixture.AdmissionPolicy(t, suite.K8s, "md-freeze-"+ns, ns,
		[]any{fixture.PolicyRule("cluster.x-k8s.io", "machinedeployments", "UPDATE")},
		"!('cluster.x-k8s.io/cluster-name' in object.metadata.labels) || object.metadata.labels['cluster.x-k8s.io/cluster-name'] != 'f1' || object.spec.template.spec.version == oldObject.spec.template.spec.version",
		"worker change freeze on f1")
	fixture.Eventually(t, time.Minute, "the policy refuses f1's pool version change", func(ctx context.Context) (bool, error) {
		md := machineDeploymentOf(t, ns, "f1")
		_ = unstructured.SetNestedField(md.Object, "v1.34.0", "spec", "template", "spec", "version")
		err := suite.K8s.Update(ctx, md, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "worker change freeze on f1"), fmt.Errorf("dry run answered %v", err)
	})
	if err := fixture.ChangeTopology(ctx, suite.K8s, key, func(topo *v1alpha2.Topology) {
		delete(topo.Spec.Workers.MachineDeployments[0].Metadata.Annotations, clusterv1.ClusterTopologyHoldUpgradeSequenceAnnotation)
	}); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	ro := suite.WaitRollout(t, name, fixture.SettleTimeout, "halted on f1's refusal", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutHalted
	})
	f1 := fixture.RolloutCluster(ro, "f1")
	if f1.Phase != v1alpha2.ClusterFailed || f1.Reason != "Refused" || !strings.Contains(f1.Message, "MachineDeployment "+ns+"/") || !strings.Contains(f1.Message, "worker change freeze on f1") {
		t.Errorf("f1: %+v", f1)
	}
	// Within the tolerance and the agent's retries, far from the 30m timeout
	// (a loaded machine slows the retries, not the tolerance).
	if took := f1.CompletedAt.Sub(released); took > 10*time.Minute {
		t.Errorf("f1 failed %s after its refused write began, want about the 30s tolerance", took)
	}
	if f2 := fixture.RolloutCluster(ro, "f2"); f2.Phase != v1alpha2.ClusterPending || f2.Attempt != 0 {
		t.Errorf("f2, in the wave after the halt: %+v", f2)
	}
	topo := &v1alpha2.Topology{}
	if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "f2"}, topo); err != nil || topo.Spec.Version != "v1.33.1" {
		t.Errorf("f2 after the halt: version %s (%v), want v1.33.1", topo.Spec.Version, err)
	}
	status := suite.MustTopology(t, "rollout", "status", name)
	if !strings.Contains(status, "Refused: the API server refused MachineDeployment") {
		t.Errorf("rollout status of the halted rollout:\n%s", status)
	}
}

// TestFleetRolloutProgressDeadline rolls g1, whose KubeadmControlPlane is
// paused so that its control plane cannot roll: with a progress deadline of
// 45s and a cluster timeout of 30m, g1 fails at the deadline, with what
// holds it as its reason.
func TestFleetRolloutProgressDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns, _ := suite.InMemoryFleet(t, "deadline", "g1")
	suite.Settle(t, ns, "g1")
	kcp := controlPlaneOf(t, ns, "g1")
	patch := client.MergeFrom(kcp.DeepCopy())
	kcp.SetAnnotations(map[string]string{clusterv1.PausedAnnotation: ""})
	if err := suite.K8s.Patch(ctx, kcp, patch); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // a paused control plane is not deleted
		latest := controlPlaneOf(t, ns, "g1")
		unpause := client.MergeFrom(latest.DeepCopy())
		latest.SetAnnotations(nil)
		if err := suite.K8s.Patch(context.Background(), latest, unpause); err != nil {
			t.Error(err)
		}
	})
	name := "deadline-" + ns
	suite.MustTopology(t, "rollout", "create", name, "-l", "fleet="+ns, "--version", "v1.34.0", "--waves", "100%",
		"--progress-deadline", "45s", "--cluster-timeout", "30m", "--yes")
	t.Cleanup(func() {
		_ = suite.K8s.Delete(context.Background(), &v1alpha2.TopologyRollout{ObjectMeta: objectMeta(name)})
	})
	ro := suite.WaitRollout(t, name, fixture.SettleTimeout, "g1 failed at its progress deadline", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutHalted
	})
	g1 := fixture.RolloutCluster(ro, "g1")
	if g1.Phase != v1alpha2.ClusterFailed || g1.Reason != "ProgressDeadlineExceeded" || !strings.Contains(g1.Message, "no progress for 45s") {
		t.Fatalf("g1: %+v", g1)
	}
	if took := g1.CompletedAt.Sub(g1.StartedAt.Time); took > 10*time.Minute { // far from the 30m timeout
		t.Errorf("g1 failed %s after it started, want about the 45s deadline", took)
	}
	// The reason is what status says holds it: each part, its state and why.
	held := strings.SplitN(g1.Message, ": ", 2)[1]
	status := suite.MustTopology(t, "status", "g1", "-n", ns)
	if !strings.Contains(held, "control-plane: RollingOut: ") {
		t.Errorf("the reason does not say the control plane holds it: %q", held)
	}
	for _, part := range strings.Split(held, "; ") {
		for _, field := range strings.SplitN(part, ": ", 3) {
			if !strings.Contains(status, field) {
				t.Errorf("the reason says %q, which status does not:\n%s", field, status)
			}
		}
	}
}

// TestFleetApprovalAndUndo rolls a variable over u1 and u2 with an
// approval before wave 2: wave 2 waits until `rollout approve`, which
// records the user. `rollout undo` then previews and creates the reverse,
// with the same gate, and returns each cluster to the value it had (the
// class's default, which admission wrote into each Topology), wave by wave.
func TestFleetApprovalAndUndo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns, _ := suite.InMemoryFleet(t, "approve", "u1", "u2")
	for _, n := range []string{"u1", "u2"} {
		suite.Settle(t, ns, n)
	}
	before := variableOf(t, ns, "u1", "workerStartup")
	if before == `"2s"` || variableOf(t, ns, "u2", "workerStartup") != before {
		t.Fatalf("u1 and u2 start with workerStartup %s and %s", before, variableOf(t, ns, "u2", "workerStartup"))
	}
	goesBack := fmt.Sprintf("(the rollout sets %s)", before)
	if before == "" {
		goesBack = "(the rollout unsets it)"
	}
	name := "startup-" + ns
	suite.MustTopology(t, "rollout", "create", name, "-l", "fleet="+ns, "--set", "workerStartup=2s", "--waves", "1,100%", "--approval", "2", "--yes")
	t.Cleanup(func() {
		_ = suite.K8s.Delete(context.Background(), &v1alpha2.TopologyRollout{ObjectMeta: objectMeta(name)})
	})
	ro := suite.WaitRollout(t, name, fixture.SettleTimeout, "waits for the approval of wave 2", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutWaitingForApproval
	})
	if u1 := fixture.RolloutCluster(ro, "u1"); u1.Phase != v1alpha2.ClusterSucceeded {
		t.Errorf("the canary u1: %+v", u1)
	}
	if !strings.Contains(ro.Status.Message, "kubectl topology rollout approve "+name+" --wave 2") {
		t.Errorf("the rollout's message does not say how to approve: %q", ro.Status.Message)
	}
	// Unapproved, wave 2 stays as it is pass after pass.
	fixture.AfterPasses(t, suite.K8s, client.ObjectKey{Namespace: ns, Name: "u2"}, 2)
	if err := suite.K8s.Get(ctx, client.ObjectKey{Name: name}, ro); err != nil {
		t.Fatal(err)
	}
	if u2 := fixture.RolloutCluster(ro, "u2"); u2.Phase != v1alpha2.ClusterPending || u2.Attempt != 0 || u2.Reason != "WaitingForApproval" {
		t.Errorf("u2 before the approval: %+v", u2)
	}
	if v := variableOf(t, ns, "u2", "workerStartup"); v != before {
		t.Errorf("u2 has workerStartup %s before its wave was approved, want %s", v, before)
	}
	out := suite.MustTopology(t, "rollout", "approve", name)
	if !strings.Contains(out, "Wave 2 of TopologyRollout "+name+" approved by ") {
		t.Errorf("approve says: %s", out)
	}
	ro = suite.WaitRollout(t, name, fixture.SettleTimeout, "completed", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutCompleted
	})
	if len(ro.Spec.Approvals) != 1 || ro.Spec.Approvals[0].Wave != 2 || ro.Spec.Approvals[0].By == "" {
		t.Errorf("approvals: %+v", ro.Spec.Approvals)
	}
	for _, n := range []string{"u1", "u2"} {
		if v := variableOf(t, ns, n, "workerStartup"); v != `"2s"` {
			t.Errorf("%s after the rollout: workerStartup %s, want \"2s\"", n, v)
		}
	}

	preview := suite.MustTopology(t, "rollout", "undo", name, "--dry-run")
	for _, want := range []string{
		"TopologyRollout " + name + "-undo: undo of TopologyRollout " + name,
		"topology/" + ns + "/u1: variable workerStartup is \"2s\" " + goesBack,
		"topology/" + ns + "/u2: variable workerStartup is \"2s\" " + goesBack,
		"Preflight: every cluster that changes passes now",
		"Dry run: nothing was created.",
	} {
		if !strings.Contains(preview, want) {
			t.Errorf("the undo's dry run lacks %q:\n%s", want, preview)
		}
	}
	undo := name + "-undo"
	suite.MustTopology(t, "rollout", "undo", name, "--yes")
	t.Cleanup(func() {
		_ = suite.K8s.Delete(context.Background(), &v1alpha2.TopologyRollout{ObjectMeta: objectMeta(undo)})
	})
	suite.WaitRollout(t, undo, fixture.SettleTimeout, "waits for the approval of its wave 2 too", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutWaitingForApproval
	})
	if v := variableOf(t, ns, "u1", "workerStartup"); v != before {
		t.Errorf("u1, undone in wave 1: workerStartup %s, want %s", v, before)
	}
	if v := variableOf(t, ns, "u2", "workerStartup"); v != `"2s"` {
		t.Errorf("u2, before the undo's wave 2 is approved: workerStartup %s, want \"2s\"", v)
	}
	suite.MustTopology(t, "rollout", "approve", undo, "--wave", "2")
	suite.WaitRollout(t, undo, fixture.SettleTimeout, "completed", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutCompleted && ro.Status.Succeeded == 2
	})
	for _, n := range []string{"u1", "u2"} {
		if v := variableOf(t, ns, n, "workerStartup"); v != before {
			t.Errorf("%s after the undo: workerStartup %s, want %s", n, v, before)
		}
	}
	list := suite.MustTopology(t, "rollout", "list")
	if line := lineWith(list, undo); !strings.Contains(line, "undo of "+name) || !strings.Contains(line, "Completed") {
		t.Errorf("rollout list, the line of %s: %q", undo, line)
	}
}

// controlPlaneOf is the KubeadmControlPlane of Topology ns/name.
func controlPlaneOf(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	return ownedBy(t, ns, name, "KubeadmControlPlane")
}

// machineDeploymentOf is the one MachineDeployment of Topology ns/name.
func machineDeploymentOf(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	return ownedBy(t, ns, name, "MachineDeployment")
}

func ownedBy(t *testing.T, ns, cluster, kind string) *unstructured.Unstructured {
	t.Helper()
	items, err := suite.List(context.Background(), ns, kind)
	if err != nil {
		t.Fatal(err)
	}
	for i := range items {
		if items[i].GetLabels()["cluster.x-k8s.io/cluster-name"] == cluster {
			return &items[i]
		}
	}
	t.Fatalf("no %s of cluster %s/%s", kind, ns, cluster)
	return nil
}

// variableOf is the value Topology ns/name sets for variable, as JSON; ""
// when it sets none.
func variableOf(t *testing.T, ns, name, variable string) string {
	t.Helper()
	topo := &v1alpha2.Topology{}
	if err := suite.K8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, topo); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(topo.Spec.Variables, func(v v1alpha2.ClusterVariable) bool { return v.Name == variable })
	if i < 0 {
		return ""
	}
	return string(topo.Spec.Variables[i].Value.Raw)
}

// lineWith is the first line of text that has s.
func lineWith(text, s string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}
