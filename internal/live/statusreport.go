package live

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/shard"
	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	statusv1 "github.com/kubectl-topology/kubectl-topology/pkg/api/status/v1"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// maxEvents and health.EventWindow bound the recent warnings a status shows.
const maxEvents = 5

// AgentSilent is what a watch says of an agent whose heartbeat is missing or old.
const AgentSilent = "the agent is not reporting: it is not running or cannot reach the API server, so this status may be stale; `kubectl topology version` tells"

// heartbeatStaleAfter is how old the agent's heartbeat may be before status
// is called stale: three missed beats.
const heartbeatStaleAfter = 3 * components.HeartbeatInterval

// AgentReport reads the heartbeat Lease of the agent in the default
// namespace. A user who may not read it gets no verdict rather than a false
// alarm.
func AgentReport(ctx context.Context, c client.Reader, now time.Time) statusv1.AgentReport {
	lease := &coordinationv1.Lease{}
	err := c.Get(ctx, client.ObjectKey{Namespace: components.Namespace, Name: components.HeartbeatLease}, lease)
	switch {
	case apierrors.IsNotFound(err):
		return statusv1.AgentReport{Problem: fmt.Sprintf("the agent has never reported (no Lease %s/%s): is it installed? `kubectl topology version` tells", components.Namespace, components.HeartbeatLease)}
	case err != nil:
		return statusv1.AgentReport{}
	}
	return leaseReport(lease, now)
}

// leaseReport is what one agent's heartbeat Lease says at now.
func leaseReport(lease *coordinationv1.Lease, now time.Time) statusv1.AgentReport {
	r := statusv1.AgentReport{}
	if h := lease.Spec.HolderIdentity; h != nil {
		r.Leader = *h
	}
	if rt := lease.Spec.RenewTime; rt != nil {
		t := metav1.NewTime(rt.Time)
		r.LastHeartbeat = &t
		if age := now.Sub(rt.Time); age > staleAfter(lease) {
			r.Problem = fmt.Sprintf("the agent last reported %s ago: it is not running or cannot reach the API server, so this status may be stale; `kubectl topology version` tells", health.HumanDuration(age))
		}
	}
	if at, err := time.Parse(time.RFC3339, lease.Annotations[components.HeartbeatStoppedAnnotation]); err == nil {
		r.Problem = fmt.Sprintf("the agent was stopped %s ago and no replica took over: it is not running, so this status may be stale; `kubectl topology version` tells", health.HumanDuration(now.Sub(at)))
	}
	return r
}

// staleAfter is how old lease's renewal may be before its agent is taken
// as gone: its own duration (three beats, as the agent writes it, or an
// install's claim), else three beats.
func staleAfter(lease *coordinationv1.Lease) time.Duration {
	if d := lease.Spec.LeaseDurationSeconds; d != nil && *d > 0 {
		return time.Duration(*d) * time.Second
	}
	return heartbeatStaleAfter
}

// LeaseCurrent says whether a heartbeat Lease speaks for a running agent or
// a claim still held at now: renewed within its duration and not marked
// stopped.
func LeaseCurrent(lease *coordinationv1.Lease, now time.Time) bool {
	return leaseReport(lease, now).Problem == ""
}

// Agents are the heartbeats of every agent on a management cluster, one per
// shard (agent namespace), as read at one moment.
type Agents struct {
	// Shards are the agents found by their heartbeat label, by namespace.
	Shards []ShardAgent
	// fallback is the default agent's report, when no labelled heartbeat
	// could be listed (an agent from before shards, or no right to list).
	fallback statusv1.AgentReport
}

// ShardAgent is one agent: where it runs, what it reconciles, and its heartbeat.
type ShardAgent struct {
	Namespace string
	Shard     shard.Shard
	Report    statusv1.AgentReport
}

// ReadAgents lists the agents' heartbeat Leases in every namespace.
func ReadAgents(ctx context.Context, c client.Reader, now time.Time) Agents {
	list := &coordinationv1.LeaseList{}
	if err := c.List(ctx, list, client.HasLabels{components.HeartbeatLabel}); err != nil || len(list.Items) == 0 {
		return Agents{fallback: AgentReport(ctx, c, now)}
	}
	var a Agents
	for i := range list.Items {
		l := &list.Items[i]
		s := shard.FromAnnotations(l.Annotations)
		r := leaseReport(l, now)
		r.Namespace, r.Watches = l.Namespace, s.String()
		a.Shards = append(a.Shards, ShardAgent{Namespace: l.Namespace, Shard: s, Report: r})
	}
	sort.Slice(a.Shards, func(i, j int) bool { return a.Shards[i].Namespace < a.Shards[j].Namespace })
	return a
}

// Reports are the agents' reports, one per shard, by namespace.
func (a Agents) Reports() []statusv1.AgentReport {
	out := make([]statusv1.AgentReport, 0, len(a.Shards))
	for _, s := range a.Shards {
		out = append(out, s.Report)
	}
	return out
}

// Sharded says more than one agent runs, each on its own shard.
func (a Agents) Sharded() bool { return len(a.Shards) > 1 }

// Live says the agent in namespace reports: its heartbeat is current.
func (a Agents) Live(namespace string) bool {
	s, ok := a.In(namespace)
	return ok && s.Report.Problem == ""
}

// In is the agent whose heartbeat is in namespace.
func (a Agents) In(namespace string) (ShardAgent, bool) {
	for _, s := range a.Shards {
		if s.Namespace == namespace {
			return s, true
		}
	}
	return ShardAgent{}, false
}

