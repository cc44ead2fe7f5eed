package printer

import (
	"fmt"
	"io"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// UpgradePreview writes the order in which t's parts take version, as the
// engine plans it with class (nil: no chained upgrade), and the lifecycle
// hooks it calls, hooks naming the handlers of each hook. It is a part of a
// confirmation's text, so like the question after it, it is written as is.
func UpgradePreview(w io.Writer, t *v1alpha2.Topology, class *v1alpha2.TopologyClass, version string, hooks map[string][]string) {
	p := upgrade.PlanUpgrade(t, class, version)
	fmt.Fprintf(w, "Rollout of %s %s/%s to %s:\n", contract.KindOf(t), t.Namespace, t.Name, version)
	for _, line := range append(p.Lines(), lifecycle.PreviewLines(p, hooks)...) {
		fmt.Fprintf(w, "  %s\n", line)
	}
}
