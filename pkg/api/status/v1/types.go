// Package v1 is the schema of `kubectl topology status -o json|yaml`
// (status.kubectl-topology.io/v1): one report per Topology or upstream
// Cluster, with the agent's heartbeat. It is importable so that alerting and
// dashboards decode it with the types the plugin encodes it with.
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// APIVersion and Kind are a StatusReport's: fields are only ever added within
// a version, so alerting built on it keeps working.
const (
	APIVersion = "status.kubectl-topology.io/v1"
	Kind       = "StatusReport"
)

// StatusReport is what `status -o json|yaml` prints: one item per Topology.
type StatusReport struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Agent is what the agent's heartbeat says; problems make every status
	// stale. With several shards it is empty unless one agent reconciles
	// every item, and Shards says what each agent reports.
	Agent AgentReport `json:"agent"`
	// Shards are the agents of a sharded management cluster, by namespace;
	// empty with one agent.
	Shards []AgentReport `json:"shards,omitempty"`
	// Items, problems first (by state), then by namespace and name.
	Items []TopologyReport `json:"items"`
}

// AgentReport says whether the agent that writes status is alive.
type AgentReport struct {
	// LastHeartbeat is when the reconciling agent last renewed its Lease.
	LastHeartbeat *metav1.Time `json:"lastHeartbeat,omitempty"`
	// Leader is the agent replica (its Pod, or host and process out of cluster) that
	// leads: it reconciles and renews the heartbeat; the others admit only.
	Leader string `json:"leader,omitempty"`
	// Problem says why status may be stale, or is empty.
	Problem string `json:"problem,omitempty"`
	// Namespace is where the agent runs, and Watches what its shard spans
	// (its namespaces and watch filter); set when agents are sharded.
	Namespace string `json:"namespace,omitempty"`
	Watches   string `json:"watches,omitempty"`
	// Unwatched says no agent's shard takes the Topology: nothing
	// reconciles it until one does (Problem says how to add one).
	Unwatched bool `json:"unwatched,omitempty"`
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
	// Hooks are the lifecycle hooks holding the topology and those owed.
	Hooks *v1alpha2.HooksStatus `json:"hooks,omitempty"`
	// Stale lists why this status may not describe the cluster now.
	Stale []string `json:"stale,omitempty"`
	// Unwatched says no agent's shard takes this Topology, so nothing
	// reconciles it; Stale says how to add a shard that does.
	Unwatched bool `json:"unwatched,omitempty"`
	// Problems sums what needs a human, one line each.
	Problems []string     `json:"problems,omitempty"`
	Parts    []PartReport `json:"parts"`
	// Events are recent Warning events of the Topology and its objects.
	Events []EventReport `json:"events,omitempty"`
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
