package desiredstate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/names"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// computation carries one Compute call's inputs and intermediate results.
type computation struct {
	in       Input
	topo     *v1alpha2.Topology
	class    *v1alpha2.TopologyClass
	current  *clusterstate.State
	names    *names.Generator
	cluster  string
	ns       string
	vars     []v1alpha2.ClusterVariable
	sequence *upgrade.Sequence
	rotated  map[clusterstate.Key]string
	hooks    Hooks
	desired  *clusterstate.State
	owner    *metav1.OwnerReference // owner of generated objects
	shim     *metav1.OwnerReference // upstream dialect: owner of new infra cluster and control plane
	tmpl     resolvedTemplates
	plan     namePlan
	patched  patchedTemplates
	topology *v1alpha2.WorkersTopology
	pools    []*pool // MachineDeployments then MachinePools, in topology order
}

type workerTemplates struct {
	bootstrap, infrastructure *unstructured.Unstructured
	index                     int // of the worker class in the TopologyClass
	metadata                  v1alpha2.ObjectMeta
}

type resolvedTemplates struct {
	infraCluster, controlPlane, cpMachineInfra *unstructured.Unstructured
	md, mp                                     map[string]workerTemplates // by class
}

type patchedTemplates struct {
	infraCluster, controlPlane, cpMachineInfra *unstructured.Unstructured
}

type workerNames struct{ object, bootstrap, infrastructure string }

type namePlan struct {
	infraCluster, controlPlane, cpMachineInfra string
}

