package plugin

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/draft"
	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// StatusReportAPIVersion versions the schema of `status -o json|yaml`: fields
// are only ever added within a version, so alerting built on it keeps working.
const StatusReportAPIVersion = "status.kubectl-topology.io/v1"

// StatusReport is what `status -o json|yaml` prints: one item per Topology.
type StatusReport struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Agent is what the agent's heartbeat says; problems make every status stale.
	Agent AgentReport `json:"agent"`
	// Items, problems first (by state), then by namespace and name.
	Items []TopologyReport `json:"items"`
}

// AgentReport says whether the agent that writes status is alive.
type AgentReport struct {
	// LastHeartbeat is when the reconciling agent last renewed its Lease.
	LastHeartbeat *metav1.Time `json:"lastHeartbeat,omitempty"`
	// Problem says why status may be stale, or is empty.
	Problem string `json:"problem,omitempty"`
}

// TopologyReport is one Topology's rollout and health.
type TopologyReport struct {
	// Kind is Cluster for an upstream Cluster with spec.topology, which
	// Cluster API's own topology controller reconciles; empty for a Topology.
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Class     string `json:"class"`
	Version   string `json:"version"`
	// State is one of the states `status --help` lists.
	State      v1alpha2.State `json:"state"`
	StateSince *metav1.Time   `json:"stateSince,omitempty"`
	// Settled is true when the rollout is over and every part is Ready.
	Settled        bool   `json:"settled"`
	Paused         bool   `json:"paused"`
	Deleting       bool   `json:"deleting"`
	Infrastructure string `json:"infrastructure,omitempty"`
	// Reconciled is the TopologyReconciled condition.
	Reconciled *ConditionReport `json:"reconciled,omitempty"`
	// UpgradePlan is the chain of versions an upgrade in progress still
	// goes through, per part.
	UpgradePlan *v1alpha2.UpgradePlanStatus `json:"upgradePlan,omitempty"`
	// Stale lists why this status may not describe the cluster now.
	Stale []string `json:"stale,omitempty"`
	// Problems sums what needs a human, one line each.
	Problems []string     `json:"problems,omitempty"`
	Parts    []PartReport `json:"parts"`
	// Events are recent Warning events of the Topology and its objects.
	Events []EventReport `json:"events,omitempty"`

	// agentProblem and notObserved are the two kinds of Stale, kept apart
	// for the text view, which says STALE of a silent agent only.
	agentProblem, notObserved string
}

// ConditionReport is a condition without its bookkeeping.
type ConditionReport struct {
	Status  metav1.ConditionStatus `json:"status"`
	Reason  string                 `json:"reason,omitempty"`
	Message string                 `json:"message,omitempty"`
	Since   *metav1.Time           `json:"since,omitempty"`
}

// PartReport is the control plane or one pool.
type PartReport struct {
	Name string `json:"name"`
	// Kind is ControlPlane, MachineDeployment or MachinePool.
	Kind           string             `json:"kind"`
	Class          string             `json:"class,omitempty"`
	Object         string             `json:"object,omitempty"`
	State          v1alpha2.State     `json:"state"`
	StateSince     *metav1.Time       `json:"stateSince,omitempty"`
	Phase          string             `json:"phase,omitempty"`
	Version        string             `json:"version,omitempty"`
	DesiredVersion string             `json:"desiredVersion,omitempty"`
	Replicas       ReplicasReport     `json:"replicas"`
	Message        string             `json:"message,omitempty"`
	Problems       []v1alpha2.Problem `json:"problems,omitempty"`
}

// ReplicasReport counts a part's machines; desired is absent when an
// autoscaler sets it.
type ReplicasReport struct {
	Desired   *int32 `json:"desired,omitempty"`
	Current   int32  `json:"current"`
	Ready     int32  `json:"ready"`
	UpToDate  int32  `json:"upToDate"`
	Available int32  `json:"available"`
}

// EventReport is one Warning event.
type EventReport struct {
	Time    metav1.Time `json:"time"`
	Object  string      `json:"object"`
	Reason  string      `json:"reason"`
	Message string      `json:"message"`
	Count   int32       `json:"count,omitempty"`
}

// maxEvents and eventWindow bound the recent warnings a status shows.
const (
	maxEvents   = 5
	eventWindow = time.Hour
)

// agentSilent is what a watch says of an agent whose heartbeat is missing or old.
const agentSilent = "the agent is not reporting: it is not running or cannot reach the API server, so this status may be stale; `kubectl topology version` tells"

// heartbeatStaleAfter is how old the agent's heartbeat may be before status
// is called stale: three missed beats.
const heartbeatStaleAfter = 3 * components.HeartbeatInterval

