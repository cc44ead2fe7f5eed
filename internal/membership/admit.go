package membership

import (
	"context"
	"fmt"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// maxNamed bounds how many clusters one refusal names.
const maxNamed = 10

// Admit is every reason rollout ro cannot be carried out, naming the field:
// a change that sets nothing, windows that are not times, a selector that
// matches nothing, waves that do not cover the fleet, a version or class
// the selected clusters' classes do not allow, and a cluster already in
// another rollout that has not finished. It returns the clusters selected;
// their classes stay in classes for the caller (`rollout create`'s preview).
// The webhook refuses a new rollout with it, and `rollout create` checks
// with it before its preview.
func (r Reader) Admit(ctx context.Context, ro *v1alpha2.TopologyRollout, classes *Classes) ([]*v1alpha2.Topology, field.ErrorList) {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if fleet.Empty(ro.Spec.Change) {
		errs = append(errs, field.Required(spec.Child("change"), "set a version, a class or variables to roll out"))
	}
	errs = append(errs, fleet.ValidateStrategy(ro.Spec.Strategy)...)
	selected, err := r.List(ctx, ro.Spec.Targets)
	if err != nil {
		return nil, append(errs, field.Invalid(spec.Child("targets", "selector"), ro.Spec.Targets.Selector.String(), err.Error()))
	}
	if len(selected) == 0 {
		return nil, append(errs, field.Invalid(spec.Child("targets"), targetsText(ro.Spec.Targets), "matches no cluster: no Topology or Cluster with spec.topology has these labels (in these namespaces, of this class)"))
	}
	_, waveErrs := fleet.WaveSizes(fleet.Waves(ro.Spec.Strategy), len(selected))
	errs = append(errs, waveErrs...)
	errs = append(errs, allowed(ctx, classes, ro.Spec.Change, selected)...)
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

// allowed checks the class and version against each cluster's class, one
// refusal per field naming every cluster: the rebase (rebaseProblems) and
// the version rules the webhook enforces on each cluster (downgrades,
// skipped minors, the class's versions). What depends on the moment (a
// rollout in flight, health) is the preflight's.
func allowed(ctx context.Context, classes *Classes, change v1alpha2.RolloutChange, selected []*v1alpha2.Topology) field.ErrorList {
	byField := map[string][]string{}
	var order []string
	note := func(path, msg string) {
		if _, ok := byField[path]; !ok {
			order = append(order, path)
		}
		byField[path] = append(byField[path], msg)
	}
	for _, t := range selected {
		what := RefOf(t).Key()
		target, problems := rebaseProblems(ctx, classes, change, t)
		for _, p := range problems {
			note(p.field, what+": "+p.message)
		}
		if target == nil || change.Version == "" {
			continue
		}
		for _, e := range rules.ValidateVersionChange(rules.VersionChange{Old: t.Spec.Version, New: change.Version}.ForClass(target)) {
			note("spec.change.version", what+": "+e.Detail)
		}
	}
	var errs field.ErrorList
	for _, path := range order {
		parts := strings.Split(path, ".")
		errs = append(errs, field.Forbidden(field.NewPath(parts[0], parts[1:]...), namedList(byField[path])))
	}
	return errs
}

// namedList joins messages, naming at most maxNamed.
func namedList(msgs []string) string {
	if len(msgs) <= maxNamed {
		return strings.Join(msgs, "; ")
	}
	return strings.Join(msgs[:maxNamed], "; ") + fmt.Sprintf("; and %d more", len(msgs)-maxNamed)
}

// busy names each selected cluster another active rollout holds.
func (r Reader) busy(ctx context.Context, ro *v1alpha2.TopologyRollout, selected []*v1alpha2.Topology) field.ErrorList {
	list := &v1alpha2.TopologyRolloutList{}
	if err := r.Client.List(ctx, list); err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec", "targets"), fmt.Errorf("listing TopologyRollouts: %w", err))}
	}
	others := make([]v1alpha2.TopologyRollout, 0, len(list.Items))
	for _, other := range list.Items {
		if other.Name != ro.Name {
			others = append(others, other)
		}
	}
	held, err := r.holding(ctx, others)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec", "targets"), err)}
	}
	var msgs []string
	for _, t := range selected {
		key := RefOf(t).Key()
		if h, ok := held[key]; ok {
			msgs = append(msgs, fmt.Sprintf("%s is already in TopologyRollout %s (%s)", key, h.Rollout, h.Phase))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "targets"), namedList(msgs)+": wait until it completes, abort it, or leave these clusters out")}
}

// holding is fleet.Holding, with the clusters an active rollout that has
// not started yet selects: it holds them from its creation on.
func (r Reader) holding(ctx context.Context, rollouts []v1alpha2.TopologyRollout) (map[string]fleet.Hold, error) {
	held := fleet.Holding(rollouts)
	for i := range rollouts {
		ro := &rollouts[i]
		if !fleet.Active(ro) || len(ro.Status.Clusters) > 0 {
			continue
		}
		selected, err := r.List(ctx, ro.Spec.Targets)
		if err != nil {
			return nil, fmt.Errorf("TopologyRollout %s: %w", ro.Name, err)
		}
		for _, t := range selected {
			held[RefOf(t).Key()] = fleet.Hold{Rollout: ro.Name, Phase: v1alpha2.ClusterPending}
		}
	}
	return held, nil
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
	errs = append(errs, fleet.ValidateStrategy(ro.Spec.Strategy)...)
	if len(ro.Status.Clusters) == 0 {
		return errs
	}
	has := func(ref v1alpha2.RolloutClusterRef) bool {
		for _, c := range ro.Status.Clusters {
			if c.RolloutClusterRef == ref {
				return true
			}
		}
		return false
	}
	for i, ref := range ro.Spec.Skip {
		if !has(ref) {
			errs = append(errs, field.NotFound(spec.Child("skip").Index(i), ref.Key()))
		}
	}
	for i, rt := range ro.Spec.Retry {
		if !has(rt.RolloutClusterRef) {
			errs = append(errs, field.NotFound(spec.Child("retry").Index(i), rt.Key()))
		}
	}
	return errs
}
