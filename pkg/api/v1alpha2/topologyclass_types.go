package v1alpha2

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// clusterctl move discovers kinds by the clusterctl label; a TopologyClass moves with the templates it owns.
// +kubebuilder:metadata:labels={"clusterctl.cluster.x-k8s.io=","cluster.x-k8s.io/provider=addon-kubectl-topology","clusterctl.cluster.x-k8s.io/move-hierarchy="}
// +kubebuilder:resource:path=topologyclasses,shortName=tc,categories=cluster-api;kubectl-topology
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// TopologyClass is a blueprint for clusters: the provider templates, worker
// classes, variables and patches every Topology of the class is stamped from.
// Its spec is the spec of Cluster API's ClusterClass.
type TopologyClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the blueprint.
	// +optional
	Spec TopologyClassSpec `json:"spec,omitempty"`

	// status reports the variables the class offers and whether it is usable.
	// +optional
	Status TopologyClassStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// TopologyClassList is a list of TopologyClasses.
type TopologyClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TopologyClass `json:"items"`
}

// TopologyClassSpec mirrors ClusterClass.spec of Cluster API v1beta2.
type TopologyClassSpec struct {
	// availabilityGates are extra conditions the CAPI Cluster must meet to be Available.
	// +optional
	// +listType=map
	// +listMapKey=conditionType
	// +kubebuilder:validation:MaxItems=32
	AvailabilityGates []ClusterAvailabilityGate `json:"availabilityGates,omitempty"`

	// infrastructure is the InfrastructureClusterTemplate of the class and how its clone is named.
	// +optional
	Infrastructure InfrastructureClass `json:"infrastructure,omitempty,omitzero"`

	// controlPlane is the control plane template and its machine infrastructure.
	// +optional
	ControlPlane ControlPlaneClass `json:"controlPlane,omitempty,omitzero"`

	// workers are the MachineDeployment and MachinePool classes a topology picks from.
	// +optional
	Workers WorkersClass `json:"workers,omitempty,omitzero"`

	// variables a topology may or must set; patches read them.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1000
	Variables []ClusterClassVariable `json:"variables,omitempty"`

	// patches customise the generated objects, applied in this order.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	Patches []ClusterClassPatch `json:"patches,omitempty"`

	// upgrade names the extension that plans upgrades over several minors.
	// +optional
	Upgrade ClusterClassUpgrade `json:"upgrade,omitempty,omitzero"`

	// kubernetesVersions are the versions a topology of this class may run, oldest
	// first; an upgrade more than one minor ahead steps through them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	KubernetesVersions []string `json:"kubernetesVersions,omitempty"`
}

// ClusterClassTemplateReference names a provider template of the class.
type ClusterClassTemplateReference struct {
	// kind of the template.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9]*$`
	Kind string `json:"kind,omitempty"`

	// name of the template, in the class's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// apiVersion of the template; the agent may read it at the version the CRD's contract label names.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	APIVersion string `json:"apiVersion,omitempty"`
}

// IsDefined reports whether the reference names a template.
func (r ClusterClassTemplateReference) IsDefined() bool {
	return r.Kind != "" || r.Name != "" || r.APIVersion != ""
}

// InfrastructureClass is the infrastructure part of a class.
type InfrastructureClass struct {
	// templateRef is the InfrastructureClusterTemplate; set it or template.
	// +optional
	TemplateRef ClusterClassTemplateReference `json:"templateRef,omitempty,omitzero"`

	// template is the InfrastructureClusterTemplate written into the class,
	// for a kind the cluster's providers refuse to store; set it or templateRef.
	// +optional
	Template *InlineTemplate `json:"template,omitempty"`

	// naming names the generated InfrastructureCluster.
	// +optional
	Naming NamingSpec `json:"naming,omitempty,omitzero"`
}

// NamingSpec names a generated object with a Go template over .cluster.name,
// .random and, for pools, .machineDeployment.topologyName or .machinePool.topologyName.
type NamingSpec struct {
	// template is the Go template.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Template string `json:"template,omitempty"`
}

