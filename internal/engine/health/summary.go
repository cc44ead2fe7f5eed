package health

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// phaseOrder ranks phases from least to most advanced; a topology's phase is
// the least advanced of its parts.
var phaseOrder = map[v1alpha2.PartPhase]int{
	v1alpha2.PhasePending:   0,
	v1alpha2.PhaseCreating:  1,
	v1alpha2.PhaseHeld:      2,
	v1alpha2.PhaseDeferred:  3,
	v1alpha2.PhaseUpgrading: 4,
	v1alpha2.PhaseUpToDate:  5,
	v1alpha2.PhasePinned:    5,
}

// Summarize fills the rollout summary of status: each part's desired and
// observed version and replicas, its phase and why it waits, and the phase of
// the whole topology. It is what `status` and the TUI show.
func Summarize(t *v1alpha2.Topology, r *upgrade.Sequence, obs *upgrade.Observed, status *v1alpha2.TopologyStatus) {
	if obs == nil {
		obs = &upgrade.Observed{}
	}
	part := func(d upgrade.Decision, class string, o upgrade.PartObserved, desiredReplicas *int32) v1alpha2.PartStatus {
		ps := v1alpha2.PartStatus{
			Name: d.Name, Class: class, ObjectName: o.ObjectName,
			DesiredVersion: r.DesiredVersion, Version: o.SpecVersion,
			DesiredReplicas: desiredReplicas,
			Replicas:        o.Replicas, ReadyReplicas: o.ReadyReplicas, UpToDateReplicas: o.UpToDateReplicas,
			Phase: d.Phase, Message: d.Reason,
			AvailableReplicas: o.AvailableReplicas,
		}
		if o.StatusVersion != "" {
			ps.Version = o.StatusVersion
		}
		if d.Pin != "" {
			ps.DesiredVersion, ps.Pinned = d.Pin, true
		}
		if len(o.Problems) > 0 {
			ps.Problems = append([]v1alpha2.Problem(nil), o.Problems[:min(len(o.Problems), maxProblems)]...)
		}
		ps.State = PartState(&ps, o.Provisioning)
		return ps
	}
	cp := part(r.ControlPlane, "", obs.ControlPlane, t.Spec.ControlPlane.Replicas)
	status.ControlPlane = &cp
	phase := cp.Phase
	lower := func(p v1alpha2.PartPhase) {
		if phaseOrder[p] < phaseOrder[phase] {
			phase = p
		}
	}
	status.MachineDeployments, status.MachinePools = nil, nil
	if w := t.Spec.Workers; w != nil {
		for _, md := range w.MachineDeployments {
			ps := part(decisionOf(r.MachineDeployments, md.Name), md.Class, obs.MachineDeployments[md.Name], md.Replicas)
			status.MachineDeployments = append(status.MachineDeployments, ps)
			lower(ps.Phase)
		}
		for _, mp := range w.MachinePools {
			ps := part(decisionOf(r.MachinePools, mp.Name), mp.Class, obs.MachinePools[mp.Name], mp.Replicas)
			status.MachinePools = append(status.MachinePools, ps)
			lower(ps.Phase)
		}
	}
	status.Phase = phase
	status.State = TopologyStateOf(status)
	status.UpgradePlan = upgradePlanStatus(r)
}

// decisionOf is the decision for the pool named name. A pool the sequence
// has none for (t's spec is newer than the pass that made it) is Pending:
// no pass has planned it yet.
func decisionOf(decisions []upgrade.Decision, name string) upgrade.Decision {
	for _, d := range decisions {
		if d.Name == name {
			return d
		}
	}
	return upgrade.Decision{Name: name, Phase: v1alpha2.PhasePending, Reason: "not planned yet: the topology changed after this pass read it"}
}

// upgradePlanStatus is the plan minus the versions this pass writes: as
// upstream reports it, a version leaves the list once a part has it.
func upgradePlanStatus(r *upgrade.Sequence) *v1alpha2.UpgradePlanStatus {
	cp, workers := r.Plan.ControlPlane, r.Plan.Workers
	if len(cp) > 0 && r.ControlPlane.Version == cp[0] {
		cp = cp[1:]
	}
	if len(workers) > 0 {
		all := true
		for _, parts := range [][]upgrade.Decision{r.MachineDeployments, r.MachinePools} {
			for _, d := range parts {
				all = all && (d.CreatePending || d.Pin != "" || d.Version == workers[0])
			}
		}
		if all {
			workers = workers[1:]
		}
	}
	if len(cp) == 0 && len(workers) == 0 {
		return nil
	}
	return &v1alpha2.UpgradePlanStatus{ControlPlane: slices.Clone(cp), Workers: slices.Clone(workers)}
}

