package upgrade

import (
	"fmt"
	"strconv"
	"strings"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// PartObserved is what exists of one part (control plane or pool) right now.
type PartObserved struct {
	// Exists is false when the part has not been created yet.
	Exists bool
	// ObjectName is the name of the existing object.
	ObjectName string
	// SpecVersion is the version in the object's spec.
	SpecVersion string
	// StatusVersion is the control plane's status.version: the lowest version
	// of its Machines; empty while it is first provisioned.
	StatusVersion string
	// Upgrading is true for a pool whose Machines are not all at SpecVersion.
	Upgrading bool
	// Replicas, ReadyReplicas, UpToDateReplicas and AvailableReplicas as the
	// part reports them.
	Replicas, ReadyReplicas, UpToDateReplicas, AvailableReplicas int32
	// Problems keep the part from being healthy: its own conditions, and
	// its Machines that are not ready.
	Problems []v1alpha2.Problem
	// Provisioning counts its Machines still coming up for the first time.
	Provisioning int32
}

// Observed is the rollout state of a topology's parts.
type Observed struct {
	// ControlPlane state.
	ControlPlane PartObserved
	// MachineDeployments by topology name.
	MachineDeployments map[string]PartObserved
	// MachinePools by topology name.
	MachinePools map[string]PartObserved
}

// Decision is the sequencing decision for one part.
type Decision struct {
	// Name is the topology name of the pool, or "control-plane".
	Name string
	// Version is the version to write into the part's spec now.
	Version string
	// Phase is where the part is in the rollout.
	Phase v1alpha2.PartPhase
	// Reason says why a part waits, for humans.
	Reason string
	// CreatePending is true for a new pool that must not be created yet because
	// the control plane is not stable.
	CreatePending bool
	// PendingUpgrade is true for an existing part that stays at a version
	// behind the topology's this pass: upstream then leaves the whole object
	// as it is, so that another change to it does not roll its Machines a
	// second time before the version does.
	PendingUpgrade bool
	// Pin is the version a pinned pool is pinned to; empty for parts that
	// follow the Topology's version. Version is the pin, or, while the pool
	// waits for the control plane, the version it has.
	Pin string
}

// Sequence is the sequencing decision for a whole topology.
type Sequence struct {
	// DesiredVersion is the topology's version.
	DesiredVersion string
	// Concurrency is how many pools of a kind may upgrade at once.
	Concurrency int
	// ControlPlane decision.
	ControlPlane Decision
	// ControlPlaneStable is true when pools may be created and start upgrading.
	ControlPlaneStable bool
	// WaitingForWorkers is true when the control plane holds the next step
	// of a chained upgrade until the pools reach its version; they may
	// upgrade meanwhile.
	WaitingForWorkers bool
	// Plan is the chain of versions still ahead; empty outside upgrades.
	Plan VersionPlan
	// MachineDeployments decisions in topology order.
	MachineDeployments []Decision
	// MachinePools decisions in topology order.
	MachinePools []Decision

	gate Gate
}

// ControlPlaneName is the part name of the control plane in decisions and status.
const ControlPlaneName = "control-plane"

// UpgradeConcurrency reads the upgrade-concurrency annotation; 1 when unset or invalid.
func UpgradeConcurrency(t *v1alpha2.Topology) int {
	if v, ok := t.Annotations[clusterv1.ClusterTopologyUpgradeConcurrencyAnnotation]; ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 1 {
			return n
		}
	}
	return 1
}

// Decide decides, from observed state and the version plan only, which
// parts take which version now and why the others wait, as upstream's
// topology controller does: the control plane first, one step of the plan
// at a time, and only when stable and no pool is mid-upgrade; then pools,
// at most Concurrency of each kind at a time, skipping held and deferred
// ones, when the control plane is stable or waits for them (a chained
// upgrade whose next step would leave the workers too far behind); new
// pools wait while the control plane is not stable.
func Decide(t *v1alpha2.Topology, obs *Observed, plan VersionPlan) *Sequence {
	return DecideGated(t, obs, plan, Gate{})
}

// Gate holds back what a Runtime SDK lifecycle hook blocks (see
// internal/engine/lifecycle); its zero value holds nothing.
type Gate struct {
	// ControlPlane, when set, says why the control plane does not take a
	// new version now.
	ControlPlane string
	// Workers, when set, says why no pool starts upgrading or is created now.
	Workers string
}