// ControlPlaneClass is the control plane part of a class.
type ControlPlaneClass struct {
	// metadata is merged into the control plane object and its Machines.
	// +optional
	Metadata ObjectMeta `json:"metadata,omitempty,omitzero"`

	// templateRef is the ControlPlaneTemplate; set it or template.
	// +optional
	TemplateRef ClusterClassTemplateReference `json:"templateRef,omitempty,omitzero"`

	// template is the ControlPlaneTemplate written into the class, for a kind
	// the cluster's providers refuse to store (KubeadmControlPlaneTemplate with
	// Cluster API's ClusterTopology gate off); set it or templateRef.
	// +optional
	Template *InlineTemplate `json:"template,omitempty"`

	// machineInfrastructure is the InfrastructureMachineTemplate for control plane Machines,
	// for control plane providers that run Machines.
	// +optional
	MachineInfrastructure MachineInfrastructureTemplate `json:"machineInfrastructure,omitempty,omitzero"`

	// healthCheck of control plane Machines.
	// +optional
	HealthCheck ControlPlaneClassHealthCheck `json:"healthCheck,omitempty,omitzero"`

	// naming names the generated control plane object.
	// +optional
	Naming NamingSpec `json:"naming,omitempty,omitzero"`

	// deletion timeouts of control plane Machines.
	// +optional
	Deletion MachineDeletion `json:"deletion,omitempty,omitzero"`

	// taints for the Nodes of control plane Machines.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +listMapKey=effect
	// +kubebuilder:validation:MaxItems=64
	Taints []MachineTaint `json:"taints,omitempty"`

	// readinessGates for control plane Machines.
	// +optional
	// +listType=map
	// +listMapKey=conditionType
	// +kubebuilder:validation:MaxItems=32
	ReadinessGates []MachineReadinessGate `json:"readinessGates,omitempty"`
}

// MachineInfrastructureTemplate is the InfrastructureMachineTemplate of control plane Machines.
type MachineInfrastructureTemplate struct {
	// templateRef is the InfrastructureMachineTemplate; set it or template.
	// +optional
	TemplateRef ClusterClassTemplateReference `json:"templateRef,omitempty,omitzero"`

	// template is the InfrastructureMachineTemplate written into the class; set it or templateRef.
	// +optional
	Template *InlineTemplate `json:"template,omitempty"`
}

// ControlPlaneClassHealthCheck is the class's MachineHealthCheck of control plane Machines.
type ControlPlaneClassHealthCheck struct {
	// checks say when a Machine is unhealthy.
	// +optional
	Checks HealthCheckChecks `json:"checks,omitempty,omitzero"`

	// remediation says when and how unhealthy Machines are remediated.
	// +optional
	Remediation ControlPlaneHealthCheckRemediation `json:"remediation,omitempty,omitzero"`
}

// IsDefined reports whether the class defines a health check.
func (h ControlPlaneClassHealthCheck) IsDefined() bool {
	return h.Checks.IsDefined() || h.Remediation.IsDefined()
}

// WorkersClass lists the worker classes of a class.
type WorkersClass struct {
	// machineDeployments classes.
	// +optional
	// +listType=map
	// +listMapKey=class
	// +kubebuilder:validation:MaxItems=100
	MachineDeployments []MachineDeploymentClass `json:"machineDeployments,omitempty"`

	// machinePools classes.
	// +optional
	// +listType=map
	// +listMapKey=class
	// +kubebuilder:validation:MaxItems=100
	MachinePools []MachinePoolClass `json:"machinePools,omitempty"`
}

// MachineDeploymentClass is one kind of MachineDeployment a topology may instantiate.
type MachineDeploymentClass struct {
	// metadata is merged into the MachineDeployment and its Machines.
	// +optional
	Metadata ObjectMeta `json:"metadata,omitempty,omitzero"`

	// class is the name topologies use to pick this class.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Class string `json:"class"`

	// bootstrap is the BootstrapConfigTemplate of the Machines.
	// +required
	Bootstrap TemplateReferenceHolder `json:"bootstrap,omitempty,omitzero"`

	// infrastructure is the InfrastructureMachineTemplate of the Machines.
	// +required
	Infrastructure TemplateReferenceHolder `json:"infrastructure,omitempty,omitzero"`

	// healthCheck of the MachineDeployment's Machines.
	// +optional
	HealthCheck MachineDeploymentClassHealthCheck `json:"healthCheck,omitempty,omitzero"`

	// failureDomain the Machines are placed in.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	FailureDomain *string `json:"failureDomain,omitempty"`

	// naming names the generated MachineDeployment.
	// +optional
	Naming NamingSpec `json:"naming,omitempty,omitzero"`

	// deletion says which Machines go first and the timeouts of deleting one.
	// +optional
	Deletion MachineDeploymentDeletion `json:"deletion,omitempty,omitzero"`

	// taints for the Nodes of the Machines.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +listMapKey=effect
	// +kubebuilder:validation:MaxItems=64
	Taints []MachineTaint `json:"taints,omitempty"`

	// minReadySeconds a new Node must be ready before it counts as available.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`

	// readinessGates for the Machines.
	// +optional
	// +listType=map
	// +listMapKey=conditionType
	// +kubebuilder:validation:MaxItems=32
	ReadinessGates []MachineReadinessGate `json:"readinessGates,omitempty"`

	// rollout is how Machines are replaced.
	// +optional
	Rollout MachineDeploymentRollout `json:"rollout,omitempty,omitzero"`
}