// Compute returns the desired state of a topology. Bad input comes back as an
// *InvalidError naming the object and field.
func Compute(ctx context.Context, in Input) (*Result, error) {
	c, err := newComputation(in)
	if err != nil {
		return nil, err
	}
	steps := []func(context.Context) error{
		c.validateInput,
		c.resolveTemplates,
		c.sequenceUpgrade,
		c.generateNames,
		c.applyPatches,
		c.computeInfrastructureCluster,
		c.computeControlPlane,
		c.computeCluster,
		c.computePools,
		c.rotateTemplates,
		c.validateDesired,
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	return &Result{Desired: c.desired, Variables: c.vars, Sequence: c.sequence, Rotated: c.rotated, Hooks: c.hooks, current: c.current}, nil
}

func newComputation(in Input) (*computation, error) {
	if in.Topology == nil || in.Class == nil {
		return nil, fmt.Errorf("engine: a topology and its class are required")
	}
	if in.Templates == nil {
		in.Templates = clusterstate.NewTemplateIndex()
	}
	if in.Names == nil {
		in.Names = names.NewGenerator(nil)
	}
	// Upstream's Cluster is written back in the version it was read in.
	if in.Dialect == contract.DialectUpstream && in.Current != nil && in.Current.Cluster != nil {
		if gv, err := schema.ParseGroupVersion(in.Current.Cluster.GetAPIVersion()); err == nil && gv.Group == clusterv1.GroupVersion.Group {
			in.CoreVersion = contract.CoreVersion(gv.Version)
		}
	}
	// The topology is defaulted during the computation; the caller's stays as it was.
	topo := in.Topology.DeepCopy()
	c := &computation{
		in:       in,
		topo:     topo,
		class:    in.Class,
		current:  in.Current,
		names:    in.Names,
		cluster:  topo.Name,
		ns:       topo.Namespace,
		desired:  &clusterstate.State{MachineDeployments: map[string]*clusterstate.Worker{}, MachinePools: map[string]*clusterstate.Worker{}},
		topology: topo.Spec.Workers,
	}
	if c.current == nil {
		c.current = &clusterstate.State{}
	}
	if c.topology == nil {
		c.topology = &v1alpha2.WorkersTopology{}
	}
	c.setOwners()
	return c, nil
}

func (c *computation) invalid(kind string, obj metav1.Object, errs field.ErrorList) error {
	return &rules.InvalidError{Kind: kind, Object: rules.Describe(kind, obj), Errors: errs}
}

// topologyKind is what the topology is called in errors: a Topology, or in
// upstream's dialect the Cluster.
func (c *computation) topologyKind() string {
	if c.in.Dialect == contract.DialectUpstream {
		return "Cluster"
	}
	return "Topology"
}

// validateInput checks class and topology with the same rules the webhooks
// and the TUI apply, and defaults the topology's variables, so bad input is
// reported at its field before anything is generated. A caller that passes a
// Catalog has validated the class already (see CompileClass).
func (c *computation) validateInput(ctx context.Context) error {
	if c.in.Dialect == contract.DialectUpstream && c.current.Cluster == nil {
		// Upstream's objects take labels and annotations from the Cluster itself.
		return fmt.Errorf("%s: the upstream dialect needs the Cluster object in Input.Current.Cluster", rules.Describe(c.topologyKind(), c.topo))
	}
	if c.in.Catalog == nil {
		cat, err := rules.CompileClass(ctx, c.class)
		if err != nil {
			return err
		}
		c.in.Catalog = cat
	}
	sp := SpecPath(c.in.Dialect)
	if errs := rules.DefaultTopology(c.topo, c.in.Catalog, sp); len(errs) > 0 {
		return c.invalid(c.topologyKind(), c.topo, errs)
	}
	if errs := rules.ValidateTopology(ctx, c.topo, nil, c.class, c.in.Catalog, sp); len(errs) > 0 {
		return c.invalid(c.topologyKind(), c.topo, errs)
	}
	c.vars = c.topo.Spec.Variables
	return nil
}

// VariablesPath is where topology variables live in each dialect.
func VariablesPath(d contract.Dialect) *field.Path {
	return SpecPath(d).Child("variables")
}

// SpecPath is the path of the topology's spec in each dialect.
func SpecPath(d contract.Dialect) *field.Path {
	if d == contract.DialectUpstream {
		return field.NewPath("spec", "topology")
	}
	return field.NewPath("spec")
}

// resolveTemplates finds every template the class references and the topology uses.
func (c *computation) resolveTemplates(context.Context) error {
	var errs field.ErrorList
	ns := c.class.Namespace
	get := func(s contract.TemplateSlot) *unstructured.Unstructured {
		if s.Inline != nil {
			t, err := s.InlineObject(ns)
			if err != nil {
				errs = append(errs, field.Invalid(s.Field().Child("spec"), "", err.Error()))
			}
			return t
		}
		ref, p := s.Ref, s.Field()
		if !ref.IsDefined() {
			errs = append(errs, field.Required(p, "template reference must be set"))
			return nil
		}
		t, ok := c.in.Templates.Get(ref.APIVersion, ref.Kind, ns, ref.Name)
		if !ok {
			errs = append(errs, field.NotFound(p, fmt.Sprintf("%s %s/%s", ref.Kind, ns, ref.Name)))
			return nil
		}
		// v1beta2 omits an empty spec.template, so a template kind may lack one.
		if _, found, _ := unstructured.NestedMap(t.Object, "spec", "template"); !found && !strings.HasSuffix(ref.Kind, "Template") {
			errs = append(errs, field.Invalid(p, ref.Name, fmt.Sprintf("%s %s/%s has no spec.template", ref.Kind, ns, ref.Name)))
			return nil
		}
		return t
	}
	infra, controlPlane, cpMachine := contract.ClassSlots(c.class)
	c.tmpl.infraCluster = get(infra)
	c.tmpl.controlPlane = get(controlPlane)
	if cpMachine.Defined() {
		c.tmpl.cpMachineInfra = get(cpMachine)
	}
	c.tmpl.md, c.tmpl.mp = map[string]workerTemplates{}, map[string]workerTemplates{}
	for _, wc := range contract.WorkerClasses(c.class) {
		byClass := c.tmpl.mp
		if wc.Deployment {
			byClass = c.tmpl.md
		}
		byClass[wc.Name] = workerTemplates{
			index:          wc.Index,
			metadata:       wc.Metadata,
			bootstrap:      get(wc.Bootstrap),
			infrastructure: get(wc.Infrastructure),
		}
	}
	if len(errs) > 0 {
		return c.invalid("TopologyClass", c.class, errs)
	}
	c.buildPools()
	return nil
}

func (c *computation) sequenceUpgrade(ctx context.Context) error {
	obs := c.in.Observed
	if obs == nil {
		var err error
		if obs, err = health.ObserveState(c.current); err != nil {
			return fmt.Errorf("Topology %s/%s: %w", c.topo.Namespace, c.topo.Name, err)
		}
	}
	var cluster *unstructured.Unstructured
	if c.current != nil {
		cluster = c.current.Cluster
	}
	plan, err := upgrade.PlanVersionsFor(ctx, c.class, c.topo, obs, c.in.UpgradePlanner, cluster)
	if err != nil {
		return fmt.Errorf("planning the upgrade of Topology %s/%s to %s: %w", c.topo.Namespace, c.topo.Name, c.topo.Spec.Version, err)
	}
	gate := upgrade.Gate{}
	if c.in.Hooks != nil {
		in := lifecycle.UpgradeInput{Caller: c.in.Hooks, Topology: c.topo, Cluster: cluster, Pending: lifecycle.PendingOf(c.topo.Annotations), Observed: obs, Plan: plan}
		up, err := lifecycle.DecideUpgrade(ctx, in, &c.hooks.Answers)
		if err != nil {
			return fmt.Errorf("calling the lifecycle hooks of Topology %s/%s: %w", c.topo.Namespace, c.topo.Name, err)
		}
		gate, c.hooks.Pending, c.hooks.AfterControlPlane = up.Gate, up.Pending, up.AfterControlPlane
	}
	c.sequence = upgrade.DecideGated(c.topo, obs, plan, gate)
	for _, p := range c.pools {
		if p.isDeployment() {
			p.decision = c.sequence.MachineDeployments[p.index]
		} else {
			p.decision = c.sequence.MachinePools[p.index]
		}
	}
	return nil
}

// generateNames reuses the names of existing objects and makes new ones in
// upstream's order, so a seeded generator gives upstream-comparable output.
func (c *computation) generateNames(context.Context) error {
	cs := c.class.Spec
	tplOr := func(t string, def string) string {
		if t != "" {
			return t
		}
		return def
	}
	var err error
	if c.plan.infraCluster, err = c.reuseOr(c.current.InfrastructureCluster, func() (string, error) {
		return c.names.Template(tplOr(cs.Infrastructure.Naming.Template, names.DefaultInfrastructureTemplate), names.Vars{Cluster: c.cluster})
	}); err != nil {
		return c.namingError(field.NewPath("spec", "infrastructure", "naming", "template"), err)
	}
	if c.tmpl.cpMachineInfra != nil {
		c.plan.cpMachineInfra, _ = c.reuseOr(c.current.ControlPlane.InfrastructureMachineTemplate, func() (string, error) {
			return c.names.Simple(c.cluster + "-"), nil
		})
	}
	if c.plan.controlPlane, err = c.reuseOr(c.current.ControlPlane.Object, func() (string, error) {
		return c.names.Template(tplOr(cs.ControlPlane.Naming.Template, names.DefaultControlPlaneTemplate), names.Vars{Cluster: c.cluster})
	}); err != nil {
		return c.namingError(field.NewPath("spec", "controlPlane", "naming", "template"), err)
	}
	for _, p := range c.pools {
		cur := p.current
		if cur == nil {
			cur = &clusterstate.Worker{}
		}
		prefix := c.cluster + "-" + p.name() + "-"
		p.names.bootstrap, _ = c.reuseOr(cur.Bootstrap, func() (string, error) { return c.names.Simple(prefix), nil })
		p.names.infrastructure, _ = c.reuseOr(cur.Infrastructure, func() (string, error) { return c.names.Simple(prefix), nil })
		if p.names.object, err = c.reuseOr(cur.Object, func() (string, error) {
			return c.names.Template(p.namingTemplate(), p.namingVars(c.cluster))
		}); err != nil {
			return c.namingError(p.classPath().Child("naming", "template"), err)
		}
	}
	return nil
}

func (c *computation) namingError(p *field.Path, err error) error {
	return c.invalid("TopologyClass", c.class, field.ErrorList{field.Invalid(p, "", err.Error())})
}

func (c *computation) reuseOr(cur *unstructured.Unstructured, gen func() (string, error)) (string, error) {
	if cur != nil && cur.GetName() != "" {
		return cur.GetName(), nil
	}
	return gen()
}

// toMap converts a typed value to its JSON form for unstructured objects.
func toMap(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("engine: cannot marshal %T: %v", v, err))
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		panic(fmt.Sprintf("engine: cannot unmarshal %T: %v", v, err))
	}
	return out
}

