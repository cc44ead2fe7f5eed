package fleet

import (
	"cmp"
	"fmt"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// DefaultWaves is one canary cluster and then the rest.
var DefaultWaves = []v1alpha2.RolloutWave{
	{Clusters: intstr.FromInt32(1)},
	{Clusters: intstr.FromString("100%")},
}

// Waves returns the strategy's waves, the default when none are given.
func Waves(s v1alpha2.RolloutStrategy) []v1alpha2.RolloutWave {
	if len(s.Waves) == 0 {
		return DefaultWaves
	}
	return s.Waves
}

var wavesPath = field.NewPath("spec", "strategy", "waves")

// ValidateStrategy refuses, naming the field, what no fleet makes right: a
// wave that is neither a positive count nor a percentage, windows that are
// not times, a negative soak or timeout. Whether the waves cover a fleet is
// WaveSizes'.
func ValidateStrategy(s v1alpha2.RolloutStrategy) field.ErrorList {
	var errs field.ErrorList
	for i, w := range s.Waves {
		if _, err := intstr.GetScaledValueFromIntOrPercent(&w.Clusters, 100, true); err != nil {
			errs = append(errs, field.Invalid(wavesPath.Index(i).Child("clusters"), w.Clusters.String(), "must be a count such as 2 or a percentage such as 50%"))
			continue
		}
		if (w.Clusters.Type == intstr.Int && w.Clusters.IntVal < 1) || (w.Clusters.Type == intstr.String && w.Clusters.StrVal == "0%") {
			errs = append(errs, field.Invalid(wavesPath.Index(i).Child("clusters"), w.Clusters.String(), "a wave must hold at least one cluster"))
		}
	}
	errs = append(errs, ValidateWindows(s.Windows)...)
	strategy := field.NewPath("spec", "strategy")
	if s.Soak.Duration < 0 {
		errs = append(errs, field.Invalid(strategy.Child("soak"), s.Soak.Duration.String(), "must not be negative"))
	}
	if s.HealthTolerance.Duration < 0 {
		errs = append(errs, field.Invalid(strategy.Child("healthTolerance"), s.HealthTolerance.Duration.String(), "must not be negative"))
	}
	if s.ClusterTimeout.Duration < 0 {
		errs = append(errs, field.Invalid(strategy.Child("clusterTimeout"), s.ClusterTimeout.Duration.String(), "must not be negative"))
	}
	if s.ProgressDeadline.Duration < 0 {
		errs = append(errs, field.Invalid(strategy.Child("progressDeadline"), s.ProgressDeadline.Duration.String(), "must not be negative"))
	}
	if s.WaitAfterWave.Duration < 0 {
		errs = append(errs, field.Invalid(strategy.Child("waitAfterWave"), s.WaitAfterWave.Duration.String(), "must not be negative"))
	}
	return errs
}

// WaveSizes resolves each wave of a fleet of n clusters to a count: a
// percentage is of the whole fleet, rounded up; a wave takes no more than
// is left, and the last waves may be empty. It refuses waves ValidateStrategy
// refuses, and waves that leave clusters out, naming spec.strategy.waves.
func WaveSizes(waves []v1alpha2.RolloutWave, n int) ([]int, field.ErrorList) {
	if errs := ValidateStrategy(v1alpha2.RolloutStrategy{Waves: waves}); len(errs) > 0 {
		return nil, errs
	}
	sizes := make([]int, len(waves))
	left := n
	for i, w := range waves {
		size, _ := intstr.GetScaledValueFromIntOrPercent(&w.Clusters, n, true)
		sizes[i] = min(size, left)
		left -= sizes[i]
	}
	if left > 0 {
		return nil, field.ErrorList{field.Invalid(wavesPath, len(waves), fmt.Sprintf("the waves cover %d of the %d clusters selected: make the last wave \"100%%\" or add a wave", n-left, n))}
	}
	return sizes, nil
}

// CompareRefs orders clusters as a rollout does: by namespace, name, kind.
func CompareRefs(a, b v1alpha2.RolloutClusterRef) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
}

