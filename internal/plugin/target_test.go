package plugin

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// targetAccess is a cluster with a Topology "ours", an upstream Cluster
// "theirs" with spec.topology, the Cluster the agent made for "ours" (no
// spec.topology), and "both", which is a Topology and an upstream Cluster.
func targetAccess(t *testing.T) *live.Cluster {
	t.Helper()
	clusterGVK := schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(clusterGVK, meta.RESTScopeNamespace)
	mapper.Add(v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyKind), meta.RESTScopeNamespace)
	cluster := func(name string, topology bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(clusterGVK)
		u.SetNamespace("team-a")
		u.SetName(name)
		if topology {
			_ = unstructured.SetNestedMap(u.Object, map[string]any{"classRef": map[string]any{"name": "quick-start"}, "version": "v1.33.1"}, "spec", "topology")
		}
		return u
	}
	topology := func(name string) *v1alpha2.Topology {
		return &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name}, Spec: v1alpha2.TopologySpec{ClassRef: v1alpha2.ClassRef{Name: "dev-class"}, Version: "v1.34.0"}}
	}
	objs := []client.Object{topology("ours"), cluster("ours", false), cluster("theirs", true), topology("both"), cluster("both", true), cluster("plain", false)}
	c := fake.NewClientBuilder().WithScheme(live.Scheme()).WithRESTMapper(mapper).WithObjects(objs...).Build()
	return &live.Cluster{Client: c, Namespace: "team-a", Context: "test", Core: contract.CoreV1Beta2}
}

func TestResolveFindsTopologiesAndUpstreamClusters(t *testing.T) {
	ca := targetAccess(t)
	for _, tc := range []struct {
		ref, kind, version, err string
	}{
		{ref: "ours", kind: "Topology", version: "v1.34.0"},
		{ref: "topology/ours", kind: "Topology", version: "v1.34.0"},
		{ref: "theirs", kind: "Cluster", version: "v1.33.1"},
		{ref: "cluster/theirs", kind: "Cluster", version: "v1.33.1"},
		{ref: "clusters.cluster.x-k8s.io/theirs", kind: "Cluster", version: "v1.33.1"},
		{ref: "Topology/ours", kind: "Topology", version: "v1.34.0"},
		{ref: "cluster.cluster.x-k8s.io/theirs", kind: "Cluster", version: "v1.33.1"},
		{ref: "topology/both", kind: "Topology", version: "v1.34.0"},
		{ref: "cluster/both", kind: "Cluster", version: "v1.33.1"},
		{ref: "both", err: `"both" names both topology/both (managed by the kubectl-topology agent) and cluster/both`},
		{ref: "cluster/ours", err: "Cluster team-a/ours has no spec.topology"},
		{ref: "plain", err: "Topology team-a/plain not found, and Cluster team-a/plain has no spec.topology"},
		{ref: "nothing", err: "Topology team-a/nothing not found, nor a Cluster with spec.topology of that name; list them with `kubectl topology get -n team-a`"},
		{ref: "cluster/nothing", err: "Cluster team-a/nothing not found"},
		{ref: "topology/theirs", err: "Topology team-a/theirs not found"},
		{ref: "machine/theirs", err: `not "machine"`},
		{ref: "cluster/", err: "is not a reference"},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			got, err := ca.Resolve(context.Background(), "team-a", tc.ref)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("resolve(%q) = %v, want an error with %q", tc.ref, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			kind := "Topology"
			if upstream.IsCluster(got) {
				kind = "Cluster"
			}
			if kind != tc.kind || got.Spec.Version != tc.version {
				t.Errorf("resolve(%q) = %s at %s, want %s at %s", tc.ref, kind, got.Spec.Version, tc.kind, tc.version)
			}
		})
	}
}

func TestListAllKeepsAClusterItCannotSummarise(t *testing.T) {
	ca := targetAccess(t)
	var warnings bytes.Buffer
	items, err := ca.ListAll(context.Background(), false, &warnings)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for i := range items {
		refs = append(refs, upstream.Ref(&items[i]))
	}
	// Topologies first where a Cluster has the same name; the agent's own
	// Cluster of "ours" and the plain Cluster are not topologies at all.
	if want := []string{"both", "cluster/both", "ours", "cluster/theirs"}; !slices.Equal(refs, want) {
		t.Errorf("listed %v, want %v", refs, want)
	}
	// Their ClusterClass does not exist: listed without a summary, and said.
	if got := strings.Count(warnings.String(), "ClusterClass team-a/quick-start not found"); got != 2 {
		t.Errorf("warnings:\n%s\nwant the missing ClusterClass named for both Clusters", warnings.String())
	}
}
