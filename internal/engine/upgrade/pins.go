package upgrade

import (
	"maps"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// MaxKubeletSkew is how many minors older than the API server Kubernetes'
// version skew policy lets a kubelet be (three since Kubernetes v1.28).
const MaxKubeletSkew uint64 = 3

// PinnedPool is one pool of a Topology pinned to a version of its own.
type PinnedPool struct {
	// Kind is MachineDeployment or MachinePool; Index its place in the
	// Topology's list of that kind.
	Kind  string
	Index int
	// Name is the pool's topology name, Version its pin.
	Name, Version string
}

// PinnedPools lists t's pinned pools in topology order, MachineDeployments
// first: the one reading of pins that rules, status, previews and fleet
// rollouts share.
func PinnedPools(t *v1alpha2.Topology) []PinnedPool {
	if t == nil || t.Spec.Workers == nil {
		return nil
	}
	var out []PinnedPool
	for i, md := range t.Spec.Workers.MachineDeployments {
		if md.Version != "" {
			out = append(out, PinnedPool{Kind: "MachineDeployment", Index: i, Name: md.Name, Version: md.Version})
		}
	}
	for i, mp := range t.Spec.Workers.MachinePools {
		if mp.Version != "" {
			out = append(out, PinnedPool{Kind: "MachinePool", Index: i, Name: mp.Name, Version: mp.Version})
		}
	}
	return out
}

// Unpinned is obs without t's pinned pools: what a cluster-wide upgrade
// moves, waits for and reports to lifecycle hooks. Upstream's proposal
// leaves pinned pools out of all three: they neither hold the control plane
// nor count towards the upgrade concurrency, and the hooks ignore them.
func Unpinned(t *v1alpha2.Topology, obs *Observed) *Observed {
	pins := PinnedPools(t)
	if obs == nil || len(pins) == 0 {
		return obs
	}
	out := &Observed{ControlPlane: obs.ControlPlane, MachineDeployments: maps.Clone(obs.MachineDeployments), MachinePools: maps.Clone(obs.MachinePools)}
	for _, p := range pins {
		if p.Kind == "MachineDeployment" {
			delete(out.MachineDeployments, p.Name)
		} else {
			delete(out.MachinePools, p.Name)
		}
	}
	return out
}
