package upgrade

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
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
			checkPlan(t, plan, err, tc.wantErr, tc.wantCP, tc.wantWorkers)
		})
	}
}

// TestPlanVersionsForUnsafe: the unsafe annotation moves a topology to its
// version in one step, however far, where the plan would refuse it.
func TestPlanVersionsForUnsafe(t *testing.T) {
	topo := topologyWith("v1.35.0", map[string]string{clusterv1.ClusterTopologyUnsafeUpdateVersionAnnotation: ""}, md("a", nil))
	obs := &Observed{ControlPlane: PartObserved{Exists: true, SpecVersion: "v1.33.1", StatusVersion: "v1.33.1"},
		MachineDeployments: map[string]PartObserved{"a": {Exists: true, SpecVersion: "v1.33.1"}}}
	plan, err := PlanVersionsFor(context.Background(), nil, topo, obs, nil, nil)
	if err != nil || !slices.Equal(plan.ControlPlane, []string{"v1.35.0"}) || !slices.Equal(plan.Workers, []string{"v1.35.0"}) {
		t.Errorf("unsafe: plan %+v, %v; want one step to v1.35.0", plan, err)
	}
	delete(topo.Annotations, clusterv1.ClusterTopologyUnsafeUpdateVersionAnnotation)
	if _, err := PlanVersionsFor(context.Background(), nil, topo, obs, nil, nil); err == nil {
		t.Error("without the annotation a two-minor jump was planned")
	}
}

// planAnswer is an upgrade-plan extension's answer, for the engine's seam.
type planAnswer struct {
	controlPlane, workers []string
	err                   error
	asked                 []UpgradePlanRequest
}

func (a *planAnswer) GenerateUpgradePlan(_ context.Context, extension string, req UpgradePlanRequest) ([]string, []string, error) {
	if extension != "plan.ext" {
		return nil, nil, fmt.Errorf("asked extension %q", extension)
	}
	a.asked = append(a.asked, req)
	return a.controlPlane, a.workers, a.err
}

