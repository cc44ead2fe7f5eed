package engine

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// templateSlot is one template of a class, referenced (templateRef) or
// written into the class (template), with the field that holds it.
type templateSlot struct {
	ref    v1alpha2.ClusterClassTemplateReference
	inline *v1alpha2.InlineTemplate
	// path is the field holding templateRef and template, e.g. spec.controlPlane.
	path *field.Path
	// inlineName is the name an inline template is known by: what the
	// cloned-from-name annotation and messages say.
	inlineName string
}

// defined reports whether the slot holds a template, either way.
func (s templateSlot) defined() bool { return s.ref.IsDefined() || s.inline != nil }

// apiVersion and kind are the template's, referenced or inline.
func (s templateSlot) apiVersion() string {
	if s.inline != nil {
		return s.inline.APIVersion
	}
	return s.ref.APIVersion
}

func (s templateSlot) kind() string {
	if s.inline != nil {
		return s.inline.Kind
	}
	return s.ref.Kind
}

// groupKind is the template's API group and kind.
func (s templateSlot) groupKind() schema.GroupKind {
	return schema.FromAPIVersionAndKind(s.apiVersion(), s.kind()).GroupKind()
}

// field names the part of the slot that is set, for messages.
func (s templateSlot) field() *field.Path {
	if s.inline != nil {
		return s.path.Child("template")
	}
	return s.path.Child("templateRef")
}

// slot builds the templateSlot of a class field.
func slot(class string, ref v1alpha2.ClusterClassTemplateReference, inline *v1alpha2.InlineTemplate, path *field.Path, suffix string) templateSlot {
	return templateSlot{ref: ref, inline: inline, path: path, inlineName: class + "-" + suffix}
}

// classSlots are the infrastructure cluster, control plane and control plane
// machine templates of a class; workerClasses has the workers'.
func classSlots(c *v1alpha2.TopologyClass) (infra, controlPlane, cpMachine templateSlot) {
	spec := field.NewPath("spec")
	s := c.Spec
	infra = slot(c.Name, s.Infrastructure.TemplateRef, s.Infrastructure.Template, spec.Child("infrastructure"), "infrastructure")
	controlPlane = slot(c.Name, s.ControlPlane.TemplateRef, s.ControlPlane.Template, spec.Child("controlPlane"), "control-plane")
	mi := s.ControlPlane.MachineInfrastructure
	cpMachine = slot(c.Name, mi.TemplateRef, mi.Template, spec.Child("controlPlane", "machineInfrastructure"), "control-plane-machine")
	return infra, controlPlane, cpMachine
}

// allSlots are every template slot of a class, in visiting order: the
// cluster's three, then each worker class's bootstrap and infrastructure.
func allSlots(c *v1alpha2.TopologyClass) []templateSlot {
	infra, controlPlane, cpMachine := classSlots(c)
	out := []templateSlot{infra, controlPlane, cpMachine}
	for _, wc := range workerClasses(c) {
		out = append(out, wc.bootstrap, wc.infrastructure)
	}
	return out
}

// inlineObject is the template object an inline template stands for, in the
// class's namespace under the slot's name, so that patches, clones and
// rotations treat it exactly as a referenced template.
func (s templateSlot) inlineObject(namespace string) (*unstructured.Unstructured, error) {
	t := s.inline
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
	u.SetName(s.inlineName)
	if len(t.Metadata.Labels) > 0 {
		u.SetLabels(t.Metadata.Labels)
	}
	if len(t.Metadata.Annotations) > 0 {
		u.SetAnnotations(t.Metadata.Annotations)
	}
	return u, nil
}
