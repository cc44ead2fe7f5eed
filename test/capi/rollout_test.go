package capi

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestFleetRolloutWavesFailureRetryAndRebase rolls six Topologies of one
// class to the next minor with `kubectl topology rollout`, in waves of 1, 2
// and the rest, at most two in flight, with a soak. The second wave's first
// cluster is refused by an admission policy, so its preflight fails: the
// rollout halts at wave 2 with the reason, before its other cluster, and
// the third wave is not touched. With the policy gone, `retry` and `resume` finish it, and the
// Machines' creation times show the canary done before wave 2 began and
// never more than two clusters rolling at once. A second rollout then
// rebases two of them onto a class whose worker template differs: workers
// are replaced cluster by cluster, control plane Machines are not.
func TestFleetRolloutWavesFailureRetryAndRebase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	names := []string{"c1", "c2", "c3", "c4", "c5", "c6"}
	ns, ex := suite.InMemoryFleet(t, "fleet", names...)
	selector := "fleet=" + ns
	for _, name := range names {
		suite.Settle(t, ns, name)
	}
	name := "to-134-" + ns

	// Refused before anything exists: nothing matches; the waves do not cover.
	_, errOut, err := suite.Topology("", "rollout", "create", name, "-l", "fleet=none-"+ns, "--version", "v1.34.0", "--yes")
	if err == nil || !strings.Contains(errOut, "spec.targets") || !strings.Contains(errOut, "matches no cluster") {
		t.Errorf("a selector matching nothing: %v\n%s", err, errOut)
	}
	_, errOut, err = suite.Topology("", "rollout", "create", name, "-l", selector, "--version", "v1.34.0", "--waves", "1,1", "--yes")
	if err == nil || !strings.Contains(errOut, "the waves cover 2 of the 6 clusters selected") {
		t.Errorf("waves that do not cover the fleet: %v\n%s", err, errOut)
	}

	for args, want := range map[string]string{
		"--version v1.32.0": "spec.change.version: Forbidden: Topology/" + ns + "/c1: downgrading from v1.33.1 to v1.32.0 is not supported",
		"--class nope":      "spec.change.class: Forbidden: Topology/" + ns + "/c1: class nope does not exist in namespace " + ns,
	} {
		_, errOut, err = suite.Topology("", append([]string{"rollout", "create", name, "-l", selector, "--yes"}, strings.Fields(args)...)...)
		if err == nil || !strings.Contains(errOut, want) {
			t.Errorf("rollout create %s: %v\n%s", args, err, errOut)
		}
	}

	// The agent's webhook refuses the same, whatever the client.
	bad := &v1alpha2.TopologyRollout{ObjectMeta: objectMeta("bad-" + ns), Spec: v1alpha2.TopologyRolloutSpec{
		Change:  v1alpha2.RolloutChange{Version: "v1.34.0"},
		Targets: v1alpha2.RolloutTargets{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "none-" + ns}}},
	}}
	if err := suite.K8s.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "matches no cluster") {
		t.Errorf("the webhook let a rollout that selects nothing through: %v", err)
	}

	// The freeze on c2: its version may not change, dry runs included.
	freeze := freezePolicy(t, ns, "c2")
	fixture.Eventually(t, time.Minute, "the admission policy refuses c2's version change", func(ctx context.Context) (bool, error) {
		err := dryRunVersion(ctx, ns, "c2")
		return err != nil && strings.Contains(err.Error(), "change freeze"), fmt.Errorf("dry run answered %v", err)
	})

	preview := suite.MustTopology(t, "rollout", "create", name, "-l", selector, "--version", "v1.34.0",
		"--waves", "1,2,100%", "--max-in-flight", "2", "--soak", "10s", "--cluster-timeout", "6m", "--dry-run")
	for _, want := range []string{
		"Wave 1 (canary): 1 cluster(s), 2 machine(s) replaced",
		"topology/" + ns + "/c1: version is v1.33.1 (the rollout sets v1.34.0); 2 machine(s) replaced",
		"Wave 2: 2 cluster(s), 4 machine(s) replaced",
		"Wave 3: 3 cluster(s), 6 machine(s) replaced",
		"Fleet: 6 cluster(s) in 3 wave(s), 12 machine(s) replaced in all.",
		"Dry run: nothing was created.",
	} {
		if !strings.Contains(preview, want) {
			t.Errorf("the dry run lacks %q:\n%s", want, preview)
		}
	}
	suite.MustTopology(t, "rollout", "create", name, "-l", selector, "--version", "v1.34.0",
		"--waves", "1,2,100%", "--max-in-flight", "2", "--soak", "10s", "--cluster-timeout", "6m", "--yes")
	t.Cleanup(func() {
		_ = suite.K8s.Delete(context.Background(), &v1alpha2.TopologyRollout{ObjectMeta: objectMeta(name)})
	})

	// What a rollout changes cannot change once it exists.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error { // the agent writes its status meanwhile
		live := &v1alpha2.TopologyRollout{}
		if err := suite.K8s.Get(ctx, client.ObjectKey{Name: name}, live); err != nil {
			return err
		}
		live.Spec.Change.Version = "v1.35.0"
		return suite.K8s.Update(ctx, live)
	})
	if err == nil || !strings.Contains(err.Error(), "spec.change: Forbidden") {
		t.Errorf("changing a rollout's change: %v", err)
	}

	// A second rollout over the same clusters is refused while this one runs.
	_, errOut, err = suite.Topology("", "rollout", "create", "second-"+ns, "-l", selector, "--version", "v1.34.0", "--yes")
	if err == nil || !strings.Contains(errOut, "is already in TopologyRollout "+name) {
		t.Errorf("a second rollout over the same clusters: %v\n%s", err, errOut)
	}

	ro := suite.WaitRollout(t, name, fixture.SettleTimeout, "halted at wave 2", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutHalted
	})
	if c := fixture.RolloutCluster(ro, "c2"); c.Phase != v1alpha2.ClusterFailed || c.Reason != "Preflight" || !strings.Contains(c.Message, "change freeze on c2") {
		t.Errorf("c2 in the halted rollout: %+v", c)
	}
	if c := fixture.RolloutCluster(ro, "c1"); c.Phase != v1alpha2.ClusterSucceeded {
		t.Errorf("the canary c1: %+v", c)
	}
	// Preflight goes in the wave's order and the halt stops the pass: c3, in
	// c2's wave, was not started either.
	if c := fixture.RolloutCluster(ro, "c3"); c.Phase != v1alpha2.ClusterPending || c.Attempt != 0 {
		t.Errorf("c3, after c2 in wave 2: %+v", c)
	}
	status := suite.MustTopology(t, "rollout", "status", name)
	if !strings.Contains(status, "Phase: Halted") || !strings.Contains(status, "Preflight: preflight failed; nothing was changed") {
		t.Errorf("rollout status of the halted rollout:\n%s", status)
	}
	// Nothing after it was touched, and nothing changes it now.
	fixture.AfterPasses(t, suite.K8s, client.ObjectKey{Namespace: ns, Name: "c4"}, 2)
	for _, n := range names[1:] {
		topo := &v1alpha2.Topology{}
		if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, topo); err != nil || topo.Spec.Version != "v1.33.1" {
			t.Errorf("%s after the halt: version %s (%v), want v1.33.1 untouched", n, topo.Spec.Version, err)
		}
	}
	out := suite.MustTopology(t, "get", "-n", ns)
	if !strings.Contains(out, "ROLLOUT") || !strings.Contains(out, name+":Failed") {
		t.Errorf("get does not show the rollout c2 is in:\n%s", out)
	}

	// The cause fixed: retry c2, then resume (a pause taken meanwhile).
	suite.MustTopology(t, "rollout", "pause", name)
	if err := suite.K8s.Delete(ctx, freeze); err != nil {
		t.Fatal(err)
	}
	// The API server drops a deleted binding a moment later.
	fixture.Eventually(t, time.Minute, "c2's version change is accepted again", func(ctx context.Context) (bool, error) {
		return dryRunVersion(ctx, ns, "c2") == nil, dryRunVersion(ctx, ns, "c2")
	})
	retry := suite.MustTopology(t, "rollout", "retry", name, "c2", "-n", ns)
	if !strings.Contains(retry, "attempt 2") || !strings.Contains(retry, "rollout resume") {
		t.Errorf("retry says: %s", retry)
	}
	suite.MustTopology(t, "rollout", "resume", name)
	ro = suite.WaitRollout(t, name, fixture.SettleTimeout, "completed", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutCompleted
	})
	if ro.Status.Succeeded != 6 || fixture.RolloutCluster(ro, "c2").Attempt != 2 {
		t.Errorf("completed with %d succeeded, c2 attempt %d: %+v", ro.Status.Succeeded, fixture.RolloutCluster(ro, "c2").Attempt, ro.Status.Clusters)
	}
	// -o json is the stored object, for automation.
	var stored v1alpha2.TopologyRollout
	if err := json.Unmarshal([]byte(suite.MustTopology(t, "rollout", "status", name, "-o", "json")), &stored); err != nil || stored.Status.Phase != v1alpha2.RolloutCompleted {
		t.Errorf("rollout status -o json: %v, phase %s", err, stored.Status.Phase)
	}

	ms, err := suite.Machines(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	windows := fixture.RollingWindows(ms, "v1.34.0")
	for _, n := range names {
		if running, all := countCluster(ms, n, "v1.34.0"); running != 2 || all != 2 {
			t.Errorf("%s: %d of %d machines run v1.34.0, want 2 of 2", n, running, all)
		}
	}
	for _, later := range names[1:] {
		if !windows["c1"].End.Before(windows[later].Start) {
			t.Errorf("the canary's machines were still being created (until %s) when %s's began (%s)", windows["c1"].End, later, windows[later].Start)
		}
	}
	if most := fixture.MostAtOnce(windows); most > 2 {
		t.Errorf("%d clusters were rolling at once; at most 2 in flight: %+v", most, windows)
	}
	for _, wave2 := range []string{"c2", "c3"} {
		for _, wave3 := range []string{"c4", "c5", "c6"} {
			if !windows[wave2].End.Before(windows[wave3].Start) {
				t.Errorf("wave 3's %s began before wave 2's %s finished: %+v", wave3, wave2, windows)
			}
		}
	}

	// Rebase c1 and c2 onto a class whose worker template differs.
	other := ex
	other.Class = ex.Class.DeepCopy()
	other.Class.Name = "in-memory-b"
	other.Class.Spec.Workers.MachineDeployments[0].Infrastructure.TemplateRef.Name = "in-memory-worker-b"
	other.Templates = nil
	for _, tpl := range ex.Templates {
		if tpl.GetKind() == "DevMachineTemplate" && tpl.GetName() == "in-memory-worker" {
			b := tpl.DeepCopy()
			b.SetName("in-memory-worker-b")
			b.SetResourceVersion("")
			_ = unstructured.SetNestedField(b.Object, "2s", "spec", "template", "spec", "backend", "inMemory", "node", "provisioning", "startupDuration")
			other.Templates = append(other.Templates, b)
		}
	}
	if err := other.CreateClass(ctx, suite.K8s); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"c1", "c2"} {
		if err := fixture.ChangeTopology(ctx, suite.K8s, client.ObjectKey{Namespace: ns, Name: n}, func(topo *v1alpha2.Topology) {
			topo.Labels["rebase"] = "yes"
		}); err != nil {
			t.Fatal(err)
		}
	}
	rebase := "rebase-" + ns
	preview = suite.MustTopology(t, "rollout", "create", rebase, "-l", selector+",rebase=yes", "--class", "in-memory-b", "--waves", "1,100%", "--dry-run")
	if !strings.Contains(preview, "class is in-memory (the rollout sets in-memory-b); 1 machine(s) replaced") {
		t.Errorf("the rebase's dry run:\n%s", preview)
	}
	suite.MustTopology(t, "rollout", "create", rebase, "-l", selector+",rebase=yes", "--class", "in-memory-b", "--waves", "1,100%", "--yes")
	t.Cleanup(func() {
		_ = suite.K8s.Delete(context.Background(), &v1alpha2.TopologyRollout{ObjectMeta: objectMeta(rebase)})
	})
	suite.WaitRollout(t, rebase, fixture.SettleTimeout, "the rebase completed", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutCompleted && ro.Status.Succeeded == 2
	})
	after, err := suite.Machines(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, old := range ms {
		kept := slices.ContainsFunc(after, func(m fixture.Machine) bool { return m.Name == old.Name })
		rebased := old.Cluster == "c1" || old.Cluster == "c2"
		switch {
		case old.ControlPlane && !kept:
			t.Errorf("control plane machine %s of %s was replaced by a rebase that changes only the workers", old.Name, old.Cluster)
		case !old.ControlPlane && rebased && kept:
			t.Errorf("worker machine %s of %s was not replaced by the rebase", old.Name, old.Cluster)
		case !old.ControlPlane && !rebased && !kept:
			t.Errorf("worker machine %s of %s, not in the rebase, was replaced", old.Name, old.Cluster)
		}
	}
	var created []fixture.Machine
	for _, m := range after {
		if !slices.ContainsFunc(ms, func(old fixture.Machine) bool { return old.Name == m.Name }) {
			created = append(created, m)
		}
	}
	rw := fixture.RollingWindows(created, "v1.34.0")
	if !rw["c1"].End.Before(rw["c2"].Start) {
		t.Errorf("the rebase's canary c1 was still creating machines when c2 began: %+v", rw)
	}
}

func objectMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

// freezePolicy makes an admission policy and binding that refuse any
// change of Topology name's version in ns; it returns the binding, whose
// deletion lifts the freeze.
func freezePolicy(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	return fixture.AdmissionPolicy(t, suite.K8s, "freeze-"+ns, ns,
		[]any{fixture.PolicyRule(v1alpha2.GroupVersion.Group, "topologies", "UPDATE")},
		fmt.Sprintf("object.metadata.name != '%s' || object.spec.version == oldObject.spec.version", name),
		"change freeze on "+name)
}

// dryRunVersion asks the API server whether Topology ns/name may move to
// v1.34.0, changing nothing.
func dryRunVersion(ctx context.Context, ns, name string) error {
	topo := &v1alpha2.Topology{}
	if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, topo); err != nil {
		return err
	}
	topo.Spec.Version = "v1.34.0"
	return suite.K8s.Update(ctx, topo, client.DryRunAll)
}

func countCluster(ms []fixture.Machine, cluster, version string) (running, all int) {
	for _, m := range ms {
		if m.Cluster == cluster {
			all++
			if m.Version == version && m.Phase == "Running" {
				running++
			}
		}
	}
	return running, all
}
