package health

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/core"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// maxProblems keeps a part's problem list short enough to read and to store.
const maxProblems = 10

// EventWindow is how far back a status looks for warning events: what the
// report gathers and what its text says it covers.
const EventWindow = time.Hour

// maxProblemMessage cuts upstream's multi-line condition messages to a line.
const maxProblemMessage = 240

// Conditions are upstream's conditions of a Cluster API object: the v1beta2
// conditions where the object carries them (status.v1beta2.conditions when
// read as v1beta1), else status.conditions.
func Conditions(o *unstructured.Unstructured) []metav1.Condition {
	raw, found, _ := unstructured.NestedSlice(o.Object, "status", "v1beta2", "conditions")
	if !found {
		raw, _, _ = unstructured.NestedSlice(o.Object, "status", "conditions")
	}
	out := make([]metav1.Condition, 0, len(raw))
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		c := metav1.Condition{}
		c.Type, _ = m["type"].(string)
		s, _ := m["status"].(string)
		c.Status = metav1.ConditionStatus(s)
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		c.ObservedGeneration, _ = m["observedGeneration"].(int64)
		if ts, _ := m["lastTransitionTime"].(string); ts != "" {
			if t, err := time.Parse(time.RFC3339, ts); err == nil {
				c.LastTransitionTime = metav1.NewTime(t)
			}
		}
		out = append(out, c)
	}
	return out
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// healthConditions are the conditions of a control plane or pool that must be
// true for it to be healthy; upstream sets them on KubeadmControlPlane and
// MachineDeployment (the etcd and component ones on control planes only).
var healthConditions = []string{"Available", "EtcdClusterHealthy", "ControlPlaneComponentsHealthy", "CertificatesAvailable"}

// partProblems reads a control plane's or pool's own problems: each health
// condition that is false, and a remediation in progress.
func partProblems(object string, conds []metav1.Condition) []v1alpha2.Problem {
	var out []v1alpha2.Problem
	for _, typ := range healthConditions {
		if c := findCondition(conds, typ); c != nil && c.Status == metav1.ConditionFalse {
			out = append(out, problemOf(object, typ+"False", c))
		}
	}
	if c := findCondition(conds, "Remediating"); c != nil && c.Status == metav1.ConditionTrue {
		out = append(out, problemOf(object, "Remediating", c))
	}
	return out
}

func problemOf(object, fallbackReason string, c *metav1.Condition) v1alpha2.Problem {
	p := v1alpha2.Problem{Object: object, Reason: c.Reason, Message: OneLine(c.Message)}
	if p.Reason == "" {
		p.Reason = fallbackReason
	}
	if !c.LastTransitionTime.IsZero() {
		since := c.LastTransitionTime
		p.Since = &since
	}
	return p
}

// OneLine folds upstream's bulleted messages into one line a table can hold.
func OneLine(msg string) string {
	msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "* ", "")), " ")
	if len(msg) > maxProblemMessage {
		msg = msg[:maxProblemMessage] + "…"
	}
	return msg
}

// machineHealth reads one Machine: whether it is coming up for the first time
// (no Node yet), and what is wrong with it if it is not ready.
func machineHealth(m *clusterv1.Machine) (provisioning bool, problem *v1alpha2.Problem) {
	object := "Machine/" + m.Name
	phase := m.Status.Phase
	conds := core.Conditions(m)
	if !m.DeletionTimestamp.IsZero() {
		return false, &v1alpha2.Problem{Object: object, Reason: "Deleting", Message: "being deleted", Since: m.DeletionTimestamp}
	}
	if c := findCondition(conds, clusterv1.MachineHealthCheckSucceededCondition); c != nil && c.Status == metav1.ConditionFalse {
		p := problemOf(object, "HealthCheckFailed", c)
		p.Message = strings.TrimSpace("MachineHealthCheck: " + p.Message)
		return false, &p
	}
	if phase == string(clusterv1.MachinePhaseFailed) { //nolint:staticcheck // a v1beta1 Machine still reports it, and upstream keeps it for them
		p := v1alpha2.Problem{Object: object, Reason: "Failed", Message: "the Machine failed"}
		if c := findCondition(conds, clusterv1.MachineReadyCondition); c != nil {
			p = problemOf(object, "Failed", c)
		}
		return false, &p
	}
	ready := findCondition(conds, clusterv1.MachineReadyCondition)
	if ready != nil && ready.Status == metav1.ConditionTrue {
		return false, nil
	}
	// Coming up for the first time: no Node yet, or its infrastructure or
	// bootstrap data not ready (neither goes back once it was).
	provisioning = !m.Status.NodeRef.IsDefined() && slices.Contains(firstPhases, phase)
	// BootstrapReady is the v1beta1 conditions' name of BootstrapConfigReady.
	for _, typ := range []string{clusterv1.MachineInfrastructureReadyCondition, clusterv1.MachineBootstrapConfigReadyCondition, "BootstrapReady"} {
		if c := findCondition(conds, typ); c != nil && c.Status == metav1.ConditionFalse {
			provisioning = true
		}
	}
	p := v1alpha2.Problem{Object: object, Reason: "NotReady", Message: "no status reported yet"}
	if phase != "" {
		p.Message = "phase " + phase
	}
	if ready != nil {
		p = problemOf(object, "NotReady", ready)
	} else if !m.CreationTimestamp.IsZero() {
		created := m.CreationTimestamp
		p.Since = &created
	}
	return provisioning, &p
}

