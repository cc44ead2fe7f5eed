package contract

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TemplateSlot is one template of a class, referenced (templateRef) or
// written into the class (template), with the field that holds it.
type TemplateSlot struct {
	Ref    v1alpha2.ClusterClassTemplateReference
	Inline *v1alpha2.InlineTemplate
	// Path is the field holding templateRef and template, e.g. spec.controlPlane.
	Path *field.Path
	// InlineName is the name an inline template is known by: what the
	// cloned-from-name annotation and messages say. It is the template's
	// own name where it has one (convert keeps the inlined object's), else
	// the class's name and the slot's.
	InlineName string
}

// Defined reports whether the slot holds a template, either way.
func (s TemplateSlot) Defined() bool { return s.Ref.IsDefined() || s.Inline != nil }

// APIVersion is the template's, referenced or inline.
func (s TemplateSlot) APIVersion() string {
	if s.Inline != nil {
		return s.Inline.APIVersion
	}
	return s.Ref.APIVersion
}

// Kind is the template's, referenced or inline.
func (s TemplateSlot) Kind() string {
	if s.Inline != nil {
		return s.Inline.Kind
	}
	return s.Ref.Kind
}

// GroupKind is the template's API group and kind.
func (s TemplateSlot) GroupKind() schema.GroupKind {
	return schema.FromAPIVersionAndKind(s.APIVersion(), s.Kind()).GroupKind()
}

// Field names the part of the slot that is set, for messages.
func (s TemplateSlot) Field() *field.Path {
	if s.Inline != nil {
		return s.Path.Child("template")
	}
	return s.Path.Child("templateRef")
}

// NewSlot builds the templateSlot of a class field.
func NewSlot(class string, ref v1alpha2.ClusterClassTemplateReference, inline *v1alpha2.InlineTemplate, path *field.Path, suffix string) TemplateSlot {
	name := class + "-" + suffix
	if inline != nil && inline.Name != "" {
		name = inline.Name
	}
	return TemplateSlot{Ref: ref, Inline: inline, Path: path, InlineName: name}
}

// ClassSlots are the infrastructure cluster, control plane and control plane
// machine templates of a class; workerClasses has the workers'.
func ClassSlots(c *v1alpha2.TopologyClass) (infra, controlPlane, cpMachine TemplateSlot) {
	spec := field.NewPath("spec")
	s := c.Spec
	infra = NewSlot(c.Name, s.Infrastructure.TemplateRef, s.Infrastructure.Template, spec.Child("infrastructure"), "infrastructure")
	controlPlane = NewSlot(c.Name, s.ControlPlane.TemplateRef, s.ControlPlane.Template, spec.Child("controlPlane"), "control-plane")
	mi := s.ControlPlane.MachineInfrastructure
	cpMachine = NewSlot(c.Name, mi.TemplateRef, mi.Template, spec.Child("controlPlane", "machineInfrastructure"), "control-plane-machine")
	return infra, controlPlane, cpMachine
}

// AllSlots are every template slot of a class, in visiting order: the
// cluster's three, then each worker class's bootstrap and infrastructure.
func AllSlots(c *v1alpha2.TopologyClass) []TemplateSlot {
	infra, controlPlane, cpMachine := ClassSlots(c)
	out := []TemplateSlot{infra, controlPlane, cpMachine}
	for _, wc := range WorkerClasses(c) {
		out = append(out, wc.Bootstrap, wc.Infrastructure)
	}
	return out
}

// InlineObject is the template object an inline template stands for, in the
// class's namespace under the slot's name, so that patches, clones and
// rotations treat it exactly as a referenced template.
func (s TemplateSlot) InlineObject(namespace string) (*unstructured.Unstructured, error) {
	t := s.Inline
	spec := map[string]any{}
	if len(t.Spec.Raw) > 0 {
		if err := json.Unmarshal(t.Spec.Raw, &spec); err != nil {
			return nil, fmt.Errorf("spec is not a JSON object: %w", err)
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(t.APIVersion)
	u.SetKind(t.Kind)
	u.SetNamespace(namespace)
	u.SetName(s.InlineName)
	if len(t.Metadata.Labels) > 0 {
		u.SetLabels(t.Metadata.Labels)
	}
	if len(t.Metadata.Annotations) > 0 {
		u.SetAnnotations(t.Metadata.Annotations)
	}
	return u, nil
}
