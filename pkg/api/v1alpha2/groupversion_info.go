// Package v1alpha2 holds the kubectl-topology API: TopologyClass, Topology and
// TopologyExtension in group topology.kubectl-topology.io. Their shapes follow
// Cluster API v1beta2 (ClusterClass, Cluster.spec.topology, ExtensionConfig)
// field for field, so an upstream object converts by renaming apiVersion/kind.
// v1alpha1 (the v1beta1 shapes) had no users and is no longer served.
//
// +kubebuilder:object:generate=true
// +groupName=topology.kubectl-topology.io
package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "topology.kubectl-topology.io", Version: "v1alpha2"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme

	// knownTypes are the kinds each types file registers in its init.
	knownTypes []runtime.Object
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, knownTypes...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

func register(objs ...runtime.Object) { knownTypes = append(knownTypes, objs...) }

// Kind names, used where objects are handled as unstructured data.
const (
	TopologyClassKind     = "TopologyClass"
	TopologyKind          = "Topology"
	TopologyExtensionKind = "TopologyExtension"
)

// TopologyReconciledCondition is the condition on Topology.status that says
// whether the agent made the latest generation real, as upstream's Cluster
// has it.
const TopologyReconciledCondition = "TopologyReconciled"

// ClusterMadeAnnotation marks a Topology whose Cluster the agent has made, with
// the Cluster's name. It travels with the Topology through a clusterctl move
// or restore, where status does not: a marked Topology without its Cluster
// waits for it rather than making a second one.
const ClusterMadeAnnotation = "topology.kubectl-topology.io/cluster-made"

// HandedOverAnnotation names, as Kind/name pairs separated by commas, the
// InfrastructureCluster and control plane an adopted Cluster referred to.
// Until the agent makes the Cluster again it takes these objects as its own
// by name, so that a cache that has not yet seen them handed to the Topology
// does not make them anew.
const HandedOverAnnotation = "topology.kubectl-topology.io/handed-over"