// firstPhases are a Machine's phases before its Node first joins ("" before
// any status).
var firstPhases = []string{"", string(clusterv1.MachinePhasePending), string(clusterv1.MachinePhaseProvisioning), string(clusterv1.MachinePhaseProvisioned)}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// observeMachines adds to a part what its Machines say: those not ready and
// why, and how many are still coming up for the first time.
func observeMachines(part *upgrade.PartObserved, machines []*clusterv1.Machine) {
	sort.Slice(machines, func(i, j int) bool { return machines[i].Name < machines[j].Name })
	for _, m := range machines {
		provisioning, problem := machineHealth(m)
		if provisioning {
			part.Provisioning++
		}
		if problem != nil {
			part.Problems = append(part.Problems, *problem)
		}
	}
}

// PartState sums one part's convergence (its rollout phase, replicas up to
// date and at the count asked for) and health (ready replicas, problems) in
// the word status shows; provisioning counts its Machines still coming up.
func PartState(p *v1alpha2.PartStatus, provisioning int32) v1alpha2.State {
	if p.ObjectName == "" {
		switch p.Phase {
		case v1alpha2.PhaseHeld:
			return v1alpha2.StateHeld
		case v1alpha2.PhaseDeferred:
			return v1alpha2.StateDeferred
		case v1alpha2.PhaseCreating:
			return v1alpha2.StateProvisioning
		}
		return v1alpha2.StateWaiting
	}
	want := p.Replicas
	if p.DesiredReplicas != nil {
		want = *p.DesiredReplicas
	}
	switch {
	case p.Phase == v1alpha2.PhaseUpgrading || p.UpToDateReplicas < p.Replicas:
		return v1alpha2.StateRollingOut
	case p.ReadyReplicas == 0 && (provisioning > 0 || p.Replicas < want):
		// No machine ready yet and more to come: its first machines.
		return v1alpha2.StateProvisioning
	case p.Replicas != want:
		return v1alpha2.StateScaling
	case provisioning > 0:
		// A machine still coming up (a replacement, the last of a new
		// control plane): what it lacks is expected, not a fault yet.
		return v1alpha2.StateProvisioning
	case p.ReadyReplicas < want || len(p.Problems) > 0:
		return v1alpha2.StateDegraded
	case p.Phase == v1alpha2.PhaseHeld:
		return v1alpha2.StateHeld
	case p.Phase == v1alpha2.PhaseDeferred:
		return v1alpha2.StateDeferred
	case p.Phase == v1alpha2.PhasePending || p.Phase == v1alpha2.PhaseCreating:
		return v1alpha2.StateWaiting
	}
	return v1alpha2.StateReady
}

// TopologyProblems are the short labels that say what of a Topology needs a
// human, in a word or two each: Deleting, Paused, a TopologyReconciled that
// is not true (with its reason; "Paused" already says it), each Degraded part. `get` and `status -A`
// show them; an empty list is a Topology nobody needs to look at.
func TopologyProblems(t *v1alpha2.Topology) []string {
	var out []string
	if !t.DeletionTimestamp.IsZero() {
		out = append(out, "Deleting")
	}
	if t.Spec.Paused {
		out = append(out, "Paused")
	}
	if c := meta.FindStatusCondition(t.Status.Conditions, v1alpha2.TopologyReconciledCondition); c != nil && c.Status != metav1.ConditionTrue && c.Reason != "Paused" {
		out = append(out, "Reconciled="+string(c.Status)+"("+c.Reason+")")
	}
	if h := t.Status.Hooks; h != nil {
		// A lifecycle hook holding the topology is why it waits.
		for _, hold := range h.Holding {
			out = append(out, "HeldBy="+hold.Hook)
		}
	}
	for _, p := range t.Status.Parts() {
		if p.State == v1alpha2.StateDegraded {
			out = append(out, p.Name+" Degraded")
		}
	}
	return out
}

// stateRank orders states by how much they need a human: a topology shows
// the state of its part that ranks first.
var stateRank = map[v1alpha2.State]int{
	v1alpha2.StateDeleting:     0,
	v1alpha2.StatePaused:       1,
	v1alpha2.StateDegraded:     2,
	v1alpha2.StateProvisioning: 3,
	v1alpha2.StateRollingOut:   4,
	v1alpha2.StateScaling:      5,
	v1alpha2.StateHeld:         6,
	v1alpha2.StateDeferred:     7,
	v1alpha2.StateWaiting:      8,
	v1alpha2.StateReady:        9,
	"":                         10,
}

