package rules

import (
	"fmt"

	"github.com/blang/semver/v4"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// pinPath is the field of pool p's pin under spec.
func pinPath(p upgrade.PinnedPool, spec *field.Path) *field.Path {
	list := "machineDeployments"
	if p.Kind == "MachinePool" {
		list = "machinePools"
	}
	return spec.Child("workers", list).Index(p.Index).Child("version")
}

// ValidatePins checks t's pinned pools: each pin a Kubernetes version, none
// newer than the Topology's version (the control plane's), none more minors
// behind it than Kubernetes' version skew policy lets a kubelet be, and, on
// an update from old (nil on create), no pool's version going backwards.
// The webhook, the editor, plan, `upgrade` and fleet rollouts ask it alike,
// so that a pin one of them admits none of the others refuses.
func ValidatePins(t, old *v1alpha2.Topology, spec *field.Path) field.ErrorList {
	upgrading := old != nil && old.Spec.Version != t.Spec.Version
	return append(validatePinChanges(old, t, spec), validatePinsUnder(t, t.Spec.Version, upgrading, spec)...)
}

// ValidatePinsAt is ValidatePins for t moved to version: what `upgrade`,
// the editor and fleet rollouts ask before they write it.
func ValidatePinsAt(t *v1alpha2.Topology, version string) field.ErrorList {
	return validatePinsUnder(t, version, version != t.Spec.Version, field.NewPath("spec"))
}

// validatePinsUnder checks t's pins against a control plane at version;
// upgrading says version is a change, for the message.
func validatePinsUnder(t *v1alpha2.Topology, version string, upgrading bool, spec *field.Path) field.ErrorList {
	cp, err := upgrade.ParseVersion(version)
	var errs field.ErrorList
	for _, p := range upgrade.PinnedPools(t) {
		path := pinPath(p, spec)
		pin, perr := upgrade.ParseVersion(p.Version)
		switch {
		case perr != nil:
			errs = append(errs, field.Invalid(path, p.Version, "must be a Kubernetes version such as v1.32.0"))
		case err != nil:
			// The Topology's own version is reported for spec.version.
		case pin.GT(cp):
			errs = append(errs, field.Invalid(path, p.Version, fmt.Sprintf("%s %s is pinned to %s, newer than the control plane's %s: a pool may not run a newer Kubernetes than its control plane; pin it at %s or older, or upgrade the Topology first", p.Kind, p.Name, p.Version, version, version)))
		case pin.Major != cp.Major || cp.Minor > pin.Minor+upgrade.MaxKubeletSkew:
			behind := fmt.Sprintf("%d minors", cp.Minor-pin.Minor)
			if pin.Major != cp.Major {
				behind = "a major version"
			}
			what := fmt.Sprintf("%s %s is pinned to %s, %s behind the control plane's %s", p.Kind, p.Name, p.Version, behind, version)
			if upgrading {
				what = fmt.Sprintf("upgrading to %s would leave %s %s, pinned to %s, %s behind the control plane", version, p.Kind, p.Name, p.Version, behind)
			}
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("%s; Kubernetes' version skew policy lets a kubelet be at most %d minors older: unpin it so it upgrades with the cluster (`kubectl topology set version %s --unpin %s`), or move it first (`kubectl topology set version %s %s=%s`)",
				what, upgrade.MaxKubeletSkew, t.Name, p.Name, t.Name, p.Name, oldestAllowed(cp))))
		}
	}
	return errs
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
	var errs field.ErrorList
	for _, p := range upgrade.PinnedPools(t) {
		was, ok := poolVersion(old, p.Kind, p.Name)
		if !ok {
			continue
		}
		pin, err1 := upgrade.ParseVersion(p.Version)
		prev, err2 := upgrade.ParseVersion(was)
		if err1 == nil && err2 == nil && pin.LT(prev) {
			errs = append(errs, field.Forbidden(pinPath(p, spec), fmt.Sprintf("%s %s runs %s: pinning it to the older %s would downgrade its kubelets, which Kubernetes does not support; pin it at %s or newer", p.Kind, p.Name, was, p.Version, was)))
		}
	}
	return errs
}

// poolVersion is the version t's pool of kind and name is to run: its pin,
// or t's version; ok is false when t has no such pool.
func poolVersion(t *v1alpha2.Topology, kind, name string) (string, bool) {
	pin := ""
	switch {
	case kind == "MachineDeployment" && t.MachineDeployment(name) != nil:
		pin = t.MachineDeployment(name).Version
	case kind == "MachinePool" && t.MachinePool(name) != nil:
		pin = t.MachinePool(name).Version
	default:
		return "", false
	}
	if pin == "" {
		return t.Spec.Version, true
	}
	return pin, true
}
