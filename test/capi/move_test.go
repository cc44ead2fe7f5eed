package capi

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// movedNames are the three Topologies of the move test.
var movedNames = []string{"dev-a", "dev-b", "dev-c"}

// TestMoveToDirectoryAndBack is clusterctl's backup and restore, as users
// run it: three provisioned Topologies of one class are written out with
// `clusterctl move --to-directory` — every object of ours (Topologies,
// class, the templates it owns) and of Cluster API's — and restored with
// `--from-directory` into a fresh control plane where an agent runs. There
// every Topology reconciles without a write to what it generated and
// nothing is made anew. `clusterctl describe cluster` shows the tree of an
// agent-made cluster and its TopologyReconciled condition, as it does upstream's.
// A fleet rollout over the three, paused after its canary, goes along with
// its status and resumes on the target.
func TestMoveToDirectoryAndBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ex, err := fixture.ClassInNewNamespace(ctx, suite.K8s, "in-memory", "move")
	if err != nil {
		t.Fatal(err)
	}
	ns := ex.Topology.Namespace
	suite.OneMachineTopologies(t, ex, movedNames...)
	// A move that fails leaves the Clusters paused, and Cluster API does not
	// delete a paused Cluster: resumed first, the Topologies' deletion ends.
	t.Cleanup(func() { resumeClusters(t, ns) })
	for _, name := range movedNames {
		suite.Settle(t, ns, name)
	}
	rollout := pausedRollout(t, ns)

	// The agent mirrors TopologyReconciled onto the Cluster, as upstream's
	// topology controller does, and Cluster API's controller keeps it there.
	describe := suite.Clusterctl(t, "describe", "cluster", "dev-a", "-n", ns, "--show-conditions", "Cluster", "--kubeconfig", suite.Kubeconfig)
	for _, want := range []string{"Cluster/dev-a", "KubeadmControlPlane/dev-a-", "MachineDeployment/dev-a-md-a-", "Machine/dev-a-", "TopologyReconciled"} {
		if !strings.Contains(describe, want) {
			t.Errorf("clusterctl describe cluster dev-a lacks %q:\n%s", want, describe)
		}
	}

	// clusterctl move fails when an object it listed is gone before it reads
	// it, after about two minutes of retries, leaving every Cluster paused.
	// The canary's old MachineSet and the clone it used go a moment after
	// the rollout waits: the move starts once they have.
	fixture.Eventually(t, 2*time.Minute, "the canary's old MachineSet and worker template are gone", func(ctx context.Context) (bool, error) {
		return rotationOver(ctx, suite.K8s, ns)
	})
	source := ours(t, suite.K8s, ns)
	dir := t.TempDir()
	suite.Clusterctl(t, "move", "--to-directory", dir, "-n", ns, "--kubeconfig", suite.Kubeconfig)
	// The canary's change replaced its worker template: the agent deletes
	// the old clone once no MachineSet uses it, which may be after the
	// listing. What was gone before the move is not expected in it.
	source = stillThere(t, suite.K8s, source)
	written := map[string]bool{}
	files, _ := os.ReadDir(dir)
	for _, f := range files {
		written[strings.TrimSuffix(f.Name(), ".yaml")] = true
	}
	for _, o := range source {
		if name := o.GetKind() + "_" + ns + "_" + o.GetName(); !written[name] {
			t.Errorf("clusterctl move --to-directory did not write %s", name)
		}
	}
	if !written[v1alpha2.TopologyRolloutKind+"__"+rollout.Name] {
		t.Errorf("clusterctl move --to-directory did not write TopologyRollout %s:\n%s", rollout.Name, keys(written))
	}
	for _, want := range []string{"Machine", "DevMachine", "KubeadmConfig", "MachineSet", "Secret"} {
		if !anyPrefix(written, want+"_"+ns+"_") {
			t.Errorf("clusterctl move --to-directory wrote no %s:\n%s", want, keys(written))
		}
	}
	// Backing up pauses every Cluster and resumes it: the source's agent
	// comes back to each Topology.
	for _, name := range movedNames {
		suite.Settle(t, ns, name)
	}
	if t.Failed() {
		t.FailNow()
	}

	// The restore: a fresh control plane with an agent; no manager acts on it.
	mt := suite.MoveTarget(t, "restore")
	target, tk := mt.Cluster, mt.K8s
	restored := metav1.Now().Rfc3339Copy()
	suite.Clusterctl(t, "move", "--from-directory", dir, "--to-kubeconfig", target.Kubeconfig)

	for _, name := range movedNames {
		fixture.Eventually(t, 2*time.Minute, "the restored Topology "+name+" is reconciled", func(ctx context.Context) (bool, error) {
			topo := &v1alpha2.Topology{}
			if err := tk.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, topo); err != nil {
				return false, err
			}
			c, current := fixture.Reconciled(topo)
			if !current {
				return false, nil
			}
			// With no manager here, no status of Cluster API's says the
			// cluster runs: past the hold, whatever the rollout reads.
			switch c.Reason {
			case "ClusterPaused", "ClusterMissing", "ClusterClassNotReconciled", "ReconcileFailed":
				return false, &conditionError{c}
			}
			return true, nil
		})
	}
	after := ours(t, tk, ns)
	if got, want := kindNames(after), kindNames(source); got != want {
		t.Errorf("objects after the restore differ from the source's:\n got %s\nwant %s", got, want)
	}
	// clusterctl carries each object's field managers over from the source;
	// a newer entry, but clusterctl's own unpausing, is a write made here.
	for _, o := range after {
		for _, mf := range o.GetManagedFields() {
			if mf.Time != nil && !mf.Time.Before(&restored) && mf.Subresource == "" && !strings.HasPrefix(mf.Manager, "clusterctl") {
				t.Errorf("%s wrote %s %s at %s, after the restore began (%s)", mf.Manager, o.GetKind(), o.GetName(), mf.Time, restored)
			}
		}
	}
	class := &v1alpha2.TopologyClass{}
	if err := tk.Get(ctx, client.ObjectKeyFromObject(ex.Class), class); err != nil {
		t.Fatal(err)
	}
	for _, ref := range contract.ClassTemplateRefs(class) {
		tmpl := &unstructured.Unstructured{}
		tmpl.SetAPIVersion(ref.APIVersion)
		tmpl.SetKind(ref.Kind)
		if err := tk.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, tmpl); err != nil {
			t.Errorf("%s of the restored class: %v", ref.Field, err)
		} else if !desiredstate.OwnedBy(tmpl, class.UID) {
			t.Errorf("restored %s %s does not name the restored class as owner: %v", ref.Kind, ref.Name, tmpl.GetOwnerReferences())
		}
	}
	resumeOnTarget(t, mt, rollout)
}

