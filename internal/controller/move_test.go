package controller

import (
	"context"
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// generations maps each generated object to its metadata.generation.
func generations(t *testing.T, ex fixture.Example) map[string]int64 {
	t.Helper()
	objs := liveOf(t, ex)
	out := map[string]int64{}
	for _, o := range objs {
		out[o.GetKind()+"/"+o.GetName()] = o.GetGeneration()
	}
	return out
}

// generatedExample creates the example in a namespace of its own and waits
// until the agent has generated its cluster.
func generatedExample(t *testing.T) fixture.Example {
	t.Helper()
	ex := namespaceWithExample(t)
	createTemplates(t, ex)
	create(t, ex.Class)
	create(t, ex.Topology)
	wantGenerated(t, ex)
	return ex
}

// TestPausedClusterIsLeftAlone: clusterctl move pauses a Cluster while it
// moves it. A change to the Topology then changes nothing of the cluster and
// the Topology says why; unpaused, the change is made.
func TestPausedClusterIsLeftAlone(t *testing.T) {
	ex := generatedExample(t)
	cluster := clusterOf(t, ex.Topology)
	setPaused := func(paused bool) {
		t.Helper()
		patch := `{"spec":{"paused":null}}`
		if paused {
			patch = `{"spec":{"paused":true}}`
		}
		if err := k8s.Patch(context.Background(), cluster.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}
	setPaused(true)
	before := generations(t, ex)
	if err := fixture.ChangeTopology(context.Background(), k8s, client.ObjectKeyFromObject(ex.Topology), func(topo *v1alpha2.Topology) {
		topo.Spec.ControlPlane.Replicas = ptr[int32](5)
	}); err != nil {
		t.Fatal(err)
	}
	reconciledCondition(t, ex.Topology, metav1.ConditionFalse, ReasonClusterPaused, "Cluster "+cluster.GetName()+" is paused (spec.paused)", "nothing is changed until it is unpaused")
	if after := generations(t, ex); !maps.Equal(before, after) {
		t.Errorf("objects of a paused Cluster were changed:\nbefore %v\n after %v", before, after)
	}
	topo := &v1alpha2.Topology{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ex.Topology), topo); err != nil {
		t.Fatal(err)
	}
	if topo.Status.State != v1alpha2.StatePaused {
		t.Errorf("state of a Topology whose Cluster is paused: %s, want Paused", topo.Status.State)
	}

	setPaused(false)
	reconciledCondition(t, ex.Topology, metav1.ConditionTrue, ReasonSucceeded)
	if after := generations(t, ex); maps.Equal(before, after) {
		t.Error("the change made while paused was not made once the Cluster was unpaused")
	}
}

// TestMovedTopologyWaitsForItsCluster: a Topology whose Cluster the agent
// made carries a mark, and its class's templates name the class as owner —
// what clusterctl move needs to carry them. A marked Topology arriving
// without its Cluster, as clusterctl creates it before the Cluster, makes
// nothing and says why; the Cluster arriving paused is left alone.
func TestMovedTopologyWaitsForItsCluster(t *testing.T) {
	ex := generatedExample(t)
	ctx := context.Background()
	got := &v1alpha2.Topology{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(ex.Topology), got); err != nil {
		t.Fatal(err)
	}
	if made := got.Annotations[v1alpha2.ClusterMadeAnnotation]; made != ex.Topology.Name {
		t.Errorf("annotation %s of a Topology with its Cluster: %q, want %q", v1alpha2.ClusterMadeAnnotation, made, ex.Topology.Name)
	}
	class := &v1alpha2.TopologyClass{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(ex.Class), class); err != nil {
		t.Fatal(err)
	}
	for _, ref := range contract.ClassTemplateRefs(class) {
		tmpl := &unstructured.Unstructured{}
		tmpl.SetAPIVersion(ref.APIVersion)
		tmpl.SetKind(ref.Kind)
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, tmpl); err != nil {
			t.Fatal(err)
		}
		if !desiredstate.OwnedBy(tmpl, class.UID) {
			t.Errorf("%s %s (%s) does not name its TopologyClass as owner: %v", ref.Kind, ref.Name, ref.Field, tmpl.GetOwnerReferences())
		}
	}

	// The same Topology as clusterctl creates it in the target: mark and all,
	// before its Cluster.
	moved := namespaceWithExample(t)
	createTemplates(t, moved)
	create(t, moved.Class)
	metav1.SetMetaDataAnnotation(&moved.Topology.ObjectMeta, v1alpha2.ClusterMadeAnnotation, moved.Topology.Name)
	create(t, moved.Topology)
	reconciledCondition(t, moved.Topology, metav1.ConditionFalse, ReasonClusterMissing,
		"Cluster "+moved.Topology.Name+" was made for this Topology and is not there", "remove the annotation "+v1alpha2.ClusterMadeAnnotation)
	if objs, err := fixture.Live(ctx, k8s, moved.Topology.Namespace, moved.Topology.Name); err != nil || len(objs) != 0 {
		t.Fatalf("a moved Topology without its Cluster made %s (%v)", fixture.KindCounts(objs), err)
	}

	// clusterctl's next group: the Cluster, paused, owned by the Topology.
	arrived := pausedCluster(moved.Topology)
	topo := &v1alpha2.Topology{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(moved.Topology), topo); err != nil {
		t.Fatal(err)
	}
	arrived.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: v1alpha2.GroupVersion.String(), Kind: v1alpha2.TopologyKind, Name: topo.Name, UID: topo.UID, Controller: ptr(true), BlockOwnerDeletion: ptr(true)}})
	create(t, arrived)
	reconciledCondition(t, moved.Topology, metav1.ConditionFalse, ReasonClusterPaused, "Cluster "+moved.Topology.Name+" is paused")
	if objs, err := fixture.Live(ctx, k8s, moved.Topology.Namespace, moved.Topology.Name); err != nil || fixture.KindCounts(objs) != "Cluster=1" {
		t.Fatalf("with its Cluster paused the agent made %s (%v)", fixture.KindCounts(objs), err)
	}
}

// pausedCluster is a paused Cluster API Cluster named as topo, as clusterctl
// move creates one.
func pausedCluster(topo *v1alpha2.Topology) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(contract.CoreV1Beta1.APIVersion())
	u.SetKind("Cluster")
	u.SetNamespace(topo.Namespace)
	u.SetName(topo.Name)
	_ = unstructured.SetNestedField(u.Object, true, "spec", "paused")
	return u
}
