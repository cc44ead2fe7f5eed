package rules

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// ClassesCompatible checks that clusters stamped from current can be moved
// to desired: a class update, or a Topology switching ("rebasing") from one
// class to another. As upstream, the infrastructure cluster, control plane
// and machine templates must keep their API group and kind, and so must the
// infrastructure of every MachineDeployment and MachinePool class both
// define; anything else is a change of provider the clusters cannot follow.
func ClassesCompatible(current, desired *v1alpha2.TopologyClass) field.ErrorList {
	// A template may move between templateRef and template: only its group
	// and kind matter to the clusters.
	var errs field.ErrorList
	ci, ccp, cmi := contract.ClassSlots(current)
	di, dcp, dmi := contract.ClassSlots(desired)
	errs = append(errs, slotsCompatible(ci, di)...)
	errs = append(errs, slotsCompatible(ccp, dcp)...)
	errs = append(errs, slotsCompatible(cmi, dmi)...)
	currentWorkers := contract.WorkerClasses(current)
	for _, d := range contract.WorkerClasses(desired) {
		for _, c := range currentWorkers {
			if c.Deployment == d.Deployment && c.Name == d.Name {
				errs = append(errs, slotsCompatible(c.Infrastructure, d.Infrastructure)...)
			}
		}
	}
	return errs
}

func slotsCompatible(current, desired contract.TemplateSlot) field.ErrorList {
	if !current.Defined() || !desired.Defined() {
		return nil // a missing template is the class validation's to report
	}
	cg, dg := current.GroupKind(), desired.GroupKind()
	p := desired.Field()
	var errs field.ErrorList
	if cg.Group != dg.Group {
		errs = append(errs, field.Forbidden(p.Child("apiVersion"), fmt.Sprintf("the API group cannot change from %q to %q: clusters using the class would change provider", cg.Group, dg.Group)))
	}
	if cg.Kind != dg.Kind {
		errs = append(errs, field.Forbidden(p.Child("kind"), fmt.Sprintf("the kind cannot change from %q to %q: clusters using the class would change provider", cg.Kind, dg.Kind)))
	}
	return errs
}
