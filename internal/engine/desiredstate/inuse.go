package desiredstate

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/core"
)

// InUse is every object that users (a control plane, pools, MachineSets)
// refer to as their Machines' templates, in namespace. A template still in
// use is kept whatever the desired state says, or a MachineSet still rolling
// would point at nothing: the agent deletes only what this leaves out, and
// `plan` lists only that as deleted. Cluster API's own kinds are read as
// upstream's types, at either core version; a control plane is a provider's
// object, read where its contract keeps the reference.
func InUse(users []*unstructured.Unstructured, namespace string) (map[clusterstate.Key]bool, error) {
	out := map[clusterstate.Key]bool{}
	use := func(spec clusterv1.MachineSpec) {
		for _, ref := range []clusterv1.ContractVersionedObjectReference{spec.InfrastructureRef, spec.Bootstrap.ConfigRef} {
			if ref.IsDefined() {
				out[clusterstate.Key{Group: ref.APIGroup, Kind: ref.Kind, Namespace: namespace, Name: ref.Name}] = true
			}
		}
	}
	for _, o := range users {
		if o.GroupVersionKind().Group != clusterv1.GroupVersion.Group {
			if ref := contract.MachineTemplateRef(o); ref != nil {
				out[clusterstate.KeyOfReference(ref, namespace)] = true
			}
			continue
		}
		switch o.GetKind() {
		case "MachineSet":
			ms, err := core.MachineSet(o)
			if err != nil {
				return nil, err
			}
			use(ms.Spec.Template.Spec)
		case "MachineDeployment":
			md, err := core.MachineDeployment(o)
			if err != nil {
				return nil, err
			}
			use(md.Spec.Template.Spec)
		case "MachinePool":
			mp, err := core.MachinePool(o)
			if err != nil {
				return nil, err
			}
			use(mp.Spec.Template.Spec)
		}
	}
	return out, nil
}
