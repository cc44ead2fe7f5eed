package membership

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/loader"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// maxNamed bounds how many clusters one refusal names.
const maxNamed = 10

// Admit is every reason rollout ro cannot be carried out, naming the field:
// a change that sets nothing, windows that are not times, a selector that
// matches nothing, waves that do not cover the fleet, a version or class
// the selected clusters' classes do not allow, and a cluster already in
// another rollout that has not finished. It returns the clusters selected.
// The webhook refuses a new rollout with it, and `rollout create` checks
// with it before its preview.
func (r Reader) Admit(ctx context.Context, ro *v1alpha2.TopologyRollout) ([]*v1alpha2.Topology, field.ErrorList) {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if fleet.Empty(ro.Spec.Change) {
		errs = append(errs, field.Required(spec.Child("change"), "set a version, a class or variables to roll out"))
	}
	errs = append(errs, fleet.ValidateWindows(ro.Spec.Strategy.Windows)...)
	if ro.Spec.Strategy.Soak.Duration < 0 {
		errs = append(errs, field.Invalid(spec.Child("strategy", "soak"), ro.Spec.Strategy.Soak.Duration.String(), "must not be negative"))
	}
	if ro.Spec.Strategy.ClusterTimeout.Duration < 0 {
		errs = append(errs, field.Invalid(spec.Child("strategy", "clusterTimeout"), ro.Spec.Strategy.ClusterTimeout.Duration.String(), "must not be negative"))
	}
	selected, err := r.List(ctx, ro.Spec.Targets)
	if err != nil {
		return nil, append(errs, field.Invalid(spec.Child("targets", "selector"), ro.Spec.Targets.Selector.String(), err.Error()))
	}
	if len(selected) == 0 {
		return nil, append(errs, field.Invalid(spec.Child("targets"), targetsText(ro.Spec.Targets), "matches no cluster: no Topology or Cluster with spec.topology has these labels (in these namespaces, of this class)"))
	}
	_, waveErrs := fleet.WaveSizes(fleet.Waves(ro.Spec.Strategy), len(selected))
	errs = append(errs, waveErrs...)
	errs = append(errs, r.allowed(ctx, ro.Spec.Change, selected)...)
	errs = append(errs, r.busy(ctx, ro, selected)...)
	return selected, errs
}

func targetsText(t v1alpha2.RolloutTargets) string {
	s := "selector " + fmt.Sprint(t.Selector.MatchLabels)
	if len(t.Selector.MatchExpressions) > 0 {
		s += fmt.Sprintf(" %v", t.Selector.MatchExpressions)
	}
	if t.Class != "" {
		s += ", class " + t.Class
	}
	if len(t.Namespaces) > 0 {
		s += ", namespaces " + strings.Join(t.Namespaces, ",")
	}
	return s
}

// allowed checks the version and class against each cluster's class: the
// version rules the webhook enforces on each cluster (downgrades, skipped
// minors, the class's versions), the class existing and compatible. What
// depends on the moment (a rollout in flight, health) is the preflight's.
func (r Reader) allowed(ctx context.Context, change v1alpha2.RolloutChange, selected []*v1alpha2.Topology) field.ErrorList {
	byField := map[string][]string{}
	var order []string
	note := func(path, msg string) {
		if _, ok := byField[path]; !ok {
			order = append(order, path)
		}
		byField[path] = append(byField[path], msg)
	}
	// A fleet shares a few classes: each is read once.
	type read struct {
		class *v1alpha2.TopologyClass
		err   error
	}
	classes := map[string]read{}
	l := r.loader(nil)
	classOf := func(t *v1alpha2.Topology) (*v1alpha2.TopologyClass, error) {
		key := RefOf(t).Kind + "/" + t.GetClassKey().String()
		if c, ok := classes[key]; ok {
			return c.class, c.err
		}
		c, err := l.Class(ctx, t)
		classes[key] = read{c, err}
		return c, err
	}
	for _, t := range selected {
		what := RefOf(t).Key()
		class, err := classOf(t)
		if err != nil {
			note("spec.targets", fmt.Sprintf("%s: its class cannot be read: %v", what, err))
			continue
		}
		target := class
		if change.Class != "" && change.Class != t.Spec.ClassRef.Name {
			edited := t.DeepCopy()
			fleet.Apply(change, edited)
			desired, err := classOf(edited)
			var missing *loader.NotFoundError
			switch {
			case errors.As(err, &missing):
				note("spec.change.class", fmt.Sprintf("%s: class %s does not exist in namespace %s", what, change.Class, t.GetClassKey().Namespace))
				continue
			case err != nil:
				note("spec.change.class", fmt.Sprintf("%s: reading class %s: %v", what, change.Class, err))
				continue
			}
			for _, e := range rules.ClassesCompatible(class, desired) {
				note("spec.change.class", fmt.Sprintf("%s: %s: %s", what, e.Field, e.Detail))
			}
			target = desired
		}
		if change.Version != "" {
			vc := rules.VersionChange{Old: t.Spec.Version, New: change.Version}.ForClass(target)
			for _, e := range rules.ValidateVersionChange(vc) {
				note("spec.change.version", fmt.Sprintf("%s: %s", what, e.Detail))
			}
		}
	}
	var errs field.ErrorList
	for _, path := range order {
		msgs := byField[path]
		errs = append(errs, field.Forbidden(fieldPath(path), namedList(msgs)))
	}
	return errs
}

