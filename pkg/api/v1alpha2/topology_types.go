package v1alpha2

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// clusterctl move discovers kinds by the clusterctl label; a Topology moves with everything it owns: its Cluster and all below it.
// +kubebuilder:metadata:labels={"clusterctl.cluster.x-k8s.io=","cluster.x-k8s.io/provider=addon-kubectl-topology","clusterctl.cluster.x-k8s.io/move-hierarchy="}
// +kubebuilder:resource:path=topologies,shortName=topo,categories=cluster-api;kubectl-topology
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Class",type="string",JSONPath=".spec.classRef.name"
// +kubebuilder:printcolumn:name="Version",type="string",JSONPath=".spec.version"
// +kubebuilder:printcolumn:name="State",type="string",JSONPath=".status.state"
// +kubebuilder:printcolumn:name="Reconciled",type="string",JSONPath=".status.conditions[?(@.type=='TopologyReconciled')].status"
// +kubebuilder:printcolumn:name="Paused",type="boolean",JSONPath=".spec.paused",priority=1
// +kubebuilder:printcolumn:name="Phase",type="string",JSONPath=".status.phase",priority=1
// +kubebuilder:printcolumn:name="Infrastructure",type="string",JSONPath=".status.infrastructure",priority=1
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// Topology is one cluster stamped from a TopologyClass. The agent makes it real
// as a Cluster API Cluster of the same name and the objects that Cluster needs.
// Its spec is Cluster API's Cluster.spec.topology with clusterNetwork and paused.
type Topology struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired cluster.
	// +optional
	Spec TopologySpec `json:"spec,omitempty"`

	// status is what the cluster is doing now.
	// +optional
	Status TopologyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// TopologyList is a list of Topologies.
type TopologyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Topology `json:"items"`
}

