package membership

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// maxNamed bounds how many clusters one refusal names.
const maxNamed = 10

// Admit is every reason rollout ro cannot be carried out, naming the field:
// a change that sets nothing, windows that are not times, gates that cannot
// open (an approval of a wave that needs none, a rollout to wait for that
// does not exist or was aborted), a selector that matches nothing, waves
// that do not cover the fleet, a version or class the selected clusters'
// classes do not allow, a cluster already in another rollout that has not
// finished, and an undo of what cannot be undone. It returns the clusters
// selected and, for an undo, each one's own change (by
// RolloutClusterRef.Key); their classes stay in classes for the caller
// (`rollout create`'s preview). The webhook refuses a new rollout with it, and
// `rollout create` checks with it before its preview.
func (r Reader) Admit(ctx context.Context, ro *v1alpha2.TopologyRollout, classes *Classes) ([]*v1alpha2.Topology, map[string]v1alpha2.RolloutChange, field.ErrorList) {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	errs = append(errs, fleet.ValidateStrategy(ro.Spec.Strategy)...)
	errs = append(errs, ValidateGates(ro)...)
	errs = append(errs, r.waitFor(ctx, ro)...)
	var selected []*v1alpha2.Topology
	targets := map[string]v1alpha2.RolloutChange{}
	if ro.Spec.Undo != "" {
		if !fleet.Empty(ro.Spec.Change) {
			errs = append(errs, field.Forbidden(spec.Child("change"), "must be empty in an undo: each cluster goes back to the value it had before "+ro.Spec.Undo))
		}
		if ro.Spec.Targets.JoinLate {
			errs = append(errs, field.Forbidden(spec.Child("targets", "joinLate"), "an undo moves only the clusters the rollout it undoes changed"))
		}
		var undoErr *field.Error
		selected, targets, undoErr = r.UndoMembers(ctx, ro.Spec.Undo)
		if undoErr != nil {
			return nil, nil, append(errs, undoErr)
		}
		if len(selected) == 0 {
			return nil, nil, append(errs, field.Invalid(spec.Child("undo"), ro.Spec.Undo, "changed no cluster that still exists: there is nothing to undo"))
		}
	} else {
		if fleet.Empty(ro.Spec.Change) {
			errs = append(errs, field.Required(spec.Child("change"), "set a version, a class or variables to roll out"))
		}
		var err error
		selected, err = r.List(ctx, ro.Spec.Targets)
		if err != nil {
			return nil, nil, append(errs, field.Invalid(spec.Child("targets", "selector"), ro.Spec.Targets.Selector.String(), err.Error()))
		}
		if len(selected) == 0 {
			return nil, nil, append(errs, field.Invalid(spec.Child("targets"), targetsText(ro.Spec.Targets), "matches no cluster: no Topology or Cluster with spec.topology has these labels (in these namespaces, of this class)"))
		}
	}
	_, waveErrs := fleet.WaveSizes(fleet.Waves(ro.Spec.Strategy), len(selected))
	errs = append(errs, waveErrs...)
	changeOf := func(t *v1alpha2.Topology) v1alpha2.RolloutChange {
		if to, ok := targets[RefOf(t).Key()]; ok {
			return to
		}
		return ro.Spec.Change
	}
	errs = append(errs, allowed(ctx, classes, changeOf, selected)...)
	errs = append(errs, r.busy(ctx, ro, selected)...)
	return selected, targets, errs
}