func fieldPath(dotted string) *field.Path {
	parts := strings.Split(dotted, ".")
	return field.NewPath(parts[0], parts[1:]...)
}

// namedList joins messages, naming at most maxNamed.
func namedList(msgs []string) string {
	if len(msgs) <= maxNamed {
		return strings.Join(msgs, "; ")
	}
	return strings.Join(msgs[:maxNamed], "; ") + fmt.Sprintf("; and %d more", len(msgs)-maxNamed)
}

// busy names each selected cluster another unfinished rollout holds.
func (r Reader) busy(ctx context.Context, ro *v1alpha2.TopologyRollout, selected []*v1alpha2.Topology) field.ErrorList {
	list := &v1alpha2.TopologyRolloutList{}
	if err := r.Client.List(ctx, list); err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec", "targets"), fmt.Errorf("listing TopologyRollouts: %w", err))}
	}
	var msgs []string
	for i := range list.Items {
		other := &list.Items[i]
		if other.Name == ro.Name || !Active(other) {
			continue
		}
		held, err := r.Holds(ctx, other)
		if err != nil {
			return field.ErrorList{field.InternalError(field.NewPath("spec", "targets"), err)}
		}
		for _, t := range selected {
			if key := RefOf(t).Key(); slices.Contains(held, key) {
				msgs = append(msgs, fmt.Sprintf("%s is already in TopologyRollout %s (%s)", key, other.Name, orPending(other.Status.Phase)))
			}
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "targets"), namedList(msgs)+": wait until it completes, abort it, or leave these clusters out")}
}

func orPending(p v1alpha2.FleetRolloutPhase) string {
	if p == "" {
		return string(v1alpha2.RolloutPending)
	}
	return string(p)
}

// Active tells whether a rollout may still change clusters: not aborted and
// not completed.
func Active(ro *v1alpha2.TopologyRollout) bool {
	return !ro.Spec.Aborted && ro.Status.Phase != v1alpha2.RolloutCompleted && ro.Status.Phase != v1alpha2.RolloutAborted
}

// Holds are the clusters an active rollout has not finished with: from its
// status once it started, from its targets before.
func (r Reader) Holds(ctx context.Context, ro *v1alpha2.TopologyRollout) ([]string, error) {
	if len(ro.Status.Clusters) > 0 {
		var out []string
		for _, c := range ro.Status.Clusters {
			if c.Phase != v1alpha2.ClusterSucceeded && c.Phase != v1alpha2.ClusterSkipped {
				out = append(out, c.Key())
			}
		}
		return out, nil
	}
	selected, err := r.List(ctx, ro.Spec.Targets)
	if err != nil {
		return nil, fmt.Errorf("TopologyRollout %s: %w", ro.Name, err)
	}
	out := make([]string, 0, len(selected))
	for _, t := range selected {
		out = append(out, RefOf(t).Key())
	}
	return out, nil
}

// AdmitUpdate refuses what may not change once a rollout exists: its change
// and targets, its waves once it started, and an abort taken back; and a
// skip or retry naming a cluster the rollout does not have.
func AdmitUpdate(old, ro *v1alpha2.TopologyRollout) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if !apiequality.Semantic.DeepEqual(old.Spec.Change, ro.Spec.Change) {
		errs = append(errs, field.Forbidden(spec.Child("change"), "cannot change once the rollout exists: abort it and create another"))
	}
	if !apiequality.Semantic.DeepEqual(old.Spec.Targets, ro.Spec.Targets) {
		errs = append(errs, field.Forbidden(spec.Child("targets"), "cannot change once the rollout exists: skip clusters, or abort it and create another"))
	}
	if len(old.Status.Clusters) > 0 && !apiequality.Semantic.DeepEqual(fleet.Waves(old.Spec.Strategy), fleet.Waves(ro.Spec.Strategy)) {
		errs = append(errs, field.Forbidden(spec.Child("strategy", "waves"), "cannot change once the rollout has started: its clusters are in their waves"))
	}
	if old.Spec.Aborted && !ro.Spec.Aborted {
		errs = append(errs, field.Forbidden(spec.Child("aborted"), "an aborted rollout cannot be resumed: create another"))
	}
	errs = append(errs, fleet.ValidateWindows(ro.Spec.Strategy.Windows)...)
	if len(ro.Status.Clusters) == 0 {
		return errs
	}
	has := func(ref v1alpha2.RolloutClusterRef) bool {
		return slices.ContainsFunc(ro.Status.Clusters, func(c v1alpha2.RolloutClusterStatus) bool { return c.RolloutClusterRef == ref })
	}
	for i, ref := range ro.Spec.Skip {
		if !has(ref) && !slices.Contains(old.Spec.Skip, ref) {
			errs = append(errs, field.NotFound(spec.Child("skip").Index(i), ref.Key()))
		}
	}
	for i, rt := range ro.Spec.Retry {
		if !has(rt.RolloutClusterRef) && !slices.Contains(old.Spec.Retry, rt) {
			errs = append(errs, field.NotFound(spec.Child("retry").Index(i), rt.Key()))
		}
	}
	return errs
}
