package engine

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
)

// TemplateRef is one template reference of a class, with the field it is in.
type TemplateRef struct {
	corev1.ObjectReference
	Field string
}

// ClassTemplateRefs lists every template a class references, namespace filled in.
func ClassTemplateRefs(c *v1alpha1.TopologyClass) []TemplateRef {
	var out []TemplateRef
	VisitTemplateRefs(c, func(ref *corev1.ObjectReference, field string) {
		r := TemplateRef{ObjectReference: *ref, Field: field}
		if r.Namespace == "" {
			r.Namespace = c.Namespace
		}
		out = append(out, r)
	})
	return out
}

// VisitTemplateRefs calls visit with every template reference of a class,
// in place, and the field it is in.
func VisitTemplateRefs(c *v1alpha1.TopologyClass, visit func(ref *corev1.ObjectReference, field string)) {
	add := func(ref *corev1.ObjectReference, field string) {
		if ref != nil {
			visit(ref, field)
		}
	}
	s := &c.Spec
	add(s.Infrastructure.Ref, "spec.infrastructure.ref")
	add(s.ControlPlane.Ref, "spec.controlPlane.ref")
	if s.ControlPlane.MachineInfrastructure != nil {
		add(s.ControlPlane.MachineInfrastructure.Ref, "spec.controlPlane.machineInfrastructure.ref")
	}
	for i := range s.Workers.MachineDeployments {
		md := &s.Workers.MachineDeployments[i]
		p := "spec.workers.machineDeployments[" + strconv.Itoa(i) + "].template."
		add(md.Template.Bootstrap.Ref, p+"bootstrap.ref")
		add(md.Template.Infrastructure.Ref, p+"infrastructure.ref")
	}
	for i := range s.Workers.MachinePools {
		mp := &s.Workers.MachinePools[i]
		p := "spec.workers.machinePools[" + strconv.Itoa(i) + "].template."
		add(mp.Template.Bootstrap.Ref, p+"bootstrap.ref")
		add(mp.Template.Infrastructure.Ref, p+"infrastructure.ref")
	}
}

// GeneratedKinds are the kinds of the objects a topology of class c consists
// of, besides the Cluster: what the agent and live plans list to find the
// current state.
func GeneratedKinds(c *v1alpha1.TopologyClass) []schema.GroupVersionKind {
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	add := func(gvk schema.GroupVersionKind) {
		if !seen[gvk] {
			seen[gvk] = true
			out = append(out, gvk)
		}
	}
	capi := func(kind string) schema.GroupVersionKind {
		return ClusterAPIGroupVersion().WithKind(kind)
	}
	add(capi("MachineDeployment"))
	add(capi("MachinePool"))
	add(capi("MachineHealthCheck"))
	s := c.Spec
	fromRef := func(ref *corev1.ObjectReference, trim bool) {
		if ref == nil {
			return
		}
		gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
		if trim {
			gvk.Kind = TrimTemplateSuffix(gvk.Kind)
		}
		add(gvk)
	}
	fromRef(s.Infrastructure.Ref, true)
	fromRef(s.ControlPlane.Ref, true)
	if s.ControlPlane.MachineInfrastructure != nil {
		fromRef(s.ControlPlane.MachineInfrastructure.Ref, false)
	}
	for _, md := range s.Workers.MachineDeployments {
		fromRef(md.Template.Bootstrap.Ref, false)
		fromRef(md.Template.Infrastructure.Ref, false)
	}
	for _, mp := range s.Workers.MachinePools {
		// A MachinePool gets a bootstrap config and an infrastructure pool, not templates.
		fromRef(mp.Template.Bootstrap.Ref, true)
		fromRef(mp.Template.Infrastructure.Ref, true)
	}
	return out
}

// HasExternalPatches tells whether any of the class's patches is external:
// only then is a Runtime SDK client needed, or are discovered variables possible.
func HasExternalPatches(c *v1alpha1.TopologyClass) bool {
	for _, p := range c.Spec.Patches {
		if p.External != nil {
			return true
		}
	}
	return false
}
