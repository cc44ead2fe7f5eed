package upgrade

import (
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// MaxKubeletSkew is how many minors older than the API server Kubernetes'
// version skew policy lets a kubelet be (three since Kubernetes v1.28).
const MaxKubeletSkew uint64 = 3

// Pins are the versions a Topology pins its pools to, by topology name:
// a pool absent from them follows the Topology's version.
type Pins struct {
	// MachineDeployments and MachinePools pinned, pool name to version.
	MachineDeployments, MachinePools map[string]string
}

// PinsOf reads the pins of t's pools.
func PinsOf(t *v1alpha2.Topology) Pins {
	p := Pins{MachineDeployments: map[string]string{}, MachinePools: map[string]string{}}
	if t == nil || t.Spec.Workers == nil {
		return p
	}
	for _, md := range t.Spec.Workers.MachineDeployments {
		if md.Version != "" {
			p.MachineDeployments[md.Name] = md.Version
		}
	}
	for _, mp := range t.Spec.Workers.MachinePools {
		if mp.Version != "" {
			p.MachinePools[mp.Name] = mp.Version
		}
	}
	return p
}

// Len is how many pools are pinned.
func (p Pins) Len() int { return len(p.MachineDeployments) + len(p.MachinePools) }

// Unpinned is obs without its pinned pools: what a cluster-wide upgrade
// moves, waits for and reports to lifecycle hooks. Upstream's proposal
// leaves pinned pools out of all three: they neither hold the control plane
// nor count towards the upgrade concurrency, and the hooks ignore them.
func (p Pins) Unpinned(obs *Observed) *Observed {
	if obs == nil || p.Len() == 0 {
		return obs
	}
	out := &Observed{ControlPlane: obs.ControlPlane, MachineDeployments: map[string]PartObserved{}, MachinePools: map[string]PartObserved{}}
	for name, o := range obs.MachineDeployments {
		if _, pinned := p.MachineDeployments[name]; !pinned {
			out.MachineDeployments[name] = o
		}
	}
	for name, o := range obs.MachinePools {
		if _, pinned := p.MachinePools[name]; !pinned {
			out.MachinePools[name] = o
		}
	}
	return out
}
