package v1alpha1

import "k8s.io/apimachinery/pkg/types"

// GetClassKey names the Topology's TopologyClass: spec.classNamespace, or the
// Topology's own namespace when that is empty — as upstream's
// Cluster.GetClassKey does for ClusterClasses.
func (t *Topology) GetClassKey() types.NamespacedName {
	ns := t.Spec.ClassNamespace
	if ns == "" {
		ns = t.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: t.Spec.Class}
}
