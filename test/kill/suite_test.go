// Package kill kills the agent (SIGKILL) while it builds, upgrades and
// rotates clusters that Cluster API v1.14's own managers provision on a
// stock management cluster, and checks that it converges with nothing
// duplicated, orphaned or leaked. It has a management cluster of its own:
// other tests sharing its agent would meet its absence, and beside them
// these would run one at a time.
package kill

import (
	"os"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
)

// suite is the stock management cluster the tests share.
var suite fixture.Suite

func TestMain(m *testing.M) {
	os.Exit(fixture.RunSuite(m, fixture.SuiteOptions{Name: "kill"}, &suite))
}
