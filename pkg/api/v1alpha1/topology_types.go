package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=topologies,shortName=topo,categories=cluster-api;kubectl-topology
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Class",type="string",JSONPath=".spec.class"
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

// TopologySpec mirrors Cluster.spec.topology of Cluster API v1beta1, plus the
// Cluster fields a topology needs (clusterNetwork, paused).
type TopologySpec struct {
	// class is the TopologyClass to stamp from.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Class string `json:"class"`

	// classNamespace is the class's namespace; the Topology's when unset.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ClassNamespace string `json:"classNamespace,omitempty"`

	// version is the Kubernetes version of the cluster, e.g. v1.32.0.
	// +required
	// +kubebuilder:validation:Pattern=`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`
	Version string `json:"version"`

	// rolloutAfter replaces all Machines after this time.
	// +optional
	RolloutAfter *metav1.Time `json:"rolloutAfter,omitempty"`

	// controlPlane of the cluster.
	// +optional
	ControlPlane ControlPlaneTopology `json:"controlPlane,omitempty"`

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

// ControlPlaneTopology is the control plane of a topology.
type ControlPlaneTopology struct {
	// metadata merged into the control plane object and its Machines.
	// +optional
	Metadata ObjectMeta `json:"metadata,omitempty"`

	// replicas of the control plane; left to the provider when unset.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// machineHealthCheck overrides or disables the class's.
	// +optional
	MachineHealthCheck *MachineHealthCheckTopology `json:"machineHealthCheck,omitempty"`

	// nodeDrainTimeout overrides the class's.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	NodeDrainTimeout *metav1.Duration `json:"nodeDrainTimeout,omitempty"`

	// nodeVolumeDetachTimeout overrides the class's.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	NodeVolumeDetachTimeout *metav1.Duration `json:"nodeVolumeDetachTimeout,omitempty"`

	// nodeDeletionTimeout overrides the class's.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	NodeDeletionTimeout *metav1.Duration `json:"nodeDeletionTimeout,omitempty"`

	// readinessGates override the class's.
	// +optional
	// +listType=map
	// +listMapKey=conditionType
	// +kubebuilder:validation:MaxItems=32
	ReadinessGates []MachineReadinessGate `json:"readinessGates,omitempty"`

	// variables overrides for the control plane.
	// +optional
	Variables *ControlPlaneVariables `json:"variables,omitempty"`
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
	// metadata merged into the MachineDeployment and its Machines; also carries the
	// hold/defer upgrade annotations.
	// +optional
	Metadata ObjectMeta `json:"metadata,omitempty"`

	// class is a MachineDeployment class of the TopologyClass.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Class string `json:"class"`

	// name of the MachineDeployment within the topology.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$`
	Name string `json:"name"`

	// failureDomain overrides the class's.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	FailureDomain *string `json:"failureDomain,omitempty"`

	// replicas; left to autoscalers when unset.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// machineHealthCheck overrides or disables the class's.
	// +optional
	MachineHealthCheck *MachineHealthCheckTopology `json:"machineHealthCheck,omitempty"`

	// nodeDrainTimeout overrides the class's.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	NodeDrainTimeout *metav1.Duration `json:"nodeDrainTimeout,omitempty"`

	// nodeVolumeDetachTimeout overrides the class's.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	NodeVolumeDetachTimeout *metav1.Duration `json:"nodeVolumeDetachTimeout,omitempty"`

	// nodeDeletionTimeout overrides the class's.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	NodeDeletionTimeout *metav1.Duration `json:"nodeDeletionTimeout,omitempty"`

	// minReadySeconds overrides the class's.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`

	// readinessGates override the class's.
	// +optional
	// +listType=map
	// +listMapKey=conditionType
	// +kubebuilder:validation:MaxItems=32
	ReadinessGates []MachineReadinessGate `json:"readinessGates,omitempty"`

	// strategy overrides the class's.
	// +optional
	Strategy *MachineDeploymentStrategy `json:"strategy,omitempty"`

	// variables overrides for this MachineDeployment.
	// +optional
	Variables *MachineDeploymentVariables `json:"variables,omitempty"`
}

// MachineHealthCheckTopology enables, disables or overrides a MachineHealthCheck.
type MachineHealthCheckTopology struct {
	// enable forces the check on or off; when unset it is on if the class defines one.
	// +optional
	Enable *bool `json:"enable,omitempty"`

	// MachineHealthCheckClass overrides the class's check when any field is set.
	MachineHealthCheckClass `json:",inline"`
}

// MachinePoolTopology is one MachinePool of a topology.
type MachinePoolTopology struct {
	// metadata merged into the MachinePool; also carries the hold/defer upgrade annotations.
	// +optional
	Metadata ObjectMeta `json:"metadata,omitempty"`

	// class is a MachinePool class of the TopologyClass.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Class string `json:"class"`

	// name of the MachinePool within the topology.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$`
	Name string `json:"name"`

	// failureDomains override the class's.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	FailureDomains []string `json:"failureDomains,omitempty"`

	// nodeDrainTimeout overrides the class's.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	NodeDrainTimeout *metav1.Duration `json:"nodeDrainTimeout,omitempty"`

	// nodeVolumeDetachTimeout overrides the class's.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	NodeVolumeDetachTimeout *metav1.Duration `json:"nodeVolumeDetachTimeout,omitempty"`

	// nodeDeletionTimeout overrides the class's.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	NodeDeletionTimeout *metav1.Duration `json:"nodeDeletionTimeout,omitempty"`

	// minReadySeconds overrides the class's.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`

	// replicas; left to autoscalers when unset.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// variables overrides for this MachinePool.
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

	// definitionFrom is deprecated upstream and ignored; kept for conversion.
	// +optional
	DefinitionFrom string `json:"definitionFrom,omitempty"`

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

// RolloutPhase is where one part of the cluster is in its rollout.
// +kubebuilder:validation:Enum=Pending;Creating;Upgrading;Held;Deferred;UpToDate
type RolloutPhase string

// Rollout phases shown to on-call engineers.
const (
	// PhasePending waits for another part (the control plane, the concurrency limit).
	PhasePending RolloutPhase = "Pending"
	// PhaseCreating is being created for the first time.
	PhaseCreating RolloutPhase = "Creating"
	// PhaseUpgrading is rolling to the desired version.
	PhaseUpgrading RolloutPhase = "Upgrading"
	// PhaseHeld waits because it or an earlier pool carries the hold annotation.
	PhaseHeld RolloutPhase = "Held"
	// PhaseDeferred waits because it carries the defer annotation.
	PhaseDeferred RolloutPhase = "Deferred"
	// PhaseUpToDate is at the desired version and stable.
	PhaseUpToDate RolloutPhase = "UpToDate"
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

	// desiredVersion is the version the topology asks for.
	// +optional
	DesiredVersion string `json:"desiredVersion,omitempty"`

	// version is the version the part reports.
	// +optional
	Version string `json:"version,omitempty"`

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
	Phase RolloutPhase `json:"phase,omitempty"`

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
	Phase RolloutPhase `json:"phase,omitempty"`

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

	// conditions: TopologyReconciled with upstream's reasons.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

func init() {
	register(&Topology{}, &TopologyList{})
}