// Assign puts the members into waves: ordered by namespace, name and kind,
// the first sizes[0] into wave 1, and so on. The order is stable, so a
// dry run and the agent put each cluster in the same wave.
func Assign(members []v1alpha2.RolloutClusterRef, waves []v1alpha2.RolloutWave) ([]v1alpha2.RolloutClusterStatus, []v1alpha2.RolloutWaveStatus, field.ErrorList) {
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, CompareRefs)
	sizes, errs := WaveSizes(waves, len(sorted))
	if len(errs) > 0 {
		return nil, nil, errs
	}
	clusters := make([]v1alpha2.RolloutClusterStatus, 0, len(sorted))
	var waveStatus []v1alpha2.RolloutWaveStatus
	next := 0
	for _, size := range sizes {
		if size == 0 {
			continue
		}
		number := int32(len(waveStatus) + 1)
		waveStatus = append(waveStatus, v1alpha2.RolloutWaveStatus{Number: number, Clusters: int32(size)})
		for _, ref := range sorted[next : next+size] {
			clusters = append(clusters, v1alpha2.RolloutClusterStatus{RolloutClusterRef: ref, Wave: number, Phase: v1alpha2.ClusterPending})
		}
		next += size
	}
	return clusters, waveStatus, nil
}

// maxJoinedLate bounds the late matches a rollout lists.
const maxJoinedLate = 100

// Join takes clusters the targets select now (members) that the rollout
// does not hold: with spec.targets.joinLate each joins the last wave as
// Pending, unless busy says another rollout holds it; else it is listed in
// status.joinedLate, at most maxJoinedLate. A cluster listed that no longer
// matches leaves the list.
func Join(r *v1alpha2.TopologyRollout, st *v1alpha2.TopologyRolloutStatus, members []v1alpha2.RolloutClusterRef, busy map[string]Hold) []Event {
	held := make(map[v1alpha2.RolloutClusterRef]bool, len(st.Clusters))
	for _, c := range st.Clusters {
		held[c.RolloutClusterRef] = true
	}
	var events []Event
	var late []v1alpha2.RolloutClusterRef
	last := int32(len(st.Waves))
	for _, ref := range members {
		if held[ref] {
			continue
		}
		other, inOther := busy[ref.Key()]
		if !r.Spec.Targets.JoinLate || last == 0 || inOther {
			if len(late) >= maxJoinedLate {
				continue
			}
			late = append(late, ref)
			why := "spec.targets.joinLate is off"
			if inOther && r.Spec.Targets.JoinLate {
				why = "it is in TopologyRollout " + other.Rollout
			}
			if !slices.Contains(st.JoinedLate, ref) {
				events = append(events, Event{Reason: "JoinedLate", Message: fmt.Sprintf("%s matches the targets since the rollout started; it is not in it (%s)", ref.Key(), why)})
			}
			continue
		}
		st.Clusters = append(st.Clusters, v1alpha2.RolloutClusterStatus{RolloutClusterRef: ref, Wave: last, Phase: v1alpha2.ClusterPending, JoinedLate: true})
		st.Waves[last-1].Clusters++
		events = append(events, Event{Reason: "JoinedLate", Message: fmt.Sprintf("%s matches the targets since the rollout started; it joins wave %d", ref.Key(), last)})
	}
	st.JoinedLate = late
	return events
}

// OnlyMinorDiffer tells whether two statuses differ only in what may wait
// to be written: messages (the rollout's, its clusters' and its
// conditions') and each cluster's progress mark and time. A progress time
// written late moves the deadline by as much; nothing else depends on it.
func OnlyMinorDiffer(a, b *v1alpha2.TopologyRolloutStatus) bool {
	// Compared part by part on shallow copies: a deep copy of the whole
	// status on every pass cost a fleet of 1,000 a megabyte each time.
	ta, tb := *a, *b
	ta.Message, tb.Message = "", ""
	ta.Clusters, tb.Clusters, ta.Conditions, tb.Conditions = nil, nil, nil, nil
	if !apiequality.Semantic.DeepEqual(ta, tb) || len(a.Clusters) != len(b.Clusters) || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Clusters {
		ca, cb := a.Clusters[i], b.Clusters[i]
		ca.Message, ca.ProgressMark, ca.ProgressAt = "", "", nil
		cb.Message, cb.ProgressMark, cb.ProgressAt = "", "", nil
		if !apiequality.Semantic.DeepEqual(ca, cb) {
			return false
		}
	}
	for i := range a.Conditions {
		ca, cb := a.Conditions[i], b.Conditions[i]
		ca.Message, cb.Message = "", ""
		if !apiequality.Semantic.DeepEqual(ca, cb) {
			return false
		}
	}
	return true
}
