package engine

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
)

// phaseOrder ranks phases from least to most advanced; a topology's phase is
// the least advanced of its parts.
var phaseOrder = map[v1alpha1.RolloutPhase]int{
	v1alpha1.PhasePending:   0,
	v1alpha1.PhaseCreating:  1,
	v1alpha1.PhaseHeld:      2,
	v1alpha1.PhaseDeferred:  3,
	v1alpha1.PhaseUpgrading: 4,
	v1alpha1.PhaseUpToDate:  5,
}

// Summarize fills the rollout summary of status: each part's desired and
// observed version and replicas, its phase and why it waits, and the phase of
// the whole topology. It is what `status` and the TUI show.
func Summarize(t *v1alpha1.Topology, r *Rollout, obs *Observed, status *v1alpha1.TopologyStatus) {
	if obs == nil {
		obs = &Observed{}
	}
	part := func(d Decision, class string, o PartObserved, desiredReplicas *int32) v1alpha1.PartStatus {
		ps := v1alpha1.PartStatus{
			Name: d.Name, Class: class, ObjectName: o.ObjectName,
			DesiredVersion: r.DesiredVersion, Version: o.SpecVersion,
			DesiredReplicas: desiredReplicas,
			Replicas:        o.Replicas, ReadyReplicas: o.ReadyReplicas, UpToDateReplicas: o.UpToDateReplicas,
			Phase: d.Phase, Message: d.Reason,
		}
		if o.StatusVersion != "" {
			ps.Version = o.StatusVersion
		}
		return ps
	}
	cp := part(r.ControlPlane, "", obs.ControlPlane, t.Spec.ControlPlane.Replicas)
	status.ControlPlane = &cp
	phase := cp.Phase
	lower := func(p v1alpha1.RolloutPhase) {
		if phaseOrder[p] < phaseOrder[phase] {
			phase = p
		}
	}
	status.MachineDeployments, status.MachinePools = nil, nil
	if w := t.Spec.Workers; w != nil {
		for i, md := range w.MachineDeployments {
			ps := part(r.MachineDeployments[i], md.Class, obs.MachineDeployments[md.Name], md.Replicas)
			status.MachineDeployments = append(status.MachineDeployments, ps)
			lower(ps.Phase)
		}
		for i, mp := range w.MachinePools {
			ps := part(r.MachinePools[i], mp.Class, obs.MachinePools[mp.Name], mp.Replicas)
			status.MachinePools = append(status.MachinePools, ps)
			lower(ps.Phase)
		}
	}
	status.Phase = phase
}

// InfrastructurePhase reads the provisioning state of the infrastructure from
// the InfrastructureCluster's status.ready and the Cluster's infrastructureReady.
func InfrastructurePhase(s *State) v1alpha1.InfrastructurePhase {
	if s.InfrastructureCluster == nil {
		return v1alpha1.InfrastructurePending
	}
	if ready, _, _ := unstructured.NestedBool(s.InfrastructureCluster.Object, "status", "ready"); ready {
		return v1alpha1.InfrastructureProvisioned
	}
	if s.Cluster != nil {
		if ready, _, _ := unstructured.NestedBool(s.Cluster.Object, "status", "infrastructureReady"); ready {
			return v1alpha1.InfrastructureProvisioned
		}
	}
	return v1alpha1.InfrastructureProvisioning
}

// RolloutSettled tells whether a Topology's rollout is over: the agent has
// reconciled its latest generation, TopologyReconciled is true for it,
// every part is up to date and has the replicas asked for, all ready.
// `status --watch` and `upgrade --wait` stop there.
func RolloutSettled(t *v1alpha1.Topology) bool {
	if t.Status.ObservedGeneration != t.Generation || t.Status.Phase != v1alpha1.PhaseUpToDate || len(PartsNotReady(t)) > 0 {
		return false
	}
	c := meta.FindStatusCondition(t.Status.Conditions, v1alpha1.TopologyReconciledCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == t.Generation
}

// PartsNotReady says, for each part whose machines are not all there, ready
// and up to date, where it stands: versions that match do not make a cluster
// a rollout has finished with.
func PartsNotReady(t *v1alpha1.Topology) []string {
	var out []string
	check := func(label string, p *v1alpha1.PartStatus) {
		if p == nil || p.DesiredReplicas == nil {
			return
		}
		want := *p.DesiredReplicas
		if p.Replicas != want || p.ReadyReplicas != want || p.UpToDateReplicas != want {
			out = append(out, fmt.Sprintf("%s: %d/%d ready, %d up to date, %d machines", label, p.ReadyReplicas, want, p.UpToDateReplicas, p.Replicas))
		}
	}
	check("control plane", t.Status.ControlPlane)
	for i := range t.Status.MachineDeployments {
		check(t.Status.MachineDeployments[i].Name, &t.Status.MachineDeployments[i])
	}
	for i := range t.Status.MachinePools {
		check(t.Status.MachinePools[i].Name, &t.Status.MachinePools[i])
	}
	return out
}

// RolloutHolds says what a Topology's status reports as holding it: a
// change the agent has not seen yet, and each condition that is not true.
// Status views list these, and a watch that gives up names them.
func RolloutHolds(t *v1alpha1.Topology) []string {
	var out []string
	if t.Status.ObservedGeneration != t.Generation {
		out = append(out, fmt.Sprintf("the agent has not seen the latest change yet (generation %d, observed %d)", t.Generation, t.Status.ObservedGeneration))
	}
	for _, c := range t.Status.Conditions {
		if c.Status != metav1.ConditionTrue {
			out = append(out, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
		}
	}
	return out
}
