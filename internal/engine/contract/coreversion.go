package contract

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// CoreVersion is the Cluster API core API version the engine writes its
// Cluster, MachineDeployments, MachinePools and MachineHealthChecks in, and
// whose controller's behaviour it follows.
type CoreVersion string

const (
	// CoreV1Beta1 is what Cluster API v1.10 and earlier store: v1.10's objects and rules.
	CoreV1Beta1 CoreVersion = "v1beta1"
	// CoreV1Beta2 is what Cluster API v1.11 and later store: v1.14's objects and rules.
	CoreV1Beta2 CoreVersion = "v1beta2"
)

// ParseCoreVersion checks a user's choice of core version.
func ParseCoreVersion(s string) (CoreVersion, bool) {
	switch CoreVersion(s) {
	case CoreV1Beta1, CoreV1Beta2:
		return CoreVersion(s), true
	}
	return "", false
}

// OrDefault is v1beta1 when unset: callers that know nothing of the
// management cluster keep v1.10's output.
func (v CoreVersion) OrDefault() CoreVersion {
	if v == "" {
		return CoreV1Beta1
	}
	return v
}

// GroupVersion is cluster.x-k8s.io at this version.
func (v CoreVersion) GroupVersion() schema.GroupVersion {
	return schema.GroupVersion{Group: clusterv1.GroupVersion.Group, Version: string(v.OrDefault())}
}

// APIVersion is GroupVersion as an apiVersion string.
func (v CoreVersion) APIVersion() string { return v.GroupVersion().String() }

// IsV1Beta2 reports whether objects are written in v1beta2.
func (v CoreVersion) IsV1Beta2() bool { return v == CoreV1Beta2 }

// Contract is a Cluster API provider contract version: which fields a
// provider's objects have ("v1beta1" or "v1beta2").
type Contract string

// Provider contracts.
const (
	ContractV1Beta1 Contract = "v1beta1"
	ContractV1Beta2 Contract = "v1beta2"
)

// Contracts says which contract each provider kind implements, from its CRD's
// labels.
type Contracts map[schema.GroupKind]Contract

// Of is the contract of the kind of o. A kind whose CRD was not read (an
// offline plan given no CRDs) is taken to implement v1beta2 at an API version
// named v1beta2, as Cluster API's own providers do, and v1beta1 otherwise.
func (cs Contracts) Of(o *unstructured.Unstructured, core CoreVersion) Contract {
	if c, ok := cs[o.GroupVersionKind().GroupKind()]; ok {
		return c
	}
	if core.IsV1Beta2() && o.GroupVersionKind().Version == string(ContractV1Beta2) {
		return ContractV1Beta2
	}
	return ContractV1Beta1
}

// ContractsFromCRDs reads, from the CRDs among objs, the contracts of the
// class's provider kinds at the versions the class names them in.
func ContractsFromCRDs(objs []*unstructured.Unstructured, class *v1alpha2.TopologyClass) Contracts {
	versions := map[schema.GroupKind]string{}
	for _, gvk := range GeneratedKinds(class, CoreV1Beta2) {
		versions[gvk.GroupKind()] = gvk.Version
	}
	out := Contracts{}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		gk := schema.GroupKind{Group: group, Kind: kind}
		if v, ok := versions[gk]; ok {
			if c, ok := ContractOfVersion(o.GetLabels(), v); ok {
				out[gk] = c
			}
		}
	}
	return out
}

// ContractRef is a reference as the contract writes it: v1beta2 names the API
// group only (the reader picks the version), v1beta1 the full apiVersion and
// the namespace.
func ContractRef(o *unstructured.Unstructured, c Contract, apiVersion string) map[string]any {
	if c == ContractV1Beta2 {
		return map[string]any{"apiGroup": o.GroupVersionKind().Group, "kind": o.GetKind(), "name": o.GetName()}
	}
	return map[string]any{"apiVersion": apiVersion, "kind": o.GetKind(), "name": o.GetName(), "namespace": o.GetNamespace()}
}

// MachineTemplatePath is where a control plane keeps a field of its machine
// template: v1beta2's contract moved them from spec.machineTemplate to
// spec.machineTemplate.spec (metadata stays in spec.machineTemplate).
func MachineTemplatePath(c Contract, field ...string) []string {
	path := []string{"spec", "machineTemplate"}
	if c == ContractV1Beta2 {
		path = append(path, "spec")
	}
	return append(path, field...)
}

// PoolInfrastructureRefPath and PoolBootstrapRefPath are where a
// MachineDeployment, MachinePool or MachineSet refers to what its Machines
// are made from: the infrastructure template and the bootstrap config (a
// template, or a MachinePool's own config).
var (
	PoolInfrastructureRefPath = []string{"spec", "template", "spec", "infrastructureRef"}
	PoolBootstrapRefPath      = []string{"spec", "template", "spec", "bootstrap", "configRef"}
)

// PoolTemplateRefPaths are both of a pool's references.
var PoolTemplateRefPaths = [][]string{PoolInfrastructureRefPath, PoolBootstrapRefPath}

// MachineTemplateRef is a control plane's reference to its machine template,
// wherever its contract keeps it; nil when it has none.
func MachineTemplateRef(cp *unstructured.Unstructured) map[string]any {
	for _, c := range contractLabels {
		if r, found, _ := unstructured.NestedMap(cp.Object, MachineTemplatePath(c, "infrastructureRef")...); found {
			return r
		}
	}
	return nil
}
