package fleet

import "github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"

// Preview is what a rollout would do, wave by wave, as its dry run finds it
// before the rollout is created.
type Preview struct {
	Waves []WavePreview
	// Machines is the whole fleet's churn: Machines replaced.
	Machines int64
}

// WavePreview is one wave of a Preview.
type WavePreview struct {
	Number   int32
	Clusters []ClusterPreview
	// Machines replaced in this wave.
	Machines int64
}

// ClusterPreview is one cluster of a Preview.
type ClusterPreview struct {
	Ref v1alpha2.RolloutClusterRef
	// Changes say what the rollout sets that differs; none when the
	// cluster already is that way.
	Changes []string
	// Machines replaced.
	Machines int64
	// Refused says why the cluster's preflight fails now, as the agent's
	// would right before it starts it; "" when it passes.
	Refused string
	// Planned: its live plan, which dry-runs every object written for it,
	// passed; its preflight need not send them again.
	Planned bool
}
