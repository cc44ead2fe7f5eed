package engine

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// ClassesCompatible checks that clusters stamped from current can be moved
// to desired: a class update, or a Topology switching ("rebasing") from one
// class to another. As upstream, the infrastructure cluster, control plane
// and machine templates must keep their API group and kind, and so must the
// infrastructure of every MachineDeployment and MachinePool class both
// define; anything else is a change of provider the clusters cannot follow.
func ClassesCompatible(current, desired *v1alpha2.TopologyClass) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	cs, ds := current.Spec, desired.Spec
	errs = append(errs, refsCompatible(cs.Infrastructure.TemplateRef, ds.Infrastructure.TemplateRef, spec.Child("infrastructure", "templateRef"))...)
	errs = append(errs, refsCompatible(cs.ControlPlane.TemplateRef, ds.ControlPlane.TemplateRef, spec.Child("controlPlane", "templateRef"))...)
	errs = append(errs, refsCompatible(cs.ControlPlane.MachineInfrastructure.TemplateRef, ds.ControlPlane.MachineInfrastructure.TemplateRef, spec.Child("controlPlane", "machineInfrastructure", "templateRef"))...)
	for i, d := range ds.Workers.MachineDeployments {
		for _, c := range cs.Workers.MachineDeployments {
			if c.Class == d.Class {
				errs = append(errs, refsCompatible(c.Infrastructure.TemplateRef, d.Infrastructure.TemplateRef, spec.Child("workers", "machineDeployments").Index(i).Child("infrastructure", "templateRef"))...)
			}
		}
	}
	for i, d := range ds.Workers.MachinePools {
		for _, c := range cs.Workers.MachinePools {
			if c.Class == d.Class {
				errs = append(errs, refsCompatible(c.Infrastructure.TemplateRef, d.Infrastructure.TemplateRef, spec.Child("workers", "machinePools").Index(i).Child("infrastructure", "templateRef"))...)
			}
		}
	}
	return errs
}

func refsCompatible(current, desired v1alpha2.ClusterClassTemplateReference, p *field.Path) field.ErrorList {
	if !current.IsDefined() || !desired.IsDefined() {
		return nil // a missing reference is the class validation's to report
	}
	cg := schema.FromAPIVersionAndKind(current.APIVersion, current.Kind).GroupKind()
	dg := schema.FromAPIVersionAndKind(desired.APIVersion, desired.Kind).GroupKind()
	var errs field.ErrorList
	if cg.Group != dg.Group {
		errs = append(errs, field.Forbidden(p.Child("apiVersion"), fmt.Sprintf("the API group cannot change from %q to %q: clusters using the class would change provider", cg.Group, dg.Group)))
	}
	if cg.Kind != dg.Kind {
		errs = append(errs, field.Forbidden(p.Child("kind"), fmt.Sprintf("the kind cannot change from %q to %q: clusters using the class would change provider", cg.Kind, dg.Kind)))
	}
	return errs
}
