package contract

import (
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Annotations Cluster API's tooling reads that its api module does not name:
// the rest come from sigs.k8s.io/cluster-api/api/core/v1beta2 where they are used.
const (
	// ConversionDataAnnotation is where Cluster API's conversion webhooks
	// keep, on an object read in an older version, what that version cannot hold.
	ConversionDataAnnotation = "cluster.x-k8s.io/conversion-data"
	// DeleteForMoveAnnotation is what clusterctl move sets on each object of
	// the source it deletes once the target has it (clusterctl's own API
	// lives in the cluster-api module, not in its api module).
	DeleteForMoveAnnotation = "clusterctl.cluster.x-k8s.io/delete-for-move"
)

// AgentAnnotations are the annotations the agent keeps on a Topology for
// itself: the Cluster it made and the lifecycle hooks owed or allowed. A
// change of these alone is the agent's bookkeeping, never a user's setting.
var AgentAnnotations = []string{v1alpha2.ClusterMadeAnnotation, runtimev1.PendingHooksAnnotation, runtimev1.OkToDeleteAnnotation}