// TopologySpec mirrors Cluster.spec.topology of Cluster API v1beta2, plus the
// Cluster fields a topology needs (clusterNetwork, paused).
type TopologySpec struct {
	// classRef is the TopologyClass to stamp from.
	// +required
	ClassRef ClassRef `json:"classRef"`

	// version is the Kubernetes version of the cluster, e.g. v1.32.0.
	// +required
	// +kubebuilder:validation:Pattern=`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`
	Version string `json:"version"`

	// controlPlane of the cluster.
	// +optional
	ControlPlane ControlPlaneTopology `json:"controlPlane,omitempty,omitzero"`

	// workers of the cluster.
	// +optional
	Workers *WorkersTopology `json:"workers,omitempty"`

	// variables set for the class's patches.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1000
	Variables []ClusterVariable `json:"variables,omitempty"`

	// clusterNetwork of the CAPI Cluster.
	// +optional
	ClusterNetwork *ClusterNetwork `json:"clusterNetwork,omitempty"`

	// paused stops the agent from changing anything for this topology.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// ClassRef names a TopologyClass.
type ClassRef struct {
	// name of the TopologyClass.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// namespace of the TopologyClass; the Topology's when unset.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`
}

// ControlPlaneTopology is the control plane of a topology.
type ControlPlaneTopology struct {
	// metadata merged into the control plane object and its Machines.
	// +optional
	Metadata ObjectMeta `json:"metadata,omitempty,omitzero"`

	// replicas of the control plane; the provider's default when unset.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// rollout replaces the control plane's Machines after a time.
	// +optional
	Rollout RolloutAfter `json:"rollout,omitempty,omitzero"`

	// healthCheck of control plane Machines: enable or override the class's.
	// +optional
	HealthCheck ControlPlaneTopologyHealthCheck `json:"healthCheck,omitempty,omitzero"`

	// deletion timeouts of control plane Machines; the class's when unset.
	// +optional
	Deletion MachineDeletion `json:"deletion,omitempty,omitzero"`

	// taints for the Nodes of control plane Machines; the class's when unset.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +listMapKey=effect
	// +kubebuilder:validation:MaxItems=64
	Taints []MachineTaint `json:"taints,omitempty"`

	// readinessGates for control plane Machines; the class's when unset.
	// +optional
	// +listType=map
	// +listMapKey=conditionType
	// +kubebuilder:validation:MaxItems=32
	ReadinessGates []MachineReadinessGate `json:"readinessGates,omitempty"`

	// variables overridden for the control plane.
	// +optional
	Variables *ControlPlaneVariables `json:"variables,omitempty"`
}

// RolloutAfter replaces Machines created before a time.
type RolloutAfter struct {
	// after is the time; Machines created before it are replaced once it passes.
	// +optional
	After metav1.Time `json:"after,omitempty,omitzero"`
}

// ControlPlaneTopologyHealthCheck enables or overrides the class's control plane health check.
type ControlPlaneTopologyHealthCheck struct {
	// enabled turns the check on or off; on when the class or this defines checks.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// checks override the class's.
	// +optional
	Checks HealthCheckChecks `json:"checks,omitempty,omitzero"`

	// remediation overrides the class's.
	// +optional
	Remediation ControlPlaneHealthCheckRemediation `json:"remediation,omitempty,omitzero"`
}

// IsDefined reports whether the topology overrides the class's checks.
func (h ControlPlaneTopologyHealthCheck) IsDefined() bool {
	return h.Checks.IsDefined() || h.Remediation.IsDefined()
}

// WorkersTopology lists the worker pools of a topology.
type WorkersTopology struct {
	// machineDeployments of the cluster.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=2000
	MachineDeployments []MachineDeploymentTopology `json:"machineDeployments,omitempty"`

	// machinePools of the cluster.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=2000
	MachinePools []MachinePoolTopology `json:"machinePools,omitempty"`
}

// MachineDeploymentTopology is one MachineDeployment of a topology.
type MachineDeploymentTopology struct {
	// metadata merged into the MachineDeployment and its Machines.
	// +optional
	Metadata ObjectMeta `json:"metadata,omitempty,omitzero"`

	// class is the MachineDeployment class of the TopologyClass.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Class string `json:"class"`

	// name of the pool, unique in the topology; the object's name is generated.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([0-9A-Za-z][-0-9A-Za-z_.]*)?[0-9A-Za-z]$`
	Name string `json:"name"`

	// version pins the pool to a Kubernetes version of its own, e.g. v1.33.1:
	// it then stays there through the Topology's upgrades and moves only
	// when this changes. Unset, the pool follows the Topology's version.
	// A pin may not be newer than the Topology's version, nor more minors
	// behind it than Kubernetes' version skew policy allows kubelets; its
	// name and meaning are upstream's (Cluster API v1.15, alpha gate
	// ClusterTopologyWorkerVersionPinning).
	// +optional
	// +kubebuilder:validation:Pattern=`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`
	Version string `json:"version,omitempty"`

	// failureDomain of the Machines; the class's when unset.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	FailureDomain *string `json:"failureDomain,omitempty"`

	// replicas of the pool; the provider's default when unset.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// healthCheck of the pool's Machines: enable or override the class's.
	// +optional
	HealthCheck MachineDeploymentTopologyHealthCheck `json:"healthCheck,omitempty,omitzero"`

	// deletion order and timeouts; the class's when unset.
	// +optional
	Deletion MachineDeploymentDeletion `json:"deletion,omitempty,omitzero"`

	// taints for the Nodes of the pool; the class's when unset.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +listMapKey=effect
	// +kubebuilder:validation:MaxItems=64
	Taints []MachineTaint `json:"taints,omitempty"`

	// minReadySeconds; the class's when unset.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`

	// readinessGates for the Machines; the class's when unset.
	// +optional
	// +listType=map
	// +listMapKey=conditionType
	// +kubebuilder:validation:MaxItems=32
	ReadinessGates []MachineReadinessGate `json:"readinessGates,omitempty"`

	// rollout strategy and a time after which Machines are replaced.
	// +optional
	Rollout MachineDeploymentTopologyRollout `json:"rollout,omitempty,omitzero"`

	// variables overridden for this pool.
	// +optional
	Variables *MachineDeploymentVariables `json:"variables,omitempty"`
}

// MachineDeploymentTopologyRollout is a pool's rollout strategy and rollout time.
type MachineDeploymentTopologyRollout struct {
	// after is a time after which Machines created before it are replaced.
	// +optional
	After metav1.Time `json:"after,omitempty,omitzero"`

	// strategy overrides the class's.
	// +optional
	Strategy MachineDeploymentRolloutStrategy `json:"strategy,omitempty,omitzero"`
}

// MachineDeploymentTopologyHealthCheck enables or overrides the class's health check of a pool.
type MachineDeploymentTopologyHealthCheck struct {
	// enabled turns the check on or off; on when the class or this defines checks.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// checks override the class's.
	// +optional
	Checks HealthCheckChecks `json:"checks,omitempty,omitzero"`

	// remediation overrides the class's.
	// +optional
	Remediation MachineDeploymentHealthCheckRemediation `json:"remediation,omitempty,omitzero"`
}

// IsDefined reports whether the topology overrides the class's checks.
func (h MachineDeploymentTopologyHealthCheck) IsDefined() bool {
	return h.Checks.IsDefined() || h.Remediation.IsDefined()
}

// MachinePoolTopology is one MachinePool of a topology.
type MachinePoolTopology struct {
	// metadata merged into the MachinePool.
	// +optional
	Metadata ObjectMeta `json:"metadata,omitempty,omitzero"`

	// class is the MachinePool class of the TopologyClass.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Class string `json:"class"`

	// name of the pool, unique in the topology; the object's name is generated.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([0-9A-Za-z][-0-9A-Za-z_.]*)?[0-9A-Za-z]$`
	Name string `json:"name"`

	// version pins the pool to a Kubernetes version of its own, e.g. v1.33.1:
	// it then stays there through the Topology's upgrades and moves only
	// when this changes. Unset, the pool follows the Topology's version.
	// A pin may not be newer than the Topology's version, nor more minors
	// behind it than Kubernetes' version skew policy allows kubelets; its
	// name and meaning are upstream's (Cluster API v1.15, alpha gate
	// ClusterTopologyWorkerVersionPinning).
	// +optional
	// +kubebuilder:validation:Pattern=`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`
	Version string `json:"version,omitempty"`

	// failureDomains of the pool; the class's when unset.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	FailureDomains []string `json:"failureDomains,omitempty"`

	// deletion timeouts; the class's when unset.
	// +optional
	Deletion MachineDeletion `json:"deletion,omitempty,omitzero"`

	// taints for the Nodes of the pool; the class's when unset.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +listMapKey=effect
	// +kubebuilder:validation:MaxItems=64
	Taints []MachineTaint `json:"taints,omitempty"`

	// minReadySeconds; the class's when unset.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`

	// replicas of the pool.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// variables overridden for this pool.
	// +optional
	Variables *MachinePoolVariables `json:"variables,omitempty"`
}

// ClusterVariable is the value of one class variable.
type ClusterVariable struct {
	// name of the variable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name"`

	// value of the variable, validated against its schema.
	// +required
	Value apiextensionsv1.JSON `json:"value"`
}

// ControlPlaneVariables overrides variables for the control plane.
type ControlPlaneVariables struct {
	// overrides of topology variables.
	// +optional
	// +listType=map
	// +listMapKey=name
	Overrides []ClusterVariable `json:"overrides,omitempty"`
}

// MachineDeploymentVariables overrides variables for one MachineDeployment.
type MachineDeploymentVariables struct {
	// overrides of topology variables.
	// +optional
	// +listType=map
	// +listMapKey=name
	Overrides []ClusterVariable `json:"overrides,omitempty"`
}

// MachinePoolVariables overrides variables for one MachinePool.
type MachinePoolVariables struct {
	// overrides of topology variables.
	// +optional
	// +listType=map
	// +listMapKey=name
	Overrides []ClusterVariable `json:"overrides,omitempty"`
}

// ClusterNetwork is the network configuration of the CAPI Cluster.
type ClusterNetwork struct {
	// apiServerPort the API server binds to.
	// +optional
	APIServerPort *int32 `json:"apiServerPort,omitempty"`

	// services CIDR blocks.
	// +optional
	Services *NetworkRanges `json:"services,omitempty"`

	// pods CIDR blocks.
	// +optional
	Pods *NetworkRanges `json:"pods,omitempty"`

	// serviceDomain of the cluster, e.g. cluster.local.
	// +optional
	ServiceDomain string `json:"serviceDomain,omitempty"`
}

// NetworkRanges is a list of CIDR blocks.
type NetworkRanges struct {
	// cidrBlocks of the range.
	// +listType=atomic
	CIDRBlocks []string `json:"cidrBlocks"`
}

// PartPhase is where one part of the cluster is in its upgrade sequence.
// +kubebuilder:validation:Enum=Pending;Creating;Upgrading;Held;Deferred;UpToDate;Pinned
type PartPhase string

// Part phases shown to on-call engineers.
const (
	// PhasePending waits for another part (the control plane, the concurrency limit).
	PhasePending PartPhase = "Pending"
	// PhaseCreating is being created for the first time.
	PhaseCreating PartPhase = "Creating"
	// PhaseUpgrading is rolling to the desired version.
	PhaseUpgrading PartPhase = "Upgrading"
	// PhaseHeld waits because it or an earlier pool carries the hold annotation.
	PhaseHeld PartPhase = "Held"
	// PhaseDeferred waits because it carries the defer annotation.
	PhaseDeferred PartPhase = "Deferred"
	// PhaseUpToDate is at the desired version and stable.
	PhaseUpToDate PartPhase = "UpToDate"
	// PhasePinned is a pool at the version it is pinned to, and stable: the
	// Topology's upgrades leave it where it is.
	PhasePinned PartPhase = "Pinned"
)

// InfrastructurePhase is the provisioning state of the cluster infrastructure.
// +kubebuilder:validation:Enum=Pending;Provisioning;Provisioned
type InfrastructurePhase string

// Infrastructure phases.
const (
	// InfrastructurePending has no InfrastructureCluster yet.
	InfrastructurePending InfrastructurePhase = "Pending"
	// InfrastructureProvisioning has an InfrastructureCluster that is not ready.
	InfrastructureProvisioning InfrastructurePhase = "Provisioning"
	// InfrastructureProvisioned has a ready InfrastructureCluster.
	InfrastructureProvisioned InfrastructurePhase = "Provisioned"
)

// State is what an on-call engineer reads at a glance: convergence (is the
// part where the topology asks) and health (are its machines ready) in one
// word. `kubectl topology status --help` documents each.
// +kubebuilder:validation:Enum=Provisioning;RollingOut;Scaling;Degraded;Waiting;Held;Deferred;Paused;Deleting;Ready
type State string

// States, from what needs a human most to what needs nothing.
const (
	// StateDeleting: the Topology is being deleted with its cluster.
	StateDeleting State = "Deleting"
	// StatePaused: spec.paused is set; nothing is applied.
	StatePaused State = "Paused"
	// StateDegraded: converged, or past provisioning, but machines are not
	// ready or available, or upstream's conditions report a fault.
	StateDegraded State = "Degraded"
	// StateProvisioning: being created; machines are coming up for the first time.
	StateProvisioning State = "Provisioning"
	// StateRollingOut: machines are being replaced (an upgrade or a template change).
	StateRollingOut State = "RollingOut"
	// StateScaling: the number of machines moves towards the replicas asked for.
	StateScaling State = "Scaling"
	// StateHeld: waits on the hold annotation.
	StateHeld State = "Held"
	// StateDeferred: waits on the defer annotation.
	StateDeferred State = "Deferred"
	// StateWaiting: waits its turn (the control plane, the concurrency limit).
	StateWaiting State = "Waiting"
	// StateReady: at the version and replicas asked for, every machine ready.
	StateReady State = "Ready"
)

// Problem is one thing that keeps a part from being healthy: a Machine not
// ready, a condition of upstream's that is false, a remediation.
type Problem struct {
	// object the problem is about, as Kind/name.
	// +required
	Object string `json:"object"`

	// reason in one CamelCase word, upstream's where it gives one.
	// +required
	Reason string `json:"reason"`

	// message says what is wrong, in upstream's words where it gives them.
	// +optional
	Message string `json:"message,omitempty"`

	// since is when the object's condition last changed.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}

// PartStatus is the rollout state of the control plane or one worker pool.
type PartStatus struct {
	// name of the part: the topology name of a pool, or "control-plane".
	// +required
	Name string `json:"name"`

	// class of the pool; empty for the control plane.
	// +optional
	Class string `json:"class,omitempty"`

	// objectName of the generated object.
	// +optional
	ObjectName string `json:"objectName,omitempty"`

	// desiredVersion is the version the topology asks for: its pin for a pinned pool.
	// +optional
	DesiredVersion string `json:"desiredVersion,omitempty"`

	// version is the version the part reports.
	// +optional
	Version string `json:"version,omitempty"`

	// pinned is true for a pool pinned to a version of its own: its
	// desiredVersion is the pin, not the Topology's version.
	// +optional
	Pinned bool `json:"pinned,omitempty"`

	// desiredReplicas the topology asks for; unset when the topology leaves it open.
	// +optional
	DesiredReplicas *int32 `json:"desiredReplicas,omitempty"`

	// replicas the part has.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// readyReplicas the part has.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// upToDateReplicas are at the desired spec.
	// +optional
	UpToDateReplicas int32 `json:"upToDateReplicas,omitempty"`

	// phase of the rollout.
	// +optional
	Phase PartPhase `json:"phase,omitempty"`

	// message says why the part waits, in words an operator can act on.
	// +optional
	Message string `json:"message,omitempty"`

	// availableReplicas the part reports available.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// state sums convergence and health in one word.
	// +optional
	State State `json:"state,omitempty"`

	// stateSince is when state last changed.
	// +optional
	StateSince *metav1.Time `json:"stateSince,omitempty"`

	// problems keep the part from being healthy; the first few only.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Problems []Problem `json:"problems,omitempty"`
}

// TopologyStatus is the observed state of a Topology.
type TopologyStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase sums the rollout: the least advanced phase of all parts.
	// +optional
	Phase PartPhase `json:"phase,omitempty"`

	// state sums the topology: the state of its part that needs a human most,
	// or Deleting, Paused, or Provisioning while the infrastructure is.
	// +optional
	State State `json:"state,omitempty"`

	// stateSince is when state last changed.
	// +optional
	StateSince *metav1.Time `json:"stateSince,omitempty"`

	// infrastructure is the provisioning state of the infrastructure.
	// +optional
	Infrastructure InfrastructurePhase `json:"infrastructure,omitempty"`

	// clusterName is the CAPI Cluster the topology owns.
	// +optional
	ClusterName string `json:"clusterName,omitempty"`

	// controlPlane rollout state.
	// +optional
	ControlPlane *PartStatus `json:"controlPlane,omitempty"`

	// machineDeployments rollout state, in topology order.
	// +optional
	// +listType=map
	// +listMapKey=name
	MachineDeployments []PartStatus `json:"machineDeployments,omitempty"`

	// machinePools rollout state, in topology order.
	// +optional
	// +listType=map
	// +listMapKey=name
	MachinePools []PartStatus `json:"machinePools,omitempty"`

	// upgradePlan is the chain of versions an upgrade still goes through, as
	// upstream reports it in Cluster.status.controlPlane.upgradePlan and
	// status.workers.upgradePlan; unset when no upgrade is in progress.
	// +optional
	UpgradePlan *UpgradePlanStatus `json:"upgradePlan,omitempty"`

	// hooks are the Runtime SDK lifecycle hooks that held this topology at its
	// last reconcile, and those still owed; unset when none holds or is owed.
	// +optional
	Hooks *HooksStatus `json:"hooks,omitempty"`

	// conditions: TopologyReconciled with upstream's reasons.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// HooksStatus is where the lifecycle hooks stand for one topology.
type HooksStatus struct {
	// pending are the hooks owed after an operation that started, as the
	// runtime.cluster.x-k8s.io/pending-hooks annotation lists them.
	// +optional
	// +listType=atomic
	Pending []string `json:"pending,omitempty"`

	// holding are the hooks whose last answer holds an operation.
	// +optional
	// +listType=map
	// +listMapKey=hook
	Holding []HookHold `json:"holding,omitempty"`
}

// HookHold is one lifecycle hook holding an operation.
type HookHold struct {
	// hook is the hook's name, e.g. BeforeClusterUpgrade.
	// +required
	Hook string `json:"hook"`

	// handlers asked, as HANDLER.EXTENSION.
	// +optional
	// +listType=atomic
	Handlers []string `json:"handlers,omitempty"`

	// holds says what waits: creation, the upgrade, the control plane, the
	// workers, the next upgrade or deletion.
	// +optional
	Holds string `json:"holds,omitempty"`

	// message is what the handlers said.
	// +optional
	Message string `json:"message,omitempty"`

	// nextCall is when the hook is asked again.
	// +optional
	NextCall *metav1.Time `json:"nextCall,omitempty"`
}

// UpgradePlanStatus lists the versions each part of a topology has still to
// take, in order; a version leaves the list once it is written to the part.
type UpgradePlanStatus struct {
	// controlPlane versions still ahead of the control plane.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	ControlPlane []string `json:"controlPlane,omitempty"`

	// workers versions still ahead of the MachineDeployments and MachinePools.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Workers []string `json:"workers,omitempty"`
}

func init() {
	register(&Topology{}, &TopologyList{})
}
