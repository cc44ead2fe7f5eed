package controller

import (
	"strings"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestRolloutReasonLeavesPinnedPoolsOut: a pinned pool moving to its pin is
// not the cluster's upgrade, as upstream reports it; an unpinned pool
// behind still is.
func TestRolloutReasonLeavesPinnedPoolsOut(t *testing.T) {
	upToDate := upgrade.Decision{Name: upgrade.ControlPlaneName, Phase: v1alpha2.PhaseUpToDate, Version: "v1.34.0"}
	moving := upgrade.Decision{Name: "md-b", Phase: v1alpha2.PhaseUpgrading, Version: "v1.34.0", Pin: "v1.34.0"}
	r := &upgrade.Sequence{DesiredVersion: "v1.34.0", ControlPlane: upToDate, MachineDeployments: []upgrade.Decision{{Name: "md-a", Phase: v1alpha2.PhaseUpToDate}, moving}}
	if reason, msg := rolloutReason(r, "KubeadmControlPlane", &lifecycle.Answers{}, false); reason != ReasonSucceeded || msg != "" {
		t.Errorf("only a pinned pool moving: %s %q, want %s and no message", reason, msg, ReasonSucceeded)
	}
	r.MachineDeployments[0] = upgrade.Decision{Name: "md-a", Phase: v1alpha2.PhasePending, Version: "v1.33.1"}
	reason, msg := rolloutReason(r, "KubeadmControlPlane", &lifecycle.Answers{}, false)
	if reason != ReasonClusterUpgrading || !strings.Contains(msg, "MachineDeployment md-a pending upgrade to version v1.34.0") || strings.Contains(msg, "md-b") {
		t.Errorf("md-a behind, md-b pinned and moving: %s %q; want md-a reported and md-b not", reason, msg)
	}
}
