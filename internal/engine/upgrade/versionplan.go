package upgrade

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/blang/semver/v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// VersionPlan is the chain of versions a topology's parts still go through
// to reach its version, as upstream's chained upgrades (Cluster API v1.13+)
// compute it: the control plane one minor at a time, the workers only where
// the version skew rules make them, and at the end.
type VersionPlan struct {
	// ControlPlane are the versions the control plane still takes, in order;
	// the last is the topology's version. Empty when it is there.
	ControlPlane []string
	// Workers are the versions the MachineDeployments and MachinePools still
	// take, in order; empty when every pool is at the topology's version.
	Workers []string
}

// IsZero is true when no part has a version left to take.
func (p VersionPlan) IsZero() bool { return len(p.ControlPlane) == 0 && len(p.Workers) == 0 }

// maxWorkerSkew is how many minors a kubelet may lag the API server
// (Kubernetes' version skew policy since v1.28).
const maxWorkerSkew = 3

// PlanVersions computes the chain from a control plane at controlPlane and
// pools whose oldest version is minWorkers ("" when there are none) to
// desired. Without classVersions (the class's kubernetesVersions) the
// control plane may move one minor, as before chained upgrades; with them,
// it steps through the newest listed patch of every minor in between.
func PlanVersions(classVersions []string, desired, controlPlane, minWorkers string) (VersionPlan, error) {
	var plan VersionPlan
	if controlPlane == "" {
		return plan, nil // nothing exists yet: everything is created at desired
	}
	want, err := ParseVersion(desired)
	if err != nil {
		return plan, fmt.Errorf("spec.version %q: %w", desired, err)
	}
	cp, err := ParseVersion(controlPlane)
	if err != nil {
		return plan, fmt.Errorf("the control plane's version %q: %w", controlPlane, err)
	}
	var workers *semver.Version
	if minWorkers != "" {
		w, err := ParseVersion(minWorkers)
		if err != nil {
			return plan, fmt.Errorf("the workers' version %q: %w", minWorkers, err)
		}
		workers = &w
	}
	if cp.Equals(want) && (workers == nil || workers.Equals(want)) {
		return plan, nil
	}
	if !cp.Equals(want) {
		if len(classVersions) == 0 {
			plan.ControlPlane, err = oneMinor(desired, cp, want)
		} else {
			plan.ControlPlane, err = fromClassVersions(classVersions, desired, cp, want)
		}
		if err != nil {
			return plan, err
		}
	}
	if workers == nil || workers.Equals(want) {
		return plan, nil
	}
	plan.Workers, err = workersPlan(desired, controlPlane, cp, *workers, plan.ControlPlane)
	return plan, err
}

// oneMinor is the plan where the class lists no versions: straight to
// desired, which may be at most one minor ahead.
func oneMinor(desired string, cp, want semver.Version) ([]string, error) {
	if want.LT(cp) {
		return nil, fmt.Errorf("the control plane is at v%s, newer than spec.version %s: versions cannot go down", cp, desired)
	}
	if want.Major != cp.Major || want.Minor > cp.Minor+1 {
		return nil, fmt.Errorf("cannot upgrade the control plane from v%s to %s in one step, and the class lists no kubernetesVersions to chain the upgrade through: list them in the class, or upgrade one minor at a time", cp, desired)
	}
	return []string{desired}, nil
}

// fromClassVersions picks, for every minor after the control plane's up to
// desired, the newest version the class lists, and checks no minor is missing.
func fromClassVersions(classVersions []string, desired string, cp, want semver.Version) ([]string, error) {
	var plan []string
	minorOf := map[uint64]int{} // minor → index in plan
	for _, v := range classVersions {
		sv, err := ParseVersion(v)
		if err != nil {
			return nil, fmt.Errorf("spec.kubernetesVersions of the class: %w", err)
		}
		if !sv.GT(cp) || sv.GT(want) {
			continue
		}
		// A newer patch of the current minor is no step of its own when the
		// chain moves on to the next minor anyway.
		if sv.Minor == cp.Minor && want.Minor != cp.Minor {
			continue
		}
		// A later patch of a minor replaces the earlier one: the list is
		// oldest first, so the newest patch of each minor is kept.
		if i, ok := minorOf[sv.Minor]; ok {
			plan[i] = v
			continue
		}
		minorOf[sv.Minor] = len(plan)
		plan = append(plan, v)
	}
	if len(plan) == 0 || plan[len(plan)-1] != desired {
		return nil, fmt.Errorf("spec.version %s is not among the class's kubernetesVersions: pick one of %v", desired, classVersions)
	}
	prev := cp
	for _, v := range plan {
		sv, _ := ParseVersion(v)
		if sv.Major != prev.Major || sv.Minor > prev.Minor+1 {
			return nil, fmt.Errorf("cannot chain the upgrade from v%s to %s: the class's kubernetesVersions list no v%d.%d.x; add one", cp, desired, prev.Major, prev.Minor+1)
		}
		prev = sv
	}
	return plan, nil
}

