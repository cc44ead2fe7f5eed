// Package clusterstate is the objects of one cluster as the engine holds
// them, desired or current: the Cluster, its infrastructure cluster, its
// control plane and pools each with what belongs to them, and the keys
// they are found by. The desired state and the observed one are both of
// this shape, as upstream's scope holds its ClusterState twice.
package clusterstate

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ControlPlane is the control plane object with what belongs to it.
type ControlPlane struct {
	// Object is the control plane (e.g. KubeadmControlPlane).
	Object *unstructured.Unstructured
	// InfrastructureMachineTemplate is the cloned template of control plane Machines.
	InfrastructureMachineTemplate *unstructured.Unstructured
	// MachineHealthCheck of control plane Machines.
	MachineHealthCheck *unstructured.Unstructured
}

// Worker is one MachineDeployment or MachinePool with what belongs to it.
type Worker struct {
	// Object is the MachineDeployment or MachinePool.
	Object *unstructured.Unstructured
	// Bootstrap is the cloned bootstrap template (MD) or the bootstrap config (MP).
	Bootstrap *unstructured.Unstructured
	// Infrastructure is the cloned machine template (MD) or the infra machine pool (MP).
	Infrastructure *unstructured.Unstructured
	// MachineHealthCheck of the MachineDeployment's Machines.
	MachineHealthCheck *unstructured.Unstructured
}

// State is every object a topology consists of.
type State struct {
	// Cluster is the CAPI Cluster.
	Cluster *unstructured.Unstructured
	// InfrastructureCluster is e.g. a DockerCluster.
	InfrastructureCluster *unstructured.Unstructured
	// ControlPlane and its objects.
	ControlPlane ControlPlane
	// MachineDeployments by topology name.
	MachineDeployments map[string]*Worker
	// MachinePools by topology name.
	MachinePools map[string]*Worker
	// Extra objects: the cluster shim Secret of the upstream dialect.
	Extra []*unstructured.Unstructured
}

// Objects lists every object of the state in a stable order: cluster-level
// objects first, then pools by topology name.
func (s *State) Objects() []*unstructured.Unstructured {
	if s == nil {
		return nil
	}
	var out []*unstructured.Unstructured
	add := func(objs ...*unstructured.Unstructured) {
		for _, o := range objs {
			if o != nil {
				out = append(out, o)
			}
		}
	}
	add(s.Extra...)
	add(s.InfrastructureCluster, s.ControlPlane.InfrastructureMachineTemplate, s.ControlPlane.Object, s.ControlPlane.MachineHealthCheck, s.Cluster)
	for _, name := range slices.Sorted(maps.Keys(s.MachineDeployments)) {
		w := s.MachineDeployments[name]
		add(w.Bootstrap, w.Infrastructure, w.Object, w.MachineHealthCheck)
	}
	for _, name := range slices.Sorted(maps.Keys(s.MachinePools)) {
		w := s.MachinePools[name]
		add(w.Bootstrap, w.Infrastructure, w.Object)
	}
	return out
}

// Key identifies an object regardless of its API version.
type Key struct {
	Group     string
	Kind      string
	Namespace string
	Name      string
}

// KeyOf returns the key of an object.
func KeyOf(o *unstructured.Unstructured) Key {
	gv, _ := schema.ParseGroupVersion(o.GetAPIVersion())
	return Key{Group: gv.Group, Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()}
}

// KeyOfReference is the key of the object a reference in namespace points
// at: a v1beta1 reference names its apiVersion, a v1beta2 one its apiGroup.
func KeyOfReference(r map[string]any, namespace string) Key {
	kind, _ := r["kind"].(string)
	name, _ := r["name"].(string)
	group, ok := r["apiGroup"].(string)
	if !ok {
		av, _ := r["apiVersion"].(string)
		gv, _ := schema.ParseGroupVersion(av)
		group = gv.Group
	}
	return Key{Group: group, Kind: kind, Namespace: namespace, Name: name}
}

// String renders the key as Kind/namespace/name.
func (k Key) String() string {
	return fmt.Sprintf("%s/%s/%s", k.Kind, k.Namespace, k.Name)
}

// TemplateIndex finds the provider templates a class references.
type TemplateIndex struct {
	byKey map[Key]*unstructured.Unstructured
}

// NewTemplateIndex indexes objects by group, kind, namespace and name.
func NewTemplateIndex(objs ...*unstructured.Unstructured) *TemplateIndex {
	ix := &TemplateIndex{byKey: make(map[Key]*unstructured.Unstructured, len(objs))}
	for _, o := range objs {
		ix.Add(o)
	}
	return ix
}

// Add indexes one object.
func (ix *TemplateIndex) Add(o *unstructured.Unstructured) {
	ix.byKey[KeyOf(o)] = o
}

// Len is the number of indexed objects.
func (ix *TemplateIndex) Len() int { return len(ix.byKey) }

// Get finds a template by apiVersion, kind, namespace and name. The version of
// the reference may differ from the stored object's: templates are matched by
// group, like the API server serves every version of a kind.
func (ix *TemplateIndex) Get(apiVersion, kind, namespace, name string) (*unstructured.Unstructured, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false
	}
	o, ok := ix.byKey[Key{Group: gv.Group, Kind: kind, Namespace: namespace, Name: name}]
	return o, ok
}

// ClonesOf maps each object the state creates for exactly one other object
// (the control plane's machine template, a pool's bootstrap and
// infrastructure template or object) to the object that references it.
// Such a clone is useless, and a leak, unless its referrer can be written
// too, which is why the agent checks the referrer before creating a clone.
func (s *State) ClonesOf() map[Key]*unstructured.Unstructured {
	out := map[Key]*unstructured.Unstructured{}
	add := func(clone, referrer *unstructured.Unstructured) {
		if clone != nil && referrer != nil {
			out[KeyOf(clone)] = referrer
		}
	}
	add(s.ControlPlane.InfrastructureMachineTemplate, s.ControlPlane.Object)
	for _, pools := range []map[string]*Worker{s.MachineDeployments, s.MachinePools} {
		for _, w := range pools {
			add(w.Bootstrap, w.Object)
			add(w.Infrastructure, w.Object)
		}
	}
	return out
}
