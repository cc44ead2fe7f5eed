package fleet

import (
	"cmp"
	"fmt"
	"slices"

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

// WaveSizes resolves each wave of a fleet of n clusters to a count: a
// percentage is of the whole fleet, rounded up; a wave takes no more than
// is left, and the last waves may be empty. It refuses a wave that is
// neither a positive count nor a percentage, and waves that leave
// clusters out, naming spec.strategy.waves.
func WaveSizes(waves []v1alpha2.RolloutWave, n int) ([]int, field.ErrorList) {
	p := field.NewPath("spec", "strategy", "waves")
	var errs field.ErrorList
	sizes := make([]int, len(waves))
	left := n
	for i, w := range waves {
		size, err := intstr.GetScaledValueFromIntOrPercent(&w.Clusters, n, true)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(p.Index(i).Child("clusters"), w.Clusters.String(), "must be a count such as 2 or a percentage such as 50%"))
			continue
		case w.Clusters.Type == intstr.Int && size < 1, w.Clusters.Type == intstr.String && w.Clusters.StrVal == "0%":
			errs = append(errs, field.Invalid(p.Index(i).Child("clusters"), w.Clusters.String(), "a wave must hold at least one cluster"))
			continue
		}
		sizes[i] = min(size, left)
		left -= sizes[i]
	}
	if len(errs) == 0 && left > 0 {
		errs = append(errs, field.Invalid(p, len(waves), fmt.Sprintf("the waves cover %d of the %d clusters selected: make the last wave \"100%%\" or add a wave", n-left, n)))
	}
	return sizes, errs
}

// Assign puts the members into waves: ordered by namespace, name and kind,
// the first sizes[0] into wave 1, and so on. The order is stable, so a
// dry run and the agent put each cluster in the same wave.
func Assign(members []v1alpha2.RolloutClusterRef, waves []v1alpha2.RolloutWave) ([]v1alpha2.RolloutClusterStatus, []v1alpha2.RolloutWaveStatus, field.ErrorList) {
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, func(a, b v1alpha2.RolloutClusterRef) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
	})
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
