// Package upstream is the upstream side of the comparison: Cluster API
// v1.14's managers with ClusterTopology on in every provider, so that
// upstream's own topology controller runs beside the agent. Here the agent's
// output is judged against upstream's (TestParityWithUpstream), and the
// plugin is driven on Clusters with spec.topology that upstream reconciles.
// Nothing the product needs is tested only here: test/capi and test/stock
// run the managers stock.
package upstream

import (
	"os"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
)

// suite is the gated management cluster the tests share.
var suite fixture.Suite

func TestMain(m *testing.M) {
	os.Exit(fixture.RunSuite(m, fixture.SuiteOptions{Name: "upstream", TopologyGate: true}, &suite))
}