// pausedRollout rolls a worker variable over the move test's Topologies,
// labelled for it, in two waves, the second behind an approval: once the
// canary dev-a has its change and the rollout waits for the approval, it is
// paused, as a user pauses a rollout before a move. It returns the rollout
// as its status annotation carries it then.
func pausedRollout(t *testing.T, ns string) *v1alpha2.TopologyRollout {
	t.Helper()
	ctx := context.Background()
	for _, name := range movedNames {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"move":"`+ns+`"}}}`))
		if err := suite.K8s.Patch(ctx, &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, patch); err != nil {
			t.Fatal(err)
		}
	}
	name := "mv-" + ns
	suite.MustTopology(t, "rollout", "create", name, "-l", "move="+ns, "--set", "workerStartup=4s", "--waves", "1,100%", "--approval", "2", "--yes")
	t.Cleanup(func() {
		_ = suite.K8s.Delete(context.Background(), &v1alpha2.TopologyRollout{ObjectMeta: objectMeta(name)})
	})
	suite.WaitRollout(t, name, fixture.SettleTimeout, "waits for wave 2's approval", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutWaitingForApproval
	})
	suite.MustTopology(t, "rollout", "pause", name)
	var carried *v1alpha2.TopologyRolloutStatus
	ro := suite.WaitRollout(t, name, time.Minute, "carries its paused status", func(ro *v1alpha2.TopologyRollout) bool {
		st, ok, err := fleet.Carried(ro)
		if err != nil {
			t.Fatal(err)
		}
		carried = st
		return ok && st.Phase == v1alpha2.RolloutPaused
	})
	if c := fixture.RolloutCluster(ro, "dev-a"); c.Phase != v1alpha2.ClusterSucceeded {
		t.Fatalf("the canary dev-a before the move: %+v", c)
	}
	ro.Status = *carried
	return ro
}

// resumeOnTarget checks that the rollout arrived paused with the status it
// had (the canary done, the next wave waiting), and that once approved and
// resumed there it changes the next cluster on the target, not on the
// source, whose copy clusterctl leaves as it was.
func resumeOnTarget(t *testing.T, mt fixture.MoveTarget, source *v1alpha2.TopologyRollout) {
	t.Helper()
	tk := mt.K8s
	var ro *v1alpha2.TopologyRollout
	fixture.Eventually(t, time.Minute, "TopologyRollout "+source.Name+" has its status back on the target", func(ctx context.Context) (bool, error) {
		ro = &v1alpha2.TopologyRollout{}
		if err := tk.Get(ctx, client.ObjectKey{Name: source.Name}, ro); err != nil {
			return false, err
		}
		return len(ro.Status.Clusters) > 0, nil
	})
	if !ro.Spec.Paused || ro.Status.Phase != v1alpha2.RolloutPaused || ro.Status.Wave != source.Status.Wave || ro.Status.Succeeded != 1 {
		t.Errorf("the restored rollout: paused %v, phase %s, wave %d, %d succeeded; the source carried wave %d, 1 succeeded", ro.Spec.Paused, ro.Status.Phase, ro.Status.Wave, ro.Status.Succeeded, source.Status.Wave)
	}
	for i, c := range ro.Status.Clusters {
		if want := source.Status.Clusters[i]; c.Name != want.Name || c.Phase != want.Phase || c.Wave != want.Wave {
			t.Errorf("restored cluster %d: %s %s wave %d, the source carried %s %s wave %d", i, c.Name, c.Phase, c.Wave, want.Name, want.Phase, want.Wave)
		}
	}
	onTarget := func(args ...string) string {
		out, errOut, err := fixture.RunPlugin(suite.Plugin, mt.Cluster.Kubeconfig, "", args...)
		if err != nil {
			t.Fatalf("kubectl topology %s on the target: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
		return out
	}
	onTarget("rollout", "approve", source.Name, "--wave", "2")
	onTarget("rollout", "resume", source.Name)
	ns := source.Status.Clusters[0].Namespace
	fixture.Eventually(t, 2*time.Minute, "the resumed rollout sets the variable on dev-b on the target", func(ctx context.Context) (bool, error) {
		topo := &v1alpha2.Topology{}
		if err := tk.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev-b"}, topo); err != nil {
			return false, err
		}
		for _, v := range topo.Spec.Variables {
			if v.Name == "workerStartup" && string(v.Value.Raw) == `"4s"` {
				return true, nil
			}
		}
		return false, nil
	})
	left := &v1alpha2.TopologyRollout{}
	if err := suite.K8s.Get(context.Background(), client.ObjectKey{Name: source.Name}, left); err != nil {
		t.Fatalf("the source's copy of the rollout: %v", err)
	}
	if !left.Spec.Paused {
		t.Errorf("the source's copy of the rollout was resumed: %+v", left.Spec)
	}
}

// conditionError says which condition a wait saw last.
type conditionError struct{ c *metav1.Condition }

func (e *conditionError) Error() string {
	return e.c.Type + "=" + string(e.c.Status) + " " + e.c.Reason + ": " + e.c.Message
}

// generatedKinds are what the in-memory class generates, in the versions
// Cluster API v1.14 stores.
var generatedKinds = []schema.GroupVersionKind{
	{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"},
	{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "MachineDeployment"},
	{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "MachineHealthCheck"},
	{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Kind: "KubeadmControlPlane"},
	{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Kind: "DevCluster"},
	{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Kind: "DevMachineTemplate"},
	{Group: "bootstrap.cluster.x-k8s.io", Version: "v1beta2", Kind: "KubeadmConfigTemplate"},
}

// ours lists, in ns, the objects clusterctl must carry for the move test's
// Topologies: the Topologies, their class and the templates it references,
// and what the agent generated.
func ours(t *testing.T, c client.Client, ns string) []*unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	var out []*unstructured.Unstructured
	add := func(kind string, obj client.Object) {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		o := &unstructured.Unstructured{Object: u}
		o.SetKind(kind)
		out = append(out, o)
	}
	topos := &v1alpha2.TopologyList{}
	classes := &v1alpha2.TopologyClassList{}
	if err := c.List(ctx, topos, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, classes, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range topos.Items {
		add(v1alpha2.TopologyKind, &topos.Items[i])
	}
	for i := range classes.Items {
		class := &classes.Items[i]
		add(v1alpha2.TopologyClassKind, class)
		for _, ref := range contract.ClassTemplateRefs(class) {
			tmpl := &unstructured.Unstructured{}
			tmpl.SetAPIVersion(ref.APIVersion)
			tmpl.SetKind(ref.Kind)
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, tmpl); err != nil {
				t.Fatalf("%s of TopologyClass %s: %v", ref.Field, class.Name, err)
			}
			out = append(out, tmpl)
		}
	}
	for _, name := range movedNames {
		objs, err := fixture.LiveOfKinds(ctx, c, ns, name, generatedKinds)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, objs...)
	}
	return out
}

// stillThere is objs less those the API server no longer has; an object
// listed without its apiVersion is kept.
func stillThere(t *testing.T, c client.Client, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetAPIVersion() == "" {
			// Topologies and classes, listed typed: they stay.
			out = append(out, o)
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		err := c.Get(context.Background(), client.ObjectKeyFromObject(o), live)
		switch {
		case apierrors.IsNotFound(err):
			t.Logf("%s %s was deleted before the move", o.GetKind(), o.GetName())
			continue
		case err != nil:
			t.Fatalf("reading %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		out = append(out, o)
	}
	return out
}

// kindNames renders the kinds and names of objs, sorted, one per line.
func kindNames(objs []*unstructured.Unstructured) string {
	var l []string
	for _, o := range objs {
		l = append(l, o.GetKind()+"/"+o.GetName())
	}
	sort.Strings(l)
	return strings.Join(l, "\n")
}

// anyPrefix tells whether a key of m starts with prefix.
func anyPrefix(m map[string]bool, prefix string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// keys renders the keys of m, sorted, one per line.
func keys(m map[string]bool) string {
	var l []string
	for k := range m {
		l = append(l, k)
	}
	sort.Strings(l)
	return strings.Join(l, "\n")
}

// rotationOver tells whether every worker template rotation in ns is over:
// one MachineSet per MachineDeployment, and each template clone (labelled
// for its cluster) in use as the agent counts it (desiredstate.InUse).
func rotationOver(ctx context.Context, c client.Client, ns string) (bool, error) {
	var users []*unstructured.Unstructured
	count := map[string]int{}
	for _, kind := range []string{"KubeadmControlPlane", "MachineDeployment", "MachineSet"} {
		items, err := fixture.ListKind(ctx, c, ns, kind)
		if err != nil {
			return false, err
		}
		count[kind] = len(items)
		for i := range items {
			users = append(users, &items[i])
		}
	}
	if count["MachineSet"] != count["MachineDeployment"] {
		return false, fmt.Errorf("%d MachineSets for %d MachineDeployments", count["MachineSet"], count["MachineDeployment"])
	}
	inUse, err := desiredstate.InUse(users, ns)
	if err != nil {
		return false, err
	}
	for _, kind := range []string{"DevMachineTemplate", "KubeadmConfigTemplate"} {
		templates, err := fixture.ListKind(ctx, c, ns, kind)
		if err != nil {
			return false, err
		}
		for i := range templates {
			tmpl := &templates[i]
			if _, clone := tmpl.GetLabels()[clusterv1.ClusterNameLabel]; clone && !inUse[clusterstate.KeyOf(tmpl)] {
				return false, fmt.Errorf("%s %s is left from a rotation", kind, tmpl.GetName())
			}
		}
	}
	return true, nil
}

// resumeClusters unpauses every Cluster in ns that a move left paused, as
// clusterctl does when a move succeeds.
func resumeClusters(t *testing.T, ns string) {
	t.Helper()
	clusters, err := suite.List(context.Background(), ns, "Cluster")
	if err != nil {
		t.Errorf("listing the Clusters to resume: %v", err)
		return
	}
	for i := range clusters {
		c := &clusters[i]
		if paused, _, _ := unstructured.NestedBool(c.Object, "spec", "paused"); !paused {
			continue
		}
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":null}}`))
		if err := suite.K8s.Patch(context.Background(), c, patch); err != nil {
			t.Errorf("resuming Cluster %s/%s: %v", ns, c.GetName(), err)
		}
	}
}
