package desiredstate

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/names"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/patches"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// pool is one MachineDeployment or MachinePool of a topology. Naming,
// patching and sequencing treat both kinds alike; only the objects built
// from them differ, so exactly one of md/mp (and mdc/mpc) is set.
type pool struct {
	index int
	md    *v1alpha2.MachineDeploymentTopology
	mdc   *v1alpha2.MachineDeploymentClass
	mp    *v1alpha2.MachinePoolTopology
	mpc   *v1alpha2.MachinePoolClass

	tmpl     workerTemplates
	current  *clusterstate.Worker
	decision upgrade.Decision
	names    workerNames
	// bootstrap and infrastructure are the class templates after patches.
	bootstrap, infrastructure *unstructured.Unstructured
}

func (p *pool) isDeployment() bool { return p.md != nil }

func (p *pool) name() string {
	if p.md != nil {
		return p.md.Name
	}
	return p.mp.Name
}

func (p *pool) className() string {
	if p.md != nil {
		return p.md.Class
	}
	return p.mp.Class
}

func (p *pool) metadata() v1alpha2.ObjectMeta {
	if p.md != nil {
		return p.md.Metadata
	}
	return p.mp.Metadata
}

func (p *pool) replicas() *int32 {
	if p.md != nil {
		return p.md.Replicas
	}
	return p.mp.Replicas
}

func (p *pool) overrides() []v1alpha2.ClusterVariable {
	if p.md != nil && p.md.Variables != nil {
		return p.md.Variables.Overrides
	}
	if p.mp != nil && p.mp.Variables != nil {
		return p.mp.Variables.Overrides
	}
	return nil
}

// kind is the Cluster API kind of the pool object.
func (p *pool) kind() string {
	if p.md != nil {
		return "MachineDeployment"
	}
	return "MachinePool"
}

// nameLabel is the label carrying the pool's topology name on its objects.
func (p *pool) nameLabel() string {
	if p.md != nil {
		return clusterv1.ClusterTopologyMachineDeploymentNameLabel
	}
	return clusterv1.ClusterTopologyMachinePoolNameLabel
}

// classPath is the path of the pool's class in the TopologyClass.
func (p *pool) classPath() *field.Path {
	if p.md != nil {
		return field.NewPath("spec", "workers", "machineDeployments").Index(classIndex(p))
	}
	return field.NewPath("spec", "workers", "machinePools").Index(classIndex(p))
}

func classIndex(p *pool) int {
	return p.tmpl.index
}

// namingTemplate is the class's naming template or the default for the kind.
func (p *pool) namingTemplate() string {
	switch {
	case p.mdc != nil && p.mdc.Naming.Template != "":
		return p.mdc.Naming.Template
	case p.mpc != nil && p.mpc.Naming.Template != "":
		return p.mpc.Naming.Template
	case p.md != nil:
		return names.DefaultMachineDeploymentTemplate
	}
	return names.DefaultMachinePoolTemplate
}

func (p *pool) namingVars(cluster string) names.Vars {
	if p.md != nil {
		return names.Vars{Cluster: cluster, MachineDeployment: p.name()}
	}
	return names.Vars{Cluster: cluster, MachinePool: p.name()}
}

// roles are the patch selector roles of the pool's bootstrap and infrastructure templates.
func (p *pool) roles() (patches.Role, patches.Role) {
	if p.md != nil {
		return patches.MachineDeploymentBootstrap, patches.MachineDeploymentInfrastructure
	}
	return patches.MachinePoolBootstrap, patches.MachinePoolInfrastructure
}

// builtins wraps the pool's builtin values under its kind's key.
func (p *pool) builtins(w *patches.WorkerBuiltins) *patches.Builtins {
	if p.md != nil {
		return &patches.Builtins{MachineDeployment: w}
	}
	return &patches.Builtins{MachinePool: w}
}

// timeouts are the node drain, volume detach and deletion timeouts, topology over class.
func (p *pool) timeouts() map[string]*int32 {
	if p.md != nil {
		return deletionTimeouts(p.md.Deletion.MachineDeletion, p.mdc.Deletion.MachineDeletion)
	}
	return deletionTimeouts(p.mp.Deletion, p.mpc.Deletion)
}

