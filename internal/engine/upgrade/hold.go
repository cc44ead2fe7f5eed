package upgrade

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/core"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Reasons the agent holds a Topology, as TopologyReconciled says them.
const (
	HoldClusterPaused  = "ClusterPaused"
	HoldClusterMissing = "ClusterMissing"
)

// Hold says why the agent changes nothing of a Topology's cluster now, where
// upstream's topology controller would not act either: clusterctl move is
// deleting this copy of the Topology, its Cluster is paused (as clusterctl
// move pauses it), or the agent made the Cluster once and it is gone (a move
// or restore brings it next; making another would duplicate every object).
// It returns the reason and a message, or "" for both when nothing holds.
// spec.paused has handling of its own. cluster is the Topology's Cluster, or
// nil. The agent acts on it; plan and the previews say it.
func Hold(t *v1alpha2.Topology, cluster *unstructured.Unstructured) (reason, message string) {
	if _, moved := t.Annotations[contract.DeleteForMoveAnnotation]; moved {
		// clusterctl's mark replaces every annotation, the agent's own with them.
		return HoldClusterPaused, "clusterctl move is deleting this copy: the target cluster has the Topology now"
	}
	if cluster == nil {
		if made := t.Annotations[v1alpha2.ClusterMadeAnnotation]; made != "" {
			return HoldClusterMissing, fmt.Sprintf("Cluster %s was made for this Topology and is not there: a clusterctl move or restore brings it; to make it anew, remove the annotation %s", made, v1alpha2.ClusterMadeAnnotation)
		}
		return "", ""
	}
	c, err := core.Cluster(cluster)
	if err != nil {
		// What cannot be read is not acted on.
		return HoldClusterPaused, fmt.Sprintf("Cluster %s cannot be read (%v): nothing is changed until it can", cluster.GetName(), err)
	}
	paused := ptr.Deref(c.Spec.Paused, false)
	_, annotated := c.Annotations[clusterv1.PausedAnnotation]
	if !paused && !annotated {
		return "", ""
	}
	how := "spec.paused"
	if !paused {
		how = "annotation " + clusterv1.PausedAnnotation
	}
	return HoldClusterPaused, fmt.Sprintf("Cluster %s is paused (%s), as clusterctl move pauses it while it moves it: nothing is changed until it is unpaused", cluster.GetName(), how)
}
