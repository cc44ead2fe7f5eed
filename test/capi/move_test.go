package capi

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine"
	"github.com/kubectl-topology/kubectl-topology/pkg/localcluster"
	"github.com/kubectl-topology/kubectl-topology/pkg/process"
	"github.com/kubectl-topology/kubectl-topology/test/fixture"
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
// agent-made cluster, as it does upstream's.
func TestMoveToDirectoryAndBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ex, err := fixture.ClassInNewNamespace(ctx, suite.K8s, "in-memory", "move")
	if err != nil {
		t.Fatal(err)
	}
	ns := ex.Topology.Namespace
	for _, name := range movedNames {
		topo := ex.Topology.DeepCopy()
		topo.Name = name
		topo.Spec.ControlPlane.Replicas = ptr.To[int32](1)
		topo.Spec.Workers.MachineDeployments = topo.Spec.Workers.MachineDeployments[:1]
		topo.Spec.Workers.MachineDeployments[0].Replicas = ptr.To[int32](1)
		if err := suite.K8s.Create(ctx, topo); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteTopology(t, suite.K8s, ns, name) })
	}
	for _, name := range movedNames {
		suite.Settle(t, ns, name, 4*time.Minute)
	}

	describe := suite.Clusterctl(t, "describe", "cluster", "dev-a", "-n", ns, "--kubeconfig", suite.Kubeconfig)
	for _, want := range []string{"Cluster/dev-a", "KubeadmControlPlane/dev-a-", "MachineDeployment/dev-a-md-a-", "Machine/dev-a-"} {
		if !strings.Contains(describe, want) {
			t.Errorf("clusterctl describe cluster dev-a lacks %q:\n%s", want, describe)
		}
	}

	source := ours(t, suite.K8s, ns)
	dir := t.TempDir()
	suite.Clusterctl(t, "move", "--to-directory", dir, "-n", ns, "--kubeconfig", suite.Kubeconfig)
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
	for _, want := range []string{"Machine", "DevMachine", "KubeadmConfig", "MachineSet", "Secret"} {
		if !anyPrefix(written, want+"_"+ns+"_") {
			t.Errorf("clusterctl move --to-directory wrote no %s:\n%s", want, keys(written))
		}
	}
	// Backing up pauses every Cluster and resumes it: the source's agent
	// comes back to each Topology.
	for _, name := range movedNames {
		suite.Settle(t, ns, name, time.Minute)
	}
	if t.Failed() {
		t.FailNow()
	}

	// The restore: a fresh control plane with Cluster API v1.14's CRDs and
	// webhooks, served by the suite's managers (the two share certificates),
	// and an agent; no manager acts on it.
	root, err := localcluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	targetDir, err := os.MkdirTemp("", "kubectl-topology-restore-")
	if err != nil {
		t.Fatal(err)
	}
	target, err := localcluster.Start(ctx, localcluster.Options{Dir: targetDir, BinDir: suite.BinDir, CRDDirs: []string{filepath.Join(root, "manifests", "crd")}, PivotFrom: suite.Cluster})
	if err != nil {
		_ = os.RemoveAll(targetDir)
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = target.Stop(); _ = os.RemoveAll(targetDir) })
	state := filepath.Join(targetDir, "agent")
	if out, errOut, err := fixture.RunPlugin(suite.Plugin, target.Kubeconfig, "", "install", "--local", "--state-dir", state); err != nil {
		t.Fatalf("install --local on the target: %v\n%s%s", err, out, errOut)
	}
	t.Cleanup(func() { _ = process.Stop(filepath.Join(state, "agent.pid")) })
	cfg, err := clientcmd.BuildConfigFromFlags("", target.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := client.New(cfg, client.Options{Scheme: suite.K8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	restored := metav1.Now().Rfc3339Copy()
	suite.Clusterctl(t, "move", "--from-directory", dir, "--to-kubeconfig", target.Kubeconfig)

	for _, name := range movedNames {
		fixture.Eventually(t, 2*time.Minute, "the restored Topology "+name+" is reconciled", func(ctx context.Context) (bool, error) {
			topo := &v1alpha2.Topology{}
			if err := tk.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, topo); err != nil {
				return false, err
			}
			c := meta.FindStatusCondition(topo.Status.Conditions, v1alpha2.TopologyReconciledCondition)
			if c == nil || c.ObservedGeneration != topo.Generation {
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
	for _, ref := range engine.ClassTemplateRefs(class) {
		tmpl := &unstructured.Unstructured{}
		tmpl.SetAPIVersion(ref.APIVersion)
		tmpl.SetKind(ref.Kind)
		if err := tk.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, tmpl); err != nil {
			t.Errorf("%s of the restored class: %v", ref.Field, err)
		} else if !engine.OwnedBy(tmpl, class.UID) {
			t.Errorf("restored %s %s does not name the restored class as owner: %v", ref.Kind, ref.Name, tmpl.GetOwnerReferences())
		}
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
		for _, ref := range engine.ClassTemplateRefs(class) {
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

// deleteTopology deletes Topology ns/name and waits until it is gone.
func deleteTopology(t *testing.T, c client.Client, ns, name string) {
	topo := &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	_ = c.Delete(context.Background(), topo)
	fixture.Eventually(t, 3*time.Minute, "Topology "+name+" is deleted", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(topo), &v1alpha2.Topology{})
		return apierrors.IsNotFound(err), err
	})
}