// Others are the live agents other than the one in namespace. An agent
// that stopped reporting is taken as gone (out of cluster its Lease
// outlives it).
func (a Agents) Others(namespace string) []ShardAgent {
	var out []ShardAgent
	for _, o := range a.Shards {
		if o.Namespace != namespace && o.Report.Problem == "" {
			out = append(out, o)
		}
	}
	return out
}

// Overlapping are the live agents other than the one in namespace whose
// shard overlaps s: installing s beside them would have two agents write the
// same Cluster.
func (a Agents) Overlapping(namespace string, s shard.Shard) []ShardAgent {
	var out []ShardAgent
	for _, o := range a.Others(namespace) {
		if o.Shard.Overlaps(s) {
			out = append(out, o)
		}
	}
	return out
}

// Report is the one agent's report, when agents are not sharded: what a
// fleet's status says of the agent above its Topologies.
func (a Agents) Report() statusv1.AgentReport {
	if len(a.Shards) == 1 {
		return a.Shards[0].Report
	}
	return a.fallback
}

// For is the report of the agent that reconciles t, or why none does.
func (a Agents) For(t client.Object) statusv1.AgentReport {
	if len(a.Shards) == 0 {
		return a.fallback
	}
	var owners []ShardAgent
	for _, s := range a.Shards {
		if s.Shard.Owns(t) {
			owners = append(owners, s)
		}
	}
	switch len(owners) {
	case 0:
		var watched []string
		for _, s := range a.Shards {
			watched = append(watched, fmt.Sprintf("%s (agent in %s)", s.Shard, s.Namespace))
		}
		return statusv1.AgentReport{Unwatched: true, Problem: fmt.Sprintf(
			"no agent watches this namespace (%s): nothing reconciles it. The agents watch %s; `kubectl topology install --target-namespace NEW --watch-namespace %s` adds a shard that does",
			t.GetNamespace(), strings.Join(watched, "; "), t.GetNamespace())}
	case 1:
		return owners[0].Report
	}
	r := owners[0].Report
	r.Problem = fmt.Sprintf("the agents in %s and %s both watch namespace %s and may both write its clusters; uninstall one or give them disjoint --watch-namespace or --watch-filter", owners[0].Namespace, owners[1].Namespace, t.GetNamespace())
	return r
}

// WarningEvents lists the recent Warning events of a Topology and the
// objects made for it (named after its Cluster), newest first.
func WarningEvents(ctx context.Context, c client.Reader, t *v1alpha2.Topology, now time.Time) []statusv1.EventReport {
	list := &corev1.EventList{}
	// The API server filters by type: only warnings cross the wire.
	if err := c.List(ctx, list, client.InNamespace(t.Namespace), client.MatchingFields{"type": corev1.EventTypeWarning}); err != nil {
		return nil // events are context; a user who may not list them still gets status
	}
	cluster := t.Status.ClusterName
	if cluster == "" {
		cluster = t.Name
	}
	var out []statusv1.EventReport
	for _, e := range list.Items {
		name := e.InvolvedObject.Name
		if name != t.Name && name != cluster && !strings.HasPrefix(name, cluster+"-") {
			continue
		}
		when := eventTime(&e)
		if now.Sub(when.Time) > health.EventWindow {
			continue
		}
		out = append(out, statusv1.EventReport{Time: when, Object: e.InvolvedObject.Kind + "/" + name, Reason: e.Reason, Message: health.OneLine(e.Message), Count: e.Count})
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

// TopologyReport builds one Topology's report from its status; agent is what
// the heartbeat said.
func TopologyReport(t *v1alpha2.Topology, agent statusv1.AgentReport, events []statusv1.EventReport) statusv1.TopologyReport {
	r := statusv1.TopologyReport{
		Namespace: t.Namespace, Name: t.Name, Class: t.Spec.ClassRef.Name, Version: t.Spec.Version,
		State: health.TopologyState(t), StateSince: t.Status.StateSince,
		Settled: health.Settled(t), Paused: t.Spec.Paused, Deleting: !t.DeletionTimestamp.IsZero(),
		Infrastructure: string(t.Status.Infrastructure), Events: events, Parts: []statusv1.PartReport{},
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
		r.Kind = contract.UpstreamClusterKind
	}
	r.UpgradePlan = t.Status.UpgradePlan
	r.Hooks = t.Status.Hooks
	if c := meta.FindStatusCondition(t.Status.Conditions, v1alpha2.TopologyReconciledCondition); c != nil {
		r.Reconciled = &statusv1.ConditionReport{Status: c.Status, Reason: c.Reason, Message: c.Message}
		if !c.LastTransitionTime.IsZero() {
			since := c.LastTransitionTime
			r.Reconciled.Since = &since
		}
	}
	r.Unwatched = agent.Unwatched
	for _, s := range []string{agent.Problem, health.NotObserved(t)} {
		if s != "" {
			r.Stale = append(r.Stale, s)
		}
	}
	r.Problems = health.TopologyProblems(t)
	add := func(kind string, p v1alpha2.PartStatus) {
		r.Parts = append(r.Parts, statusv1.PartReport{
			Name: p.Name, Kind: kind, Class: p.Class, Object: p.ObjectName, State: p.State, StateSince: p.StateSince,
			Phase: string(p.Phase), Version: p.Version, DesiredVersion: p.DesiredVersion, Message: p.Message, Problems: p.Problems,
			Replicas: statusv1.ReplicasReport{Desired: p.DesiredReplicas, Current: p.Replicas, Ready: p.ReadyReplicas, UpToDate: p.UpToDateReplicas, Available: p.AvailableReplicas},
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

// SortReports puts what needs a human first, then namespace and name.
func SortReports(items []statusv1.TopologyReport) {
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
