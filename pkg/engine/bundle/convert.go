package bundle

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
)

// ClassFromUpstream converts a v1beta1 ClusterClass to a TopologyClass: the
// spec is the same shape, so only apiVersion, kind and metadata change.
func ClassFromUpstream(u *unstructured.Unstructured) (*v1alpha1.TopologyClass, error) {
	spec := &v1alpha1.TopologyClassSpec{}
	if s, found, _ := unstructured.NestedMap(u.Object, "spec"); found {
		if err := decodeStrict(s, spec); err != nil {
			return nil, fmt.Errorf("spec: %w", err)
		}
	}
	return &v1alpha1.TopologyClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.TopologyClassKind},
		ObjectMeta: carriedMeta(u),
		Spec:       *spec,
	}, nil
}

// TopologyFromCluster converts a v1beta1 Cluster with spec.topology to a
// Topology: spec.topology flattened into spec, plus clusterNetwork and paused.
func TopologyFromCluster(u *unstructured.Unstructured) (*v1alpha1.Topology, error) {
	t := &v1alpha1.Topology{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.TopologyKind},
		ObjectMeta: carriedMeta(u),
	}
	topo, _, _ := unstructured.NestedMap(u.Object, "spec", "topology")
	if err := decodeStrict(topo, &t.Spec); err != nil {
		return nil, fmt.Errorf("spec.topology: %w", err)
	}
	if n, found, _ := unstructured.NestedMap(u.Object, "spec", "clusterNetwork"); found {
		t.Spec.ClusterNetwork = &v1alpha1.ClusterNetwork{}
		if err := decodeStrict(n, t.Spec.ClusterNetwork); err != nil {
			return nil, fmt.Errorf("spec.clusterNetwork: %w", err)
		}
	}
	if p, found, _ := unstructured.NestedBool(u.Object, "spec", "paused"); found {
		t.Spec.Paused = p
	}
	return t, nil
}

// carriedMeta keeps what identifies and describes an object, not what the
// server manages.
func carriedMeta(u *unstructured.Unstructured) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        u.GetName(),
		Namespace:   u.GetNamespace(),
		UID:         u.GetUID(),
		Labels:      u.GetLabels(),
		Annotations: u.GetAnnotations(),
	}
}
