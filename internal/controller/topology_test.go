package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/loader"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// clusterOf reads the Cluster API Cluster of topo; nil when there is none.
func clusterOf(t *testing.T, topo *v1alpha2.Topology) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(contract.CoreV1Beta1.APIVersion())
	u.SetKind("Cluster")
	err := k8s.Get(context.Background(), client.ObjectKeyFromObject(topo), u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// ownedByTopology tells whether o names topo as its controlling owner.
func ownedByTopology(o *unstructured.Unstructured, topo *v1alpha2.Topology) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "Topology" && ref.Name == topo.Name && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

// generatedOf is the last of ex's generated objects that is, or fails the
// test naming what was sought among what there is.
func generatedOf(t *testing.T, ex fixture.Example, what string, is func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	objs := liveOf(t, ex)
	var found *unstructured.Unstructured
	for _, o := range objs {
		if is(o) {
			found = o
		}
	}
	if found == nil {
		t.Fatalf("no %s among %s", what, fixture.KindCounts(objs))
	}
	return found
}

// liveOf is every object labelled for ex's cluster, read from the API server.
func liveOf(t *testing.T, ex fixture.Example) []*unstructured.Unstructured {
	t.Helper()
	objs, err := fixture.Live(context.Background(), k8s, ex.Topology.Namespace, ex.Topology.Name)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// topologyOf is ex's Topology as the API server has it now.
func topologyOf(t *testing.T, ex fixture.Example) *v1alpha2.Topology {
	t.Helper()
	topo := &v1alpha2.Topology{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ex.Topology), topo); err != nil {
		t.Fatal(err)
	}
	return topo
}

// wantGenerated waits until the example's whole cluster exists, owned as the
// engine would have it.
func wantGenerated(t *testing.T, ex fixture.Example) {
	t.Helper()
	reconciledCondition(t, ex.Topology, metav1.ConditionTrue, ReasonSucceeded)
	cluster := clusterOf(t, ex.Topology)
	if cluster == nil {
		t.Fatal("the Topology reports reconciled, yet it has no Cluster")
	}
	if !ownedByTopology(cluster, ex.Topology) {
		t.Errorf("Cluster %s is not controlled by its Topology: %v", cluster.GetName(), cluster.GetOwnerReferences())
	}
	objs := liveOf(t, ex)
	// The example's topology: one of each cluster-wide object, two
	// MachineDeployments, a MachinePool, and health checks for the control
	// plane and md-a (md-gpu's is off).
	want := "Cluster=1 DockerCluster=1 DockerMachinePool=1 DockerMachineTemplate=3 KubeadmConfig=1 KubeadmConfigTemplate=2 KubeadmControlPlane=1 MachineDeployment=2 MachineHealthCheck=2 MachinePool=1"
	if got := fixture.KindCounts(objs); got != want {
		t.Errorf("generated objects:\n got %s\nwant %s", got, want)
	}
}

// createTemplates creates the example's templates, less those skip names.
func createTemplates(t *testing.T, ex fixture.Example, skip ...string) {
	t.Helper()
	for _, o := range ex.Templates {
		if !slices.Contains(skip, o.GetKind()+"/"+o.GetName()) {
			create(t, o.DeepCopy())
		}
	}
}

// TestTopologyBeforeItsClass applies a Topology before its class, as a
// GitOps tool may: it waits with a reason naming the class and generates
// nothing, and the class's arrival alone brings it to reconciled.
func TestTopologyBeforeItsClass(t *testing.T) {
	ex := namespaceWithExample(t)
	create(t, ex.Topology)
	reconciledCondition(t, ex.Topology, metav1.ConditionFalse, ReasonFailed,
		"spec.classRef: TopologyClass "+ex.Topology.Namespace+"/docker-kubeadm not found: create it")
	if c := clusterOf(t, ex.Topology); c != nil {
		t.Fatalf("a Cluster was made without a class: %s", c.GetName())
	}

	createTemplates(t, ex)
	create(t, ex.Class)
	wantGenerated(t, ex)
}

// TestClassBeforeItsTemplates creates a class with one template missing: the
// Topology waits with a reason naming the class field and the template, and
// creating the template alone brings it to reconciled.
func TestClassBeforeItsTemplates(t *testing.T) {
	ex := namespaceWithExample(t)
	missing := "DockerMachinePoolTemplate/docker-kubeadm-pool"
	createTemplates(t, ex, missing)
	create(t, ex.Class)
	create(t, ex.Topology)
	reconciledCondition(t, ex.Topology, metav1.ConditionFalse, ReasonFailed,
		"TopologyClass "+ex.Topology.Namespace+"/docker-kubeadm spec.workers.machinePools[0].infrastructure.templateRef",
		"DockerMachinePoolTemplate "+ex.Topology.Namespace+"/docker-kubeadm-pool not found: create the template or fix the reference")
	if c := clusterOf(t, ex.Topology); c != nil {
		t.Fatalf("a Cluster was made with a template missing: %s", c.GetName())
	}

	for _, o := range ex.Templates {
		if o.GetKind()+"/"+o.GetName() == missing {
			create(t, o.DeepCopy())
		}
	}
	wantGenerated(t, ex)
}

// TestInvalidVariableFoundOnReconcile: a Topology admitted before its class
// was not checked against it, so the reconcile is where a bad value is
// found. It is reported with the field and the schema's own message,
// nothing is generated, and fixing the value is enough.
func TestInvalidVariableFoundOnReconcile(t *testing.T) {
	ex := namespaceWithExample(t)
	for i, v := range ex.Topology.Spec.Variables {
		if v.Name == "auditPolicy" {
			ex.Topology.Spec.Variables[i].Value = apiextensionsv1.JSON{Raw: []byte(`{"enabled":true,"level":"None"}`)}
		}
	}
	create(t, ex.Topology)
	createTemplates(t, ex)
	create(t, ex.Class)
	reconciledCondition(t, ex.Topology, metav1.ConditionFalse, ReasonFailed,
		"spec.variables[auditPolicy]", "an enabled audit policy needs a level other than None")
	if c := clusterOf(t, ex.Topology); c != nil {
		t.Fatalf("a Cluster was made from an invalid Topology: %s", c.GetName())
	}

	got := &v1alpha2.Topology{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ex.Topology), got); err != nil {
		t.Fatal(err)
	}
	for i, v := range got.Spec.Variables {
		if v.Name == "auditPolicy" {
			got.Spec.Variables[i].Value = apiextensionsv1.JSON{Raw: []byte(`{"enabled":true,"level":"Metadata"}`)}
		}
	}
	if err := k8s.Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	wantGenerated(t, ex)
}

