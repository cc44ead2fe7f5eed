package engine

import (
	"slices"
	"strings"
	"testing"
)

func TestPlanVersions(t *testing.T) {
	versions := []string{"v1.29.4", "v1.30.0", "v1.30.5", "v1.31.3", "v1.32.0", "v1.32.2", "v1.33.1", "v1.34.0"}
	cases := []struct {
		name                          string
		classVersions                 []string
		desired, controlPlane, oldest string
		wantCP, wantWorkers           []string
		wantErr                       string
	}{
		{name: "nothing exists yet", desired: "v1.34.0"},
		{name: "all there", desired: "v1.33.1", controlPlane: "v1.33.1", oldest: "v1.33.1"},
		{name: "one minor without a list", desired: "v1.33.0", controlPlane: "v1.32.0", oldest: "v1.32.0",
			wantCP: []string{"v1.33.0"}, wantWorkers: []string{"v1.33.0"}},
		{name: "a patch without a list", desired: "v1.32.3", controlPlane: "v1.32.0", oldest: "v1.32.0",
			wantCP: []string{"v1.32.3"}, wantWorkers: []string{"v1.32.3"}},
		{name: "two minors without a list", desired: "v1.34.0", controlPlane: "v1.32.0", oldest: "v1.32.0",
			wantErr: "lists no kubernetesVersions"},
		{name: "down", desired: "v1.31.0", controlPlane: "v1.32.0", wantErr: "cannot go down"},
		{name: "newest patch of each minor", classVersions: versions, desired: "v1.34.0", controlPlane: "v1.30.0", oldest: "v1.30.0",
			wantCP: []string{"v1.31.3", "v1.32.2", "v1.33.1", "v1.34.0"}, wantWorkers: []string{"v1.33.1", "v1.34.0"}},
		{name: "the desired patch, not a newer one", classVersions: versions, desired: "v1.32.0", controlPlane: "v1.31.3", oldest: "v1.31.3",
			wantCP: []string{"v1.32.0"}, wantWorkers: []string{"v1.32.0"}},
		{name: "workers only: the control plane is there", classVersions: versions, desired: "v1.33.1", controlPlane: "v1.33.1", oldest: "v1.30.0",
			wantWorkers: []string{"v1.33.1"}},
		{name: "no pools", classVersions: versions, desired: "v1.33.1", controlPlane: "v1.31.3",
			wantCP: []string{"v1.32.2", "v1.33.1"}},
		{name: "not in the list", classVersions: versions, desired: "v1.33.0", controlPlane: "v1.32.0", wantErr: "not among the class's kubernetesVersions"},
		{name: "a gap in the list", classVersions: []string{"v1.30.0", "v1.32.0"}, desired: "v1.32.0", controlPlane: "v1.30.0", wantErr: "list no v1.31.x"},
		{name: "not a version", desired: "1.33", controlPlane: "v1.32.0", wantErr: "spec.version"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := PlanVersions(tc.classVersions, tc.desired, tc.controlPlane, tc.oldest)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(plan.ControlPlane, tc.wantCP) || !slices.Equal(plan.Workers, tc.wantWorkers) {
				t.Errorf("plan %v / %v, want %v / %v", plan.ControlPlane, plan.Workers, tc.wantCP, tc.wantWorkers)
			}
		})
	}
}

// TestPlanVersionsForUnsafe: the unsafe annotation moves a topology to its
// version in one step, however far, where the plan would refuse it.
func TestPlanVersionsForUnsafe(t *testing.T) {
	topo := topologyWith("v1.35.0", map[string]string{UnsafeVersionCheckAnnotation: ""}, md("a", nil))
	obs := &Observed{ControlPlane: PartObserved{Exists: true, SpecVersion: "v1.33.1", StatusVersion: "v1.33.1"},
		MachineDeployments: map[string]PartObserved{"a": {Exists: true, SpecVersion: "v1.33.1"}}}
	plan, err := PlanVersionsFor(nil, topo, obs)
	if err != nil || !slices.Equal(plan.ControlPlane, []string{"v1.35.0"}) || !slices.Equal(plan.Workers, []string{"v1.35.0"}) {
		t.Errorf("unsafe: plan %+v, %v; want one step to v1.35.0", plan, err)
	}
	delete(topo.Annotations, UnsafeVersionCheckAnnotation)
	if _, err := PlanVersionsFor(nil, topo, obs); err == nil {
		t.Error("without the annotation a two-minor jump was planned")
	}
}
