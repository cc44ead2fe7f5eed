// Package stock drives the real plugin and agent binaries against a local
// control plane whose Cluster API managers run stock, exactly as
// `clusterctl init` installs them: every feature gate at its default, so
// ClusterTopology is off, upstream's topology controller does not run and the
// providers refuse the template kinds only a ClusterClass uses. This is the
// management cluster the product is for.
package stock

import (
	"os"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
)

// suite is the stock management cluster the tests share.
var suite fixture.Suite

func TestMain(m *testing.M) {
	os.Exit(fixture.RunSuite(m, fixture.SuiteOptions{Name: "stock"}, &suite))
}
