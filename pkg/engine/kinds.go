package engine

import (
	"strconv"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TemplateRef is one template reference of a class, with its namespace (the
// class's) and the field it is in.
type TemplateRef struct {
	APIVersion, Kind, Namespace, Name string
	Field                             string
}

// ClassTemplateRefs lists every template a class references, namespace filled in.
func ClassTemplateRefs(c *v1alpha2.TopologyClass) []TemplateRef {
	var out []TemplateRef
	VisitTemplateRefs(c, func(ref *v1alpha2.ClusterClassTemplateReference, field string) {
		out = append(out, TemplateRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: c.Namespace, Name: ref.Name, Field: field})
	})
	return out
}

// VisitTemplateRefs calls visit with every template reference of a class,
// in place, and the field it is in.
func VisitTemplateRefs(c *v1alpha2.TopologyClass, visit func(ref *v1alpha2.ClusterClassTemplateReference, field string)) {
	add := func(ref *v1alpha2.ClusterClassTemplateReference, field string) {
		if ref.IsDefined() {
			visit(ref, field)
		}
	}
	s := &c.Spec
	add(&s.Infrastructure.TemplateRef, "spec.infrastructure.templateRef")
	add(&s.ControlPlane.TemplateRef, "spec.controlPlane.templateRef")
	add(&s.ControlPlane.MachineInfrastructure.TemplateRef, "spec.controlPlane.machineInfrastructure.templateRef")
	for i := range s.Workers.MachineDeployments {
		md := &s.Workers.MachineDeployments[i]
		p := "spec.workers.machineDeployments[" + strconv.Itoa(i) + "]."
		add(&md.Bootstrap.TemplateRef, p+"bootstrap.templateRef")
		add(&md.Infrastructure.TemplateRef, p+"infrastructure.templateRef")
	}
	for i := range s.Workers.MachinePools {
		mp := &s.Workers.MachinePools[i]
		p := "spec.workers.machinePools[" + strconv.Itoa(i) + "]."
		add(&mp.Bootstrap.TemplateRef, p+"bootstrap.templateRef")
		add(&mp.Infrastructure.TemplateRef, p+"infrastructure.templateRef")
	}
}

// GeneratedKinds are the kinds of the objects a topology of class c consists
// of, besides the Cluster: what the agent and live plans list to find the
// current state.
func GeneratedKinds(c *v1alpha2.TopologyClass, core CoreVersion) []schema.GroupVersionKind {
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	add := func(gvk schema.GroupVersionKind) {
		if !seen[gvk] {
			seen[gvk] = true
			out = append(out, gvk)
		}
	}
	capi := func(kind string) schema.GroupVersionKind {
		return core.GroupVersion().WithKind(kind)
	}
	add(capi("MachineDeployment"))
	add(capi("MachinePool"))
	add(capi("MachineHealthCheck"))
	s := c.Spec
	fromRef := func(ref v1alpha2.ClusterClassTemplateReference, trim bool) {
		if !ref.IsDefined() {
			return
		}
		gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
		if trim {
			gvk.Kind = TrimTemplateSuffix(gvk.Kind)
		}
		add(gvk)
	}
	fromRef(s.Infrastructure.TemplateRef, true)
	fromRef(s.ControlPlane.TemplateRef, true)
	fromRef(s.ControlPlane.MachineInfrastructure.TemplateRef, false)
	for _, md := range s.Workers.MachineDeployments {
		fromRef(md.Bootstrap.TemplateRef, false)
		fromRef(md.Infrastructure.TemplateRef, false)
	}
	for _, mp := range s.Workers.MachinePools {
		// A MachinePool gets a bootstrap config and an infrastructure pool, not templates.
		fromRef(mp.Bootstrap.TemplateRef, true)
		fromRef(mp.Infrastructure.TemplateRef, true)
	}
	return out
}

// HasExternalPatches tells whether any of the class's patches is external:
// only then is a Runtime SDK client needed, or are discovered variables possible.
func HasExternalPatches(c *v1alpha2.TopologyClass) bool {
	for _, p := range c.Spec.Patches {
		if p.External != nil {
			return true
		}
	}
	return false
}
