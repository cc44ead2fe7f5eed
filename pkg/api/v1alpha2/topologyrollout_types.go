package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +kubebuilder:object:root=true
// A rollout is cluster-scoped: a fleet spans namespaces. clusterctl move
// copies every rollout to the target, as it does every global object, and
// never deletes the source's: the status goes along in
// RolloutStatusAnnotation, since clusterctl creates objects without theirs.
// +kubebuilder:metadata:labels={"clusterctl.cluster.x-k8s.io=","clusterctl.cluster.x-k8s.io/move=","cluster.x-k8s.io/provider=addon-kubectl-topology"}
// +kubebuilder:resource:path=topologyrollouts,scope=Cluster,shortName=tr,categories=cluster-api;kubectl-topology
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Phase",type="string",JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Wave",type="integer",JSONPath=".status.wave"
// +kubebuilder:printcolumn:name="Succeeded",type="integer",JSONPath=".status.succeeded"
// +kubebuilder:printcolumn:name="Failed",type="integer",JSONPath=".status.failed"
// +kubebuilder:printcolumn:name="Total",type="integer",JSONPath=".status.total"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// TopologyRollout is one change carried across a fleet of clusters in waves:
// the first wave is the canary, each cluster soaks healthy before it counts,
// and the rollout stops when more clusters fail than its budget allows. The
// agent carries it out, so it does not depend on the laptop that created it.
type TopologyRollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the change, the clusters and how to move them.
	// +required
	Spec TopologyRolloutSpec `json:"spec"`

	// status is where the rollout stands, per wave and per cluster.
	// +optional
	Status TopologyRolloutStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// TopologyRolloutList is a list of TopologyRollouts.
type TopologyRolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TopologyRollout `json:"items"`
}

// TopologyRolloutSpec says what changes, where and how.
type TopologyRolloutSpec struct {
	// change is what the rollout sets on each cluster; it cannot change
	// once the rollout exists.
	// +required
	Change RolloutChange `json:"change"`

	// targets select the clusters; which clusters they matched is fixed
	// when the rollout starts.
	// +required
	Targets RolloutTargets `json:"targets"`

	// strategy is how the clusters move: waves, concurrency, soak, budget
	// and windows.
	// +optional
	Strategy RolloutStrategy `json:"strategy,omitempty,omitzero"`

	// paused stops starting clusters; those in flight finish.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// aborted ends the rollout: no cluster starts again and each stays as
	// it is. It cannot be unset.
	// +optional
	Aborted bool `json:"aborted,omitempty"`

	// skip names clusters the rollout leaves alone; a cluster already
	// changed stays changed.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10000
	Skip []RolloutClusterRef `json:"skip,omitempty"`

	// retry lets failed clusters start again: a cluster whose attempts are
	// fewer than the attempt named starts once more.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10000
	Retry []RolloutRetry `json:"retry,omitempty"`

	// approvals let waves that need one start; `rollout approve` adds them,
	// and the agent's webhook admits only an approval given by the user
	// who sends it. Approvals cannot be taken back.
	// +optional
	// +listType=map
	// +listMapKey=wave
	// +kubebuilder:validation:MaxItems=100
	Approvals []RolloutApproval `json:"approvals,omitempty"`

	// waitFor names rollouts that must complete before this one starts its
	// first cluster, as staging before production.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=10
	WaitFor []string `json:"waitFor,omitempty"`

	// undo names the rollout this one reverses: each cluster that rollout
	// changed goes back to what it had before (that rollout's status keeps
	// it). change is then empty; a version cannot be undone.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Undo string `json:"undo,omitempty"`
}

// RolloutApproval lets one wave start.
type RolloutApproval struct {
	// wave approved, from 1.
	// +required
	// +kubebuilder:validation:Minimum=1
	Wave int32 `json:"wave"`

	// by is the user who approved, as the API server authenticated them.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	By string `json:"by"`

	// at is when the wave was approved.
	// +required
	At metav1.Time `json:"at"`
}

