package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ObjectMeta is the subset of metadata a class or topology may set on generated objects.
type ObjectMeta struct {
	// labels are merged into the generated object's labels.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// annotations are merged into the generated object's annotations.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ConditionPolarity says whether a condition is good when True (Positive) or when False (Negative).
// +kubebuilder:validation:Enum=Positive;Negative
type ConditionPolarity string

const (
	// PositivePolarityCondition is a condition that is good when True.
	PositivePolarityCondition ConditionPolarity = "Positive"
	// NegativePolarityCondition is a condition that is good when False.
	NegativePolarityCondition ConditionPolarity = "Negative"
)

// ClusterAvailabilityGate is an extra condition the CAPI Cluster must meet to be Available.
type ClusterAvailabilityGate struct {
	// conditionType is the condition on the Cluster that gates availability.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	ConditionType string `json:"conditionType"`

	// polarity of the condition; Positive when unset.
	// +optional
	Polarity ConditionPolarity `json:"polarity,omitempty"`
}

// MachineReadinessGate is an extra condition a Machine must meet to be Ready.
type MachineReadinessGate struct {
	// conditionType is the condition on the Machine that gates readiness.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	ConditionType string `json:"conditionType"`

	// polarity of the condition; Positive when unset.
	// +optional
	Polarity ConditionPolarity `json:"polarity,omitempty"`
}

// UnhealthyNodeCondition marks a Machine unhealthy when its Node has had a condition for longer than timeoutSeconds.
type UnhealthyNodeCondition struct {
	// type of the Node condition.
	// +required
	Type corev1.NodeConditionType `json:"type"`

	// status of the Node condition.
	// +required
	// +kubebuilder:validation:Enum=True;False;Unknown
	Status corev1.ConditionStatus `json:"status"`

	// timeoutSeconds after which the Machine is considered unhealthy.
	// +required
	// +kubebuilder:validation:Minimum=0
	TimeoutSeconds *int32 `json:"timeoutSeconds"`
}

// UnhealthyMachineCondition marks a Machine unhealthy when it has had a condition for longer than timeoutSeconds.
type UnhealthyMachineCondition struct {
	// type of the Machine condition; Ready, Available, HealthCheckSucceeded and
	// OwnerRemediated cannot be used.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:XValidation:rule="!(self in ['Ready','Available','HealthCheckSucceeded','OwnerRemediated'])",message="type must not be one of: Ready, Available, HealthCheckSucceeded, OwnerRemediated"
	Type string `json:"type"`

	// status of the Machine condition.
	// +required
	// +kubebuilder:validation:Enum=True;False;Unknown
	Status metav1.ConditionStatus `json:"status"`

	// timeoutSeconds after which the Machine is considered unhealthy.
	// +required
	// +kubebuilder:validation:Minimum=0
	TimeoutSeconds *int32 `json:"timeoutSeconds"`
}

// HealthCheckChecks say when a Machine is unhealthy.
type HealthCheckChecks struct {
	// nodeStartupTimeoutSeconds is how long a Machine may take to get a Node.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NodeStartupTimeoutSeconds *int32 `json:"nodeStartupTimeoutSeconds,omitempty"`

	// unhealthyNodeConditions mark a Machine unhealthy by its Node's conditions.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	UnhealthyNodeConditions []UnhealthyNodeCondition `json:"unhealthyNodeConditions,omitempty"`

	// unhealthyMachineConditions mark a Machine unhealthy by its own conditions.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	UnhealthyMachineConditions []UnhealthyMachineCondition `json:"unhealthyMachineConditions,omitempty"`
}

// IsDefined reports whether any check is set.
func (c HealthCheckChecks) IsDefined() bool {
	return c.NodeStartupTimeoutSeconds != nil || len(c.UnhealthyNodeConditions) > 0 || len(c.UnhealthyMachineConditions) > 0
}

// HealthCheckTriggerIf says when remediation may run.
type HealthCheckTriggerIf struct {
	// unhealthyLessThanOrEqualTo stops remediation when more Machines than this are unhealthy.
	// +optional
	UnhealthyLessThanOrEqualTo *intstr.IntOrString `json:"unhealthyLessThanOrEqualTo,omitempty"`

	// unhealthyInRange allows remediation only while the unhealthy count is within it, e.g. "[3-5]".
	// +optional
	// +kubebuilder:validation:Pattern=^\[[0-9]+-[0-9]+\]$
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	UnhealthyInRange string `json:"unhealthyInRange,omitempty"`
}

// RemediationTemplateReference names an external remediation template.
type RemediationTemplateReference struct {
	// kind of the template.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind,omitempty"`

	// name of the template.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// apiVersion of the template.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	APIVersion string `json:"apiVersion,omitempty"`
}

// IsDefined reports whether the reference names a template.
func (r RemediationTemplateReference) IsDefined() bool {
	return r.Kind != "" || r.Name != "" || r.APIVersion != ""
}

// ControlPlaneHealthCheckRemediation says when and how unhealthy control plane Machines are remediated.
type ControlPlaneHealthCheckRemediation struct {
	// triggerIf limits when remediation runs.
	// +optional
	TriggerIf HealthCheckTriggerIf `json:"triggerIf,omitempty,omitzero"`

	// templateRef is an external remediation template.
	// +optional
	TemplateRef RemediationTemplateReference `json:"templateRef,omitempty,omitzero"`
}

// IsDefined reports whether any remediation field is set.
func (r ControlPlaneHealthCheckRemediation) IsDefined() bool {
	return r.TriggerIf != (HealthCheckTriggerIf{}) || r.TemplateRef.IsDefined()
}

// MachineDeploymentHealthCheckRemediation says when and how unhealthy worker Machines are remediated.
type MachineDeploymentHealthCheckRemediation struct {
	// maxInFlight Machines remediated at once.
	// +optional
	MaxInFlight *intstr.IntOrString `json:"maxInFlight,omitempty"`

	// triggerIf limits when remediation runs.
	// +optional
	TriggerIf HealthCheckTriggerIf `json:"triggerIf,omitempty,omitzero"`

	// templateRef is an external remediation template.
	// +optional
	TemplateRef RemediationTemplateReference `json:"templateRef,omitempty,omitzero"`
}

// IsDefined reports whether any remediation field is set.
func (r MachineDeploymentHealthCheckRemediation) IsDefined() bool {
	return r.MaxInFlight != nil || r.TriggerIf != (HealthCheckTriggerIf{}) || r.TemplateRef.IsDefined()
}

// MachineDeletion holds the timeouts of deleting a Machine.
type MachineDeletion struct {
	// nodeDrainTimeoutSeconds is how long to drain a Node; unset means forever.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NodeDrainTimeoutSeconds *int32 `json:"nodeDrainTimeoutSeconds,omitempty"`

	// nodeVolumeDetachTimeoutSeconds is how long to wait for volumes to detach.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NodeVolumeDetachTimeoutSeconds *int32 `json:"nodeVolumeDetachTimeoutSeconds,omitempty"`

	// nodeDeletionTimeoutSeconds is how long to retry deleting a Node.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NodeDeletionTimeoutSeconds *int32 `json:"nodeDeletionTimeoutSeconds,omitempty"`
}

// MachineDeploymentDeletion is MachineDeletion plus which Machines go first.
type MachineDeploymentDeletion struct {
	// order picks the Machines deleted first: Random, Newest or Oldest.
	// +optional
	// +kubebuilder:validation:Enum=Random;Newest;Oldest
	Order string `json:"order,omitempty"`

	// MachineDeletion holds the timeouts.
	MachineDeletion `json:",inline"`
}

// MachineTaint is a taint the Machine's Node gets.
type MachineTaint struct {
	// key of the taint.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key"`

	// value of the taint.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Value string `json:"value,omitempty"`

	// effect of the taint: NoSchedule, PreferNoSchedule or NoExecute.
	// +required
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	Effect corev1.TaintEffect `json:"effect"`

	// propagation is Always (kept in sync) or OnInitialization (set once).
	// +required
	// +kubebuilder:validation:Enum=Always;OnInitialization
	Propagation string `json:"propagation"`
}

// MachineDeploymentRolloutStrategyType is how a MachineDeployment replaces Machines.
// +kubebuilder:validation:Enum=RollingUpdate;OnDelete
type MachineDeploymentRolloutStrategyType string

// MachineDeploymentRollout is how a MachineDeployment of the class replaces Machines.
type MachineDeploymentRollout struct {
	// strategy of the rollout.
	// +optional
	Strategy MachineDeploymentRolloutStrategy `json:"strategy,omitempty,omitzero"`
}

// MachineDeploymentRolloutStrategy is how a MachineDeployment replaces Machines.
type MachineDeploymentRolloutStrategy struct {
	// type is RollingUpdate or OnDelete.
	// +optional
	Type MachineDeploymentRolloutStrategyType `json:"type,omitempty"`

	// rollingUpdate tunes RollingUpdate.
	// +optional
	RollingUpdate MachineRollingUpdate `json:"rollingUpdate,omitempty,omitzero"`
}

// MachineRollingUpdate tunes a rolling update.
type MachineRollingUpdate struct {
	// maxUnavailable Machines during the update.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// maxSurge Machines above the desired count during the update.
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
}
