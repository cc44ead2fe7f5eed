// Package capi drives the real plugin and agent binaries against a stock
// management cluster — Cluster API v1.14's own managers (core, kubeadm
// bootstrap and control plane, the Docker provider's in-memory backend) with
// every feature gate at its default, as `clusterctl init` installs them —
// where upstream's controllers act on what the agent writes: machines are
// created, upgraded, scaled and deleted by them, and every assertion reads
// their objects.
package capi

import (
	"os"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
)

// suite is the stock management cluster the tests share.
var suite fixture.Suite

func TestMain(m *testing.M) {
	os.Exit(fixture.RunSuite(m, fixture.SuiteOptions{Name: "capi"}, &suite))
}
