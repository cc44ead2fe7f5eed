// Package engine decides everything kubectl-topology does, without a client:
// from a class, its templates and a topology (and the objects that exist now)
// it computes the desired Cluster API objects, validates classes and
// topologies, sequences upgrades and plans changes. The agent, the admission
// webhooks, the TUI and `plan` all call it, so they never disagree.
package engine

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/names"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/patches"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/variables"
)

// Dialect says whose objects the engine works for, which decides ownership.
type Dialect int

const (
	// DialectTopology is ours: a Topology owns the CAPI Cluster, which owns the rest.
	DialectTopology Dialect = iota
	// DialectUpstream is Cluster API's: a Cluster with spec.topology, a shim Secret
	// owning new InfrastructureCluster and control plane objects, as upstream does.
	DialectUpstream
)

// UpstreamClusterKind is the TypeMeta kind of a Topology read from an
// upstream Cluster with spec.topology (pkg/upstream sets it): such a
// Topology is reconciled by Cluster API's topology controller, in its dialect.
const UpstreamClusterKind = "Cluster"

// DialectOf is the dialect t's objects are made in: upstream's for a
// Topology read from an upstream Cluster, ours otherwise. The agent, plan,
// the editor and status all decide it here.
func DialectOf(t *v1alpha2.Topology) Dialect {
	if t.Kind == UpstreamClusterKind {
		return DialectUpstream
	}
	return DialectTopology
}

// Reconciler names, in a sentence, what acts on t's changes.
func Reconciler(t *v1alpha2.Topology) string {
	if DialectOf(t) == DialectUpstream {
		return "Cluster API's topology controller"
	}
	return "the agent"
}

// Input is everything the engine needs to compute a topology's desired state.
type Input struct {
	// Topology is the cluster to build.
	Topology *v1alpha2.Topology
	// Class is its TopologyClass.
	Class *v1alpha2.TopologyClass
	// Templates holds the provider templates the class references.
	Templates *TemplateIndex
	// Current holds the objects that exist now; nil or empty when creating.
	Current *State
	// Observed is the rollout state of existing parts, for upgrade sequencing.
	// When nil it is read from Current.
	Observed *Observed
	// Names generates names; inject a seeded one for stable output.
	Names *names.Generator
	// Dialect decides ownership.
	Dialect Dialect
	// Catalog is the compiled variables of Class; computed when nil. Callers that
	// recompute often (the TUI, the agent) pass it to skip recompiling schemas.
	Catalog *variables.Catalog
	// External generates external patches; nil offline.
	External patches.External
	// UpgradePlanner asks the class's upgrade-plan extension for the chain
	// of versions; nil offline.
	UpgradePlanner UpgradePlanner
	// CoreVersion is the Cluster API core version to write objects in; v1beta1 when unset.
	CoreVersion CoreVersion
	// Contracts are the provider contracts of the class's kinds, from their
	// CRDs; a kind missing follows CoreVersion's contract.
	Contracts Contracts
}

// Result is the desired state and what was decided on the way.
type Result struct {
	// Desired is every object the topology consists of.
	Desired *State
	// Variables are the topology's variables after defaulting.
	Variables []v1alpha2.ClusterVariable
	// Rollout is the upgrade sequencing decision for each part.
	Rollout *Rollout
	// Rotated maps each template clone made because its template changed to
	// the name of the clone it replaces.
	Rotated map[ObjectKey]string
}

// InvalidError is bad input, with every problem and the field it is in.
type InvalidError struct {
	// Kind of the object at fault: Topology, Cluster or TopologyClass.
	Kind string
	// Object names the object at fault, e.g. Topology default/qs1.
	Object string
	// Errors are the field errors.
	Errors field.ErrorList
}

func (e *InvalidError) Error() string {
	msgs := make([]string, 0, len(e.Errors))
	for _, fe := range e.Errors {
		msgs = append(msgs, fe.Error())
	}
	return fmt.Sprintf("%s is invalid: %s", e.Object, strings.Join(msgs, "; "))
}

func describe(kind string, m metav1.Object) string {
	if m.GetNamespace() == "" {
		return fmt.Sprintf("%s %s", kind, m.GetName())
	}
	return fmt.Sprintf("%s %s/%s", kind, m.GetNamespace(), m.GetName())
}

// Pending is a desired object the agent does not create yet, and why: the
// objects of a pool whose creation waits for a stable control plane.
type Pending struct {
	// Object is the desired object.
	Object *unstructured.Unstructured
	// Part names the pool, e.g. MachineDeployment md-a.
	Part string
	// Reason says what it waits for.
	Reason string
}

// Pending lists the desired objects whose creation waits, in the order of
// Desired.Objects().
func (r *Result) Pending() []Pending {
	var out []Pending
	add := func(kind string, pools map[string]*WorkerState, decisions []Decision) {
		for _, d := range decisions {
			w := pools[d.Name]
			if !d.CreatePending || w == nil {
				continue
			}
			for _, o := range []*unstructured.Unstructured{w.Bootstrap, w.Infrastructure, w.Object, w.MachineHealthCheck} {
				if o != nil {
					out = append(out, Pending{Object: o, Part: kind + " " + d.Name, Reason: d.Reason})
				}
			}
		}
	}
	add("MachineDeployment", r.Desired.MachineDeployments, r.Rollout.MachineDeployments)
	add("MachinePool", r.Desired.MachinePools, r.Rollout.MachinePools)
	return out
}

// ToApply is what the agent writes now: every desired object, in dependency
// order, but those Pending.
func (r *Result) ToApply() []*unstructured.Unstructured {
	pending := map[ObjectKey]bool{}
	for _, p := range r.Pending() {
		pending[KeyOf(p.Object)] = true
	}
	var out []*unstructured.Unstructured
	for _, o := range r.Desired.Objects() {
		if !pending[KeyOf(o)] {
			out = append(out, o)
		}
	}
	return out
}
