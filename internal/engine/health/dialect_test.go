package health

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func TestDialectAndReconcilerFollowWhatTheTopologyWasReadFrom(t *testing.T) {
	for _, tc := range []struct {
		kind       string
		dialect    contract.Dialect
		reconciler string
	}{
		{kind: "", dialect: contract.DialectTopology, reconciler: "the agent"},
		{kind: v1alpha2.TopologyKind, dialect: contract.DialectTopology, reconciler: "the agent"},
		{kind: contract.UpstreamClusterKind, dialect: contract.DialectUpstream, reconciler: "Cluster API's topology controller"},
	} {
		topo := &v1alpha2.Topology{TypeMeta: metav1.TypeMeta{Kind: tc.kind}}
		topo.Generation, topo.Status.ObservedGeneration = 3, 2
		if got := contract.DialectOf(topo); got != tc.dialect {
			t.Errorf("kind %q: dialect %v, want %v", tc.kind, got, tc.dialect)
		}
		if got := contract.Reconciler(topo); got != tc.reconciler {
			t.Errorf("kind %q: reconciler %q, want %q", tc.kind, got, tc.reconciler)
		}
		if want := tc.reconciler + " has not seen the latest change yet (generation 3, observed 2)"; NotObserved(topo) != want {
			t.Errorf("kind %q: NotObserved %q, want %q", tc.kind, NotObserved(topo), want)
		}
	}
}
