package controller

import (
	"context"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine/variables"
)

// CompiledClass is a validated TopologyClass with its compiled variables.
type CompiledClass struct {
	// Class is the class as read; never modified.
	Class *v1alpha1.TopologyClass
	// Catalog holds the compiled variable schemas.
	Catalog *variables.Catalog
}

// ClassCache compiles each generation of a class once: with a thousand
// topologies of one class, schemas and CEL programs are built once, not a
// thousand times.
type ClassCache struct {
	mu      sync.Mutex
	entries map[types.UID]classEntry
}

type classEntry struct {
	generation int64
	catalog    *variables.Catalog
}

// NewClassCache returns an empty cache.
func NewClassCache() *ClassCache {
	return &ClassCache{entries: map[types.UID]classEntry{}}
}

// Get validates and compiles class, or returns the cached compilation of its
// generation. An invalid class comes back as an *engine.InvalidError.
func (c *ClassCache) Get(ctx context.Context, class *v1alpha1.TopologyClass) (*CompiledClass, error) {
	c.mu.Lock()
	e, ok := c.entries[class.UID]
	c.mu.Unlock()
	if ok && e.generation == class.Generation && class.Generation != 0 {
		return &CompiledClass{Class: class, Catalog: e.catalog}, nil
	}
	cat, err := engine.CompileClass(ctx, class)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.entries[class.UID] = classEntry{generation: class.Generation, catalog: cat}
	c.mu.Unlock()
	return &CompiledClass{Class: class, Catalog: cat}, nil
}

// templateRef is one template reference of a class, with the field it is in.
type templateRef struct {
	corev1.ObjectReference
	Field string
}

// classTemplateRefs lists every template a class references, namespace filled in.
func classTemplateRefs(c *v1alpha1.TopologyClass) []templateRef {
	var out []templateRef
	add := func(ref *corev1.ObjectReference, field string) {
		if ref == nil {
			return
		}
		r := templateRef{ObjectReference: *ref, Field: field}
		if r.Namespace == "" {
			r.Namespace = c.Namespace
		}
		out = append(out, r)
	}
	s := c.Spec
	add(s.Infrastructure.Ref, "spec.infrastructure.ref")
	add(s.ControlPlane.Ref, "spec.controlPlane.ref")
	if s.ControlPlane.MachineInfrastructure != nil {
		add(s.ControlPlane.MachineInfrastructure.Ref, "spec.controlPlane.machineInfrastructure.ref")
	}
	for i, md := range s.Workers.MachineDeployments {
		p := "spec.workers.machineDeployments[" + strconv.Itoa(i) + "].template."
		add(md.Template.Bootstrap.Ref, p+"bootstrap.ref")
		add(md.Template.Infrastructure.Ref, p+"infrastructure.ref")
	}
	for i, mp := range s.Workers.MachinePools {
		p := "spec.workers.machinePools[" + strconv.Itoa(i) + "].template."
		add(mp.Template.Bootstrap.Ref, p+"bootstrap.ref")
		add(mp.Template.Infrastructure.Ref, p+"infrastructure.ref")
	}
	return out
}

// generatedKinds are the kinds of the objects a topology of class c consists
// of, besides the Cluster: what the agent lists to find the current state.
func generatedKinds(c *v1alpha1.TopologyClass) []schema.GroupVersionKind {
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	add := func(gvk schema.GroupVersionKind) {
		if !seen[gvk] {
			seen[gvk] = true
			out = append(out, gvk)
		}
	}
	capi := func(kind string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Group: engine.ClusterAPIGroup, Version: "v1beta1", Kind: kind}
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
			gvk.Kind = trimTemplate(gvk.Kind)
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

func trimTemplate(kind string) string { return strings.TrimSuffix(kind, "Template") }

func isTemplateKind(kind string) bool { return strings.HasSuffix(kind, "Template") }