// DecideGated is Sequence with the parts gate holds kept where they are.
func DecideGated(t *v1alpha2.Topology, obs *Observed, plan VersionPlan, gate Gate) *Sequence {
	if obs == nil {
		obs = &Observed{}
	}
	desired := t.Spec.Version
	r := &Sequence{DesiredVersion: desired, Concurrency: UpgradeConcurrency(t), Plan: plan}

	mdUpgrading, mpUpgrading := PoolsUpgrading(t, obs)
	var mds []v1alpha2.MachineDeploymentTopology
	var mps []v1alpha2.MachinePoolTopology
	if t.Spec.Workers != nil {
		mds, mps = t.Spec.Workers.MachineDeployments, t.Spec.Workers.MachinePools
	}

	r.ControlPlane, r.ControlPlaneStable, r.WaitingForWorkers = sequenceControlPlane(desired, obs.ControlPlane, append(append([]string{}, mdUpgrading...), mpUpgrading...), plan, gate.ControlPlane)
	r.ControlPlane.PendingUpgrade = pendingUpgrade(obs.ControlPlane, r.ControlPlane, desired)
	r.gate = gate

	holdSeen := false
	for _, md := range mds {
		o := obs.MachineDeployments[md.Name]
		if md.Version != "" {
			r.MachineDeployments = append(r.MachineDeployments, sequencePinned(md.Name, md.Version, o, obs.ControlPlane, r))
			continue
		}
		d, held := sequencePool(md.Name, desired, o, md.Metadata.Annotations, holdSeen, r, &mdUpgrading)
		holdSeen = holdSeen || held
		d.PendingUpgrade = pendingUpgrade(o, d, desired)
		r.MachineDeployments = append(r.MachineDeployments, d)
	}
	holdSeen = false
	for _, mp := range mps {
		o := obs.MachinePools[mp.Name]
		if mp.Version != "" {
			r.MachinePools = append(r.MachinePools, sequencePinned(mp.Name, mp.Version, o, obs.ControlPlane, r))
			continue
		}
		d, held := sequencePool(mp.Name, desired, o, mp.Metadata.Annotations, holdSeen, r, &mpUpgrading)
		holdSeen = holdSeen || held
		d.PendingUpgrade = pendingUpgrade(o, d, desired)
		r.MachinePools = append(r.MachinePools, d)
	}
	return r
}

// sequencePinned decides for a pool pinned to pin: it takes the pin, and
// only the pin, once the control plane runs that version or a newer one.
// As upstream's proposal has it, the hold and defer annotations, the
// upgrade concurrency and the lifecycle hooks are the Topology's upgrade's,
// and a pool on its own schedule is subject to none of them.
func sequencePinned(name, pin string, o, cp PartObserved, r *Sequence) Decision {
	d := Decision{Name: name, Version: pin, Pin: pin}
	if !o.Exists {
		d.Phase, d.Reason = v1alpha2.PhaseCreating, "being created at its pinned version "+pin
		if !r.ControlPlaneStable {
			d.Phase, d.CreatePending = v1alpha2.PhasePending, true
			d.Reason = "waiting for the control plane to be stable before creating it"
		}
		return d
	}
	if o.SpecVersion == pin {
		d.Phase, d.Reason = v1alpha2.PhasePinned, "pinned to "+pin
		if o.Upgrading {
			d.Phase, d.Reason = v1alpha2.PhaseUpgrading, fmt.Sprintf("Machines are rolling to its pinned version %s", pin)
		}
		return d
	}
	if !atLeast(cp.StatusVersion, pin) || !atLeast(cp.SpecVersion, pin) {
		d.Version, d.PendingUpgrade = o.SpecVersion, true
		d.Phase, d.Reason = v1alpha2.PhasePending, fmt.Sprintf("pinned to %s: waiting for the control plane to run %s", pin, pin)
		return d
	}
	d.Phase, d.Reason = v1alpha2.PhaseUpgrading, fmt.Sprintf("moving from %s to its pinned version %s", o.SpecVersion, pin)
	return d
}

// atLeast reports whether version v is set and not older than want.
func atLeast(v, want string) bool {
	have, err1 := ParseVersion(v)
	w, err2 := ParseVersion(want)
	return err1 == nil && err2 == nil && have.GTE(w)
}

// PoolsUpgrading names the existing MachineDeployments and MachinePools of
// t, pinned ones aside, whose Machines are not all at their spec version,
// in topology order.
func PoolsUpgrading(t *v1alpha2.Topology, obs *Observed) (machineDeployments, machinePools []string) {
	if t.Spec.Workers == nil || obs == nil {
		return nil, nil
	}
	// A pinned pool rolls on its own schedule: the control plane does not wait for it.
	for _, md := range t.Spec.Workers.MachineDeployments {
		if o := obs.MachineDeployments[md.Name]; o.Exists && o.Upgrading && md.Version == "" {
			machineDeployments = append(machineDeployments, md.Name)
		}
	}
	for _, mp := range t.Spec.Workers.MachinePools {
		if o := obs.MachinePools[mp.Name]; o.Exists && o.Upgrading && mp.Version == "" {
			machinePools = append(machinePools, mp.Name)
		}
	}
	return machineDeployments, machinePools
}