// TestPlanVersionsFromExtension: a class that names an upgrade-plan
// extension gets its chain from it, ahead of its kubernetesVersions; the
// answer is held to the same rules as upstream holds it, and the workers'
// steps are filled in when the extension leaves them out.
func TestPlanVersionsFromExtension(t *testing.T) {
	cases := []struct {
		name             string
		answer           planAnswer
		classVersions    []string
		workersAt        string
		offline          bool
		wantCP, wantW    []string
		wantErr          string
		wantAskedWorkers string
	}{
		{name: "workers left to the skew rules", answer: planAnswer{controlPlane: []string{"v1.34.2", "v1.35.0"}},
			wantCP: []string{"v1.34.2", "v1.35.0"}, wantW: []string{"v1.35.0"}},
		{name: "ahead of the class's list", classVersions: []string{"v1.33.1", "v1.34.0", "v1.35.0"}, answer: planAnswer{controlPlane: []string{"v1.34.2", "v1.35.0"}},
			wantCP: []string{"v1.34.2", "v1.35.0"}, wantW: []string{"v1.35.0"}},
		{name: "workers through an intermediate step", answer: planAnswer{controlPlane: []string{"v1.34.2", "v1.35.0"}, workers: []string{"v1.34.2", "v1.35.0"}},
			wantCP: []string{"v1.34.2", "v1.35.0"}, wantW: []string{"v1.34.2", "v1.35.0"}},
		{name: "no pools", workersAt: "-", answer: planAnswer{controlPlane: []string{"v1.34.2", "v1.35.0"}},
			wantCP: []string{"v1.34.2", "v1.35.0"}},
		{name: "a skipped minor", answer: planAnswer{controlPlane: []string{"v1.35.0"}}, wantErr: "upgrade-plan extension plan.ext answered a control plane plan [v1.35.0]: step 1, v1.35.0, skips a minor after v1.33.1"},
		{name: "not ending at the version", answer: planAnswer{controlPlane: []string{"v1.34.2"}}, wantErr: "it must end at v1.35.0"},
		{name: "going down", answer: planAnswer{controlPlane: []string{"v1.33.0", "v1.34.0", "v1.35.0"}}, wantErr: "step 1, v1.33.0, is not newer than v1.33.1"},
		{name: "workers off the control plane's path", answer: planAnswer{controlPlane: []string{"v1.34.2", "v1.35.0"}, workers: []string{"v1.34.0", "v1.35.0"}},
			wantErr: "step 1, v1.34.0, is not a version the control plane is at or passes through"},
		{name: "workers plan without workers to move", workersAt: "-", answer: planAnswer{controlPlane: []string{"v1.34.2", "v1.35.0"}, workers: []string{"v1.35.0"}},
			wantErr: "no worker has a version to take"},
		{name: "the extension fails", answer: planAnswer{err: fmt.Errorf("no path known")}, wantErr: "asking upgrade-plan extension plan.ext: no path known"},
		{name: "offline without a list", offline: true, wantErr: "the class's upgrade-plan extension plan.ext decides the chain"},
		{name: "offline with a list", offline: true, classVersions: []string{"v1.33.1", "v1.34.0", "v1.35.0"},
			wantCP: []string{"v1.34.0", "v1.35.0"}, wantW: []string{"v1.35.0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			class := &v1alpha2.TopologyClass{}
			class.Spec.KubernetesVersions = tc.classVersions
			class.Spec.Upgrade.External.GenerateUpgradePlanExtension = "plan.ext"
			topo := topologyWith("v1.35.0", nil, md("a", nil))
			obs := &Observed{ControlPlane: PartObserved{Exists: true, SpecVersion: "v1.33.1", StatusVersion: "v1.33.1"},
				MachineDeployments: map[string]PartObserved{"a": {Exists: true, SpecVersion: "v1.33.1"}}}
			if tc.workersAt == "-" {
				obs.MachineDeployments = nil
			}
			cluster := &unstructured.Unstructured{}
			cluster.SetName("dev")
			answer := tc.answer
			var planner UpgradePlanner = &answer
			if tc.offline {
				planner = nil
			}
			plan, err := PlanVersionsFor(context.Background(), class, topo, obs, planner, cluster)
			if !checkPlan(t, plan, err, tc.wantErr, tc.wantCP, tc.wantW) || tc.offline {
				return
			}
			if len(answer.asked) != 1 {
				t.Fatalf("the extension was asked %d times, want once", len(answer.asked))
			}
			req := answer.asked[0]
			wantWorkers := "v1.33.1"
			if tc.workersAt == "-" {
				wantWorkers = ""
			}
			if req.Desired != "v1.35.0" || req.ControlPlane != "v1.33.1" || req.MinWorkers != wantWorkers || req.Cluster.GetName() != "dev" {
				t.Errorf("the extension was asked %+v", req)
			}
		})
	}
	// Nothing to move: the extension is not asked.
	answer := &planAnswer{}
	class := &v1alpha2.TopologyClass{}
	class.Spec.Upgrade.External.GenerateUpgradePlanExtension = "plan.ext"
	obs := &Observed{ControlPlane: PartObserved{Exists: true, SpecVersion: "v1.35.0", StatusVersion: "v1.35.0"}}
	if plan, err := PlanVersionsFor(context.Background(), class, topologyWith("v1.35.0", nil), obs, answer, nil); err != nil || !plan.IsZero() || len(answer.asked) != 0 {
		t.Errorf("at its version: plan %+v, %v, asked %d times", plan, err, len(answer.asked))
	}
}

// checkPlan holds a computed plan to the one wanted, or its error to the
// text wanted; it tells whether a plan (not an error) was wanted and got.
func checkPlan(t *testing.T, plan VersionPlan, err error, wantErr string, wantCP, wantWorkers []string) bool {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want one saying %q", err, wantErr)
		}
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plan.ControlPlane, wantCP) || !slices.Equal(plan.Workers, wantWorkers) {
		t.Errorf("plan %v / %v, want %v / %v", plan.ControlPlane, plan.Workers, wantCP, wantWorkers)
	}
	return true
}
