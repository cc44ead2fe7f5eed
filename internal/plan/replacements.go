package plan

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/apply"
)

// Replacement is a part whose Machines a plan replaces: Cluster API rolls
// Machines out when the fields they are built from change, not when only
// replicas or metadata do.
type Replacement struct {
	// Kind and Name of the changed object: a control plane, MachineDeployment or MachinePool.
	Kind, Name string
	// Machines is how many Machines are replaced: the object's replicas now.
	Machines int64
	// Why names the field that changes and forces the rollout.
	Why string
}

// String reads as one preview line.
func (r Replacement) String() string {
	return fmt.Sprintf("%s %s: %d machine(s) replaced (%s changes)", r.Kind, r.Name, r.Machines, r.Why)
}

// machineFields are, per kind, the fields whose change rolls Machines out.
// A control plane's are the contract's version and machine template plus
// kubeadm's config; pools roll out when their machine template spec changes.
var machineFields = map[string][][]string{
	"MachineDeployment":   {{"spec", "template", "spec"}},
	"MachinePool":         {{"spec", "template", "spec"}},
	"KubeadmControlPlane": {{"spec", "version"}, {"spec", "machineTemplate", "infrastructureRef"}, {"spec", "machineTemplate", "spec", "infrastructureRef"}, {"spec", "kubeadmConfigSpec"}},
}

// controlPlaneFields apply to control plane kinds other than kubeadm's; the
// machine template's reference is where either contract keeps it.
var controlPlaneFields = [][]string{{"spec", "version"}, {"spec", "machineTemplate", "infrastructureRef"}, {"spec", "machineTemplate", "spec", "infrastructureRef"}}

// Replacements lists the modified objects whose change replaces Machines,
// in the plan's order. controlPlaneKind is the kind of the topology's control
// plane (clusterstate.State's), so that a provider's own control plane counts too.
func Replacements(p *Plan, controlPlaneKind string) []Replacement {
	var out []Replacement
	for _, c := range p.Changes {
		if c.Action != Modified || c.Before == nil {
			continue
		}
		kind := c.Object.GetKind()
		fields, ok := machineFields[kind]
		if !ok && kind == controlPlaneKind {
			fields, ok = controlPlaneFields, true
		}
		if !ok {
			continue
		}
		var why []string
		for _, f := range fields {
			before, _, _ := unstructured.NestedFieldNoCopy(c.Before.Object, f...)
			after, _, _ := unstructured.NestedFieldNoCopy(c.Object.Object, f...)
			if !equality.Semantic.DeepEqual(apply.ReferencesByGroup(before), apply.ReferencesByGroup(after)) {
				why = append(why, strings.Join(f, "."))
			}
		}
		if len(why) == 0 {
			continue
		}
		sort.Strings(why)
		replicas, _, _ := unstructured.NestedInt64(c.Before.Object, "spec", "replicas")
		out = append(out, Replacement{Kind: kind, Name: c.Object.GetName(), Machines: replicas, Why: strings.Join(why, ", ")})
	}
	return out
}