// UndoMembers reads what undoing rollout name moves: each cluster it wrote
// its change to that still exists, ordered as a rollout orders them, and
// the change that puts each back (fleet.Reverse, by RolloutClusterRef.Key).
// It refuses, naming spec.undo, a rollout that does not exist, is still
// moving, or changed a version.
func (r Reader) UndoMembers(ctx context.Context, name string) ([]*v1alpha2.Topology, map[string]v1alpha2.RolloutChange, *field.Error) {
	path := field.NewPath("spec", "undo")
	orig := &v1alpha2.TopologyRollout{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, orig); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, field.NotFound(path, name)
		}
		return nil, nil, field.InternalError(path, fmt.Errorf("reading TopologyRollout %s: %w", name, err))
	}
	if orig.Spec.Change.Version != "" {
		return nil, nil, field.Forbidden(path, fmt.Sprintf("TopologyRollout %s changes the Kubernetes version (to %s), which cannot be undone: Kubernetes has no downgrade; roll a newer version forward instead", name, orig.Spec.Change.Version))
	}
	if fleet.Active(orig) {
		return nil, nil, field.Forbidden(path, fmt.Sprintf("TopologyRollout %s is %s: undo it once it has completed, or abort it first (kubectl topology rollout abort %s)", name, orNew(orig.Status.Phase), name))
	}
	var selected []*v1alpha2.Topology
	back := map[string]v1alpha2.RolloutChange{}
	for _, c := range orig.Status.Clusters {
		if !c.Applied || c.From == nil {
			continue
		}
		to, ok := fleet.Reverse(fleet.Target(orig, c), *c.From)
		if !ok {
			return nil, nil, field.Forbidden(path, fmt.Sprintf("TopologyRollout %s changed the Kubernetes version of %s (to %s), which cannot be undone: Kubernetes has no downgrade; roll a newer version forward instead", name, c.Key(), fleet.Target(orig, c).Version))
		}
		t, err := r.Get(ctx, c.RolloutClusterRef)
		if err != nil {
			return nil, nil, field.InternalError(path, fmt.Errorf("reading %s: %w", c.Key(), err))
		}
		if t == nil || !t.DeletionTimestamp.IsZero() {
			continue
		}
		selected = append(selected, t)
		back[c.Key()] = to
	}
	slices.SortFunc(selected, func(a, b *v1alpha2.Topology) int { return fleet.CompareRefs(RefOf(a), RefOf(b)) })
	return selected, back, nil
}

func orNew(p v1alpha2.FleetRolloutPhase) string {
	if p == "" {
		return string(v1alpha2.RolloutPending)
	}
	return string(p)
}

// ValidateGates refuses gates that cannot open, naming the field: an
// approval of a wave that does not exist or needs none, a progress
// deadline no shorter than the cluster timeout (it would never fail a
// cluster), and a rollout that waits for itself.
func ValidateGates(ro *v1alpha2.TopologyRollout) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	waves := fleet.Waves(ro.Spec.Strategy)
	for i, a := range ro.Spec.Approvals {
		switch {
		case int(a.Wave) > len(waves) || a.Wave < 1:
			errs = append(errs, field.Invalid(spec.Child("approvals").Index(i).Child("wave"), a.Wave, fmt.Sprintf("the rollout has %d wave(s)", len(waves))))
		case !waves[a.Wave-1].Approval:
			errs = append(errs, field.Invalid(spec.Child("approvals").Index(i).Child("wave"), a.Wave, fmt.Sprintf("wave %d needs no approval (spec.strategy.waves[%d].approval is not set)", a.Wave, a.Wave-1)))
		}
	}
	if d := ro.Spec.Strategy.ProgressDeadline.Duration; d > 0 && d >= fleet.ClusterTimeout(ro) {
		errs = append(errs, field.Invalid(spec.Child("strategy", "progressDeadline"), d.String(), fmt.Sprintf("is not shorter than the cluster timeout (%s): it would never fail a cluster; shorten it or lengthen spec.strategy.clusterTimeout", fleet.ClusterTimeout(ro))))
	}
	if slices.Contains(ro.Spec.WaitFor, ro.Name) {
		errs = append(errs, field.Invalid(spec.Child("waitFor"), ro.Name, "a rollout cannot wait for itself"))
	}
	return errs
}

// waitFor refuses rollouts to wait for that do not exist or were aborted:
// this one would never start.
func (r Reader) waitFor(ctx context.Context, ro *v1alpha2.TopologyRollout) field.ErrorList {
	var errs field.ErrorList
	for i, name := range ro.Spec.WaitFor {
		path := field.NewPath("spec", "waitFor").Index(i)
		if name == ro.Name {
			continue // ValidateGates'
		}
		other := &v1alpha2.TopologyRollout{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, other); err != nil {
			if apierrors.IsNotFound(err) {
				errs = append(errs, field.NotFound(path, name))
				continue
			}
			errs = append(errs, field.InternalError(path, fmt.Errorf("reading TopologyRollout %s: %w", name, err)))
			continue
		}
		if other.Spec.Aborted {
			errs = append(errs, field.Invalid(path, name, "was aborted: it will never complete, so this rollout would never start"))
		}
	}
	return errs
}