// RolloutChange is what a rollout sets on each cluster; at least one field.
type RolloutChange struct {
	// version is the Kubernetes version to move to.
	// +optional
	// +kubebuilder:validation:Pattern=`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`
	Version string `json:"version,omitempty"`

	// class is the class to rebase onto: a TopologyClass for Topologies, a
	// ClusterClass for upstream Clusters, in the namespace of each
	// cluster's current class.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Class string `json:"class,omitempty"`

	// variables are values to set, each replacing the cluster's value.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	Variables []ClusterVariable `json:"variables,omitempty"`

	// unsetVariables are variables to remove from the cluster, so that the
	// class's default applies again; an undo uses them for variables a
	// cluster did not set before.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	UnsetVariables []string `json:"unsetVariables,omitempty"`
}

// RolloutTargets select the clusters of a rollout.
type RolloutTargets struct {
	// selector over the clusters' labels; an empty selector matches all.
	// +required
	Selector metav1.LabelSelector `json:"selector"`

	// kinds are the kinds of cluster to include: Topology, Cluster (an
	// upstream Cluster with spec.topology), or both when empty.
	// +optional
	// +listType=set
	// +kubebuilder:validation:items:Enum=Topology;Cluster
	Kinds []string `json:"kinds,omitempty"`

	// class limits the rollout to clusters of the class of this name.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Class string `json:"class,omitempty"`

	// namespaces limit the rollout to these namespaces; all when empty.
	// +optional
	// +listType=set
	Namespaces []string `json:"namespaces,omitempty"`

	// joinLate lets clusters that match after the rollout started join its
	// last wave; without it they are only reported (status.joinedLate).
	// +optional
	JoinLate bool `json:"joinLate,omitempty"`
}

// RolloutStrategy is how a rollout moves its clusters.
type RolloutStrategy struct {
	// waves are the groups the clusters move in, in order: each a count or
	// a percentage of the fleet (rounded up); the first is the canary. A
	// wave starts when the one before has finished. Together they must
	// cover the fleet. One cluster and then the rest when empty.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Waves []RolloutWave `json:"waves,omitempty"`

	// maxInFlight is how many clusters change or soak at once; 1 when unset.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxInFlight int32 `json:"maxInFlight,omitempty"`

	// soak is how long a cluster must stay healthy (every part Ready,
	// nothing Degraded) after its rollout settles before it counts.
	// +optional
	Soak metav1.Duration `json:"soak,omitempty,omitzero"`

	// healthTolerance is how long a soaking cluster may read unhealthy
	// before it fails the health gate; one minute when unset. A shorter
	// spell (a reconcile retried after a conflict, a probe that timed out)
	// fails nothing, and the soak starts over once it is healthy again.
	// +optional
	HealthTolerance metav1.Duration `json:"healthTolerance,omitempty,omitzero"`

	// clusterTimeout fails a cluster whose change has not settled this long
	// after it started; one hour when unset.
	// +optional
	ClusterTimeout metav1.Duration `json:"clusterTimeout,omitempty,omitzero"`

	// progressDeadline fails a cluster in progress that has made no
	// progress for this long: no Machine created, replaced or readied, no
	// part changing state. Ten minutes when unset; like a Deployment's
	// progressDeadlineSeconds. clusterTimeout still bounds the whole change.
	// +optional
	ProgressDeadline metav1.Duration `json:"progressDeadline,omitempty,omitzero"`

	// waitAfterWave is how long the rollout waits after a wave has
	// finished before the next wave starts, besides each cluster's soak.
	// +optional
	WaitAfterWave metav1.Duration `json:"waitAfterWave,omitempty,omitzero"`

	// failureBudget is how many clusters may fail before the rollout stops
	// starting clusters; 0 stops at the first failure.
	// +optional
	// +kubebuilder:validation:Minimum=0
	FailureBudget int32 `json:"failureBudget,omitempty"`

	// windows are the times, in UTC, in which clusters may start; any time
	// when empty. A cluster in flight when a window closes finishes.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Windows []MaintenanceWindow `json:"windows,omitempty"`
}

// RolloutWave is the size of one wave.
type RolloutWave struct {
	// clusters in the wave: a count (2) or a percentage of the fleet ("50%").
	// +required
	// +kubebuilder:validation:XIntOrString
	Clusters intstr.IntOrString `json:"clusters"`

	// approval: the wave does not start until it is approved
	// (spec.approvals, `rollout approve`).
	// +optional
	Approval bool `json:"approval,omitempty"`
}

