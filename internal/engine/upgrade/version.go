package upgrade

import (
	"fmt"
	"strings"

	"github.com/blang/semver/v4"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// ParseVersion parses a Kubernetes version such as v1.32.0. The leading "v"
// is required, as Cluster API and the Topology CRD require it.
func ParseVersion(v string) (semver.Version, error) {
	if !strings.HasPrefix(v, "v") {
		return semver.Version{}, fmt.Errorf("version %q must start with v, e.g. v1.32.0", v)
	}
	return semver.Parse(strings.TrimPrefix(v, "v"))
}

// UnsafeVersionChange tells whether a topology opts out of the version rules.
func UnsafeVersionChange(t *v1alpha2.Topology) bool {
	_, ok := t.Annotations[clusterv1.ClusterTopologyUnsafeUpdateVersionAnnotation]
	return ok
}