// workersPlan is upstream's default plan for workers: as few steps as the
// skew rules allow, each at a version the control plane passes through, and
// the desired version last.
func workersPlan(desired, controlPlane string, cp, workers semver.Version, cpPlan []string) ([]string, error) {
	want, _ := ParseVersion(desired)
	minors := map[uint64]string{cp.Minor: controlPlane}
	for _, v := range cpPlan {
		sv, _ := ParseVersion(v)
		minors[sv.Minor] = v
	}
	var plan []string
	if want.Minor > workers.Minor {
		for i := uint64(1); i < want.Minor-workers.Minor; i++ {
			if i%maxWorkerSkew != 0 {
				continue
			}
			v, ok := minors[workers.Minor+i]
			if !ok {
				return nil, fmt.Errorf("cannot plan the workers' upgrade from v%s to %s: no version of minor %d on the control plane's path", workers, desired, workers.Minor+i)
			}
			plan = append(plan, v)
		}
	}
	if len(plan) == 0 || plan[len(plan)-1] != desired {
		plan = append(plan, desired)
	}
	return plan, nil
}

// PlanVersionsFor computes the plan of topology t of class from the versions
// observed in obs: the control plane's spec version and the oldest spec
// version of its pools.
//
// A class that names an upgrade-plan extension has the chain from it, as
// upstream gives the extension precedence over kubernetesVersions; without a
// planner (offline) the class's list or the one-minor rule stands in.
func PlanVersionsFor(ctx context.Context, class *v1alpha2.TopologyClass, t *v1alpha2.Topology, obs *Observed, planner UpgradePlanner, cluster *unstructured.Unstructured) (VersionPlan, error) {
	if obs == nil || !obs.ControlPlane.Exists {
		return VersionPlan{}, nil
	}
	var versions []string
	if class != nil {
		versions = class.Spec.KubernetesVersions
	}
	workers := MinWorkersVersion(Unpinned(t, obs))
	var plan VersionPlan
	var err error
	if ext := UpgradePlanExtension(class); ext != "" && planner != nil {
		plan, err = planFromExtension(ctx, planner, ext, UpgradePlanRequest{Cluster: cluster, Topology: t, Desired: t.Spec.Version, ControlPlane: obs.ControlPlane.SpecVersion, MinWorkers: workers})
	} else {
		plan, err = PlanVersions(versions, t.Spec.Version, obs.ControlPlane.SpecVersion, workers)
		if err != nil && ext != "" {
			err = fmt.Errorf("%w (the class's upgrade-plan extension %s decides the chain once the agent runs the upgrade)", err, ext)
		}
	}
	if err != nil && UnsafeVersionChange(t) {
		// The unsafe annotation takes the version as asked, in one step, as
		// v1.10 did; v1.14's controller would stop at "cannot compute an
		// upgrade plan", which leaves the annotation no use.
		plan, err = VersionPlan{}, nil
		if obs.ControlPlane.SpecVersion != t.Spec.Version {
			plan.ControlPlane = []string{t.Spec.Version}
		}
		if workers != "" && workers != t.Spec.Version {
			plan.Workers = []string{t.Spec.Version}
		}
	}
	return plan, err
}

// MinWorkersVersion is the oldest spec version of any existing pool, or "";
// pass Unpinned(t, obs) to leave pinned pools out, as a plan must.
func MinWorkersVersion(obs *Observed) string {
	var versions []string
	for _, parts := range []map[string]PartObserved{obs.MachineDeployments, obs.MachinePools} {
		for _, name := range slices.Sorted(maps.Keys(parts)) {
			if o := parts[name]; o.Exists {
				versions = append(versions, o.SpecVersion)
			}
		}
	}
	return oldestVersion(versions)
}

// oldestVersion is the lowest of versions, skipping empty and unparsable
// ones; "" when none is left.
func oldestVersion(versions []string) string {
	var oldest string
	var oldestV semver.Version
	for _, v := range versions {
		parsed, err := ParseVersion(v)
		if err != nil {
			continue
		}
		if oldest == "" || parsed.LT(oldestV) {
			oldest, oldestV = v, parsed
		}
	}
	return oldest
}

// UpgradePlanner asks a class's upgrade-plan extension (the Runtime SDK's
// GenerateUpgradePlan hook) for the versions an upgrade goes through. The
// agent provides one; offline callers pass nil.
type UpgradePlanner interface {
	// GenerateUpgradePlan returns the versions the control plane takes and,
	// optionally, those the workers take; an empty workers list leaves them
	// to the skew rules.
	GenerateUpgradePlan(ctx context.Context, extension string, req UpgradePlanRequest) (controlPlane, workers []string, err error)
}

// UpgradePlanRequest is what an upgrade-plan extension is asked.
type UpgradePlanRequest struct {
	// Cluster is the Cluster API Cluster as it exists.
	Cluster *unstructured.Unstructured
	// Topology is the topology being upgraded.
	Topology *v1alpha2.Topology
	// Desired is the topology's version; ControlPlane the control plane's
	// spec version; MinWorkers the oldest pool's, or "" without pools.
	Desired, ControlPlane, MinWorkers string
}