// TestMachineBootstrapConfigsAreLeftAlone: a class with a MachinePool makes
// a KubeadmConfig for the pool, and Cluster API makes one for every Machine,
// with the Cluster's labels and the owned label the control plane or
// MachineDeployment passes on. The agent removes neither: the Machine's is
// not the pool's (upstream's quick-start class, which has a MachinePool
// class, lost every Machine's bootstrap config on the kind path to this).
func TestMachineBootstrapConfigsAreLeftAlone(t *testing.T) {
	ctx := context.Background()
	ex := generatedExample(t)
	poolConfig := generatedOf(t, ex, "the example's MachinePool's KubeadmConfig", func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "KubeadmConfig"
	})
	machines := &unstructured.Unstructured{}
	machines.SetGroupVersionKind(poolConfig.GroupVersionKind())
	machines.SetNamespace(poolConfig.GetNamespace())
	machines.SetName(ex.Topology.Name + "-control-plane-x7k2p")
	labels := map[string]string{"cluster.x-k8s.io/control-plane": ""}
	for k, v := range poolConfig.GetLabels() {
		if k != clusterv1.ClusterTopologyMachinePoolNameLabel {
			labels[k] = v
		}
	}
	machines.SetLabels(labels)
	create(t, machines)
	if err := fixture.ChangeTopology(ctx, k8s, client.ObjectKeyFromObject(ex.Topology), func(topo *v1alpha2.Topology) {
		topo.Spec.ControlPlane.Replicas = ptr[int32](3)
	}); err != nil {
		t.Fatal(err)
	}
	reconciledCondition(t, ex.Topology, metav1.ConditionTrue, ReasonSucceeded)
	fixture.AfterPasses(t, k8s, client.ObjectKeyFromObject(ex.Topology), 2)
	for _, o := range []*unstructured.Unstructured{machines, poolConfig} {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
			t.Fatalf("KubeadmConfig %s after two passes: %v", o.GetName(), err)
		}
		if !got.GetDeletionTimestamp().IsZero() {
			t.Errorf("KubeadmConfig %s is being deleted", o.GetName())
		}
	}
}