// TemplateReferenceHolder holds the reference to one template of a worker class.
type TemplateReferenceHolder struct {
	// templateRef is the template; set it or template.
	// +optional
	TemplateRef ClusterClassTemplateReference `json:"templateRef,omitempty,omitzero"`

	// template is the template written into the class; set it or templateRef.
	// +optional
	Template *InlineTemplate `json:"template,omitempty"`
}

// InlineTemplate is a provider template written into the class instead of
// referenced: the same apiVersion, kind and spec as the template object, with
// its labels and annotations. On a stock management cluster the providers
// refuse to store the template kinds only a ClusterClass uses
// (KubeadmControlPlaneTemplate, the Docker provider's cluster templates), but
// they accept the objects made from them; patches select and change an inline
// template exactly as a referenced one.
type InlineTemplate struct {
	// apiVersion of the template, e.g. controlplane.cluster.x-k8s.io/v1beta2.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	APIVersion string `json:"apiVersion"`

	// kind of the template, e.g. KubeadmControlPlaneTemplate.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9]*$`
	Kind string `json:"kind"`

	// name the template is known by: what the cluster.x-k8s.io/cloned-from-name
	// annotation of each object made from it carries. convert keeps here the
	// name of the template object it inlined, so that the objects are
	// annotated as upstream's controller annotates them from the reference;
	// unset, the class's name and the slot's (e.g. quick-start-control-plane).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// metadata of the template: its labels and annotations.
	// +optional
	Metadata ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec of the template, as the template kind defines it (spec.template.spec
	// holds what the generated object's spec is made from).
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Spec apiextensionsv1.JSON `json:"spec"`
}

// MachineDeploymentClassHealthCheck is the class's MachineHealthCheck of a MachineDeployment.
type MachineDeploymentClassHealthCheck struct {
	// checks say when a Machine is unhealthy.
	// +optional
	Checks HealthCheckChecks `json:"checks,omitempty,omitzero"`

	// remediation says when and how unhealthy Machines are remediated.
	// +optional
	Remediation MachineDeploymentHealthCheckRemediation `json:"remediation,omitempty,omitzero"`
}

// IsDefined reports whether the class defines a health check.
func (h MachineDeploymentClassHealthCheck) IsDefined() bool {
	return h.Checks.IsDefined() || h.Remediation.IsDefined()
}

// MachinePoolClass is one kind of MachinePool a topology may instantiate.
type MachinePoolClass struct {
	// metadata is merged into the MachinePool.
	// +optional
	Metadata ObjectMeta `json:"metadata,omitempty,omitzero"`

	// class is the name topologies use to pick this class.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Class string `json:"class"`

	// bootstrap is the BootstrapConfigTemplate of the pool.
	// +required
	Bootstrap TemplateReferenceHolder `json:"bootstrap,omitempty,omitzero"`

	// infrastructure is the InfrastructureMachinePoolTemplate.
	// +required
	Infrastructure TemplateReferenceHolder `json:"infrastructure,omitempty,omitzero"`

	// failureDomains the pool spreads over.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	FailureDomains []string `json:"failureDomains,omitempty"`

	// naming names the generated MachinePool.
	// +optional
	Naming NamingSpec `json:"naming,omitempty,omitzero"`

	// deletion timeouts of the pool's Machines.
	// +optional
	Deletion MachineDeletion `json:"deletion,omitempty,omitzero"`

	// taints for the Nodes of the pool.
	// +optional
	// +listType=map
	// +listMapKey=key
	// +listMapKey=effect
	// +kubebuilder:validation:MaxItems=64
	Taints []MachineTaint `json:"taints,omitempty"`

	// minReadySeconds a new Node must be ready before it counts as available.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`
}

// ClusterClassUpgrade configures how topologies of the class upgrade.
type ClusterClassUpgrade struct {
	// external names the extension that answers upgrade plans.
	// +optional
	External ClusterClassUpgradeExternal `json:"external,omitempty,omitzero"`
}

// ClusterClassUpgradeExternal names upgrade extensions.
type ClusterClassUpgradeExternal struct {
	// generateUpgradePlanExtension is the GenerateUpgradePlan handler.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	GenerateUpgradePlanExtension string `json:"generateUpgradePlanExtension,omitempty"`
}

// ClusterClassVariable is a variable a class offers to its topologies.
type ClusterClassVariable struct {
	// name of the variable; "builtin" is reserved.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name"`

	// required variables must be set by every topology.
	// +optional
	Required bool `json:"required,omitempty"`

	// deprecatedV1Beta1Metadata is v1beta1's variable metadata, kept by conversion;
	// schema.openAPIV3Schema.x-metadata replaces it.
	// +optional
	DeprecatedV1Beta1Metadata ClusterClassVariableMetadata `json:"deprecatedV1Beta1Metadata,omitempty,omitzero"`

	// schema of the variable's value.
	// +required
	Schema VariableSchema `json:"schema"`
}

// ClusterClassVariableMetadata is free-form metadata about a variable.
type ClusterClassVariableMetadata struct {
	// labels about the variable.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// annotations about the variable.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// VariableSchema wraps the OpenAPI schema of a variable.
type VariableSchema struct {
	// openAPIV3Schema is the schema, a subset of the schema of Kubernetes CRDs.
	// +required
	OpenAPIV3Schema JSONSchemaProps `json:"openAPIV3Schema"`
}

// JSONSchemaProps is the OpenAPI v3 subset Cluster API supports for variables.
type JSONSchemaProps struct {
	// description of the value.
	// +optional
	Description string `json:"description,omitempty"`

	// example value.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Example *apiextensionsv1.JSON `json:"example,omitempty"`

	// type is one of object, array, string, integer, number, boolean.
	// +optional
	// +kubebuilder:validation:Enum=object;array;string;integer;number;boolean
	Type string `json:"type,omitempty"`

	// properties of an object.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Properties map[string]JSONSchemaProps `json:"properties,omitempty"`

	// additionalProperties is the schema of an object's values when keys are free.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	AdditionalProperties *JSONSchemaProps `json:"additionalProperties,omitempty"`

	// maxProperties of an object.
	// +optional
	MaxProperties *int64 `json:"maxProperties,omitempty"`

	// minProperties of an object.
	// +optional
	MinProperties *int64 `json:"minProperties,omitempty"`

	// required properties of an object.
	// +optional
	// +listType=atomic
	Required []string `json:"required,omitempty"`

	// items is the schema of an array's items.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Items *JSONSchemaProps `json:"items,omitempty"`

	// maxItems of an array.
	// +optional
	MaxItems *int64 `json:"maxItems,omitempty"`

	// minItems of an array.
	// +optional
	MinItems *int64 `json:"minItems,omitempty"`

	// uniqueItems requires an array's items to differ.
	// +optional
	UniqueItems bool `json:"uniqueItems,omitempty"`

	// format of a string (as in Kubernetes CRDs: uri, date-time, ipv4, ...).
	// +optional
	Format string `json:"format,omitempty"`

	// maxLength of a string.
	// +optional
	MaxLength *int64 `json:"maxLength,omitempty"`

	// minLength of a string.
	// +optional
	MinLength *int64 `json:"minLength,omitempty"`

	// pattern a string must match (ECMA 262).
	// +optional
	Pattern string `json:"pattern,omitempty"`

	// maximum of a number.
	// +optional
	Maximum *int64 `json:"maximum,omitempty"`

	// exclusiveMaximum makes maximum exclusive.
	// +optional
	ExclusiveMaximum bool `json:"exclusiveMaximum,omitempty"`

	// minimum of a number.
	// +optional
	Minimum *int64 `json:"minimum,omitempty"`

	// exclusiveMinimum makes minimum exclusive.
	// +optional
	ExclusiveMinimum bool `json:"exclusiveMinimum,omitempty"`

	// x-kubernetes-preserve-unknown-fields keeps fields the schema does not name.
	// +optional
	XPreserveUnknownFields bool `json:"x-kubernetes-preserve-unknown-fields,omitempty"`

	// enum lists the allowed values.
	// +optional
	// +listType=atomic
	Enum []apiextensionsv1.JSON `json:"enum,omitempty"`

	// default value, applied when the value is unset.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Default *apiextensionsv1.JSON `json:"default,omitempty"`

	// x-kubernetes-validations are CEL rules the value must satisfy.
	// +optional
	// +listType=map
	// +listMapKey=rule
	XValidations []ValidationRule `json:"x-kubernetes-validations,omitempty"`

	// x-metadata is free-form metadata about the value.
	// +optional
	XMetadata *VariableSchemaMetadata `json:"x-metadata,omitempty"`

	// x-kubernetes-int-or-string accepts an integer or a string.
	// +optional
	XIntOrString bool `json:"x-kubernetes-int-or-string,omitempty"`

	// allOf schemas the value must all satisfy.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	AllOf []JSONSchemaProps `json:"allOf,omitempty"`

	// oneOf schemas of which the value must satisfy exactly one.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	OneOf []JSONSchemaProps `json:"oneOf,omitempty"`

	// anyOf schemas of which the value must satisfy at least one.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	AnyOf []JSONSchemaProps `json:"anyOf,omitempty"`

	// not is a schema the value must not satisfy.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Not *JSONSchemaProps `json:"not,omitempty"`
}

// VariableSchemaMetadata is free-form metadata about a schema node.
type VariableSchemaMetadata struct {
	// labels about the value.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// annotations about the value.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// FieldValueErrorReason is the machine-readable reason of a failed CEL rule.
// +kubebuilder:validation:Enum=FieldValueInvalid;FieldValueForbidden;FieldValueRequired;FieldValueDuplicate
type FieldValueErrorReason string

// ValidationRule is a CEL rule, as in x-kubernetes-validations of CRDs.
type ValidationRule struct {
	// rule is the CEL expression; self is the value.
	// +required
	// +kubebuilder:validation:MinLength=1
	Rule string `json:"rule"`

	// message shown when the rule fails.
	// +optional
	Message string `json:"message,omitempty"`

	// messageExpression is a CEL expression producing the message.
	// +optional
	MessageExpression string `json:"messageExpression,omitempty"`

	// reason reported when the rule fails.
	// +optional
	Reason FieldValueErrorReason `json:"reason,omitempty"`

	// fieldPath of the error, relative to the value.
	// +optional
	FieldPath string `json:"fieldPath,omitempty"`
}

// ClusterClassPatch customises generated objects.
type ClusterClassPatch struct {
	// name of the patch.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name"`

	// description of the patch.
	// +optional
	Description string `json:"description,omitempty"`

	// enabledIf is a Go template over the variables; the patch applies when it renders "true".
	// +optional
	EnabledIf *string `json:"enabledIf,omitempty"`

	// definitions are inline JSON patches; exclusive with external.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	Definitions []PatchDefinition `json:"definitions,omitempty"`

	// external delegates to a Runtime SDK extension; exclusive with definitions.
	// +optional
	External *ExternalPatchDefinition `json:"external,omitempty"`
}

// PatchDefinition is a set of JSON patches for the templates a selector matches.
type PatchDefinition struct {
	// selector picks the templates.
	// +required
	Selector PatchSelector `json:"selector"`

	// jsonPatches applied in order.
	// +required
	// +kubebuilder:validation:MaxItems=100
	JSONPatches []JSONPatch `json:"jsonPatches"`
}

// PatchSelector picks templates by apiVersion, kind and place in the topology.
type PatchSelector struct {
	// apiVersion of the templates.
	// +required
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`

	// kind of the templates.
	// +required
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`

	// matchResources says which uses of the template are patched.
	// +required
	MatchResources PatchSelectorMatch `json:"matchResources"`
}

// PatchSelectorMatch says which uses of a template a patch applies to.
type PatchSelectorMatch struct {
	// controlPlane selects the control plane template and its machine infrastructure.
	// +optional
	ControlPlane bool `json:"controlPlane,omitempty"`

	// infrastructureCluster selects the InfrastructureClusterTemplate.
	// +optional
	InfrastructureCluster bool `json:"infrastructureCluster,omitempty"`

	// machineDeploymentClass selects MachineDeployment classes by name.
	// +optional
	MachineDeploymentClass *PatchSelectorMatchMachineDeploymentClass `json:"machineDeploymentClass,omitempty"`

	// machinePoolClass selects MachinePool classes by name.
	// +optional
	MachinePoolClass *PatchSelectorMatchMachinePoolClass `json:"machinePoolClass,omitempty"`
}

// PatchSelectorMatchMachineDeploymentClass names MachineDeployment classes; "*", "prefix*" and "*suffix" match several.
type PatchSelectorMatchMachineDeploymentClass struct {
	// names of the classes.
	// +optional
	// +listType=atomic
	Names []string `json:"names,omitempty"`
}

// PatchSelectorMatchMachinePoolClass names MachinePool classes; "*", "prefix*" and "*suffix" match several.
type PatchSelectorMatchMachinePoolClass struct {
	// names of the classes.
	// +optional
	// +listType=atomic
	Names []string `json:"names,omitempty"`
}

// JSONPatch is one RFC 6902 operation whose value may come from a variable or a template.
type JSONPatch struct {
	// op is add, replace or remove.
	// +required
	// +kubebuilder:validation:Enum=add;replace;remove
	Op string `json:"op"`

	// path is a JSON pointer under /spec.
	// +required
	// +kubebuilder:validation:MinLength=1
	Path string `json:"path"`

	// value to set; exclusive with valueFrom.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Value *apiextensionsv1.JSON `json:"value,omitempty"`

	// valueFrom computes the value; exclusive with value.
	// +optional
	ValueFrom *JSONPatchValue `json:"valueFrom,omitempty"`
}

// JSONPatchValue computes a patch value from a variable or a template.
type JSONPatchValue struct {
	// variable is a (dotted) variable name, e.g. "builtin.cluster.name".
	// +optional
	// +kubebuilder:validation:MinLength=1
	Variable *string `json:"variable,omitempty"`

	// template is a Go template over the variables whose output is parsed as YAML.
	// +optional
	// +kubebuilder:validation:MinLength=1
	Template *string `json:"template,omitempty"`
}

// ExternalPatchDefinition names the Runtime SDK handlers of an external patch.
type ExternalPatchDefinition struct {
	// generatePatchesExtension is the GeneratePatches handler.
	// +optional
	GeneratePatchesExtension *string `json:"generatePatchesExtension,omitempty"`

	// validateTopologyExtension is the ValidateTopology handler.
	// +optional
	ValidateTopologyExtension *string `json:"validateTopologyExtension,omitempty"`

	// discoverVariablesExtension is the DiscoverVariables handler.
	// +optional
	DiscoverVariablesExtension *string `json:"discoverVariablesExtension,omitempty"`

	// settings passed to the extension.
	// +optional
	Settings map[string]string `json:"settings,omitempty"`
}

// TopologyClassStatus reports the variables of a class and whether it is usable.
type TopologyClassStatus struct {
	// variables offered by the class: inline ones and those discovered from extensions.
	// +optional
	// +listType=map
	// +listMapKey=name
	Variables []ClusterClassStatusVariable `json:"variables,omitempty"`

	// conditions: VariablesReconciled, RefVersionsUpToDate.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ClusterClassStatusVariable is a variable with every definition of it.
type ClusterClassStatusVariable struct {
	// name of the variable.
	// +required
	Name string `json:"name"`

	// definitionsConflict is true when the definitions differ.
	// +optional
	DefinitionsConflict bool `json:"definitionsConflict"`

	// definitions of the variable, one per source.
	// +required
	Definitions []ClusterClassStatusVariableDefinition `json:"definitions"`
}

// ClusterClassStatusVariableDefinition is one definition of a variable.
type ClusterClassStatusVariableDefinition struct {
	// from is "inline" or the name of the external patch that defined it.
	// +required
	From string `json:"from"`

	// required variables must be set by every topology.
	// +optional
	Required bool `json:"required,omitempty"`

	// deprecatedV1Beta1Metadata about the variable.
	// +optional
	DeprecatedV1Beta1Metadata ClusterClassVariableMetadata `json:"deprecatedV1Beta1Metadata,omitempty,omitzero"`

	// schema of the variable.
	// +required
	Schema VariableSchema `json:"schema"`
}

// VariableDefinitionFromInline is the "from" of variables defined in the class itself.
const VariableDefinitionFromInline = "inline"

func init() {
	register(&TopologyClass{}, &TopologyClassList{})
}
