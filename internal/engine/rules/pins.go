package rules

import (
	"fmt"

	"github.com/blang/semver/v4"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// pinnedPool is one pinned pool as the pin rules see it.
type pinnedPool struct {
	kind, name, pin string
	path            *field.Path
}

// pinnedPools lists t's pinned pools in topology order, with their pins' paths.
func pinnedPools(t *v1alpha2.Topology, spec *field.Path) []pinnedPool {
	if t.Spec.Workers == nil {
		return nil
	}
	var out []pinnedPool
	for i, md := range t.Spec.Workers.MachineDeployments {
		if md.Version != "" {
			out = append(out, pinnedPool{"MachineDeployment", md.Name, md.Version, spec.Child("workers", "machineDeployments").Index(i).Child("version")})
		}
	}
	for i, mp := range t.Spec.Workers.MachinePools {
		if mp.Version != "" {
			out = append(out, pinnedPool{"MachinePool", mp.Name, mp.Version, spec.Child("workers", "machinePools").Index(i).Child("version")})
		}
	}
	return out
}

// ValidatePins checks t's pinned pools: each pin a Kubernetes version, none
// newer than the Topology's version (the control plane's), none more minors
// behind it than Kubernetes' version skew policy lets a kubelet be, and, on
// an update from old (nil on create), no pool's version going backwards.
// The webhook, the editor, plan, `upgrade` and fleet rollouts ask it alike,
// so that a pin one of them admits none of the others refuses.
func ValidatePins(t, old *v1alpha2.Topology, spec *field.Path) field.ErrorList {
	upgrading := old != nil && old.Spec.Version != t.Spec.Version
	version := t.Spec.Version
	cp, err := upgrade.ParseVersion(version)
	errs := validatePinChanges(old, t, spec)
	for _, p := range pinnedPools(t, spec) {
		pin, perr := upgrade.ParseVersion(p.pin)
		switch {
		case perr != nil:
			errs = append(errs, field.Invalid(p.path, p.pin, "must be a Kubernetes version such as v1.32.0"))
		case err != nil:
			// The Topology's own version is reported for spec.version.
		case pin.GT(cp):
			errs = append(errs, field.Invalid(p.path, p.pin, fmt.Sprintf("%s %s is pinned to %s, newer than the control plane's %s: a pool may not run a newer Kubernetes than its control plane; pin it at %s or older, or upgrade the Topology first", p.kind, p.name, p.pin, version, version)))
		case pin.Major != cp.Major || cp.Minor > pin.Minor+upgrade.MaxKubeletSkew:
			behind := fmt.Sprintf("%d minors", cp.Minor-pin.Minor)
			if pin.Major != cp.Major {
				behind = "a major version"
			}
			what := fmt.Sprintf("%s %s is pinned to %s, %s behind the control plane's %s", p.kind, p.name, p.pin, behind, version)
			if upgrading {
				what = fmt.Sprintf("upgrading to %s would leave %s %s, pinned to %s, %s behind the control plane", version, p.kind, p.name, p.pin, behind)
			}
			errs = append(errs, field.Forbidden(p.path, fmt.Sprintf("%s; Kubernetes' version skew policy lets a kubelet be at most %d minors older: unpin it so it upgrades with the cluster (`kubectl topology set version %s --unpin %s`), or move it first (`kubectl topology set version %s %s=%s`)",
				what, upgrade.MaxKubeletSkew, t.Name, p.name, t.Name, p.name, oldestAllowed(cp))))
		}
	}
	return errs
}

// ValidatePinsAt is ValidatePins for t moved to version: what `upgrade`,
// the editor and fleet rollouts ask before they write it.
func ValidatePinsAt(t *v1alpha2.Topology, version string) field.ErrorList {
	moved := t.DeepCopy()
	moved.Spec.Version = version
	return ValidatePins(moved, t, field.NewPath("spec"))
}

// oldestAllowed is the oldest minor a kubelet may run under a control plane at cp.
func oldestAllowed(cp semver.Version) string {
	if cp.Minor < upgrade.MaxKubeletSkew {
		return fmt.Sprintf("v%d.0.x", cp.Major)
	}
	return fmt.Sprintf("v%d.%d.x", cp.Major, cp.Minor-upgrade.MaxKubeletSkew)
}

// validatePinChanges checks what an update does to the pins: a pool's
// version never goes backwards, pinned or not, as Kubernetes does not
// downgrade a kubelet; the unsafe version annotation lets it, as it lets
// the Topology's version. A new pin is therefore the pool's current
// version or newer, which is upstream's two-step "pin, then move".
func validatePinChanges(old, t *v1alpha2.Topology, spec *field.Path) field.ErrorList {
	if old == nil || upgrade.UnsafeVersionChange(t) {
		return nil
	}
	before := effectiveVersions(old)
	var errs field.ErrorList
	for _, p := range pinnedPools(t, spec) {
		was, ok := before[p.kind+"/"+p.name]
		if !ok {
			continue
		}
		pin, err1 := upgrade.ParseVersion(p.pin)
		prev, err2 := upgrade.ParseVersion(was)
		if err1 == nil && err2 == nil && pin.LT(prev) {
			errs = append(errs, field.Forbidden(p.path, fmt.Sprintf("%s %s runs %s: pinning it to the older %s would downgrade its kubelets, which Kubernetes does not support; pin it at %s or newer", p.kind, p.name, was, p.pin, was)))
		}
	}
	return errs
}

// effectiveVersions is the version each of t's pools is to run, by kind/name.
func effectiveVersions(t *v1alpha2.Topology) map[string]string {
	out := map[string]string{}
	if t.Spec.Workers == nil {
		return out
	}
	for _, md := range t.Spec.Workers.MachineDeployments {
		out["MachineDeployment/"+md.Name] = pinOr(md.Version, t.Spec.Version)
	}
	for _, mp := range t.Spec.Workers.MachinePools {
		out["MachinePool/"+mp.Name] = pinOr(mp.Version, t.Spec.Version)
	}
	return out
}

func pinOr(pin, version string) string {
	if pin != "" {
		return pin
	}
	return version
}
