package upgrade

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
)

// Changed takes in a pool the agent has just written: when the write changed
// its spec (a new generation), the status read before it says nothing of the
// new spec, so none of its replicas is up to date and it is rolling out, as
// ObserveState would say once the pool's controller had seen the write.
func (o *Observed) Changed(s *clusterstate.State, written *unstructured.Unstructured) {
	if o == nil || s == nil {
		return
	}
	mark := func(parts map[string]PartObserved, pools map[string]*clusterstate.Worker) {
		for name, w := range pools {
			if w == nil || w.Object == nil || clusterstate.KeyOf(w.Object) != clusterstate.KeyOf(written) || written.GetGeneration() == w.Object.GetGeneration() {
				continue
			}
			part := parts[name]
			part.UpToDateReplicas, part.Upgrading = 0, true
			parts[name] = part
		}
	}
	mark(o.MachineDeployments, s.MachineDeployments)
	mark(o.MachinePools, s.MachinePools)
}
