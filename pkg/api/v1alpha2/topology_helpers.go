package v1alpha2

import "k8s.io/apimachinery/pkg/types"

// GetClassKey names the Topology's TopologyClass: spec.classRef.namespace, or the
// Topology's own namespace when that is empty — as upstream's
// Cluster.GetClassKey does for ClusterClasses.
func (t *Topology) GetClassKey() types.NamespacedName {
	ns := t.Spec.ClassRef.Namespace
	if ns == "" {
		ns = t.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: t.Spec.ClassRef.Name}
}

// MachineDeployment is the topology's MachineDeployment called name, or nil.
func (t *Topology) MachineDeployment(name string) *MachineDeploymentTopology {
	if t.Spec.Workers == nil {
		return nil
	}
	for i := range t.Spec.Workers.MachineDeployments {
		if t.Spec.Workers.MachineDeployments[i].Name == name {
			return &t.Spec.Workers.MachineDeployments[i]
		}
	}
	return nil
}

// MachinePool is the topology's MachinePool called name, or nil.
func (t *Topology) MachinePool(name string) *MachinePoolTopology {
	if t.Spec.Workers == nil {
		return nil
	}
	for i := range t.Spec.Workers.MachinePools {
		if t.Spec.Workers.MachinePools[i].Name == name {
			return &t.Spec.Workers.MachinePools[i]
		}
	}
	return nil
}

// Parts lists the rollout summary's parts in rollout order: the control
// plane, then each MachineDeployment, then each MachinePool.
func (s *TopologyStatus) Parts() []PartStatus {
	var parts []PartStatus
	if s.ControlPlane != nil {
		parts = append(parts, *s.ControlPlane)
	}
	parts = append(parts, s.MachineDeployments...)
	return append(parts, s.MachinePools...)
}

// ClassKeyField is the field index of Topologies by their class: the agent's
// cache answers "which Topologies use this class" from it.
const ClassKeyField = "spec.classKey"

// ClassKeyValue is what ClassKeyField holds for a class: "namespace/name".
func ClassKeyValue(class types.NamespacedName) string {
	return class.Namespace + "/" + class.Name
}

// ClassKeyOf extracts the ClassKeyField value of a Topology, for the indexer.
func ClassKeyOf(o interface{ GetClassKey() types.NamespacedName }) []string {
	return []string{ClassKeyValue(o.GetClassKey())}
}
