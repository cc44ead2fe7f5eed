// Package upstream is the upstream side of the comparison: Cluster API
// v1.14's managers with ClusterTopology on in every provider, so that
// upstream's own topology controller runs beside the agent. Here the agent's
// output is judged against upstream's (TestParityWithUpstream), and the
// plugin is driven on Clusters with spec.topology that upstream reconciles.
// Nothing the product needs is tested only here: test/capi and test/stock
// run the managers stock.
package upstream

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/parity"
)

// suite is the gated management cluster the tests share.
var suite fixture.Suite

func TestMain(m *testing.M) {
	os.Exit(fixture.RunSuite(m, fixture.SuiteOptions{Name: "upstream", TopologyGate: true}, &suite))
}

// parityEnv is how each comparison here reaches the suite, writing its
// report to report. Its timeout bounds each side's wait: in a cold make
// test on two cores (load average 43) upstream's own upgrade took over 6
// minutes, and on a slower CI machine both sides were 3 of 6 machines in
// after 10. It bounds a failure; it measures nothing.
func parityEnv(report io.Writer) parity.Env {
	return parity.Env{K8s: suite.K8s, Plugin: suite.Plugin, Kubeconfig: suite.Kubeconfig, Timeout: 15 * time.Minute, Out: report}
}