// Blocking says which rollouts of ro's spec.waitFor have not completed,
// one phrase each: what holds ro's first wave.
func (r Reader) Blocking(ctx context.Context, ro *v1alpha2.TopologyRollout) ([]string, error) {
	var out []string
	for _, name := range ro.Spec.WaitFor {
		other := &v1alpha2.TopologyRollout{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, other); err != nil {
			if apierrors.IsNotFound(err) {
				out = append(out, fmt.Sprintf("TopologyRollout %s, which no longer exists (remove it from spec.waitFor or abort this rollout)", name))
				continue
			}
			return nil, fmt.Errorf("reading TopologyRollout %s: %w", name, err)
		}
		if other.Status.Phase != v1alpha2.RolloutCompleted {
			out = append(out, fmt.Sprintf("TopologyRollout %s (%s) to complete", name, orNew(other.Status.Phase)))
		}
	}
	return out, nil
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
func allowed(ctx context.Context, classes *Classes, changeOf func(*v1alpha2.Topology) v1alpha2.RolloutChange, selected []*v1alpha2.Topology) field.ErrorList {
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
		change := changeOf(t)
		target, problems := rebaseProblems(ctx, classes, change, t)
		for _, p := range problems {
			note(p.field, what+": "+p.message)
		}
		if target == nil {
			continue
		}
		for _, msg := range rules.UnsetDefaulted(target, change.UnsetVariables) {
			note("spec.change.unsetVariables", what+": "+msg)
		}
		if change.Version == "" {
			continue
		}
		for _, e := range rules.ValidateVersionChange(rules.VersionChange{Old: t.Spec.Version, New: change.Version}.ForClass(target)) {
			note("spec.change.version", what+": "+e.Detail)
		}
		// A pinned pool stays where it is; a version its pin cannot stay
		// under refuses the cluster, by name.
		if change.Version != t.Spec.Version {
			for _, e := range rules.ValidatePinsAt(t, change.Version) {
				note("spec.change.version", what+": "+e.Detail)
			}
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

// AdmitUpdate refuses what may not change once a rollout exists: its change,
// targets, undo and waitFor, its waves once it started, an approval taken
// back, and an abort taken back; and a skip or retry naming a cluster the
// rollout does not have.
func AdmitUpdate(old, ro *v1alpha2.TopologyRollout) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if !apiequality.Semantic.DeepEqual(old.Spec.Change, ro.Spec.Change) {
		errs = append(errs, field.Forbidden(spec.Child("change"), "cannot change once the rollout exists: abort it and create another"))
	}
	if !apiequality.Semantic.DeepEqual(old.Spec.Targets, ro.Spec.Targets) {
		errs = append(errs, field.Forbidden(spec.Child("targets"), "cannot change once the rollout exists: skip clusters, or abort it and create another"))
	}
	if old.Spec.Undo != ro.Spec.Undo {
		errs = append(errs, field.Forbidden(spec.Child("undo"), "cannot change once the rollout exists"))
	}
	if !slices.Equal(old.Spec.WaitFor, ro.Spec.WaitFor) {
		errs = append(errs, field.Forbidden(spec.Child("waitFor"), "cannot change once the rollout exists: abort it and create another"))
	}
	for _, a := range old.Spec.Approvals {
		if !slices.ContainsFunc(ro.Spec.Approvals, func(b v1alpha2.RolloutApproval) bool { return apiequality.Semantic.DeepEqual(a, b) }) {
			errs = append(errs, field.Forbidden(spec.Child("approvals"), fmt.Sprintf("the approval of wave %d by %s cannot be taken back or changed", a.Wave, a.By)))
		}
	}
	if len(old.Status.Clusters) > 0 && !apiequality.Semantic.DeepEqual(fleet.Waves(old.Spec.Strategy), fleet.Waves(ro.Spec.Strategy)) {
		errs = append(errs, field.Forbidden(spec.Child("strategy", "waves"), "cannot change once the rollout has started: its clusters are in their waves"))
	}
	if old.Spec.Aborted && !ro.Spec.Aborted {
		errs = append(errs, field.Forbidden(spec.Child("aborted"), "an aborted rollout cannot be resumed: create another"))
	}
	errs = append(errs, ValidateGates(ro)...)
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
