package contract

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TemplateRef is one template reference of a class, with its namespace (the
// class's) and the field it is in.
type TemplateRef struct {
	APIVersion, Kind, Namespace, Name string
	Field                             string
	// Slot is the field holding templateRef and template, for errors that
	// name either.
	Slot *field.Path
}

// ClassTemplateRefs lists every template a class references, namespace filled in.
func ClassTemplateRefs(c *v1alpha2.TopologyClass) []TemplateRef {
	var out []TemplateRef
	for _, s := range AllSlots(c) {
		if ref := s.Ref; ref.IsDefined() {
			out = append(out, TemplateRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: c.Namespace, Name: ref.Name, Field: s.Field().String(), Slot: s.Path})
		}
	}
	return out
}

// VisitTemplateRefs calls visit with every template reference of a class,
// in place, and the field it is in; inline templates are not references.
func VisitTemplateRefs(c *v1alpha2.TopologyClass, visit func(ref *v1alpha2.ClusterClassTemplateReference, field string)) {
	visitSlots(c, func(ref *v1alpha2.ClusterClassTemplateReference, _ **v1alpha2.InlineTemplate, field string) {
		if ref.IsDefined() {
			visit(ref, field+".templateRef")
		}
	})
}

// visitSlots calls visit with both fields of every template slot of a
// class, in place, and the slot's field (e.g. spec.controlPlane).
func visitSlots(c *v1alpha2.TopologyClass, visit func(ref *v1alpha2.ClusterClassTemplateReference, inline **v1alpha2.InlineTemplate, field string)) {
	s := &c.Spec
	visit(&s.Infrastructure.TemplateRef, &s.Infrastructure.Template, "spec.infrastructure")
	visit(&s.ControlPlane.TemplateRef, &s.ControlPlane.Template, "spec.controlPlane")
	mi := &s.ControlPlane.MachineInfrastructure
	visit(&mi.TemplateRef, &mi.Template, "spec.controlPlane.machineInfrastructure")
	for i := range s.Workers.MachineDeployments {
		md := &s.Workers.MachineDeployments[i]
		p := "spec.workers.machineDeployments[" + strconv.Itoa(i) + "]."
		visit(&md.Bootstrap.TemplateRef, &md.Bootstrap.Template, p+"bootstrap")
		visit(&md.Infrastructure.TemplateRef, &md.Infrastructure.Template, p+"infrastructure")
	}
	for i := range s.Workers.MachinePools {
		mp := &s.Workers.MachinePools[i]
		p := "spec.workers.machinePools[" + strconv.Itoa(i) + "]."
		visit(&mp.Bootstrap.TemplateRef, &mp.Bootstrap.Template, p+"bootstrap")
		visit(&mp.Infrastructure.TemplateRef, &mp.Infrastructure.Template, p+"infrastructure")
	}
}

// Inlined is one template InlineTemplates wrote into a class.
type Inlined struct {
	// Field is the slot now holding it, e.g. spec.controlPlane.template.
	Field string
	// Template is the object that was referenced.
	Template *unstructured.Unstructured
}

// InlineTemplates writes into class c, in place, each referenced template
// that find returns and inline chooses, replacing its templateRef; it
// returns what it wrote. A reference find cannot resolve stays as it is.
func InlineTemplates(c *v1alpha2.TopologyClass, find func(ref v1alpha2.ClusterClassTemplateReference) *unstructured.Unstructured, inline func(t *unstructured.Unstructured) (bool, error)) ([]Inlined, error) {
	var out []Inlined
	var firstErr error
	visitSlots(c, func(ref *v1alpha2.ClusterClassTemplateReference, tmpl **v1alpha2.InlineTemplate, field string) {
		if firstErr != nil || !ref.IsDefined() {
			return
		}
		t := find(*ref)
		if t == nil {
			return
		}
		ok, err := inline(t)
		if err != nil {
			firstErr = fmt.Errorf("%s: %w", field+".templateRef", err)
			return
		}
		if !ok {
			return
		}
		it, err := InlineTemplateOf(t)
		if err != nil {
			firstErr = fmt.Errorf("%s: %s %s/%s: %w", field+".templateRef", t.GetKind(), t.GetNamespace(), t.GetName(), err)
			return
		}
		*tmpl, *ref = it, v1alpha2.ClusterClassTemplateReference{}
		out = append(out, Inlined{Field: field + ".template", Template: t})
	})
	return out, firstErr
}

