package engine

import (
	"fmt"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// UpgradeStep is one step of a version rollout, in order.
type UpgradeStep struct {
	// Parts upgrading together in this step: the control plane alone, or up
	// to the upgrade concurrency of MachineDeployments, or one MachinePool.
	Parts []UpgradePart
}

// UpgradePart is one part's share of a rollout.
type UpgradePart struct {
	// Kind is ControlPlane, MachineDeployment or MachinePool.
	Kind, Name, Class, ObjectName string
	// MachinesReplaced is how many Machines are replaced, as far as known.
	MachinesReplaced int32
}

// UpgradePlan is the order a version change rolls out in, and what stays.
type UpgradePlan struct {
	From, To string
	Steps    []UpgradeStep
	// NotUpgraded names held and deferred pools, with why.
	NotUpgraded []string
}

// PlanUpgrade orders the rollout of t to version: the control plane first,
// then MachineDeployments as many at a time as the upgrade concurrency
// allows, skipping deferred ones and stopping at a held one, then
// MachinePools. It is what `upgrade` and the editor preview.
func PlanUpgrade(t *v1alpha2.Topology, version string) *UpgradePlan {
	p := &UpgradePlan{From: t.Spec.Version, To: version}
	replicas := func(desired *int32, st *v1alpha2.PartStatus) int32 {
		switch {
		case desired != nil:
			return *desired
		case st != nil:
			return st.Replicas
		}
		return 0
	}
	cp := UpgradePart{Kind: "ControlPlane", Name: ControlPlaneName, MachinesReplaced: replicas(t.Spec.ControlPlane.Replicas, t.Status.ControlPlane)}
	if t.Status.ControlPlane != nil {
		cp.ObjectName = t.Status.ControlPlane.ObjectName
	}
	p.Steps = append(p.Steps, UpgradeStep{Parts: []UpgradePart{cp}})
	if t.Spec.Workers == nil {
		return p
	}
	status := map[string]*v1alpha2.PartStatus{}
	for i := range t.Status.MachineDeployments {
		status["md/"+t.Status.MachineDeployments[i].Name] = &t.Status.MachineDeployments[i]
	}
	for i := range t.Status.MachinePools {
		status["mp/"+t.Status.MachinePools[i].Name] = &t.Status.MachinePools[i]
	}
	concurrency := UpgradeConcurrency(t)
	var batch []UpgradePart
	held := false
	for _, md := range t.Spec.Workers.MachineDeployments {
		_, hold := md.Metadata.Annotations[HoldUpgradeSequenceAnnotation]
		_, deferred := md.Metadata.Annotations[DeferUpgradeAnnotation]
		held = held || hold
		switch {
		case deferred:
			p.NotUpgraded = append(p.NotUpgraded, fmt.Sprintf("%s is deferred (%s): it stays at %s", md.Name, DeferUpgradeAnnotation, t.Spec.Version))
			continue
		case held:
			p.NotUpgraded = append(p.NotUpgraded, fmt.Sprintf("%s is held (%s): it waits until the annotation is removed", md.Name, HoldUpgradeSequenceAnnotation))
			continue
		}
		part := UpgradePart{Kind: "MachineDeployment", Name: md.Name, Class: md.Class, MachinesReplaced: replicas(md.Replicas, status["md/"+md.Name])}
		if st := status["md/"+md.Name]; st != nil {
			part.ObjectName = st.ObjectName
		}
		batch = append(batch, part)
		if len(batch) == concurrency {
			p.Steps = append(p.Steps, UpgradeStep{Parts: batch})
			batch = nil
		}
	}
	if len(batch) > 0 {
		p.Steps = append(p.Steps, UpgradeStep{Parts: batch})
	}
	for _, mp := range t.Spec.Workers.MachinePools {
		part := UpgradePart{Kind: "MachinePool", Name: mp.Name, Class: mp.Class, MachinesReplaced: replicas(mp.Replicas, status["mp/"+mp.Name])}
		p.Steps = append(p.Steps, UpgradeStep{Parts: []UpgradePart{part}})
	}
	return p
}

// Lines renders the plan as numbered lines, for the CLI and the editor alike.
func (p *UpgradePlan) Lines() []string {
	var out []string
	for i, s := range p.Steps {
		line := fmt.Sprintf("%d. ", i+1)
		for j, part := range s.Parts {
			if j > 0 {
				line += "; "
			}
			switch part.Kind {
			case "ControlPlane":
				name := "control plane"
				if part.ObjectName != "" {
					name += " " + part.ObjectName
				}
				line += fmt.Sprintf("%s: %s → %s, %d machine(s) replaced", name, p.From, p.To, part.MachinesReplaced)
			case "MachinePool":
				line += fmt.Sprintf("MachinePool %s (%s)", part.Name, part.Class)
			default:
				line += fmt.Sprintf("%s (%s): %d machine(s) replaced", part.Name, part.Class, part.MachinesReplaced)
			}
		}
		out = append(out, line)
	}
	for _, n := range p.NotUpgraded {
		out = append(out, "not upgraded: "+n)
	}
	return out
}
