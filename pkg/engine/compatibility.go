package engine

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
)

// ClassesCompatible checks that clusters stamped from current can be moved
// to desired: a class update, or a Topology switching ("rebasing") from one
// class to another. As upstream, the infrastructure cluster, control plane
// and machine templates must keep their API group and kind, and so must the
// infrastructure of every MachineDeployment and MachinePool class both
// define; anything else is a change of provider the clusters cannot follow.
func ClassesCompatible(current, desired *v1alpha1.TopologyClass) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	cs, ds := current.Spec, desired.Spec
	errs = append(errs, refsCompatible(cs.Infrastructure.Ref, ds.Infrastructure.Ref, spec.Child("infrastructure", "ref"))...)
	errs = append(errs, refsCompatible(cs.ControlPlane.Ref, ds.ControlPlane.Ref, spec.Child("controlPlane", "ref"))...)
	if cs.ControlPlane.MachineInfrastructure != nil && ds.ControlPlane.MachineInfrastructure != nil {
		errs = append(errs, refsCompatible(cs.ControlPlane.MachineInfrastructure.Ref, ds.ControlPlane.MachineInfrastructure.Ref, spec.Child("controlPlane", "machineInfrastructure", "ref"))...)
	}
	for i, d := range ds.Workers.MachineDeployments {
		for _, c := range cs.Workers.MachineDeployments {
			if c.Class == d.Class {
				errs = append(errs, refsCompatible(c.Template.Infrastructure.Ref, d.Template.Infrastructure.Ref, spec.Child("workers", "machineDeployments").Index(i).Child("template", "infrastructure", "ref"))...)
			}
		}
	}
	for i, d := range ds.Workers.MachinePools {
		for _, c := range cs.Workers.MachinePools {
			if c.Class == d.Class {
				errs = append(errs, refsCompatible(c.Template.Infrastructure.Ref, d.Template.Infrastructure.Ref, spec.Child("workers", "machinePools").Index(i).Child("template", "infrastructure", "ref"))...)
			}
		}
	}
	return errs
}

func refsCompatible(current, desired *corev1.ObjectReference, p *field.Path) field.ErrorList {
	if current == nil || desired == nil {
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