// InfrastructurePhase reads the provisioning state of the infrastructure from
// the InfrastructureCluster (v1beta2 contract: status.initialization.provisioned,
// v1beta1: status.ready) and the Cluster (v1beta2:
// status.initialization.infrastructureProvisioned, v1beta1: infrastructureReady).
func InfrastructurePhase(s *clusterstate.State) v1alpha2.InfrastructurePhase {
	if s.InfrastructureCluster == nil {
		return v1alpha2.InfrastructurePending
	}
	if anyTrue(s.InfrastructureCluster, []string{"status", "initialization", "provisioned"}, []string{"status", "ready"}) {
		return v1alpha2.InfrastructureProvisioned
	}
	if s.Cluster != nil && anyTrue(s.Cluster, []string{"status", "initialization", "infrastructureProvisioned"}, []string{"status", "infrastructureReady"}) {
		return v1alpha2.InfrastructureProvisioned
	}
	return v1alpha2.InfrastructureProvisioning
}

// Settled tells whether a Topology's rollout is over: the agent has
// reconciled its latest generation, TopologyReconciled is true for it, and
// the topology and every part are Ready — versions, replicas asked for, all
// ready and healthy. `status --watch` and `upgrade --wait` stop there.
func Settled(t *v1alpha2.Topology) bool {
	if t.Status.ObservedGeneration != t.Generation || TopologyState(t) != v1alpha2.StateReady || len(PartsNotReady(t, time.Time{})) > 0 {
		return false
	}
	c := meta.FindStatusCondition(t.Status.Conditions, v1alpha2.TopologyReconciledCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == t.Generation
}

// PartsNotReady says, for each part that is not Ready, where it stands: its
// state and since when, its machines, and its first problem. Versions that
// match do not make a cluster a rollout has finished with. A zero now leaves
// out the durations.
func PartsNotReady(t *v1alpha2.Topology, now time.Time) []string {
	var out []string
	for i, p := range t.Status.Parts() {
		if p.State == v1alpha2.StateReady {
			continue
		}
		label := p.Name
		if i == 0 && t.Status.ControlPlane != nil { // Parts puts the control plane first
			label = "control plane"
		}
		since := ""
		if !now.IsZero() {
			since = SinceText(p.StateSince, now)
		}
		line := fmt.Sprintf("%s: %s%s, %s", label, orUnknown(string(p.State)), since, replicasText(&p))
		if len(p.Problems) > 0 {
			first := p.Problems[0]
			if now.IsZero() {
				first.Since = nil
			}
			line += "; " + ProblemText(first, now)
			if more := len(p.Problems) - 1; more > 0 {
				line += fmt.Sprintf(" (+%d more)", more)
			}
		}
		out = append(out, line)
	}
	return out
}

// PartWhy is why part p is in its state, as status's WHY column says it:
// the part's message, or else its first problem.
func PartWhy(p v1alpha2.PartStatus) string {
	if p.Message == "" && len(p.Problems) > 0 {
		return p.Problems[0].Object + " " + p.Problems[0].Reason
	}
	return p.Message
}

// PartsHolding says, for each part of t that is not Ready, its name, state
// and why, in status's words: "control-plane: RollingOut: the control plane
// is upgrading from v1.33.1 to v1.34.0".
func PartsHolding(t *v1alpha2.Topology) []string {
	var out []string
	for _, p := range t.Status.Parts() {
		if p.State == v1alpha2.StateReady {
			continue
		}
		line := p.Name + ": " + orUnknown(string(p.State))
		if why := PartWhy(p); why != "" {
			line += ": " + why
		}
		out = append(out, line)
	}
	return out
}

// Holds says what a Topology's status reports as holding it: a
// change the agent has not seen yet, and each condition that is not true.
// Status views list these, and a watch that gives up names them.
func Holds(t *v1alpha2.Topology) []string {
	var out []string
	if behind := NotObserved(t); behind != "" {
		out = append(out, behind)
	}
	return append(out, ConditionsNotTrue(t)...)
}

// NotObserved says that the agent has not seen the latest change of t yet,
// or nothing: until it has, status describes an older spec.
func NotObserved(t *v1alpha2.Topology) string {
	if t.Status.ObservedGeneration == t.Generation {
		return ""
	}
	return fmt.Sprintf("%s has not seen the latest change yet (generation %d, observed %d)", contract.Reconciler(t), t.Generation, t.Status.ObservedGeneration)
}

// ConditionsNotTrue lists each condition of t's status that is not true,
// with its reason and message.
func ConditionsNotTrue(t *v1alpha2.Topology) []string {
	var out []string
	for _, c := range t.Status.Conditions {
		if c.Status != metav1.ConditionTrue {
			out = append(out, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, ConditionLine(c.Message)))
		}
	}
	return out
}

// anyTrue reports whether o has true at any of paths.
func anyTrue(o *unstructured.Unstructured, paths ...[]string) bool {
	for _, p := range paths {
		if v, _, _ := unstructured.NestedBool(o.Object, p...); v {
			return true
		}
	}
	return false
}

// ConditionLine puts a condition message of several lines, as upstream
// writes them ("…\n  * part: …"), on one line for tables and summaries.
func ConditionLine(msg string) string {
	lines := strings.Split(msg, "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.TrimPrefix(strings.TrimSpace(l), "* "); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}
