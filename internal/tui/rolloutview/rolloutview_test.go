package rolloutview

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

var now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func at(ago time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-ago)); return &t }

func ref(name string) v1alpha2.RolloutClusterRef {
	return v1alpha2.RolloutClusterRef{Kind: v1alpha2.RolloutKindTopology, Namespace: "prod", Name: name}
}

// inWave2 is a rollout whose canary succeeded, one cluster of wave 2
// soaking and one failed on its health gate.
func inWave2() *v1alpha2.TopologyRollout {
	return &v1alpha2.TopologyRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "to-1-34", Generation: 1},
		Spec: v1alpha2.TopologyRolloutSpec{
			Change: v1alpha2.RolloutChange{Version: "v1.34.0"},
			Strategy: v1alpha2.RolloutStrategy{
				Waves:       []v1alpha2.RolloutWave{{Clusters: intstr.FromInt32(1)}, {Clusters: intstr.FromString("100%")}},
				MaxInFlight: 2, FailureBudget: 1, Soak: metav1.Duration{Duration: 5 * time.Minute},
			},
		},
		Status: v1alpha2.TopologyRolloutStatus{
			ObservedGeneration: 1, Phase: v1alpha2.RolloutProgressing, Message: "wave 2 of 2: 1 in flight, 1 succeeded of 4",
			Wave: 2, Total: 4, Succeeded: 1, Failed: 1, InFlight: 1, StartedAt: at(30 * time.Minute),
			Waves: []v1alpha2.RolloutWaveStatus{
				{Number: 1, Clusters: 1, StartedAt: at(30 * time.Minute), CompletedAt: at(20 * time.Minute)},
				{Number: 2, Clusters: 3, StartedAt: at(19 * time.Minute)},
			},
			Clusters: []v1alpha2.RolloutClusterStatus{
				{RolloutClusterRef: ref("a"), Wave: 1, Phase: v1alpha2.ClusterSucceeded, Attempt: 1, StartedAt: at(30 * time.Minute), CompletedAt: at(20 * time.Minute)},
				{RolloutClusterRef: ref("b"), Wave: 2, Phase: v1alpha2.ClusterSoaking, Attempt: 1, StartedAt: at(19 * time.Minute), SoakStartedAt: at(2 * time.Minute)},
				{RolloutClusterRef: ref("c"), Wave: 2, Phase: v1alpha2.ClusterFailed, Attempt: 1, Reason: "HealthGate", Message: "unhealthy during the soak: md-a: Degraded", CompletedAt: at(3 * time.Minute)},
				{RolloutClusterRef: ref("d"), Wave: 2, Phase: v1alpha2.ClusterPending},
			},
		},
	}
}

func TestRolloutViewShowsWavesAndWhyEachClusterWaits(t *testing.T) {
	ro := inWave2()
	m := New(func(context.Context) (*v1alpha2.TopologyRollout, error) { return ro, nil }, time.Millisecond)
	m.Now = func() time.Time { return now }
	m.SetSize(110, 30)
	if _, cmd := m.Update(m.Init()()); m.Done || cmd == nil {
		t.Fatal("a progressing rollout ended the watch")
	}
	golden.RequireEqual(t, []byte(m.View()))
}

// TestRolloutViewQuitsWhenTheRolloutEnds drives the program with teatest:
// it follows the rollout until it completes, and says so.
func TestRolloutViewQuitsWhenTheRolloutEnds(t *testing.T) {
	reads := 0
	fetch := func(context.Context) (*v1alpha2.TopologyRollout, error) {
		reads++
		ro := inWave2()
		if reads > 2 {
			ro.Status.Phase, ro.Status.Message = v1alpha2.RolloutCompleted, "3 succeeded, 1 failed, 0 skipped"
		}
		return ro, nil
	}
	m := New(fetch, time.Millisecond)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(110, 30))
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	final := tm.FinalModel(t).(*Model)
	if !final.Done || !strings.Contains(final.View(), "Completed: 3 succeeded, 1 failed") {
		t.Errorf("ended %v:\n%s", final.Done, final.View())
	}
}
