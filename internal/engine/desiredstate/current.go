package desiredstate

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// StateFromObjects finds, among existing objects, the ones that make up a
// cluster's topology: the Cluster, what its references point to, and the pools
// and health checks labelled for it.
func StateFromObjects(cluster string, namespace string, objs []*unstructured.Unstructured) *clusterstate.State {
	s := &clusterstate.State{MachineDeployments: map[string]*clusterstate.Worker{}, MachinePools: map[string]*clusterstate.Worker{}}
	byRef := map[clusterstate.Key]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetNamespace() == namespace {
			byRef[clusterstate.KeyOf(o)] = o
		}
	}
	byReference := func(r map[string]any) *unstructured.Unstructured {
		if r == nil {
			return nil
		}
		return byRef[clusterstate.KeyOfReference(r, namespace)]
	}
	follow := func(o *unstructured.Unstructured, path ...string) *unstructured.Unstructured {
		if o == nil {
			return nil
		}
		r, _, _ := unstructured.NestedMap(o.Object, path...)
		return byReference(r)
	}
	mhc := func(name string) *unstructured.Unstructured {
		return byRef[clusterstate.Key{Group: clusterv1.GroupVersion.Group, Kind: "MachineHealthCheck", Namespace: namespace, Name: name}]
	}
	s.Cluster = byRef[clusterstate.Key{Group: clusterv1.GroupVersion.Group, Kind: "Cluster", Namespace: namespace, Name: cluster}]
	s.InfrastructureCluster = follow(s.Cluster, "spec", "infrastructureRef")
	s.ControlPlane.Object = follow(s.Cluster, "spec", "controlPlaneRef")
	if s.ControlPlane.Object != nil {
		s.ControlPlane.InfrastructureMachineTemplate = byReference(contract.MachineTemplateRef(s.ControlPlane.Object))
		s.ControlPlane.MachineHealthCheck = mhc(s.ControlPlane.Object.GetName())
	}
	for _, o := range objs {
		if o.GetNamespace() != namespace || o.GetLabels()[clusterv1.ClusterNameLabel] != cluster {
			continue
		}
		if _, owned := o.GetLabels()[clusterv1.ClusterTopologyOwnedLabel]; !owned {
			continue
		}
		pools, label := s.MachineDeployments, clusterv1.ClusterTopologyMachineDeploymentNameLabel
		switch o.GetKind() {
		case "MachineDeployment":
		case "MachinePool":
			pools, label = s.MachinePools, clusterv1.ClusterTopologyMachinePoolNameLabel
		default:
			continue
		}
		w := &clusterstate.Worker{
			Object:         o,
			Bootstrap:      follow(o, contract.PoolBootstrapRefPath...),
			Infrastructure: follow(o, contract.PoolInfrastructureRefPath...),
		}
		if o.GetKind() == "MachineDeployment" {
			w.MachineHealthCheck = mhc(o.GetName())
		}
		pools[o.GetLabels()[label]] = w
	}
	return s
}

// Adopt completes s with the InfrastructureCluster and control plane (and
// its machine template) an earlier reconcile created before the Cluster
// existed: owned by the Topology (uid) and labelled for the cluster, but not
// yet referenced by a Cluster. A restarted agent then reuses them instead of
// making duplicates, and previews show them as existing. Objects handed over
// by an adopt (kind → name, see HandedOver) are taken by name as well: the
// ownerReference adopt set may not have reached the agent's cache yet.
func Adopt(s *clusterstate.State, c *v1alpha2.TopologyClass, uid types.UID, handed map[string]string, objs []*unstructured.Unstructured) {
	infra, controlPlane, cpMachine := contract.ClassSlots(c)
	find := func(kind string) *unstructured.Unstructured {
		for _, o := range objs {
			if o.GetKind() == kind && (OwnedBy(o, uid) || handed[kind] == o.GetName()) {
				return o
			}
		}
		return nil
	}
	if s.InfrastructureCluster == nil && infra.Defined() {
		s.InfrastructureCluster = find(contract.TrimTemplateSuffix(infra.Kind()))
	}
	if s.ControlPlane.Object != nil || !controlPlane.Defined() {
		return
	}
	cp := find(contract.TrimTemplateSuffix(controlPlane.Kind()))
	if cp == nil {
		return
	}
	s.ControlPlane.Object = cp
	name, _ := contract.MachineTemplateRef(cp)["name"].(string)
	if cpMachine.Defined() {
		for _, o := range objs {
			if o.GetName() == name && o.GetKind() == cpMachine.Kind() {
				s.ControlPlane.InfrastructureMachineTemplate = o
			}
		}
	}
}

// HandedOver reads a Topology's HandedOverAnnotation: kind → name of each
// object an adopt handed to it. Malformed pairs are skipped.
func HandedOver(t *v1alpha2.Topology) map[string]string {
	v := t.Annotations[v1alpha2.HandedOverAnnotation]
	if v == "" {
		return nil
	}
	out := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		if kind, name, ok := strings.Cut(strings.TrimSpace(pair), "/"); ok && kind != "" && name != "" {
			out[kind] = name
		}
	}
	return out
}

// HandOver records on t that the objects of refs (Cluster references:
// kind and name) are handed to it; see HandedOver.
func HandOver(t *v1alpha2.Topology, refs ...map[string]any) {
	var pairs []string
	for _, r := range refs {
		kind, _ := r["kind"].(string)
		name, _ := r["name"].(string)
		if kind != "" && name != "" {
			pairs = append(pairs, kind+"/"+name)
		}
	}
	if len(pairs) == 0 {
		return
	}
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[v1alpha2.HandedOverAnnotation] = strings.Join(pairs, ",")
}

// OwnedBy reports whether uid is among the owners of o.
func OwnedBy(o *unstructured.Unstructured, uid types.UID) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == uid {
			return true
		}
	}
	return false
}

// Unresolved is every reference of s's Cluster, control plane and pools that
// points at none of the objects s was found among: the Cluster's
// infrastructure and control plane, the control plane's machine template,
// each pool's bootstrap and infrastructure. A desired state computed from s
// makes each of them anew, under a new name, and points its referrer there.
func Unresolved(s *clusterstate.State) []map[string]any {
	var out []map[string]any
	// A nil referrer has no reference, so only found decides.
	add := func(found *unstructured.Unstructured, ref map[string]any) {
		if found == nil && ref != nil {
			out = append(out, ref)
		}
	}
	at := func(o *unstructured.Unstructured, path []string) map[string]any {
		if o == nil {
			return nil
		}
		r, _, _ := unstructured.NestedMap(o.Object, path...)
		return r
	}
	add(s.InfrastructureCluster, at(s.Cluster, []string{"spec", "infrastructureRef"}))
	add(s.ControlPlane.Object, at(s.Cluster, []string{"spec", "controlPlaneRef"}))
	if cp := s.ControlPlane.Object; cp != nil {
		add(s.ControlPlane.InfrastructureMachineTemplate, contract.MachineTemplateRef(cp))
	}
	for _, pools := range []map[string]*clusterstate.Worker{s.MachineDeployments, s.MachinePools} {
		for _, name := range slices.Sorted(maps.Keys(pools)) {
			w := pools[name]
			add(w.Bootstrap, at(w.Object, contract.PoolBootstrapRefPath))
			add(w.Infrastructure, at(w.Object, contract.PoolInfrastructureRefPath))
		}
	}
	return out
}
