package desiredstate

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
)

// InUse is every object that users (a control plane, pools, MachineSets)
// refer to as their Machines' templates, in namespace. A template still in
// use is kept whatever the desired state says, or a MachineSet still rolling
// would point at nothing: the agent deletes only what this leaves out, and
// `plan` lists only that as deleted.
func InUse(users []*unstructured.Unstructured, namespace string) map[contract.ObjectKey]bool {
	out := map[contract.ObjectKey]bool{}
	for _, o := range users {
		pool := false
		for _, path := range contract.PoolTemplateRefPaths {
			if ref, found, _ := unstructured.NestedMap(o.Object, path...); found {
				out[contract.KeyOfReference(ref, namespace)] = true
				pool = true
			}
		}
		if pool {
			continue
		}
		if ref := contract.MachineTemplateRef(o); ref != nil {
			out[contract.KeyOfReference(ref, namespace)] = true
		}
	}
	return out
}
