package plugin

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func isNoMatch(err error) bool { return meta.IsNoMatchError(err) }

// managedBy names the controller that reconciles t.
func managedBy(t *v1alpha2.Topology) string {
	if upstream.IsCluster(t) {
		return "cluster-api"
	}
	return "kubectl-topology"
}

// refOf is how to name t in a command: NAME, or cluster/NAME for an upstream
// Cluster, so that a Topology of the same name is never meant instead.
func refOf(t *v1alpha2.Topology) string {
	if upstream.IsCluster(t) {
		return "cluster/" + t.Name
	}
	return t.Name
}

// capitalize starts a sentence with s.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
