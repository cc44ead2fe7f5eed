package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// clusterctl move discovers kinds by the clusterctl label; an extension registration is copied to the target (cluster-scoped: clusterctl leaves the source's).
// +kubebuilder:metadata:labels={"clusterctl.cluster.x-k8s.io=","cluster.x-k8s.io/provider=addon-kubectl-topology","clusterctl.cluster.x-k8s.io/move="}
// +kubebuilder:resource:path=topologyextensions,scope=Cluster,shortName=tx,categories=cluster-api;kubectl-topology
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="URL",type="string",JSONPath=".spec.clientConfig.url"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// TopologyExtension registers a Runtime SDK extension server whose handlers
// generate patches, validate topologies or discover variables. Its shape is
// Cluster API's ExtensionConfig.
type TopologyExtension struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is how to reach the extension.
	// +optional
	Spec TopologyExtensionSpec `json:"spec,omitempty"`

	// status lists the handlers the extension announced.
	// +optional
	Status TopologyExtensionStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// TopologyExtensionList is a list of TopologyExtensions.
type TopologyExtensionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TopologyExtension `json:"items"`
}

// TopologyExtensionSpec mirrors ExtensionConfig.spec.
type TopologyExtensionSpec struct {
	// clientConfig says how to reach the extension server.
	// +required
	ClientConfig ClientConfig `json:"clientConfig"`

	// namespaceSelector picks the namespaces whose topologies may call it.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// settings passed to every handler.
	// +optional
	Settings map[string]string `json:"settings,omitempty"`
}

// ClientConfig is a URL or an in-cluster Service, with the CA to trust.
type ClientConfig struct {
	// url of the server, https only.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	URL *string `json:"url,omitempty"`

	// service in the cluster; exclusive with url.
	// +optional
	Service *ServiceReference `json:"service,omitempty"`

	// caBundle is the PEM CA that signed the server's certificate.
	// +optional
	CABundle []byte `json:"caBundle,omitempty"`
}

// ServiceReference names a Service serving an extension.
type ServiceReference struct {
	// namespace of the Service.
	// +required
	Namespace string `json:"namespace"`

	// name of the Service.
	// +required
	Name string `json:"name"`

	// path prefix of the handlers.
	// +optional
	Path *string `json:"path,omitempty"`

	// port of the Service; 443 when unset.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port *int32 `json:"port,omitempty"`
}

// TopologyExtensionStatus lists the handlers an extension announced.
type TopologyExtensionStatus struct {
	// handlers announced in discovery.
	// +optional
	// +listType=map
	// +listMapKey=name
	Handlers []ExtensionHandler `json:"handlers,omitempty"`

	// conditions: Discovered.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ExtensionHandler is one handler of an extension.
type ExtensionHandler struct {
	// name of the handler, unique per extension.
	// +required
	Name string `json:"name"`

	// requestHook is the hook the handler answers.
	// +required
	RequestHook GroupVersionHook `json:"requestHook"`

	// timeoutSeconds of a call.
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`

	// failurePolicy is Ignore or Fail.
	// +optional
	// +kubebuilder:validation:Enum=Ignore;Fail
	FailurePolicy *string `json:"failurePolicy,omitempty"`
}

// GroupVersionHook names a Runtime SDK hook.
type GroupVersionHook struct {
	// apiVersion of the hook.
	// +required
	APIVersion string `json:"apiVersion"`

	// hook name, e.g. GeneratePatches.
	// +required
	Hook string `json:"hook"`
}

func init() {
	register(&TopologyExtension{}, &TopologyExtensionList{})
}