// mergeMaps merges maps; the first map that sets a key wins.
func mergeMaps(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for i := len(maps) - 1; i >= 0; i-- {
		for k, v := range maps[i] {
			out[k] = v
		}
	}
	return out
}

// healthCheck is the resolved MachineHealthCheck of one part: its checks and
// remediation, whichever of class and topology defined them.
type healthCheck struct {
	Checks      v1alpha2.HealthCheckChecks
	TriggerIf   v1alpha2.HealthCheckTriggerIf
	TemplateRef v1alpha2.RemediationTemplateReference
	MaxInFlight *intstr.IntOrString
}

// controlPlaneHealthCheck says whether the control plane's health check is
// enabled and which definition applies: the topology's when it defines one,
// else the class's — as upstream resolves it.
func controlPlaneHealthCheck(class v1alpha2.ControlPlaneClassHealthCheck, topo v1alpha2.ControlPlaneTopologyHealthCheck) (*healthCheck, bool) {
	if !healthCheckEnabled(class.IsDefined(), topo.IsDefined(), topo.Enabled) {
		return nil, false
	}
	if topo.IsDefined() {
		return &healthCheck{Checks: topo.Checks, TriggerIf: topo.Remediation.TriggerIf, TemplateRef: topo.Remediation.TemplateRef}, true
	}
	return &healthCheck{Checks: class.Checks, TriggerIf: class.Remediation.TriggerIf, TemplateRef: class.Remediation.TemplateRef}, true
}