// TestTopologyOwnerCoOwnedByClusterAPIIsDropped: when Cluster API adds the
// Cluster as owner of an object before the agent hands it over, its patch of
// the whole owner list makes its manager a co-owner of the Topology's entry,
// which the agent's apply then cannot take away. The agent removes it with a
// patch of its own, and the object is owned by its Cluster alone (upstream's
// parity run found a KubeadmControlPlane owned by both).
func TestTopologyOwnerCoOwnedByClusterAPIIsDropped(t *testing.T) {
	ctx := context.Background()
	ex := generatedExample(t)
	cluster := clusterOf(t, ex.Topology)
	kcp := generatedOf(t, ex, "a KubeadmControlPlane", func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "KubeadmControlPlane"
	})
	topo := topologyOf(t, ex)
	// As Cluster API's controllers write it: a merge patch of the whole list.
	owners := []map[string]any{
		{"apiVersion": v1alpha2.GroupVersion.String(), "kind": v1alpha2.TopologyKind, "name": topo.Name, "uid": string(topo.UID)},
		{"apiVersion": cluster.GetAPIVersion(), "kind": "Cluster", "name": cluster.GetName(), "uid": string(cluster.GetUID())},
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": owners}})
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Patch(ctx, kcp.DeepCopy(), client.RawPatch(types.MergePatchType, patch), client.FieldOwner("manager")); err != nil {
		t.Fatal(err)
	}
	fixture.AfterPasses(t, k8s, client.ObjectKeyFromObject(ex.Topology), 1)
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(kcp.GroupVersionKind())
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(kcp), got); err != nil {
		t.Fatal(err)
	}
	if refs := got.GetOwnerReferences(); len(refs) != 1 || refs[0].Kind != "Cluster" {
		t.Errorf("KubeadmControlPlane %s is owned by %v, want its Cluster alone", got.GetName(), refs)
	}
}