// MaintenanceWindow is a span of hours on some days of the week, in UTC.
type MaintenanceWindow struct {
	// days of the week, Mon..Sun; every day when empty.
	// +optional
	// +listType=set
	// +kubebuilder:validation:items:Enum=Mon;Tue;Wed;Thu;Fri;Sat;Sun
	Days []string `json:"days,omitempty"`

	// start of the window, HH:MM in UTC.
	// +required
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	Start string `json:"start"`

	// end of the window, HH:MM in UTC; before start, the window ends the
	// next day.
	// +required
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	End string `json:"end"`
}

// RolloutClusterRef names one cluster of a rollout.
type RolloutClusterRef struct {
	// kind is Topology or Cluster.
	// +required
	// +kubebuilder:validation:Enum=Topology;Cluster
	Kind string `json:"kind"`

	// namespace of the cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	// name of the cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// RolloutRetry lets one failed cluster start again.
type RolloutRetry struct {
	RolloutClusterRef `json:",inline"`

	// attempt the cluster may make: a failed cluster whose attempts are
	// fewer starts again.
	// +required
	// +kubebuilder:validation:Minimum=2
	Attempt int32 `json:"attempt"`
}

// FleetRolloutPhase is where a whole TopologyRollout stands.
// +kubebuilder:validation:Enum=Pending;Progressing;Paused;WaitingForWindow;WaitingForApproval;WaitingForRollout;Halted;Aborted;Completed
type FleetRolloutPhase string

// Rollout phases.
const (
	// RolloutPending: the agent has not started it yet.
	RolloutPending FleetRolloutPhase = "Pending"
	// RolloutProgressing: clusters are changing or about to.
	RolloutProgressing FleetRolloutPhase = "Progressing"
	// RolloutPaused: spec.paused; clusters in flight finish, none starts.
	RolloutPaused FleetRolloutPhase = "Paused"
	// RolloutWaitingForWindow: the next cluster waits for a maintenance window.
	RolloutWaitingForWindow FleetRolloutPhase = "WaitingForWindow"
	// RolloutWaitingForApproval: the next wave needs an approval
	// (`rollout approve`) before it starts.
	RolloutWaitingForApproval FleetRolloutPhase = "WaitingForApproval"
	// RolloutWaitingForRollout: a rollout named in spec.waitFor has not
	// completed, or a wave's waitAfterWave has not passed.
	RolloutWaitingForRollout FleetRolloutPhase = "WaitingForRollout"
	// RolloutHalted: more clusters failed than the budget allows; retry or
	// skip them to go on.
	RolloutHalted FleetRolloutPhase = "Halted"
	// RolloutAborted: spec.aborted; nothing starts again.
	RolloutAborted FleetRolloutPhase = "Aborted"
	// RolloutCompleted: every cluster succeeded, was skipped, or failed
	// within the budget.
	RolloutCompleted FleetRolloutPhase = "Completed"
)

// ClusterRolloutPhase is where one cluster of a rollout stands.
// +kubebuilder:validation:Enum=Pending;WaitingForWindow;InProgress;Soaking;Succeeded;Failed;Skipped
type ClusterRolloutPhase string

// Cluster phases in a rollout.
const (
	ClusterPending          ClusterRolloutPhase = "Pending"
	ClusterWaitingForWindow ClusterRolloutPhase = "WaitingForWindow"
	ClusterInProgress       ClusterRolloutPhase = "InProgress"
	ClusterSoaking          ClusterRolloutPhase = "Soaking"
	ClusterSucceeded        ClusterRolloutPhase = "Succeeded"
	ClusterFailed           ClusterRolloutPhase = "Failed"
	ClusterSkipped          ClusterRolloutPhase = "Skipped"
)

// TopologyRolloutStatus is where a rollout stands.
type TopologyRolloutStatus struct {
	// observedGeneration is the generation the agent last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase of the whole rollout.
	// +optional
	Phase FleetRolloutPhase `json:"phase,omitempty"`

	// message says what the rollout waits for or why it stopped.
	// +optional
	Message string `json:"message,omitempty"`

	// wave is the wave moving now, from 1; 0 before the first starts.
	// +optional
	Wave int32 `json:"wave,omitempty"`

	// total, succeeded, failed, skipped and inFlight count the clusters.
	// +optional
	Total int32 `json:"total,omitempty"`
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// +optional
	Skipped int32 `json:"skipped,omitempty"`
	// +optional
	InFlight int32 `json:"inFlight,omitempty"`

	// startedAt is when the first cluster started; completedAt when the
	// rollout completed or was aborted.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// waves, in order.
	// +optional
	// +listType=atomic
	Waves []RolloutWaveStatus `json:"waves,omitempty"`

	// clusters of the rollout, fixed when it starts, by wave, namespace
	// and name.
	// +optional
	// +listType=atomic
	Clusters []RolloutClusterStatus `json:"clusters,omitempty"`

	// joinedLate are clusters that matched the targets after the rollout
	// started and are not in it (spec.targets.joinLate is off), at most 100.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	JoinedLate []RolloutClusterRef `json:"joinedLate,omitempty"`

	// conditions: Progressing and Completed.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RolloutWaveStatus is where one wave stands.
type RolloutWaveStatus struct {
	// number of the wave, from 1.
	Number int32 `json:"number"`
	// clusters in the wave.
	Clusters int32 `json:"clusters"`
	// startedAt is when its first cluster started; completedAt when its
	// last cluster finished.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
}

// RolloutClusterStatus is where one cluster of a rollout stands.
type RolloutClusterStatus struct {
	RolloutClusterRef `json:",inline"`

	// wave the cluster moves in, from 1.
	Wave int32 `json:"wave"`

	// phase of the cluster in the rollout.
	Phase ClusterRolloutPhase `json:"phase"`

	// reason and message say why a cluster waits or failed.
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`

	// attempt is how many times the cluster was started.
	// +optional
	Attempt int32 `json:"attempt,omitempty"`

	// from is what the cluster had before the change: it tells a change
	// not written yet from one edited away by hand.
	// +optional
	From *RolloutChange `json:"from,omitempty"`

	// to is what this cluster is set to when it differs from spec.change:
	// an undo's value from before, per cluster.
	// +optional
	To *RolloutChange `json:"to,omitempty"`

	// joinedLate says the cluster matched after the rollout started and
	// joined its last wave (spec.targets.joinLate).
	// +optional
	JoinedLate bool `json:"joinedLate,omitempty"`

	// applied says the change was written to the cluster.
	// +optional
	Applied bool `json:"applied,omitempty"`

	// startedAt, soakStartedAt and completedAt time the cluster's move.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	SoakStartedAt *metav1.Time `json:"soakStartedAt,omitempty"`
	// unhealthySince is when a soaking cluster last turned unhealthy; unset
	// while it is healthy.
	// +optional
	UnhealthySince *metav1.Time `json:"unhealthySince,omitempty"`
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// progressAt is when the cluster in progress last made progress (a
	// Machine created, replaced or readied, a part changing state); the
	// progress deadline counts from it. progressMark is what it looked like
	// then, to tell the next change from it.
	// +optional
	ProgressAt *metav1.Time `json:"progressAt,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ProgressMark string `json:"progressMark,omitempty"`

	// refusedSince is when a cluster in progress began to be refused in a
	// way that does not pass by itself (a write refused by admission or
	// validation); unset while nothing refuses it. It fails once this has
	// lasted the health tolerance.
	// +optional
	RefusedSince *metav1.Time `json:"refusedSince,omitempty"`
}

// Kinds of cluster a rollout moves.
const (
	RolloutKindTopology = "Topology"
	RolloutKindCluster  = "Cluster"
)

// RolloutHoldAnnotation on a Topology or Cluster keeps fleet rollouts from
// starting it; its value says why.
const RolloutHoldAnnotation = "topology.kubectl-topology.io/rollout-hold"

// RolloutStatusAnnotation on a TopologyRollout carries its status through
// clusterctl move, which creates objects without their status: the agent
// keeps it current (gzip, then base64, of the status's JSON), and a rollout
// created with it and no status is a restore: the agent takes its status
// from it, paused, and the webhook admits it as the source did.
const RolloutStatusAnnotation = "topology.kubectl-topology.io/rollout-status"

// TopologyRolloutKind is the kind name of TopologyRollout.
const TopologyRolloutKind = "TopologyRollout"

// Key is the cluster's kind, namespace and name, as rollouts print it.
func (r RolloutClusterRef) Key() string { return r.Kind + "/" + r.Namespace + "/" + r.Name }

func init() {
	register(&TopologyRollout{}, &TopologyRolloutList{})
}