// machineDeploymentHealthCheck is controlPlaneHealthCheck for one MachineDeployment.
func machineDeploymentHealthCheck(class v1alpha2.MachineDeploymentClassHealthCheck, topo v1alpha2.MachineDeploymentTopologyHealthCheck) (*healthCheck, bool) {
	if !healthCheckEnabled(class.IsDefined(), topo.IsDefined(), topo.Enabled) {
		return nil, false
	}
	r := class.Remediation
	checks := class.Checks
	if topo.IsDefined() {
		r, checks = topo.Remediation, topo.Checks
	}
	return &healthCheck{Checks: checks, TriggerIf: r.TriggerIf, TemplateRef: r.TemplateRef, MaxInFlight: r.MaxInFlight}, true
}

// healthCheckEnabled: a check runs when one is defined and the topology did not
// turn it off, or when the topology turned it on explicitly.
func healthCheckEnabled(classDefined, topoDefined bool, enabled *bool) bool {
	if enabled != nil {
		return *enabled && (classDefined || topoDefined)
	}
	return classDefined || topoDefined
}

// defaultMaxUnhealthy and defaultNodeStartupTimeout are the MachineHealthCheck
// webhook defaults; setting them keeps desired and live objects equal.
var (
	defaultMaxUnhealthy       = intstr.FromString("100%")
	defaultNodeStartupTimeout = int32(10 * 60)
)