// TestCloneFreedByAMachineSetIsDeleted: a template clone the topology no
// longer wants stays while a MachineSet still uses it, and is deleted once
// that MachineSet goes, with nothing else bringing the Topology back (the
// chaos test once left such a clone behind for good).
func TestCloneFreedByAMachineSetIsDeleted(t *testing.T) {
	ctx := context.Background()
	ex := generatedExample(t)
	poolTemplate := generatedOf(t, ex, "a MachineDeployment's DockerMachineTemplate", func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "DockerMachineTemplate" && o.GetLabels()[clusterv1.ClusterTopologyMachineDeploymentNameLabel] != ""
	})
	// What a rotation leaves: the pool's former clone, labelled as it was.
	old := &unstructured.Unstructured{Object: map[string]any{"spec": poolTemplate.Object["spec"]}}
	old.SetGroupVersionKind(poolTemplate.GroupVersionKind())
	old.SetNamespace(poolTemplate.GetNamespace())
	old.SetName(poolTemplate.GetName() + "-former")
	old.SetLabels(poolTemplate.GetLabels())
	selector := map[string]any{"matchLabels": map[string]any{"pool": "former"}}
	ms := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"clusterName": ex.Topology.Name,
		"selector":    selector,
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"pool": "former"}},
			"spec": map[string]any{
				"clusterName":       ex.Topology.Name,
				"bootstrap":         map[string]any{"dataSecretName": "bootstrap"},
				"infrastructureRef": map[string]any{"apiVersion": old.GetAPIVersion(), "kind": old.GetKind(), "name": old.GetName()},
			},
		},
	}}}
	ms.SetAPIVersion(contract.CoreV1Beta1.APIVersion())
	ms.SetKind("MachineSet")
	ms.SetNamespace(old.GetNamespace())
	ms.SetName("former")
	ms.SetLabels(map[string]string{clusterv1.ClusterNameLabel: ex.Topology.Name, clusterv1.ClusterTopologyOwnedLabel: ""})
	// The MachineSet first, and a pass, so that the agent has seen it before
	// the clone it uses appears.
	create(t, ms)
	fixture.AfterPasses(t, k8s, client.ObjectKeyFromObject(ex.Topology), 1)
	create(t, old)
	fixture.AfterPasses(t, k8s, client.ObjectKeyFromObject(ex.Topology), 2)
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(old), old.DeepCopy()); err != nil {
		t.Fatalf("the clone a MachineSet still uses: %v", err)
	}
	if err := k8s.Delete(ctx, ms); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, 30*time.Second, "the clone its MachineSet no longer uses is deleted", func(ctx context.Context) (bool, error) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(old), old.DeepCopy())
		return apierrors.IsNotFound(err), fmt.Errorf("getting %s: %v", old.GetName(), err)
	})
}

// TestClonesOfAWrittenPoolSurviveALaterRefusal: a first pass writes the
// MachineDeployments with their new clones and is then refused at the
// MachinePool. It deletes the MachinePool's clones only: the
// MachineDeployments keep templates that exist, and later passes leave them
// as written (generation 1), rather than pointing them at templates made
// again, which would roll their machines.
func TestClonesOfAWrittenPoolSurviveALaterRefusal(t *testing.T) {
	ex := namespaceWithExample(t)
	refusePools(t, ex.Topology.Namespace)
	createTemplates(t, ex)
	create(t, ex.Class)
	create(t, ex.Topology)
	var objs []*unstructured.Unstructured
	fixture.Eventually(t, time.Minute, "the first pass writes both MachineDeployments", func(ctx context.Context) (bool, error) {
		var err error
		objs, err = fixture.Live(ctx, k8s, ex.Topology.Namespace, ex.Topology.Name)
		return len(fixture.OfKind(objs, "MachineDeployment")) == 2, fmt.Errorf("objects %s (%v)", fixture.KindCounts(objs), err)
	})
	fixture.AfterPasses(t, k8s, client.ObjectKeyFromObject(ex.Topology), 2)
	objs = liveOf(t, ex)
	if n := len(fixture.OfKind(objs, "MachinePool")); n != 0 {
		t.Fatalf("%d MachinePools exist: the policy was to refuse them (objects %s)", n, fixture.KindCounts(objs))
	}
	exists := map[clusterstate.Key]bool{}
	for _, o := range objs {
		exists[clusterstate.KeyOf(o)] = true
	}
	for _, md := range fixture.OfKind(objs, "MachineDeployment") {
		if g := md.GetGeneration(); g != 1 {
			t.Errorf("MachineDeployment %s is at generation %d after the refused pass, want 1: its templates were replaced", md.GetName(), g)
		}
		for _, path := range [][]string{{"spec", "template", "spec", "bootstrap", "configRef"}, {"spec", "template", "spec", "infrastructureRef"}} {
			ref, _, _ := unstructured.NestedMap(md.Object, path...)
			if !exists[clusterstate.KeyOfReference(ref, ex.Topology.Namespace)] {
				t.Errorf("MachineDeployment %s refers to %v %v, which does not exist (objects %s)", md.GetName(), ref["kind"], ref["name"], fixture.KindCounts(objs))
			}
		}
	}
}