// ControlPlaneStage is where the control plane stands in a rollout, which
// decides both its next version and the lifecycle hooks due.
type ControlPlaneStage int

// The stages, in the order ControlPlaneStageOf tests them.
const (
	// StageCreating: the control plane object does not exist yet.
	StageCreating ControlPlaneStage = iota
	// StageProvisioning: it exists and has no version in status yet.
	StageProvisioning
	// StageUpgrading: its Machines are not all at its spec version.
	StageUpgrading
	// StageUpToDate: it is at the topology's version and stable.
	StageUpToDate
	// StageWaitingForWorkers: stable, but the workers must reach its
	// version before it takes the next step of a chained upgrade.
	StageWaitingForWorkers
	// StageWaitingForPools: stable, but pools are still rolling.
	StageWaitingForPools
	// StageReadyToUpgrade: stable, behind, and free to take its next version.
	StageReadyToUpgrade
)

// ControlPlaneStageOf reads the control plane's stage from what is observed
// of it, the pools still rolling and the version plan.
func ControlPlaneStageOf(desired string, o PartObserved, poolsUpgrading []string, plan VersionPlan) ControlPlaneStage {
	switch {
	case !o.Exists:
		return StageCreating
	case o.StatusVersion == "":
		return StageProvisioning
	case o.StatusVersion != o.SpecVersion:
		return StageUpgrading
	case o.SpecVersion == desired:
		return StageUpToDate
	case len(plan.Workers) > 0 && plan.Workers[0] == o.SpecVersion:
		return StageWaitingForWorkers
	case len(poolsUpgrading) > 0:
		return StageWaitingForPools
	}
	return StageReadyToUpgrade
}

// sequenceControlPlane decides the control plane's version; stable says
// pools may be created and upgraded, waiting that the control plane holds
// its next step until the workers have caught up. held, when set, is why a
// lifecycle hook keeps it from taking a new version.
func sequenceControlPlane(desired string, o PartObserved, poolsUpgrading []string, plan VersionPlan, held string) (d Decision, stable, waiting bool) {
	d = Decision{Name: ControlPlaneName}
	stage := ControlPlaneStageOf(desired, o, poolsUpgrading, plan)
	if stage == StageCreating {
		// Like upstream, a brand-new cluster creates its pools together with
		// its control plane: there is nothing to race with yet.
		d.Version, d.Phase = desired, v1alpha2.PhaseCreating
		return d, true, false
	}
	d.Version = o.SpecVersion
	switch stage {
	case StageProvisioning:
		d.Phase, d.Reason = v1alpha2.PhaseCreating, "the control plane is being provisioned"
		return d, false, false
	case StageUpgrading:
		d.Phase, d.Reason = v1alpha2.PhaseUpgrading, fmt.Sprintf("the control plane is upgrading from %s to %s", o.StatusVersion, o.SpecVersion)
		return d, false, false
	case StageUpToDate:
		d.Phase = v1alpha2.PhaseUpToDate
		return d, true, false
	case StageWaitingForWorkers:
		d.Phase = v1alpha2.PhasePending
		d.Reason = fmt.Sprintf("waiting for the workers to upgrade to %s before the control plane continues to %s", o.SpecVersion, desired)
		return d, false, true
	case StageWaitingForPools:
		d.Phase = v1alpha2.PhasePending
		d.Reason = fmt.Sprintf("waiting for %s to finish upgrading before the control plane upgrades to %s", strings.Join(poolsUpgrading, ", "), nextOr(plan.ControlPlane, desired))
		return d, false, false
	}
	next := nextOr(plan.ControlPlane, desired)
	if held != "" {
		d.Phase, d.Reason = v1alpha2.PhasePending, fmt.Sprintf("the upgrade to %s is held: %s", next, held)
		return d, false, false
	}
	d.Version, d.Phase = next, v1alpha2.PhaseUpgrading
	d.Reason = fmt.Sprintf("the control plane starts upgrading from %s to %s", o.SpecVersion, next)
	if len(plan.ControlPlane) > 1 {
		d.Reason += fmt.Sprintf(" (%s pending)", strings.Join(plan.ControlPlane[1:], ", "))
	}
	return d, false, false
}

// pendingUpgrade: the part exists behind desired and keeps its version now.
func pendingUpgrade(o PartObserved, d Decision, desired string) bool {
	return o.Exists && o.SpecVersion != desired && d.Version == o.SpecVersion
}

