package upgrade

import (
	"fmt"
	"slices"
	"strings"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// UpgradeStep is one step of a version rollout, in order.
type UpgradeStep struct {
	// From and To are the versions the step's parts move between.
	From, To string
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
	// Versions is the chain the control plane takes; more than one where
	// the upgrade is chained over several minors.
	Versions []string
	Steps    []UpgradeStep
	// NotUpgraded names held and deferred pools, with why.
	NotUpgraded []string
	// PlanExtension is the class's upgrade-plan extension, which the agent
	// asks for the chain when the upgrade starts; the preview can only show
	// what the class's list or the one-minor rule would give.
	PlanExtension string
}

// PlanUpgrade orders the rollout of t to version: the control plane first,
// then MachineDeployments as many at a time as the upgrade concurrency
// allows, skipping deferred ones and stopping at a held one, then
// MachinePools. An upgrade over several minors (class lists
// kubernetesVersions) repeats this per step of the chain, the workers only
// where the skew rules need them and at the end. It is what `upgrade` and
// the editor preview; class may be nil.
func PlanUpgrade(t *v1alpha2.Topology, class *v1alpha2.TopologyClass, version string) *UpgradePlan {
	p := &UpgradePlan{From: t.Spec.Version, To: version, PlanExtension: UpgradePlanExtension(class)}
	var classVersions []string
	if class != nil {
		classVersions = class.Spec.KubernetesVersions
	}
	workersAt := oldestPoolVersion(t)
	chain, err := PlanVersions(classVersions, version, t.Spec.Version, workersAt)
	if err != nil || len(chain.ControlPlane) == 0 {
		// The preflight reports why; preview the single step asked for.
		chain = VersionPlan{ControlPlane: []string{version}, Workers: []string{version}}
	}
	p.Versions = chain.ControlPlane
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
	batches := p.workerBatches(t, replicas)
	cpFrom, wFrom, w := t.Spec.Version, workersAt, 0
	workerSteps := func(to string) {
		for _, b := range batches {
			p.Steps = append(p.Steps, UpgradeStep{From: wFrom, To: to, Parts: b})
		}
		wFrom = to
	}
	for _, v := range chain.ControlPlane {
		p.Steps = append(p.Steps, UpgradeStep{From: cpFrom, To: v, Parts: []UpgradePart{cp}})
		cpFrom = v
		for w < len(chain.Workers) && chain.Workers[w] == v {
			workerSteps(v)
			w++
		}
	}
	for ; w < len(chain.Workers); w++ {
		workerSteps(chain.Workers[w])
	}
	return p
}

// oldestPoolVersion is the oldest version t's status reports for a pool
// that follows t's version, or t's version when it reports none; "" without
// pools.
func oldestPoolVersion(t *v1alpha2.Topology) string {
	if t.Spec.Workers == nil || len(t.Spec.Workers.MachineDeployments)+len(t.Spec.Workers.MachinePools) == 0 {
		return ""
	}
	var versions []string
	for _, st := range append(slices.Clone(t.Status.MachineDeployments), t.Status.MachinePools...) {
		if !st.Pinned {
			versions = append(versions, st.Version)
		}
	}
	if v := oldestVersion(versions); v != "" {
		return v
	}
	return t.Spec.Version
}

// workerBatches groups t's pools as they upgrade together: MachineDeployments
// up to the upgrade concurrency, each MachinePool alone; pinned, held and
// deferred pools go to NotUpgraded instead.
func (p *UpgradePlan) workerBatches(t *v1alpha2.Topology, replicas func(*int32, *v1alpha2.PartStatus) int32) [][]UpgradePart {
	if t.Spec.Workers == nil {
		return nil
	}
	status := map[string]*v1alpha2.PartStatus{}
	for i := range t.Status.MachineDeployments {
		status["md/"+t.Status.MachineDeployments[i].Name] = &t.Status.MachineDeployments[i]
	}
	for i := range t.Status.MachinePools {
		status["mp/"+t.Status.MachinePools[i].Name] = &t.Status.MachinePools[i]
	}
	concurrency := UpgradeConcurrency(t)
	var out [][]UpgradePart
	var batch []UpgradePart
	held := false
	for _, md := range t.Spec.Workers.MachineDeployments {
		_, hold := md.Metadata.Annotations[clusterv1.ClusterTopologyHoldUpgradeSequenceAnnotation]
		_, deferred := md.Metadata.Annotations[clusterv1.ClusterTopologyDeferUpgradeAnnotation]
		held = held || hold
		switch {
		case md.Version != "":
			p.NotUpgraded = append(p.NotUpgraded, pinnedStays(md.Name, md.Version))
			continue
		case deferred:
			p.NotUpgraded = append(p.NotUpgraded, fmt.Sprintf("%s is deferred (%s): it stays at %s", md.Name, clusterv1.ClusterTopologyDeferUpgradeAnnotation, t.Spec.Version))
			continue
		case held:
			p.NotUpgraded = append(p.NotUpgraded, fmt.Sprintf("%s is held (%s): it waits until the annotation is removed", md.Name, clusterv1.ClusterTopologyHoldUpgradeSequenceAnnotation))
			continue
		}
		part := UpgradePart{Kind: "MachineDeployment", Name: md.Name, Class: md.Class, MachinesReplaced: replicas(md.Replicas, status["md/"+md.Name])}
		if st := status["md/"+md.Name]; st != nil {
			part.ObjectName = st.ObjectName
		}
		batch = append(batch, part)
		if len(batch) == concurrency {
			out = append(out, batch)
			batch = nil
		}
	}
	if len(batch) > 0 {
		out = append(out, batch)
	}
	for _, mp := range t.Spec.Workers.MachinePools {
		if mp.Version != "" {
			p.NotUpgraded = append(p.NotUpgraded, pinnedStays(mp.Name, mp.Version))
			continue
		}
		out = append(out, []UpgradePart{{Kind: "MachinePool", Name: mp.Name, Class: mp.Class, MachinesReplaced: replicas(mp.Replicas, status["mp/"+mp.Name])}})
	}
	return out
}

// pinnedStays says that a pinned pool sits an upgrade out.
func pinnedStays(pool, pin string) string {
	return fmt.Sprintf("%s is pinned to %s: it stays there until its pin moves (`kubectl topology set version`)", pool, pin)
}

// Lines renders the plan as numbered lines, for the CLI and the editor alike.
func (p *UpgradePlan) Lines() []string {
	var out []string
	if p.PlanExtension != "" {
		out = append(out, fmt.Sprintf("the class's upgrade-plan extension %s decides the versions in between when the upgrade starts; the steps below may differ", p.PlanExtension))
	}
	if len(p.Versions) > 1 {
		out = append(out, fmt.Sprintf("chained over %d minors, as the class's kubernetesVersions allow: %s → %s", len(p.Versions), p.From, strings.Join(p.Versions, " → ")))
	}
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
				line += fmt.Sprintf("%s: %s → %s, %d machine(s) replaced", name, s.From, s.To, part.MachinesReplaced)
			case "MachinePool":
				line += fmt.Sprintf("MachinePool %s (%s)%s", part.Name, part.Class, p.chainedTo(s))
			default:
				line += fmt.Sprintf("%s (%s)%s: %d machine(s) replaced", part.Name, part.Class, p.chainedTo(s), part.MachinesReplaced)
			}
		}
		out = append(out, line)
	}
	for _, n := range p.NotUpgraded {
		out = append(out, "not upgraded: "+n)
	}
	return out
}

// chainedTo names a worker step's versions where the upgrade is chained;
// a single-step upgrade needs no reminder of where the workers go.
func (p *UpgradePlan) chainedTo(s UpgradeStep) string {
	if len(p.Versions) <= 1 {
		return ""
	}
	return fmt.Sprintf(" %s → %s", s.From, s.To)
}

// MachinesReplaced is how many Machines the whole rollout replaces, as far
// as known: each part's, at each step it moves in.
func (p *UpgradePlan) MachinesReplaced() int64 {
	var n int64
	for _, s := range p.Steps {
		for _, part := range s.Parts {
			n += int64(part.MachinesReplaced)
		}
	}
	return n
}
