package v1alpha1

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

// LocalObjectTemplate points at a provider template in the class's namespace.
type LocalObjectTemplate struct {
	// ref names the template (apiVersion, kind, name; namespace defaults to the class's).
	// +required
	Ref *corev1.ObjectReference `json:"ref"`
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

// UnhealthyCondition marks a Machine unhealthy when its Node has had a condition for longer than timeout.
type UnhealthyCondition struct {
	// type of the Node condition.
	// +required
	Type corev1.NodeConditionType `json:"type"`

	// status of the Node condition.
	// +required
	Status corev1.ConditionStatus `json:"status"`

	// timeout after which the Machine is considered unhealthy.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	Timeout metav1.Duration `json:"timeout"`
}

// MachineHealthCheckClass is the MachineHealthCheck a class or topology asks for.
type MachineHealthCheckClass struct {
	// unhealthyConditions mark a Machine unhealthy.
	// +optional
	// +listType=atomic
	UnhealthyConditions []UnhealthyCondition `json:"unhealthyConditions,omitempty"`

	// maxUnhealthy stops remediation when more Machines than this are unhealthy.
	// +optional
	MaxUnhealthy *intstr.IntOrString `json:"maxUnhealthy,omitempty"`

	// unhealthyRange allows remediation only while the unhealthy count is within it, e.g. "[3-5]".
	// +optional
	// +kubebuilder:validation:Pattern=^\[[0-9]+-[0-9]+\]$
	UnhealthyRange *string `json:"unhealthyRange,omitempty"`

	// nodeStartupTimeout is how long a Machine may take to get a Node.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
	NodeStartupTimeout *metav1.Duration `json:"nodeStartupTimeout,omitempty"`

	// remediationTemplate points at an external remediation template.
	// +optional
	RemediationTemplate *corev1.ObjectReference `json:"remediationTemplate,omitempty"`
}

// MachineDeploymentStrategyType is how a MachineDeployment replaces Machines.
// +kubebuilder:validation:Enum=RollingUpdate;OnDelete
type MachineDeploymentStrategyType string

// MachineDeploymentStrategy is how a MachineDeployment replaces and remediates Machines.
type MachineDeploymentStrategy struct {
	// type is RollingUpdate or OnDelete.
	// +optional
	Type MachineDeploymentStrategyType `json:"type,omitempty"`

	// rollingUpdate tunes RollingUpdate.
	// +optional
	RollingUpdate *MachineRollingUpdateDeployment `json:"rollingUpdate,omitempty"`

	// remediation tunes MachineHealthCheck remediation.
	// +optional
	Remediation *RemediationStrategy `json:"remediation,omitempty"`
}

// MachineRollingUpdateDeployment tunes a rolling update.
type MachineRollingUpdateDeployment struct {
	// maxUnavailable Machines during the update.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// maxSurge Machines above the desired count during the update.
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// deletePolicy picks the Machines deleted first.
	// +optional
	// +kubebuilder:validation:Enum=Random;Newest;Oldest
	DeletePolicy *string `json:"deletePolicy,omitempty"`
}

// RemediationStrategy limits concurrent remediation.
type RemediationStrategy struct {
	// maxInFlight Machines remediated at once.
	// +optional
	MaxInFlight *intstr.IntOrString `json:"maxInFlight,omitempty"`
}
