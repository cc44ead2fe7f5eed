package printer

import (
	"bytes"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// threeWavePreview is a dry run over four clusters: a canary, a wave with
// one cluster already at the version and one refused, and a last wave.
func threeWavePreview() *fleet.Preview {
	ref := func(ns, name string) v1alpha2.RolloutClusterRef {
		return v1alpha2.RolloutClusterRef{Kind: v1alpha2.RolloutKindTopology, Namespace: ns, Name: name}
	}
	changed := []string{"version is v1.33.1 (the rollout sets v1.34.0)"}
	return &fleet.Preview{Machines: 18, Waves: []fleet.WavePreview{
		{Number: 1, Machines: 6, Clusters: []fleet.ClusterPreview{{Ref: ref("team-a", "canary"), Changes: changed, Machines: 6}}},
		{Number: 2, Machines: 6, Clusters: []fleet.ClusterPreview{
			{Ref: ref("team-a", "done")},
			{Ref: ref("team-b", "frozen"), Changes: changed, Machines: 6, Refused: "preflight failed; nothing was changed: change freeze on frozen"},
		}},
		{Number: 3, Machines: 6, Clusters: []fleet.ClusterPreview{{Ref: v1alpha2.RolloutClusterRef{Kind: "Cluster", Namespace: "team-c", Name: "legacy"}, Changes: changed, Machines: 6}}},
	}}
}

// TestRolloutPreview: rollout create's dry run as printed, with a line per
// cluster and, for --quiet, without; both name the refused cluster.
func TestRolloutPreview(t *testing.T) {
	var full, summary bytes.Buffer
	RolloutPreview(&full, fixture.VersionRollout(), threeWavePreview())
	golden(t, "rollout-preview.txt", full.String())
	RolloutPreviewSummary(&summary, fixture.VersionRollout(), threeWavePreview())
	golden(t, "rollout-preview-summary.txt", summary.String())
}
