package agent

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/controller"
	"github.com/kubectl-topology/kubectl-topology/internal/shard"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestOneNamespaceWithAClassElsewhere runs the agent for one namespace
// (--namespace) with a Topology whose class and templates live in another
// (spec.classRef.namespace), as a platform team shares classes with teams.
func TestOneNamespaceWithAClassElsewhere(t *testing.T) {
	ctx := context.Background()
	team, platform := newNamespace(t, "team"), newNamespace(t, "platform")
	startAgentWith(t, func(o *Options) { o.Shard = shard.New([]string{team}, "") })
	classes := loadExample(t, platform)
	createClass(t, classes)
	topo := loadExample(t, team).Topology.DeepCopy()
	topo.Spec.ClassRef.Namespace = platform
	if err := k8s.Create(ctx, topo); err != nil {
		t.Fatal(err)
	}
	stored := reconciled(t, team, "dev", controller.ReasonSucceeded)
	objs := live(t, team, "dev")
	want := expectedFromLive(t, classes, stored, objs)
	if got, want := kindCounts(objs), kindCounts(want.Desired.Objects()); got != want {
		t.Fatalf("generated in %s: %s, want %s", team, got, want)
	}
	for _, o := range objs {
		if o.GetNamespace() != team {
			t.Errorf("%s %s was generated in %s, not the Topology's namespace", o.GetKind(), o.GetName(), o.GetNamespace())
		}
	}
}

// TestEnsureNamespaceWaitsOutADeletion: an agent started out of cluster
// right after an uninstall finds its namespace still being deleted. It waits
// until the namespace controller is done and makes it again, rather than
// taking it as there and losing it a moment later.
func TestEnsureNamespaceWaitsOutADeletion(t *testing.T) {
	ctx := context.Background()
	name := newNamespace(t, "terminating")
	// A ConfigMap whose finalizer holds the namespace in Terminating.
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "held", Finalizers: []string{"example.com/hold"}}}
	if err := k8s.Create(ctx, held); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ensureNamespace(ctx, k8s, name) }()
	select {
	case err := <-done:
		t.Fatalf("ensureNamespace returned (%v) while the namespace was still being deleted", err)
	case <-time.After(2 * time.Second):
	}
	if err := k8s.Patch(ctx, held, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("ensureNamespace did not return within a minute of the deletion finishing")
	}
	ns := &corev1.Namespace{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil || !ns.DeletionTimestamp.IsZero() {
		t.Errorf("after ensureNamespace the namespace is %v (deleting since %v), want it made again", err, ns.DeletionTimestamp)
	}
}

// TestWatchFilterTakesOnlyLabelledTopologies runs the agent with
// --watch-filter, as a shard of a management cluster divided by label: a
// Topology with the label's value is reconciled, one without it is left
// alone until it is labelled.
func TestWatchFilterTakesOnlyLabelledTopologies(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "filtered")
	ra := startAgentWith(t, func(o *Options) { o.Shard = shard.New(nil, "blue") })
	ex := loadExample(t, ns)
	createClass(t, ex)
	blue := ex.Topology.DeepCopy()
	blue.Labels = map[string]string{shard.WatchLabel: "blue"}
	if err := k8s.Create(ctx, blue); err != nil {
		t.Fatal(err)
	}
	reconciled(t, ns, blue.Name, controller.ReasonSucceeded)
	other := ex.Topology.DeepCopy()
	other.Name = "other"
	if err := k8s.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	// Once the agent has seen it and its queue is idle, it has decided.
	eventually(t, "the agent's cache holds the unlabelled Topology", func() (bool, error) {
		return ra.Manager().GetCache().Get(ctx, client.ObjectKeyFromObject(other), &v1alpha2.Topology{}) == nil, nil
	})
	waitIdle(t, ra)
	stored := &v1alpha2.Topology{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(other), stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.Finalizers) > 0 || len(stored.Status.Conditions) > 0 || len(live(t, ns, other.Name)) > 0 {
		t.Fatalf("the unlabelled Topology was reconciled: finalizers %v, conditions %v", stored.Finalizers, stored.Status.Conditions)
	}
	patch := client.MergeFrom(stored.DeepCopy())
	stored.Labels = map[string]string{shard.WatchLabel: "blue"}
	if err := k8s.Patch(ctx, stored, patch); err != nil {
		t.Fatal(err)
	}
	reconciled(t, ns, other.Name, controller.ReasonSucceeded)
}
