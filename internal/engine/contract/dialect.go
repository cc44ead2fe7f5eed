package contract

import "github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"

// Dialect says whose objects the engine works for, which decides ownership.
type Dialect int

const (
	// DialectTopology is ours: a Topology owns the CAPI Cluster, which owns the rest.
	DialectTopology Dialect = iota
	// DialectUpstream is Cluster API's: a Cluster with spec.topology, a shim Secret
	// owning new InfrastructureCluster and control plane objects, as upstream does.
	DialectUpstream
)

// UpstreamClusterKind is the TypeMeta kind of a Topology read from an
// upstream Cluster with spec.topology (pkg/upstream sets it): such a
// Topology is reconciled by Cluster API's topology controller, in its dialect.
const UpstreamClusterKind = "Cluster"

// DialectOf is the dialect t's objects are made in: upstream's for a
// Topology read from an upstream Cluster, ours otherwise. The agent, plan,
// the editor and status all decide it here.
func DialectOf(t *v1alpha2.Topology) Dialect {
	if t.Kind == UpstreamClusterKind {
		return DialectUpstream
	}
	return DialectTopology
}

// Reconciler names, in a sentence, what acts on t's changes.
func Reconciler(t *v1alpha2.Topology) string {
	if DialectOf(t) == DialectUpstream {
		return "Cluster API's topology controller"
	}
	return "the agent"
}

// KindOf names what t was read from, as messages say it: "Topology", or
// "Cluster" for an upstream Cluster seen as a Topology.
func KindOf(t *v1alpha2.Topology) string {
	if DialectOf(t) == DialectUpstream {
		return UpstreamClusterKind
	}
	return v1alpha2.TopologyKind
}
