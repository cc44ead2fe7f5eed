package membership

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func gated() *v1alpha2.TopologyRollout {
	ro := &v1alpha2.TopologyRollout{Spec: v1alpha2.TopologyRolloutSpec{Change: v1alpha2.RolloutChange{Version: "v1.35.0"}}}
	ro.Name = "prod"
	ro.Spec.Strategy.Waves = []v1alpha2.RolloutWave{{Clusters: intstr.FromInt32(1)}, {Clusters: intstr.FromString("100%"), Approval: true}}
	return ro
}

func TestValidateGatesRefusesGatesThatCannotOpen(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*v1alpha2.TopologyRollout)
		want string
	}{
		{"an approval of a wave that needs none", func(ro *v1alpha2.TopologyRollout) {
			ro.Spec.Approvals = []v1alpha2.RolloutApproval{{Wave: 1, By: "alice"}}
		}, "spec.approvals[0].wave: Invalid value: 1: wave 1 needs no approval (spec.strategy.waves[0].approval is not set)"},
		{"an approval of a wave that does not exist", func(ro *v1alpha2.TopologyRollout) {
			ro.Spec.Approvals = []v1alpha2.RolloutApproval{{Wave: 3, By: "alice"}}
		}, "spec.approvals[0].wave: Invalid value: 3: the rollout has 2 wave(s)"},
		{"a deadline past the timeout", func(ro *v1alpha2.TopologyRollout) {
			ro.Spec.Strategy.ProgressDeadline = metav1.Duration{Duration: 2 * time.Hour}
		}, "spec.strategy.progressDeadline: Invalid value: \"2h0m0s\": is not shorter than the cluster timeout (1h0m0s)"},
		{"waiting for itself", func(ro *v1alpha2.TopologyRollout) { ro.Spec.WaitFor = []string{"prod"} }, "spec.waitFor: Invalid value: \"prod\": a rollout cannot wait for itself"},
	} {
		ro := gated()
		tc.edit(ro)
		errs := ValidateGates(ro)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, errs, tc.want)
		}
	}
	ro := gated()
	ro.Spec.Approvals = []v1alpha2.RolloutApproval{{Wave: 2, By: "alice"}}
	if errs := ValidateGates(ro); len(errs) > 0 {
		t.Errorf("an approval of a wave that needs one: %v", errs)
	}
}

func TestAdmitUpdateKeepsApprovalsUndoAndWaitFor(t *testing.T) {
	old := gated()
	old.Spec.WaitFor = []string{"staging"}
	old.Spec.Approvals = []v1alpha2.RolloutApproval{{Wave: 2, By: "alice", At: metav1.NewTime(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))}}
	for _, tc := range []struct {
		name string
		edit func(*v1alpha2.TopologyRollout)
		want string
	}{
		{"an approval taken back", func(ro *v1alpha2.TopologyRollout) { ro.Spec.Approvals = nil }, "spec.approvals: Forbidden: the approval of wave 2 by alice cannot be taken back or changed"},
		{"an approval given to someone else", func(ro *v1alpha2.TopologyRollout) { ro.Spec.Approvals[0].By = "mallory" }, "the approval of wave 2 by alice cannot be taken back"},
		{"waitFor changed", func(ro *v1alpha2.TopologyRollout) { ro.Spec.WaitFor = nil }, "spec.waitFor: Forbidden"},
		{"undo set", func(ro *v1alpha2.TopologyRollout) { ro.Spec.Undo = "other" }, "spec.undo: Forbidden"},
	} {
		ro := old.DeepCopy()
		tc.edit(ro)
		errs := AdmitUpdate(old, ro)
		if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, errs, tc.want)
		}
	}
	ro := old.DeepCopy()
	ro.Spec.Paused = true
	if errs := AdmitUpdate(old, ro); len(errs) > 0 {
		t.Errorf("a pause: %v", errs)
	}
}