// StateRank orders states for a fleet view: the state that needs a human
// most comes first.
func StateRank(s v1alpha2.State) int {
	if r, ok := stateRank[s]; ok {
		return r
	}
	return len(stateRank)
}

// TopologyState is the state of a whole Topology as its object and status
// say it: Deleting or Paused from its metadata and spec, whatever the agent
// last wrote; otherwise the state the agent summed up.
func TopologyState(t *v1alpha2.Topology) v1alpha2.State {
	switch {
	case !t.DeletionTimestamp.IsZero():
		return v1alpha2.StateDeleting
	case t.Spec.Paused:
		return v1alpha2.StatePaused
	}
	return t.Status.State
}

// TopologyStateOf is the state of the topology from its parts and
// infrastructure, as Summarize leaves them in status.
func TopologyStateOf(status *v1alpha2.TopologyStatus) v1alpha2.State {
	state := v1alpha2.StateReady
	if status.Infrastructure != v1alpha2.InfrastructureProvisioned {
		state = v1alpha2.StateProvisioning
	}
	for _, p := range status.Parts() {
		if StateRank(p.State) < StateRank(state) {
			state = p.State
		}
	}
	return state
}

// CarryStateSince keeps each state's transition time from the status before
// when the state did not change, and stamps now where it did.
func CarryStateSince(before, after *v1alpha2.TopologyStatus, now metav1.Time) {
	since := func(prevState v1alpha2.State, prevSince *metav1.Time, state v1alpha2.State) *metav1.Time {
		if state == "" {
			return nil
		}
		if prevState == state && prevSince != nil {
			return prevSince
		}
		return &now
	}
	var prev v1alpha2.TopologyStatus
	if before != nil {
		prev = *before
	}
	after.StateSince = since(prev.State, prev.StateSince, after.State)
	prevParts := map[string]v1alpha2.PartStatus{}
	if prev.ControlPlane != nil {
		prevParts["control-plane"] = *prev.ControlPlane
	}
	for _, p := range prev.MachineDeployments {
		prevParts["md/"+p.Name] = p
	}
	for _, p := range prev.MachinePools {
		prevParts["mp/"+p.Name] = p
	}
	carry := func(key string, p *v1alpha2.PartStatus) {
		old := prevParts[key]
		p.StateSince = since(old.State, old.StateSince, p.State)
	}
	if after.ControlPlane != nil {
		carry("control-plane", after.ControlPlane)
	}
	for i := range after.MachineDeployments {
		carry("md/"+after.MachineDeployments[i].Name, &after.MachineDeployments[i])
	}
	for i := range after.MachinePools {
		carry("mp/"+after.MachinePools[i].Name, &after.MachinePools[i])
	}
}

// ControlPlaneHealth says why the control plane of a live Topology is not
// healthy enough to start an upgrade on: its state and replicas, then each
// of its problems; nothing when it is Ready.
func ControlPlaneHealth(t *v1alpha2.Topology, now time.Time) []string {
	cp := t.Status.ControlPlane
	switch {
	case cp == nil || cp.State == "":
		return []string{"the control plane reports no state yet"}
	case cp.State == v1alpha2.StateReady:
		return nil
	}
	out := []string{fmt.Sprintf("the control plane is %s%s: %s", cp.State, SinceText(cp.StateSince, now), replicasText(cp))}
	for _, p := range cp.Problems {
		out = append(out, ProblemText(p, now))
	}
	return out
}

// replicasText reads a part's replicas for a human: ready against asked for.
func replicasText(p *v1alpha2.PartStatus) string {
	want := "-"
	if p.DesiredReplicas != nil {
		want = fmt.Sprint(*p.DesiredReplicas)
	}
	return fmt.Sprintf("%d/%s ready, %d up to date, %d machines", p.ReadyReplicas, want, p.UpToDateReplicas, p.Replicas)
}

// ProblemText is a problem in one line: the object, why, and since when.
func ProblemText(p v1alpha2.Problem, now time.Time) string {
	msg := p.Object + " " + p.Reason
	if p.Message != "" {
		msg += ": " + p.Message
	}
	return msg + SinceText(p.Since, now)
}

// SinceText is " for 14m" from a transition time, or "" without one.
func SinceText(since *metav1.Time, now time.Time) string {
	if since == nil || since.IsZero() {
		return ""
	}
	return " for " + HumanDuration(now.Sub(since.Time))
}

// HumanDuration is kubectl's short duration ("14m", "2d3h"), never negative.
func HumanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return duration.HumanDuration(d)
}
