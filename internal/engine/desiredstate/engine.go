// Package desiredstate computes what a topology should be, without a client:
// from a class, its templates and a topology (and the objects that exist now)
// the Cluster API objects to create or change, named, patched and sequenced.
// The agent, the admission webhooks, the editor and `plan` all call Compute,
// so they never disagree. Its siblings under internal/engine decide the rest:
// rules what is allowed, rollout how a version change rolls out, apply what
// to write, health what a human reads, contract how Cluster API's objects look.
package desiredstate

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/names"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/patches"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/variables"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Input is everything the engine needs to compute a topology's desired state.
type Input struct {
	// Topology is the cluster to build.
	Topology *v1alpha2.Topology
	// Class is its TopologyClass.
	Class *v1alpha2.TopologyClass
	// Templates holds the provider templates the class references.
	Templates *clusterstate.TemplateIndex
	// Current holds the objects that exist now; nil or empty when creating.
	Current *clusterstate.State
	// Observed is the rollout state of existing parts, for upgrade sequencing.
	// When nil it is read from Current.
	Observed *upgrade.Observed
	// Names generates names; inject a seeded one for stable output.
	Names *names.Generator
	// Dialect decides ownership.
	Dialect contract.Dialect
	// Catalog is the compiled variables of Class; computed when nil. Callers that
	// recompute often (the TUI, the agent) pass it to skip recompiling schemas.
	Catalog *variables.Catalog
	// External generates external patches; nil offline.
	External patches.External
	// UpgradePlanner asks the class's upgrade-plan extension for the chain
	// of versions; nil offline.
	UpgradePlanner upgrade.UpgradePlanner
	// Hooks calls the Runtime SDK lifecycle hooks an upgrade is due to
	// call, and holds back what their answers hold; nil calls none (offline,
	// and Cluster API's own clusters, whose controller calls them).
	Hooks lifecycle.Caller
	// CoreVersion is the Cluster API core version to write objects in; v1beta1 when unset.
	CoreVersion contract.CoreVersion
	// Contracts are the provider contracts of the class's kinds, from their
	// CRDs; a kind missing follows CoreVersion's contract.
	Contracts contract.Contracts
}

// Result is the desired state and what was decided on the way.
type Result struct {
	// Desired is every object the topology consists of.
	Desired *clusterstate.State
	// Variables are the topology's variables after defaulting.
	Variables []v1alpha2.ClusterVariable
	// Sequence is the upgrade sequencing decision for each part.
	Sequence *upgrade.Sequence
	// Rotated maps each template clone made because its template changed to
	// the name of the clone it replaces.
	Rotated map[clusterstate.Key]string
	// Hooks is what the lifecycle hooks decided; zero without Input.Hooks.
	Hooks Hooks

	// current is the state computed from, for Held.
	current *clusterstate.State
}

// Hooks is what the upgrade hooks of one computation decided.
type Hooks struct {
	// Answers are the hooks called and what they said.
	Answers lifecycle.Answers
	// Pending are the hooks owed from now on, to be written before any object.
	Pending lifecycle.Pending
	// AfterControlPlane are owed once the control plane is written.
	AfterControlPlane []string
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
	add := func(kind string, pools map[string]*clusterstate.Worker, decisions []upgrade.Decision) {
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
	add("MachineDeployment", r.Desired.MachineDeployments, r.Sequence.MachineDeployments)
	add("MachinePool", r.Desired.MachinePools, r.Sequence.MachinePools)
	return out
}

// Held lists the existing objects of the parts pending a version upgrade
// (Decision.PendingUpgrade): a control plane with its machine template, a
// pool with its templates. Upstream leaves them as they are until the part
// takes its version, so that a change to its template does not roll its
// Machines twice; the agent writes none of them, and keeps the templates
// they use. Health checks are not held, as upstream's are not.
func (r *Result) Held() []*unstructured.Unstructured {
	return r.heldIn(r.current)
}

// heldIn is, of state, the objects of the parts pending a version upgrade.
func (r *Result) heldIn(state *clusterstate.State) []*unstructured.Unstructured {
	if state == nil || r.Sequence == nil {
		return nil
	}
	var out []*unstructured.Unstructured
	add := func(objs ...*unstructured.Unstructured) {
		for _, o := range objs {
			if o != nil {
				out = append(out, o)
			}
		}
	}
	if r.Sequence.ControlPlane.PendingUpgrade {
		add(state.ControlPlane.Object, state.ControlPlane.InfrastructureMachineTemplate)
	}
	for _, set := range []struct {
		decisions []upgrade.Decision
		pools     map[string]*clusterstate.Worker
	}{{r.Sequence.MachineDeployments, state.MachineDeployments}, {r.Sequence.MachinePools, state.MachinePools}} {
		for _, d := range set.decisions {
			if w := set.pools[d.Name]; d.PendingUpgrade && w != nil {
				add(w.Object, w.Bootstrap, w.Infrastructure)
			}
		}
	}
	return out
}

// ToApply is what the agent writes now: every desired object, in dependency
// order, but those Pending and those of the parts Held.
func (r *Result) ToApply() []*unstructured.Unstructured {
	pending := map[clusterstate.Key]bool{}
	for _, o := range r.heldIn(r.Desired) {
		pending[clusterstate.KeyOf(o)] = true
	}
	for _, p := range r.Pending() {
		pending[clusterstate.KeyOf(p.Object)] = true
	}
	var out []*unstructured.Unstructured
	for _, o := range r.Desired.Objects() {
		if !pending[clusterstate.KeyOf(o)] {
			out = append(out, o)
		}
	}
	return out
}