// nextOr is the first version of plan, or def when the plan is empty.
func nextOr(plan []string, def string) string {
	if len(plan) > 0 {
		return plan[0]
	}
	return def
}

// sequencePool decides for one pool; held reports whether it carries the hold
// annotation, which also holds every pool after it.
func sequencePool(name, desired string, o PartObserved, annotations map[string]string, holdBefore bool, r *Sequence, upgrading *[]string) (Decision, bool) {
	_, hold := annotations[clusterv1.ClusterTopologyHoldUpgradeSequenceAnnotation]
	_, deferred := annotations[clusterv1.ClusterTopologyDeferUpgradeAnnotation]
	d := Decision{Name: name, Version: desired}
	if !o.Exists {
		d.Phase, d.Reason = v1alpha2.PhaseCreating, "being created"
		if r.gate.Workers != "" {
			d.Phase, d.CreatePending = v1alpha2.PhasePending, true
			d.Reason = "creation held: " + r.gate.Workers
			return d, hold
		}
		if !r.ControlPlaneStable {
			d.Phase, d.CreatePending = v1alpha2.PhasePending, true
			d.Reason = "waiting for the control plane to be stable before creating it"
		}
		return d, hold
	}
	if o.SpecVersion == desired {
		d.Version, d.Phase = o.SpecVersion, v1alpha2.PhaseUpToDate
		if o.Upgrading {
			d.Phase, d.Reason = v1alpha2.PhaseUpgrading, fmt.Sprintf("Machines are rolling to %s", desired)
		}
		return d, hold
	}
	d.Version = o.SpecVersion
	next := nextOr(r.Plan.Workers, desired)
	switch {
	case deferred:
		d.Phase, d.Reason = v1alpha2.PhaseDeferred, fmt.Sprintf("upgrade deferred by the %s annotation", clusterv1.ClusterTopologyDeferUpgradeAnnotation)
	case hold:
		d.Phase, d.Reason = v1alpha2.PhaseHeld, fmt.Sprintf("upgrade held by the %s annotation", clusterv1.ClusterTopologyHoldUpgradeSequenceAnnotation)
	case holdBefore:
		d.Phase, d.Reason = v1alpha2.PhaseHeld, fmt.Sprintf("upgrade held: an earlier pool carries the %s annotation", clusterv1.ClusterTopologyHoldUpgradeSequenceAnnotation)
	case r.gate.Workers != "":
		d.Phase, d.Reason = v1alpha2.PhasePending, "upgrade held: "+r.gate.Workers
	case len(*upgrading) >= r.Concurrency:
		d.Phase, d.Reason = v1alpha2.PhasePending, fmt.Sprintf("upgrade concurrency limit %d reached (%s upgrading)", r.Concurrency, strings.Join(*upgrading, ", "))
	case !r.ControlPlaneStable && !r.WaitingForWorkers && r.gate.ControlPlane != "":
		d.Phase, d.Reason = v1alpha2.PhasePending, "waiting for the control plane, whose upgrade is held: "+r.gate.ControlPlane
	case !r.ControlPlaneStable && !r.WaitingForWorkers:
		d.Phase, d.Reason = v1alpha2.PhasePending, "waiting for the control plane to finish upgrading"
	case next == o.SpecVersion:
		// Upgraded to this step already; the others catch up first.
		d.Phase, d.Reason = v1alpha2.PhasePending, fmt.Sprintf("at %s, waiting for the control plane to take the next step to %s", o.SpecVersion, desired)
	default:
		d.Version, d.Phase = next, v1alpha2.PhaseUpgrading
		d.Reason = fmt.Sprintf("upgrading from %s to %s", o.SpecVersion, next)
		*upgrading = append(*upgrading, name)
	}
	return d, hold
}

// SequenceFromStatus rebuilds the rollout state a Topology's status reports,
// for checks (a version change while a rollout is in flight) that run where
// only the Topology is at hand, such as admission.
func SequenceFromStatus(s *v1alpha2.TopologyStatus) *Sequence {
	if s == nil || s.ControlPlane == nil {
		return nil
	}
	decision := func(p v1alpha2.PartStatus) Decision {
		d := Decision{Name: p.Name, Version: p.Version, Phase: p.Phase, Reason: p.Message}
		if p.Pinned {
			d.Pin = p.DesiredVersion
		}
		return d
	}
	r := &Sequence{DesiredVersion: s.ControlPlane.DesiredVersion, ControlPlane: decision(*s.ControlPlane)}
	for _, p := range s.MachineDeployments {
		r.MachineDeployments = append(r.MachineDeployments, decision(p))
	}
	for _, p := range s.MachinePools {
		r.MachinePools = append(r.MachinePools, decision(p))
	}
	return r
}
