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