// UpgradePlanExtension is the extension class asks for upgrade plans, or "".
func UpgradePlanExtension(class *v1alpha2.TopologyClass) string {
	if class == nil {
		return ""
	}
	return class.Spec.Upgrade.External.GenerateUpgradePlanExtension
}

// planFromExtension asks the class's upgrade-plan extension for the chain
// and checks the answer as upstream does, filling in the workers' steps
// when it leaves them out.
func planFromExtension(ctx context.Context, planner UpgradePlanner, extension string, req UpgradePlanRequest) (VersionPlan, error) {
	if req.ControlPlane == req.Desired && (req.MinWorkers == "" || req.MinWorkers == req.Desired) {
		return VersionPlan{}, nil
	}
	cpPlan, workersPlanned, err := planner.GenerateUpgradePlan(ctx, extension, req)
	if err != nil {
		return VersionPlan{}, fmt.Errorf("asking upgrade-plan extension %s: %w", extension, err)
	}
	plan, err := CheckUpgradePlan(req, cpPlan, workersPlanned)
	if err != nil {
		return VersionPlan{}, fmt.Errorf("upgrade-plan extension %s %w", extension, err)
	}
	return plan, nil
}

// CheckUpgradePlan holds an upgrade-plan extension's answer to req to the
// rules upstream holds it to, and fills in the workers' steps where it
// leaves them out. A planner checks before it remembers an answer.
func CheckUpgradePlan(req UpgradePlanRequest, cpPlan, workersPlanned []string) (VersionPlan, error) {
	want, err := ParseVersion(req.Desired)
	if err != nil {
		return VersionPlan{}, fmt.Errorf("spec.version %q: %w", req.Desired, err)
	}
	cp, err := ParseVersion(req.ControlPlane)
	if err != nil {
		return VersionPlan{}, fmt.Errorf("the control plane's version %q: %w", req.ControlPlane, err)
	}
	var workers *semver.Version
	if req.MinWorkers != "" {
		w, err := ParseVersion(req.MinWorkers)
		if err != nil {
			return VersionPlan{}, fmt.Errorf("the workers' version %q: %w", req.MinWorkers, err)
		}
		workers = &w
	}
	plan := VersionPlan{ControlPlane: cpPlan, Workers: workersPlanned}
	if err := checkControlPlaneSteps(req.Desired, cp, want, cpPlan); err != nil {
		return VersionPlan{}, fmt.Errorf("answered a control plane plan %v: %w", cpPlan, err)
	}
	if workers == nil || workers.Equals(want) {
		if len(workersPlanned) > 0 {
			return VersionPlan{}, fmt.Errorf("answered a workers plan %v, but no worker has a version to take", workersPlanned)
		}
		return plan, nil
	}
	if len(workersPlanned) == 0 {
		plan.Workers, err = workersPlan(req.Desired, req.ControlPlane, cp, *workers, cpPlan)
		return plan, err
	}
	if err := checkWorkerSteps(req.Desired, req.ControlPlane, *workers, want, cpPlan, workersPlanned); err != nil {
		return VersionPlan{}, fmt.Errorf("answered a workers plan %v: %w", workersPlanned, err)
	}
	return plan, nil
}

// checkControlPlaneSteps holds an extension's control plane plan to the
// rules the class's own list follows: newer at every step, no minor
// skipped, ending at desired.
func checkControlPlaneSteps(desired string, cp, want semver.Version, steps []string) error {
	if cp.Equals(want) {
		if len(steps) > 0 {
			return fmt.Errorf("the control plane is at %s already", desired)
		}
		return nil
	}
	prev := cp
	for i, v := range steps {
		sv, err := ParseVersion(v)
		if err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
		if !sv.GT(prev) {
			return fmt.Errorf("step %d, %s, is not newer than v%s", i+1, v, prev)
		}
		if sv.Major != prev.Major || sv.Minor > prev.Minor+1 {
			return fmt.Errorf("step %d, %s, skips a minor after v%s", i+1, v, prev)
		}
		prev = sv
	}
	if !prev.Equals(want) {
		return fmt.Errorf("it must end at %s", desired)
	}
	return nil
}

// checkWorkerSteps holds an extension's workers plan to upstream's rules:
// only versions the control plane is at or passes through, newer at every
// step, never more than the skew rules allow at once, ending at desired.
func checkWorkerSteps(desired, controlPlane string, workers, want semver.Version, cpPlan, steps []string) error {
	onPath := append([]string{controlPlane}, cpPlan...)
	prev := workers
	for i, v := range steps {
		if !slices.Contains(onPath, v) {
			return fmt.Errorf("step %d, %s, is not a version the control plane is at or passes through (%v)", i+1, v, onPath)
		}
		sv, err := ParseVersion(v)
		if err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
		if !sv.GT(prev) {
			return fmt.Errorf("step %d, %s, is not newer than v%s", i+1, v, prev)
		}
		if sv.Minor > prev.Minor+maxWorkerSkew {
			return fmt.Errorf("step %d, %s, moves the workers more than %d minors from v%s, beyond the version skew policy", i+1, v, maxWorkerSkew, prev)
		}
		prev = sv
	}
	if !prev.Equals(want) {
		return fmt.Errorf("it must end at %s", desired)
	}
	return nil
}