// InlineTemplateOf is a template object as a class's inline template: its
// apiVersion, kind, name (what objects made from it are annotated as cloned
// from), labels, annotations and spec.
func InlineTemplateOf(t *unstructured.Unstructured) (*v1alpha2.InlineTemplate, error) {
	spec, _, _ := unstructured.NestedMap(t.Object, "spec")
	if spec == nil {
		spec = map[string]any{}
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	return &v1alpha2.InlineTemplate{
		APIVersion: t.GetAPIVersion(),
		Kind:       t.GetKind(),
		Name:       t.GetName(),
		Metadata:   v1alpha2.ObjectMeta{Labels: t.GetLabels(), Annotations: t.GetAnnotations()},
		Spec:       apiextensionsv1.JSON{Raw: raw},
	}, nil
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
	fromSlot := func(s TemplateSlot, trim bool) {
		if !s.Defined() {
			return
		}
		gvk := schema.FromAPIVersionAndKind(s.APIVersion(), s.Kind())
		if trim {
			gvk.Kind = TrimTemplateSuffix(gvk.Kind)
		}
		add(gvk)
	}
	infra, controlPlane, cpMachine := ClassSlots(c)
	fromSlot(infra, true)
	fromSlot(controlPlane, true)
	fromSlot(cpMachine, false)
	for _, wc := range WorkerClasses(c) {
		// A MachinePool gets a bootstrap config and an infrastructure pool, not templates.
		fromSlot(wc.Bootstrap, !wc.Deployment)
		fromSlot(wc.Infrastructure, !wc.Deployment)
	}
	return out
}

// MachinePoolKinds are the kinds a class makes for each MachinePool (its
// bootstrap config and infrastructure pool, the templates' kinds less
// "Template"). Cluster API makes objects of such a kind too — a Machine's
// KubeadmConfig — with the Cluster's labels, so only one with the pool-name
// label is a pool's.
func MachinePoolKinds(c *v1alpha2.TopologyClass) map[string]bool {
	out := map[string]bool{}
	for _, wc := range WorkerClasses(c) {
		if wc.Deployment {
			continue
		}
		for _, s := range []TemplateSlot{wc.Bootstrap, wc.Infrastructure} {
			if s.Defined() {
				out[TrimTemplateSuffix(s.Kind())] = true
			}
		}
	}
	return out
}

// MadeForMachine tells whether o, though labelled for the Cluster, is one
// Cluster API made for a Machine: of one of poolKinds (MachinePoolKinds)
// without the pool-name label, as a Machine's KubeadmConfig is.
func MadeForMachine(poolKinds map[string]bool, o *unstructured.Unstructured) bool {
	_, pool := o.GetLabels()[clusterv1.ClusterTopologyMachinePoolNameLabel]
	return poolKinds[o.GetKind()] && !pool
}

// Generated tells whether o is an object the topology of cluster generated,
// which goes when no longer desired: labelled owned and for cluster, not the
// Cluster itself, and not made for a Machine. The agent's pruning, the live
// plan and the offline plan decide deletions by it.
func Generated(o *unstructured.Unstructured, cluster string, poolKinds map[string]bool) bool {
	l := o.GetLabels()
	_, owned := l[clusterv1.ClusterTopologyOwnedLabel]
	return owned && l[clusterv1.ClusterNameLabel] == cluster && o.GetKind() != "Cluster" && !MadeForMachine(poolKinds, o)
}

// ClusterLevelKinds are the kinds of the InfrastructureCluster and the
// control plane a class makes (its templates' kinds less "Template"), whether
// referenced or inline: objects of these kinds are the Cluster's.
func ClusterLevelKinds(c *v1alpha2.TopologyClass) map[string]bool {
	out := map[string]bool{}
	infra, controlPlane, _ := ClassSlots(c)
	for _, s := range []TemplateSlot{infra, controlPlane} {
		if s.Defined() {
			out[TrimTemplateSuffix(s.Kind())] = true
		}
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

// GroupKindOf renders Kind.group, as in the cloned-from-groupkind annotation.
func GroupKindOf(apiVersion, kind string) string {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	if gv.Group == "" {
		return kind
	}
	return kind + "." + gv.Group
}

// TrimTemplateSuffix turns DockerClusterTemplate into DockerCluster: the kind
// an object made from a template has.
func TrimTemplateSuffix(kind string) string {
	return strings.TrimSuffix(kind, "Template")
}