// refusePools makes an admission policy refusing every MachinePool write in
// ns (and a ConfigMap named probe there, to know when it is in force).
func refusePools(t *testing.T, ns string) {
	t.Helper()
	fixture.AdmissionPolicy(t, k8s, "refuse-pools-"+ns, ns,
		[]any{fixture.PolicyRule(clusterv1.GroupVersion.Group, "machinepools", "CREATE", "UPDATE"), fixture.PolicyRule("", "configmaps", "CREATE", "UPDATE")},
		"object.kind != 'ConfigMap' ? false : object.metadata.name != 'probe'", "pools are refused here")
	probe := &unstructured.Unstructured{}
	probe.SetAPIVersion("v1")
	probe.SetKind("ConfigMap")
	probe.SetNamespace(ns)
	probe.SetName("probe")
	fixture.Eventually(t, time.Minute, "the policy refusing pools is in force", func(ctx context.Context) (bool, error) {
		err := k8s.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err != nil, fmt.Errorf("a dry-run create of ConfigMap probe: %v", err)
	})
}

// TestUnusedIsJudgedByTheServerNotTheCache: the cache catches up kind by
// kind, so a pass may see a MachinePool from before it was pointed at new
// clones beside those new clones. On that view the new clones look unused;
// the agent asks the API server what its pools refer to and keeps them.
func TestUnusedIsJudgedByTheServerNotTheCache(t *testing.T) {
	ctx := context.Background()
	ex := generatedExample(t)
	stale := liveOf(t, ex)
	config := generatedOf(t, ex, "the MachinePool's KubeadmConfig", func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "KubeadmConfig" && o.GetLabels()[clusterv1.ClusterTopologyMachinePoolNameLabel] != ""
	})
	pool := generatedOf(t, ex, "the MachinePool", func(o *unstructured.Unstructured) bool { return o.GetKind() == "MachinePool" })
	// What a later pass made: a new clone, and the MachinePool pointed at it.
	next := &unstructured.Unstructured{Object: map[string]any{"spec": config.Object["spec"]}}
	next.SetGroupVersionKind(config.GroupVersionKind())
	next.SetNamespace(config.GetNamespace())
	next.SetName(config.GetName() + "-next")
	next.SetLabels(config.GetLabels())
	create(t, next)
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"bootstrap":{"configRef":{"name":%q}}}}}}`, next.GetName())
	if err := k8s.Patch(ctx, pool, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	topo := topologyOf(t, ex)
	// A pass on the stale view: the new clone is live, not desired.
	s := &scope{
		topo:    topo,
		class:   &rules.CompiledClass{Class: ex.Class},
		current: loader.State(topo, ex.Class, stale),
		live:    append(slices.Clone(stale), next),
		desired: stale,
		result:  &desiredstate.Result{},
	}
	r := &TopologyReconciler{Client: k8s, APIReader: k8s, Recorder: record.NewFakeRecorder(10)}
	if _, err := r.deleteUnused(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(next), next.DeepCopy()); err != nil {
		t.Errorf("KubeadmConfig %s, which the MachinePool refers to on the server, after a pass on the stale view: %v", next.GetName(), err)
	}
}

// waitOnView runs waitForCache on a pass of topo whose cache lists view,
// reading the API server itself: whether the pass goes on, and its scope.
func waitOnView(t *testing.T, ex fixture.Example, topo *v1alpha2.Topology, view []*unstructured.Unstructured) (bool, *scope) {
	t.Helper()
	s := &scope{topo: topo, class: &rules.CompiledClass{Class: ex.Class}, live: view, current: loader.State(topo, ex.Class, view)}
	r := &TopologyReconciler{Client: k8s, APIReader: k8s, Recorder: record.NewFakeRecorder(10)}
	cont, err := r.waitForCache(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return cont, s
}

// TestAPassOnALaggingCacheStops: informers catch up kind by kind, so a pass
// can list a MachinePool without the DockerMachinePool the pass before made
// for it. Computed on that view, the desired state would make another one
// and point the pool at it (the cold run of 95516b5 found two). The pass
// stops, and goes on once the object is really gone from the server.
func TestAPassOnALaggingCacheStops(t *testing.T) {
	ex := generatedExample(t)
	live := liveOf(t, ex)
	infra := generatedOf(t, ex, "the MachinePool's DockerMachinePool", func(o *unstructured.Unstructured) bool { return o.GetKind() == "DockerMachinePool" })
	lagging := slices.DeleteFunc(slices.Clone(live), func(o *unstructured.Unstructured) bool { return clusterstate.KeyOf(o) == clusterstate.KeyOf(infra) })
	topo := topologyOf(t, ex)
	pass := func(view []*unstructured.Unstructured) (bool, *scope) {
		t.Helper()
		return waitOnView(t, ex, topo, view)
	}
	if got := desiredstate.Unresolved(loader.State(topo, ex.Class, lagging)); len(got) != 1 || got[0]["name"] != infra.GetName() {
		t.Fatalf("unresolved references of the lagging view: %v, want only DockerMachinePool %s", got, infra.GetName())
	}
	if cont, s := pass(lagging); cont || !s.cacheBehind {
		t.Errorf("a pass that lists the MachinePool but not its DockerMachinePool %s, which the server has, went on (cacheBehind %v)", infra.GetName(), s.cacheBehind)
	}
	if cont, s := pass(live); !cont || s.cacheBehind {
		t.Errorf("a pass on the whole view stopped (cacheBehind %v)", s.cacheBehind)
	}
	// The pool refers to an object the server does not have either: that is
	// not lag, and the pass makes it again as before.
	gone := slices.Clone(lagging)
	for i, o := range gone {
		if o.GetKind() == "MachinePool" {
			o = o.DeepCopy()
			if err := unstructured.SetNestedField(o.Object, infra.GetName()+"-gone", "spec", "template", "spec", "infrastructureRef", "name"); err != nil {
				t.Fatal(err)
			}
			gone[i] = o
		}
	}
	if cont, s := pass(gone); !cont || s.cacheBehind {
		t.Errorf("a pass whose MachinePool refers to a DockerMachinePool the server does not have stopped (cacheBehind %v)", s.cacheBehind)
	}
}

// TestAPoolTheCacheLacksIsNotMadeAgain: a pass whose view lists the Cluster
// and its control plane but not a MachineDeployment the server has would
// make a second one for the pool (its control plane stable) or report it as
// yet to be made (its control plane provisioning). The pass stops, as
// upstream's live check skips the creation; a pool the server does not have
// either is new, and the pass goes on.
func TestAPoolTheCacheLacksIsNotMadeAgain(t *testing.T) {
	ex := generatedExample(t)
	live := liveOf(t, ex)
	md := generatedOf(t, ex, "a MachineDeployment", func(o *unstructured.Unstructured) bool { return o.GetKind() == "MachineDeployment" })
	pool := md.GetLabels()[clusterv1.ClusterTopologyMachineDeploymentNameLabel]
	lagging := slices.DeleteFunc(slices.Clone(live), func(o *unstructured.Unstructured) bool { return clusterstate.KeyOf(o) == clusterstate.KeyOf(md) })
	topo := topologyOf(t, ex)
	pass := func(view []*unstructured.Unstructured, topo *v1alpha2.Topology) (bool, *scope) {
		t.Helper()
		return waitOnView(t, ex, topo, view)
	}
	if whole := loader.State(topo, ex.Class, live); whole.MachineDeployments[pool] == nil {
		t.Fatalf("the whole view has no pool %s: %v", pool, slices.Collect(maps.Keys(whole.MachineDeployments)))
	}
	if cont, s := pass(lagging, topo); cont || !s.cacheBehind {
		t.Errorf("a pass whose view lacks MachineDeployment %s (pool %s), which the server has, went on to make it (cacheBehind %v)", md.GetName(), pool, s.cacheBehind)
	}
	if cont, s := pass(live, topo); !cont || s.cacheBehind {
		t.Errorf("a pass on the whole view stopped (cacheBehind %v)", s.cacheBehind)
	}
	// A pool added to the topology: the server has none of it.
	added := topo.DeepCopy()
	newPool := added.Spec.Workers.MachineDeployments[0].DeepCopy()
	newPool.Name = "md-new"
	added.Spec.Workers.MachineDeployments = append(added.Spec.Workers.MachineDeployments, *newPool)
	if cont, s := pass(live, added); !cont || s.cacheBehind {
		t.Errorf("a pass that makes the new pool md-new stopped (cacheBehind %v)", s.cacheBehind)
	}
}

// TestAClusterTheCacheLacksIsNotMadeAgain: a pass whose view lacks the
// Cluster the server has, and lacks the Cluster-made mark too, would apply
// the Cluster anew with new infrastructure and control plane names, and the
// next pass make both beside the ones the Cluster owned (a chaos run under
// load left two of each). The pass stops; a Cluster the server does not
// have either is new, and the pass goes on to make it.
func TestAClusterTheCacheLacksIsNotMadeAgain(t *testing.T) {
	ex := generatedExample(t)
	live := liveOf(t, ex)
	lagging := slices.DeleteFunc(slices.Clone(live), func(o *unstructured.Unstructured) bool { return o.GetKind() == clusterKind })
	if len(lagging) != len(live)-1 {
		t.Fatalf("the generated objects hold %d Clusters, want 1", len(live)-len(lagging))
	}
	topo := topologyOf(t, ex)
	delete(topo.Annotations, v1alpha2.ClusterMadeAnnotation) // as a view older than the mark
	if cont, s := waitOnView(t, ex, topo, lagging); cont || !s.cacheBehind {
		t.Errorf("a pass whose view lacks Cluster %s/%s, which the server has, went on to make it (cacheBehind %v)", topo.Namespace, topo.Name, s.cacheBehind)
	}
	if cont, s := waitOnView(t, ex, topo, live); !cont || s.cacheBehind {
		t.Errorf("a pass on the whole view stopped (cacheBehind %v)", s.cacheBehind)
	}
	fresh := topo.DeepCopy()
	fresh.Name += "-new"
	if cont, s := waitOnView(t, ex, fresh, nil); !cont || s.cacheBehind {
		t.Errorf("a pass of Topology %s, whose Cluster the server does not have, stopped (cacheBehind %v)", fresh.Name, s.cacheBehind)
	}
}

// TestAMarkOnAChangedTopologyEndsThePass: the Cluster-made mark is written
// only onto the Topology the pass read. Written over a newer one, the
// patch's response would bring that spec into the pass, beside a desired
// state computed from the old one (a status summed from both once indexed
// a pool the plan did not have).
func TestAMarkOnAChangedTopologyEndsThePass(t *testing.T) {
	ctx := context.Background()
	ex := namespaceWithExample(t)
	ex.Topology.Spec.Paused = true // only this test writes it
	create(t, ex.Topology)
	read := topologyOf(t, ex)
	readPools := len(read.Spec.Workers.MachineDeployments)

	// The agent may add its finalizer meanwhile: the change is made on
	// whatever the server has then.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		newer := topologyOf(t, ex)
		newer.Spec.Workers.MachineDeployments = newer.Spec.Workers.MachineDeployments[:1]
		return k8s.Update(ctx, newer)
	})
	if err != nil {
		t.Fatal(err)
	}

	r := &TopologyReconciler{Client: k8s, APIReader: k8s, Recorder: record.NewFakeRecorder(10)}
	err = r.markClusterMade(ctx, read, "dev")
	if !errors.Is(err, errTopologyChanged) {
		t.Fatalf("marking a Topology changed since it was read: %v, want errTopologyChanged", err)
	}
	if got := len(read.Spec.Workers.MachineDeployments); got != readPools || read.Annotations[v1alpha2.ClusterMadeAnnotation] != "" {
		t.Errorf("the pass's Topology after the refused mark: %d MachineDeployments, annotations %v; want the %d it read and no mark", got, read.Annotations, readPools)
	}
	if server := topologyOf(t, ex); server.Annotations[v1alpha2.ClusterMadeAnnotation] != "" {
		t.Errorf("the server's Topology was marked from a stale read: %v", server.Annotations)
	}

	// Read again, the mark is written.
	stale := func(err error) bool { return errors.Is(err, errTopologyChanged) } // the agent's status write
	if err := retry.OnError(retry.DefaultRetry, stale, func() error { return r.markClusterMade(ctx, topologyOf(t, ex), "dev") }); err != nil {
		t.Fatalf("marking the Topology as read: %v", err)
	}
	if server := topologyOf(t, ex); server.Annotations[v1alpha2.ClusterMadeAnnotation] != "dev" {
		t.Errorf("the server's mark after a write on a fresh read: %v", server.Annotations)
	}
}

// TestANewClusterIsMadeBeforeItsParts: a new Topology's Cluster is written
// first, so its infrastructure cluster and control plane are created with
// the Cluster as their owner and are not written a second time to be handed
// over to it.
func TestANewClusterIsMadeBeforeItsParts(t *testing.T) {
	ctx := context.Background()
	ex := namespaceWithExample(t)
	createTemplates(t, ex)
	create(t, ex.Class)
	parts := map[string]watch.Interface{}
	for _, tmpl := range ex.Templates {
		kind := strings.TrimSuffix(tmpl.GetKind(), "Template")
		if kind != "DockerCluster" && kind != "KubeadmControlPlane" {
			continue
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(tmpl.GroupVersionKind().GroupVersion().WithKind(kind + "List"))
		w, err := k8s.Watch(ctx, list, client.InNamespace(ex.Topology.Namespace))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		parts[kind] = w
	}
	if len(parts) != 2 {
		t.Fatalf("the example's class has no DockerCluster or KubeadmControlPlane template: watching %d kinds", len(parts))
	}
	create(t, ex.Topology)
	wantGenerated(t, ex)
	cluster := clusterOf(t, ex.Topology)
	live := liveOf(t, ex)
	for kind, w := range parts {
		i := slices.IndexFunc(live, func(o *unstructured.Unstructured) bool { return o.GetKind() == kind })
		if i < 0 {
			t.Fatalf("no %s was generated", kind)
		}
		now := live[i]
		var seen []watch.Event
		deadline := time.After(time.Minute) // bounds a failure only: the events are there already
		for len(seen) == 0 || seen[len(seen)-1].Object.(*unstructured.Unstructured).GetResourceVersion() != now.GetResourceVersion() {
			select {
			case e := <-w.ResultChan():
				seen = append(seen, e)
			case <-deadline:
				t.Fatalf("%s %s: the watch never reached resourceVersion %s (%d events)", kind, now.GetName(), now.GetResourceVersion(), len(seen))
			}
		}
		if len(seen) != 1 || seen[0].Type != watch.Added {
			t.Errorf("%s %s was written %d times, want once (created): %v", kind, now.GetName(), len(seen), eventTypes(seen))
		}
		created := seen[0].Object.(*unstructured.Unstructured)
		if !slices.ContainsFunc(created.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == cluster.GetUID() }) {
			t.Errorf("%s %s was created without its Cluster as owner: %v", kind, now.GetName(), created.GetOwnerReferences())
		}
	}
}

func eventTypes(events []watch.Event) []watch.EventType {
	out := make([]watch.EventType, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}
