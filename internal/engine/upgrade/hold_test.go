package upgrade_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestHold: the agent holds a Topology where upstream's controller would
// not act — its Cluster paused either way, a Cluster it made gone, its copy
// being deleted by clusterctl move — and nowhere else.
func TestHold(t *testing.T) {
	cluster := func(paused bool, annotations map[string]string) *unstructured.Unstructured {
		c := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"paused": paused}}}
		c.SetName("dev")
		c.SetAnnotations(annotations)
		return c
	}
	topo := func(annotations map[string]string) *v1alpha2.Topology {
		return &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Name: "dev", Annotations: annotations}}
	}
	v1beta1 := func(c *unstructured.Unstructured) *unstructured.Unstructured {
		c.SetAPIVersion("cluster.x-k8s.io/v1beta1")
		c.SetKind("Cluster")
		return c
	}
	made := map[string]string{v1alpha2.ClusterMadeAnnotation: "dev"}
	for _, tc := range []struct {
		name         string
		topo         *v1alpha2.Topology
		cluster      *unstructured.Unstructured
		reason, says string
	}{
		{"a running Cluster", topo(made), cluster(false, nil), "", ""},
		{"no Cluster yet", topo(nil), nil, "", ""},
		{"spec.paused", topo(made), cluster(true, nil), upgrade.HoldClusterPaused, "Cluster dev is paused (spec.paused)"},
		{"spec.paused at v1beta1", topo(made), v1beta1(cluster(true, nil)), upgrade.HoldClusterPaused, "Cluster dev is paused (spec.paused)"},
		{"running at v1beta1", topo(made), v1beta1(cluster(false, nil)), "", ""},
		{"the paused annotation", topo(made), cluster(false, map[string]string{clusterv1.PausedAnnotation: ""}), upgrade.HoldClusterPaused, "annotation cluster.x-k8s.io/paused"},
		{"a Cluster made and gone", topo(made), nil, upgrade.HoldClusterMissing, "remove the annotation " + v1alpha2.ClusterMadeAnnotation},
		{"deleted for a move", topo(map[string]string{contract.DeleteForMoveAnnotation: ""}), nil, upgrade.HoldClusterPaused, "clusterctl move is deleting this copy"},
	} {
		reason, msg := upgrade.Hold(tc.topo, tc.cluster)
		if reason != tc.reason || !strings.Contains(msg, tc.says) || (tc.says == "") != (msg == "") {
			t.Errorf("%s: Hold = %q, %q; want %q saying %q", tc.name, reason, msg, tc.reason, tc.says)
		}
	}
}