// agentReport reads the agent's heartbeat Lease. A user who may not read it
// gets no verdict rather than a false alarm.
func agentReport(ctx context.Context, c client.Reader, now time.Time) AgentReport {
	lease := &coordinationv1.Lease{}
	err := c.Get(ctx, client.ObjectKey{Namespace: components.Namespace, Name: components.HeartbeatLease}, lease)
	switch {
	case apierrors.IsNotFound(err):
		return AgentReport{Problem: fmt.Sprintf("the agent has never reported (no Lease %s/%s): is it installed? `kubectl topology version` tells", components.Namespace, components.HeartbeatLease)}
	case err != nil:
		return AgentReport{}
	}
	r := AgentReport{}
	if rt := lease.Spec.RenewTime; rt != nil {
		t := metav1.NewTime(rt.Time)
		r.LastHeartbeat = &t
		if age := now.Sub(rt.Time); age > heartbeatStaleAfter {
			r.Problem = fmt.Sprintf("the agent last reported %s ago: it is not running or cannot reach the API server, so this status may be stale; `kubectl topology version` tells", health.HumanDuration(age))
		}
	}
	return r
}

// warningEvents lists the recent Warning events of a Topology and the
// objects made for it (named after its Cluster), newest first.
func warningEvents(ctx context.Context, c client.Reader, t *v1alpha2.Topology, now time.Time) []EventReport {
	list := &corev1.EventList{}
	// The API server filters by type: only warnings cross the wire.
	if err := c.List(ctx, list, client.InNamespace(t.Namespace), client.MatchingFields{"type": corev1.EventTypeWarning}); err != nil {
		return nil // events are context; a user who may not list them still gets status
	}
	cluster := t.Status.ClusterName
	if cluster == "" {
		cluster = t.Name
	}
	var out []EventReport
	for _, e := range list.Items {
		name := e.InvolvedObject.Name
		if name != t.Name && name != cluster && !strings.HasPrefix(name, cluster+"-") {
			continue
		}
		when := eventTime(&e)
		if now.Sub(when.Time) > eventWindow {
			continue
		}
		out = append(out, EventReport{Time: when, Object: e.InvolvedObject.Kind + "/" + name, Reason: e.Reason, Message: health.OneLine(e.Message), Count: e.Count})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Time.Equal(&out[j].Time) {
			return out[j].Time.Before(&out[i].Time)
		}
		return out[i].Object < out[j].Object
	})
	if len(out) > maxEvents {
		out = out[:maxEvents]
	}
	return out
}

func eventTime(e *corev1.Event) metav1.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case !e.EventTime.IsZero():
		return metav1.NewTime(e.EventTime.Time)
	}
	return e.CreationTimestamp
}

// topologyReport builds one Topology's report from its status; agent is what
// the heartbeat said.
func topologyReport(t *v1alpha2.Topology, agent AgentReport, events []EventReport) TopologyReport {
	r := TopologyReport{
		Namespace: t.Namespace, Name: t.Name, Class: t.Spec.ClassRef.Name, Version: t.Spec.Version,
		State: health.TopologyState(t), StateSince: t.Status.StateSince,
		Settled: health.RolloutSettled(t), Paused: t.Spec.Paused, Deleting: !t.DeletionTimestamp.IsZero(),
		Infrastructure: string(t.Status.Infrastructure), Events: events, Parts: []PartReport{},
	}
	switch {
	case r.State == "":
		r.State = v1alpha2.StateWaiting
	case r.State != t.Status.State && r.Deleting:
		r.StateSince = t.DeletionTimestamp
	case r.State != t.Status.State:
		r.StateSince = nil // paused since the agent last wrote: when is not known yet
	}
	if upstream.IsCluster(t) {
		r.Kind = draft.ClusterKind
	}
	r.UpgradePlan = t.Status.UpgradePlan
	if c := meta.FindStatusCondition(t.Status.Conditions, v1alpha2.TopologyReconciledCondition); c != nil {
		r.Reconciled = &ConditionReport{Status: c.Status, Reason: c.Reason, Message: c.Message}
		if !c.LastTransitionTime.IsZero() {
			since := c.LastTransitionTime
			r.Reconciled.Since = &since
		}
	}
	r.agentProblem, r.notObserved = agent.Problem, health.NotObserved(t)
	for _, s := range []string{r.agentProblem, r.notObserved} {
		if s != "" {
			r.Stale = append(r.Stale, s)
		}
	}
	r.Problems = health.TopologyProblems(t)
	add := func(kind string, p v1alpha2.PartStatus) {
		r.Parts = append(r.Parts, PartReport{
			Name: p.Name, Kind: kind, Class: p.Class, Object: p.ObjectName, State: p.State, StateSince: p.StateSince,
			Phase: string(p.Phase), Version: p.Version, DesiredVersion: p.DesiredVersion, Message: p.Message, Problems: p.Problems,
			Replicas: ReplicasReport{Desired: p.DesiredReplicas, Current: p.Replicas, Ready: p.ReadyReplicas, UpToDate: p.UpToDateReplicas, Available: p.AvailableReplicas},
		})
	}
	if cp := t.Status.ControlPlane; cp != nil {
		add("ControlPlane", *cp)
	}
	for _, p := range t.Status.MachineDeployments {
		add("MachineDeployment", p)
	}
	for _, p := range t.Status.MachinePools {
		add("MachinePool", p)
	}
	return r
}

// sortReports puts what needs a human first, then namespace and name.
func sortReports(items []TopologyReport) {
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if ra, rb := health.StateRank(a.State), health.StateRank(b.State); ra != rb {
			return ra < rb
		}
		if len(a.Problems) != len(b.Problems) {
			return len(a.Problems) > len(b.Problems)
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
}
