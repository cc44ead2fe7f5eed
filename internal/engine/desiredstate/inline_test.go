package desiredstate_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// inlineAll writes every template of the world's class into it.
func inlineAll(t *testing.T, w *exampleWorld) []contract.Inlined {
	t.Helper()
	ix := clusterstate.NewTemplateIndex(w.ex.Templates...)
	done, err := contract.InlineTemplates(w.ex.Class, func(ref v1alpha2.ClusterClassTemplateReference) *unstructured.Unstructured {
		o, _ := ix.Get(ref.APIVersion, ref.Kind, w.ex.Class.Namespace, ref.Name)
		return o
	}, func(*unstructured.Unstructured) (bool, error) { return true, nil })
	if err != nil {
		t.Fatal(err)
	}
	return done
}

// withoutClonedFrom is an object as JSON, but for the cloned-from-name
// annotation: an inline template has no object of its own to name.
func withoutClonedFrom(t *testing.T, o *unstructured.Unstructured) string {
	t.Helper()
	o = o.DeepCopy()
	if a := o.GetAnnotations(); a[clusterv1.TemplateClonedFromNameAnnotation] != "" {
		delete(a, clusterv1.TemplateClonedFromNameAnnotation)
		o.SetAnnotations(a)
	}
	raw, err := json.Marshal(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// A class whose templates are written inline (as a stock management cluster
// needs for the kinds it refuses) generates the same objects as the class
// that references them: patches select and change them the same way.
func TestComputeInlineTemplatesAsReferenced(t *testing.T) {
	referenced := newWorld(t)
	inline := newWorld(t)
	done := inlineAll(t, &inline)
	if len(done) != 9 {
		t.Fatalf("inlined %d templates, want all 9 slots of the example class", len(done))
	}
	if refs := contract.ClassTemplateRefs(inline.ex.Class); len(refs) != 0 {
		t.Fatalf("references left after inlining all: %v", refs)
	}
	if errs := rules.ValidateClass(context.Background(), inline.ex.Class); len(errs) > 0 {
		t.Fatalf("the inline class is invalid: %v", errs)
	}
	inline.ex.Templates = nil // nothing to look up: the class holds them
	want, got := referenced.compute(t, nil).Desired.Objects(), inline.compute(t, nil).Desired.Objects()
	if len(got) != len(want) || len(want) < 10 {
		t.Fatalf("%d objects from the inline class, %d from the referencing one", len(got), len(want))
	}
	for i := range want {
		if a, b := withoutClonedFrom(t, got[i]), withoutClonedFrom(t, want[i]); a != b {
			t.Errorf("%s %s differs:\n inline      %s\n referenced  %s", want[i].GetKind(), want[i].GetName(), a, b)
		}
	}
	// The clone says it came from the class's inline template.
	for _, o := range got {
		if o.GetKind() == "KubeadmControlPlane" && o.GetAnnotations()[clusterv1.TemplateClonedFromNameAnnotation] != "docker-kubeadm-control-plane" {
			t.Errorf("the control plane's cloned-from-name is %q, want the class's inline slot name", o.GetAnnotations()[clusterv1.TemplateClonedFromNameAnnotation])
		}
	}
}

// A change to an inline template's spec rotates the clones made from it,
// as a change to a referenced template does.
func TestComputeRotatesOnInlineTemplateChange(t *testing.T) {
	w := newWorld(t)
	inlineAll(t, &w)
	w.ex.Templates = nil
	first := w.compute(t, nil)
	current := written(first.Desired, w.topo.Spec.Version)
	if steady := w.compute(t, current); len(steady.Rotated) != 0 {
		t.Fatalf("nothing changed, yet %v rotated", steady.Rotated)
	}
	// The worker classes share one inline template, as they shared the
	// template object it was made from: its copies change together.
	shared := w.ex.Class.Spec.Workers.MachineDeployments[0].Infrastructure.Template.Name
	for i := range w.ex.Class.Spec.Workers.MachineDeployments {
		in := w.ex.Class.Spec.Workers.MachineDeployments[i].Infrastructure.Template
		if in.Name != shared {
			continue
		}
		spec := map[string]any{}
		if err := json.Unmarshal(in.Spec.Raw, &spec); err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedStringSlice(spec, []string{"extra:latest"}, "template", "spec", "preLoadImages")
		in.Spec.Raw, _ = json.Marshal(spec)
	}
	changed := w.compute(t, current)
	if len(changed.Rotated) == 0 {
		t.Fatal("the inline worker template changed, and nothing rotated")
	}
}

// A slot holds one template: both or neither is refused, naming the field.
func TestValidateClassSlots(t *testing.T) {
	cases := []struct {
		name          string
		mutate        func(c *v1alpha2.TopologyClass)
		field, detail string
	}{
		{"both templateRef and template", func(c *v1alpha2.TopologyClass) {
			c.Spec.ControlPlane.Template = &v1alpha2.InlineTemplate{APIVersion: "controlplane.cluster.x-k8s.io/v1beta2", Kind: "KubeadmControlPlaneTemplate"}
		}, "spec.controlPlane", "not both"},
		{"neither", func(c *v1alpha2.TopologyClass) {
			c.Spec.Workers.MachineDeployments[0].Bootstrap.TemplateRef = v1alpha2.ClusterClassTemplateReference{}
		}, "spec.workers.machineDeployments[0].bootstrap.templateRef", "or the template written inline"},
		{"inline without a spec", func(c *v1alpha2.TopologyClass) {
			c.Spec.Infrastructure.TemplateRef = v1alpha2.ClusterClassTemplateReference{}
			c.Spec.Infrastructure.Template = &v1alpha2.InlineTemplate{APIVersion: "infrastructure.cluster.x-k8s.io/v1beta2", Kind: "DockerClusterTemplate"}
		}, "spec.infrastructure.template.spec", "must be an object"},
		{"inline without an apiVersion", func(c *v1alpha2.TopologyClass) {
			c.Spec.Infrastructure.TemplateRef = v1alpha2.ClusterClassTemplateReference{}
			c.Spec.Infrastructure.Template = &v1alpha2.InlineTemplate{Kind: "DockerClusterTemplate"}
			c.Spec.Infrastructure.Template.Spec.Raw = []byte(`{"template":{"spec":{}}}`)
		}, "spec.infrastructure.template", "apiVersion (group/version) and kind"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tc.mutate(w.ex.Class)
			errs := rules.ValidateClass(context.Background(), w.ex.Class)
			if !hasError(errs, tc.field, tc.detail) {
				t.Errorf("errors %v; want one at %s saying %q", errs, tc.field, tc.detail)
			}
		})
	}
}

// A class may move a template between templateRef and template; what its
// clusters cannot follow is a change of group or kind, either way.
func TestClassesCompatibleAcrossInlining(t *testing.T) {
	current := newWorld(t)
	desired := newWorld(t)
	inlineAll(t, &desired)
	if errs := rules.ClassesCompatible(current.ex.Class, desired.ex.Class); len(errs) > 0 {
		t.Fatalf("inlining the same templates is refused: %v", errs)
	}
	desired.ex.Class.Spec.ControlPlane.Template.Kind = "K3sControlPlaneTemplate"
	errs := rules.ClassesCompatible(current.ex.Class, desired.ex.Class)
	if !hasError(errs, "spec.controlPlane.template.kind", "cannot change") {
		t.Errorf("errors %v; want the kind change refused at spec.controlPlane.template.kind", errs)
	}
}

func hasError(errs field.ErrorList, path, detail string) bool {
	for _, e := range errs {
		if e.Field == path && strings.Contains(e.Error(), detail) {
			return true
		}
	}
	return false
}