// strategy is a MachineDeployment's v1beta1 spec.strategy: the rollout
// strategy, the deletion order and the remediation limit, which v1beta2 keeps
// apart. As in v1.10, a strategy set on the topology replaces the class's
// whole, order and limit included.
func (p *pool) strategy() map[string]any {
	s, order := p.mdc.Rollout.Strategy, firstNonEmpty(p.md.Deletion.Order, p.mdc.Deletion.Order)
	maxInFlight := p.mdc.HealthCheck.Remediation.MaxInFlight
	if hc := p.md.HealthCheck.Remediation; hc.MaxInFlight != nil {
		maxInFlight = hc.MaxInFlight
	}
	if t := p.md.Rollout.Strategy; t.Type != "" || t.RollingUpdate != (v1alpha2.MachineRollingUpdate{}) {
		s, order, maxInFlight = t, p.md.Deletion.Order, p.md.HealthCheck.Remediation.MaxInFlight
	}
	out := map[string]any{}
	if s.Type != "" {
		out["type"] = string(s.Type)
	}
	rolling := map[string]any{}
	if s.RollingUpdate.MaxUnavailable != nil {
		rolling["maxUnavailable"] = toMap(s.RollingUpdate.MaxUnavailable)
	}
	if s.RollingUpdate.MaxSurge != nil {
		rolling["maxSurge"] = toMap(s.RollingUpdate.MaxSurge)
	}
	if order != "" {
		rolling["deletePolicy"] = order
	}
	if len(rolling) > 0 {
		out["rollingUpdate"] = rolling
	}
	if maxInFlight != nil {
		out["remediation"] = map[string]any{"maxInFlight": toMap(maxInFlight)}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// rolloutV1Beta2 sets a v1beta2 MachineDeployment's rollout, deletion order
// and remediation limit, each resolved on its own as v1.14 does: a rollout
// set on the topology replaces the class's, the others override one by one.
func (p *pool) rolloutV1Beta2(spec map[string]any) {
	rollout := map[string]any{}
	strategy := p.mdc.Rollout.Strategy
	if t := p.md.Rollout; !t.After.IsZero() || t.Strategy.Type != "" || t.Strategy.RollingUpdate != (v1alpha2.MachineRollingUpdate{}) {
		strategy = t.Strategy
		if !t.After.IsZero() {
			rollout["after"] = t.After.UTC().Format(time.RFC3339)
		}
	}
	if s := toMap(strategy).(map[string]any); len(s) > 0 {
		rollout["strategy"] = s
	}
	if len(rollout) > 0 {
		spec["rollout"] = rollout
	}
	if order := firstNonEmpty(p.md.Deletion.Order, p.mdc.Deletion.Order); order != "" {
		spec["deletion"] = map[string]any{"order": order}
	}
	maxInFlight := p.mdc.HealthCheck.Remediation.MaxInFlight
	if m := p.md.HealthCheck.Remediation.MaxInFlight; m != nil {
		maxInFlight = m
	}
	if maxInFlight != nil {
		spec["remediation"] = map[string]any{"maxInFlight": toMap(maxInFlight)}
	}
}

// taints are the pool's Machine taints, the topology's over the class's.
func (p *pool) taints() []v1alpha2.MachineTaint {
	if p.md != nil {
		return firstNonNilList(p.md.Taints, p.mdc.Taints)
	}
	return firstNonNilList(p.mp.Taints, p.mpc.Taints)
}

func firstNonEmpty(topo, class string) string {
	if topo != "" {
		return topo
	}
	return class
}

func (p *pool) minReadySeconds() *int32 {
	if p.md != nil {
		if p.md.MinReadySeconds != nil {
			return p.md.MinReadySeconds
		}
		return p.mdc.MinReadySeconds
	}
	if p.mp.MinReadySeconds != nil {
		return p.mp.MinReadySeconds
	}
	return p.mpc.MinReadySeconds
}

// buildPools pairs each pool of the topology with its class and templates; it
// is called once the class's templates are resolved and the classes exist.
func (c *computation) buildPools() {
	for i := range c.topology.MachineDeployments {
		md := &c.topology.MachineDeployments[i]
		_, mdc := contract.FindMDClass(c.class, md.Class)
		c.pools = append(c.pools, &pool{index: i, md: md, mdc: mdc, tmpl: c.tmpl.md[md.Class], current: c.current.MachineDeployments[md.Name]})
	}
	for i := range c.topology.MachinePools {
		mp := &c.topology.MachinePools[i]
		_, mpc := contract.FindMPClass(c.class, mp.Class)
		c.pools = append(c.pools, &pool{index: i, mp: mp, mpc: mpc, tmpl: c.tmpl.mp[mp.Class], current: c.current.MachinePools[mp.Name]})
	}
}
