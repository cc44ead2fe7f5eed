package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// scripted serves the hooks it has answers for and records each call as
// "Hook from->to" or "Hook version".
type scripted struct {
	serves map[string]time.Duration // hook → retryAfter it answers
	fail   map[string]error
	calls  []string
}

func (s *scripted) Call(_ context.Context, req Request) (Answer, error) {
	if _, ok := s.serves[req.Hook]; !ok {
		return Answer{Hook: req.Hook}, nil
	}
	call := req.Hook
	switch {
	case req.From != "" || req.To != "":
		call += " " + req.From + "->" + req.To
	case req.Version != "":
		call += " " + req.Version
	}
	s.calls = append(s.calls, call)
	if err := s.fail[req.Hook]; err != nil {
		return Answer{}, err
	}
	return Answer{Hook: req.Hook, Handlers: []string{"h.ext"}, RetryAfter: s.serves[req.Hook], Message: "says " + req.Hook}, nil
}

func allHooks(blocking ...string) *scripted {
	s := &scripted{serves: map[string]time.Duration{}}
	for _, h := range Hooks {
		s.serves[h] = 0
	}
	for _, h := range blocking {
		s.serves[h] = 30 * time.Second
	}
	return s
}

func topology(version string, annotations map[string]string) *v1alpha2.Topology {
	return &v1alpha2.Topology{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Annotations: annotations},
		Spec: v1alpha2.TopologySpec{Version: version, Workers: &v1alpha2.WorkersTopology{
			MachineDeployments: []v1alpha2.MachineDeploymentTopology{{Name: "md", Class: "w"}},
		}},
	}
}

func observed(cpSpec, cpStatus, md string, mdRolling bool) *upgrade.Observed {
	return &upgrade.Observed{
		ControlPlane:       upgrade.PartObserved{Exists: true, SpecVersion: cpSpec, StatusVersion: cpStatus},
		MachineDeployments: map[string]upgrade.PartObserved{"md": {Exists: true, SpecVersion: md, Upgrading: mdRolling}},
	}
}

// TestUpgradeHooksInUpstreamOrder walks a chained upgrade v1.32 → v1.34
// (workers at v1.32 must follow the control plane to v1.33 first) through
// the states the agent sees, and checks which hooks each pass calls, what
// they make owed and what the gate holds.
func TestUpgradeHooksInUpstreamOrder(t *testing.T) {
	plan := func(cp, workers []string) upgrade.VersionPlan {
		return upgrade.VersionPlan{ControlPlane: cp, Workers: workers}
	}
	type want struct {
		calls     []string
		pending   string
		afterCP   []string
		holdsCP   bool
		holdsPool bool
	}
	cases := []struct {
		name    string
		pending string
		obs     *upgrade.Observed
		plan    upgrade.VersionPlan
		caller  *scripted
		want    want
	}{
		{"an upgrade starts: BeforeClusterUpgrade once, then the control plane's step",
			"", observed("v1.32.0", "v1.32.0", "v1.32.0", false), plan([]string{"v1.33.0", "v1.34.0"}, []string{"v1.33.0", "v1.34.0"}), allHooks(),
			want{calls: []string{"BeforeClusterUpgrade v1.32.0->v1.34.0", "BeforeControlPlaneUpgrade v1.32.0->v1.33.0"}, pending: "AfterClusterUpgrade",
				afterCP: []string{AfterControlPlaneUpgrade, BeforeWorkersUpgrade, AfterWorkersUpgrade}}},
		{"BeforeClusterUpgrade holds: nothing is owed, the control plane waits",
			"", observed("v1.32.0", "v1.32.0", "v1.32.0", false), plan([]string{"v1.33.0", "v1.34.0"}, []string{"v1.33.0", "v1.34.0"}), allHooks(BeforeClusterUpgrade),
			want{calls: []string{"BeforeClusterUpgrade v1.32.0->v1.34.0"}, holdsCP: true}},
		{"BeforeControlPlaneUpgrade holds: the upgrade has started, the step waits",
			"", observed("v1.32.0", "v1.32.0", "v1.32.0", false), plan([]string{"v1.33.0", "v1.34.0"}, []string{"v1.33.0", "v1.34.0"}), allHooks(BeforeControlPlaneUpgrade),
			want{calls: []string{"BeforeClusterUpgrade v1.32.0->v1.34.0", "BeforeControlPlaneUpgrade v1.32.0->v1.33.0"}, pending: "AfterClusterUpgrade", holdsCP: true}},
		{"the control plane rolls: no call",
			"AfterClusterUpgrade,AfterControlPlaneUpgrade,AfterWorkersUpgrade,BeforeWorkersUpgrade", observed("v1.33.0", "v1.32.0", "v1.32.0", false), plan([]string{"v1.34.0"}, []string{"v1.33.0", "v1.34.0"}), allHooks(),
			want{pending: "AfterClusterUpgrade,AfterControlPlaneUpgrade,AfterWorkersUpgrade,BeforeWorkersUpgrade"}},
		{"an agent stopped before writing what the step owes owes it now",
			"AfterClusterUpgrade", observed("v1.33.0", "v1.32.0", "v1.32.0", false), plan([]string{"v1.34.0"}, []string{"v1.33.0", "v1.34.0"}), allHooks(),
			want{pending: "AfterClusterUpgrade,AfterControlPlaneUpgrade,AfterWorkersUpgrade,BeforeWorkersUpgrade"}},
		{"the step is done: AfterControlPlaneUpgrade, then BeforeWorkersUpgrade; the workers go",
			"AfterClusterUpgrade,AfterControlPlaneUpgrade,AfterWorkersUpgrade,BeforeWorkersUpgrade", observed("v1.33.0", "v1.33.0", "v1.32.0", false), plan([]string{"v1.34.0"}, []string{"v1.33.0", "v1.34.0"}), allHooks(),
			want{calls: []string{"AfterControlPlaneUpgrade v1.33.0", "BeforeWorkersUpgrade v1.32.0->v1.33.0"}, pending: "AfterClusterUpgrade,AfterWorkersUpgrade"}},
		{"AfterControlPlaneUpgrade holds the control plane and the workers",
			"AfterClusterUpgrade,AfterControlPlaneUpgrade,AfterWorkersUpgrade,BeforeWorkersUpgrade", observed("v1.33.0", "v1.33.0", "v1.32.0", false), plan([]string{"v1.34.0"}, []string{"v1.33.0", "v1.34.0"}), allHooks(AfterControlPlaneUpgrade),
			want{calls: []string{"AfterControlPlaneUpgrade v1.33.0"}, pending: "AfterClusterUpgrade,AfterControlPlaneUpgrade,AfterWorkersUpgrade,BeforeWorkersUpgrade", holdsCP: true, holdsPool: true}},
		{"BeforeWorkersUpgrade holds both too",
			"AfterClusterUpgrade,AfterWorkersUpgrade,BeforeWorkersUpgrade", observed("v1.33.0", "v1.33.0", "v1.32.0", false), plan([]string{"v1.34.0"}, []string{"v1.33.0", "v1.34.0"}), allHooks(BeforeWorkersUpgrade),
			want{calls: []string{"BeforeWorkersUpgrade v1.32.0->v1.33.0"}, pending: "AfterClusterUpgrade,AfterWorkersUpgrade,BeforeWorkersUpgrade", holdsCP: true, holdsPool: true}},
		{"the last step: the workers go once AfterControlPlaneUpgrade and BeforeWorkersUpgrade answer, AfterWorkersUpgrade waits for them",
			"AfterClusterUpgrade,AfterControlPlaneUpgrade,AfterWorkersUpgrade,BeforeWorkersUpgrade", observed("v1.34.0", "v1.34.0", "v1.33.0", false), plan(nil, []string{"v1.34.0"}), allHooks(),
			want{calls: []string{"AfterControlPlaneUpgrade v1.34.0", "BeforeWorkersUpgrade v1.33.0->v1.34.0"}, pending: "AfterClusterUpgrade,AfterWorkersUpgrade"}},
		{"the last step, workers rolling: AfterWorkersUpgrade still waits",
			"AfterClusterUpgrade,AfterWorkersUpgrade", observed("v1.34.0", "v1.34.0", "v1.34.0", true), plan(nil, nil), allHooks(),
			want{pending: "AfterClusterUpgrade,AfterWorkersUpgrade"}},
		{"workers rolling: AfterWorkersUpgrade waits for them",
			"AfterClusterUpgrade,AfterWorkersUpgrade", observed("v1.33.0", "v1.33.0", "v1.33.0", true), plan([]string{"v1.34.0"}, []string{"v1.34.0"}), allHooks(),
			want{pending: "AfterClusterUpgrade,AfterWorkersUpgrade"}},
		{"workers done: AfterWorkersUpgrade, then the next step without BeforeClusterUpgrade",
			"AfterClusterUpgrade,AfterWorkersUpgrade", observed("v1.33.0", "v1.33.0", "v1.33.0", false), plan([]string{"v1.34.0"}, []string{"v1.34.0"}), allHooks(),
			want{calls: []string{"AfterWorkersUpgrade v1.33.0", "BeforeControlPlaneUpgrade v1.33.0->v1.34.0"}, pending: "AfterClusterUpgrade",
				afterCP: []string{AfterControlPlaneUpgrade, BeforeWorkersUpgrade, AfterWorkersUpgrade}}},
		{"AfterWorkersUpgrade holds the control plane only",
			"AfterClusterUpgrade,AfterWorkersUpgrade", observed("v1.33.0", "v1.33.0", "v1.33.0", false), plan([]string{"v1.34.0"}, []string{"v1.34.0"}), allHooks(AfterWorkersUpgrade),
			want{calls: []string{"AfterWorkersUpgrade v1.33.0"}, pending: "AfterClusterUpgrade,AfterWorkersUpgrade", holdsCP: true}},
		{"a step the workers skip owes no worker hooks",
			"AfterClusterUpgrade", observed("v1.33.0", "v1.33.0", "v1.33.0", false), plan([]string{"v1.34.0", "v1.35.0"}, []string{"v1.35.0"}), allHooks(),
			want{calls: []string{"BeforeControlPlaneUpgrade v1.33.0->v1.34.0"}, pending: "AfterClusterUpgrade", afterCP: []string{AfterControlPlaneUpgrade}}},
		{"no extension: nothing is called, the bookkeeping goes on as upstream's",
			"", observed("v1.32.0", "v1.32.0", "v1.32.0", false), plan([]string{"v1.33.0"}, []string{"v1.33.0"}), &scripted{},
			want{pending: "AfterClusterUpgrade", afterCP: []string{AfterControlPlaneUpgrade, BeforeWorkersUpgrade, AfterWorkersUpgrade}}},
		{"up to date: nothing to call",
			"", observed("v1.34.0", "v1.34.0", "v1.34.0", false), plan(nil, nil), allHooks(),
			want{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			topo := topology("v1.34.0", map[string]string{runtimev1.PendingHooksAnnotation: tc.pending})
			if tc.name == "a step the workers skip owes no worker hooks" {
				topo.Spec.Version = "v1.35.0"
			}
			answers := &Answers{}
			up, err := DecideUpgrade(context.Background(), UpgradeInput{Caller: tc.caller, Topology: topo, Pending: PendingOf(topo.Annotations), Observed: tc.obs, Plan: tc.plan}, answers)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tc.caller.calls, tc.want.calls) {
				t.Errorf("calls = %q, want %q", tc.caller.calls, tc.want.calls)
			}
			if up.Pending.String() != tc.want.pending {
				t.Errorf("owed = %q, want %q", up.Pending, tc.want.pending)
			}
			if !slices.Equal(up.AfterControlPlane, tc.want.afterCP) {
				t.Errorf("owed after the control plane = %q, want %q", up.AfterControlPlane, tc.want.afterCP)
			}
			if (up.Gate.ControlPlane != "") != tc.want.holdsCP || (up.Gate.Workers != "") != tc.want.holdsPool {
				t.Errorf("gate = %+v, want control plane held %v, workers held %v", up.Gate, tc.want.holdsCP, tc.want.holdsPool)
			}
			if tc.want.holdsCP && !strings.Contains(up.Gate.ControlPlane, "says ") {
				t.Errorf("the gate's reason %q does not carry the extension's message", up.Gate.ControlPlane)
			}
		})
	}
}

// TestBeforeUpgradeAnnotationHolds checks that upstream's annotation holds
// an upgrade without asking any extension, and says which annotation.
func TestBeforeUpgradeAnnotationHolds(t *testing.T) {
	topo := topology("v1.33.0", map[string]string{clusterv1.BeforeClusterUpgradeHookAnnotationPrefix + "/backup": ""})
	caller := allHooks()
	answers := &Answers{}
	up, err := DecideUpgrade(context.Background(), UpgradeInput{Caller: caller, Topology: topo, Observed: observed("v1.32.0", "v1.32.0", "v1.32.0", false), Plan: upgrade.VersionPlan{ControlPlane: []string{"v1.33.0"}}}, answers)
	if err != nil {
		t.Fatal(err)
	}
	if len(caller.calls) != 0 || up.Gate.ControlPlane == "" || len(up.Pending) != 0 {
		t.Fatalf("calls %q, gate %+v, owed %q: want no call, the control plane held, nothing owed", caller.calls, up.Gate, up.Pending)
	}
	if msg := answers.Message("upgrade"); msg != "Following hooks are blocking upgrade: BeforeClusterUpgrade: annotation "+clusterv1.BeforeClusterUpgradeHookAnnotationPrefix+"/backup is set" {
		t.Errorf("message = %q", msg)
	}
}

// TestFailedCallHoldsAndNamesTheHook checks that a hook that fails is an
// error naming it, and that nothing becomes owed on the way.
func TestFailedCallHoldsAndNamesTheHook(t *testing.T) {
	caller := allHooks()
	caller.fail = map[string]error{BeforeClusterUpgrade: fmt.Errorf("connection refused")}
	up, err := DecideUpgrade(context.Background(), UpgradeInput{Caller: caller, Topology: topology("v1.33.0", nil), Observed: observed("v1.32.0", "v1.32.0", "v1.32.0", false), Plan: upgrade.VersionPlan{ControlPlane: []string{"v1.33.0"}}}, &Answers{})
	if err == nil || !strings.Contains(err.Error(), "lifecycle hook BeforeClusterUpgrade: connection refused") {
		t.Fatalf("err = %v, want the hook named with its error", err)
	}
	if len(up.Pending) != 0 || len(up.AfterControlPlane) != 0 {
		t.Errorf("owed %q and %q after a failed call", up.Pending, up.AfterControlPlane)
	}
}

// TestAfterHooks checks AfterControlPlaneInitialized (once the Cluster says
// so) and AfterClusterUpgrade (only once everything has settled and the
// parts' own After hooks are answered).
func TestAfterHooks(t *testing.T) {
	settled := &upgrade.Sequence{ControlPlane: upgrade.Decision{Phase: v1alpha2.PhaseUpToDate}, MachineDeployments: []upgrade.Decision{{Phase: v1alpha2.PhaseUpToDate}}}
	rolling := &upgrade.Sequence{ControlPlane: upgrade.Decision{Phase: v1alpha2.PhaseUpToDate}, MachineDeployments: []upgrade.Decision{{Phase: v1alpha2.PhaseUpgrading}}}
	// A pinned pool moving to its pin is on its own schedule: the upgrade is over without it.
	pinnedRolling := &upgrade.Sequence{ControlPlane: upgrade.Decision{Phase: v1alpha2.PhaseUpToDate}, MachineDeployments: []upgrade.Decision{{Phase: v1alpha2.PhaseUpToDate}, {Phase: v1alpha2.PhaseUpgrading, Pin: "v1.32.4"}}}
	initialized := clusterWithCondition("ControlPlaneInitialized", "True")
	cases := []struct {
		name    string
		pending string
		cluster bool
		r       *upgrade.Sequence
		block   []string
		calls   []string
		owed    string
	}{
		{"control plane not initialized yet", AfterControlPlaneInitialized, false, settled, nil, nil, AfterControlPlaneInitialized},
		{"initialized: called once", AfterControlPlaneInitialized, true, settled, nil, []string{AfterControlPlaneInitialized}, ""},
		{"upgrade settled", AfterClusterUpgrade, true, settled, nil, []string{"AfterClusterUpgrade v1.33.0"}, ""},
		{"upgrade settled but the workers' hook is owed", "AfterClusterUpgrade,AfterWorkersUpgrade", true, settled, nil, nil, "AfterClusterUpgrade,AfterWorkersUpgrade"},
		{"workers still rolling", AfterClusterUpgrade, true, rolling, nil, nil, AfterClusterUpgrade},
		{"only a pinned pool rolling", AfterClusterUpgrade, true, pinnedRolling, nil, []string{"AfterClusterUpgrade v1.33.0"}, ""},
		{"AfterClusterUpgrade holds the next upgrade", AfterClusterUpgrade, true, settled, []string{AfterClusterUpgrade}, []string{"AfterClusterUpgrade v1.33.0"}, AfterClusterUpgrade},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			caller := allHooks(tc.block...)
			topo := topology("v1.33.0", map[string]string{runtimev1.PendingHooksAnnotation: tc.pending})
			in := AfterInput{Caller: caller, Topology: topo, Pending: PendingOf(topo.Annotations), Sequence: tc.r}
			if tc.cluster {
				in.Cluster = initialized
			}
			owed, err := After(context.Background(), in, &Answers{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(caller.calls, tc.calls) || owed.String() != tc.owed {
				t.Errorf("calls %q owed %q, want %q and %q", caller.calls, owed, tc.calls, tc.owed)
			}
		})
	}
}

func clusterWithCondition(condition, status string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"status": map[string]any{"conditions": []any{map[string]any{"type": condition, "status": status}}},
	}}
}

// TestPreviewCallsFollowTheSteps checks the hooks a chained upgrade's
// preview lists, in order, and that an unserved hook is left out.
func TestPreviewCallsFollowTheSteps(t *testing.T) {
	topo := topology("v1.32.0", nil)
	topo.Status.MachineDeployments = []v1alpha2.PartStatus{{Name: "md", Version: "v1.32.0"}}
	class := &v1alpha2.TopologyClass{Spec: v1alpha2.TopologyClassSpec{KubernetesVersions: []string{"v1.32.0", "v1.33.0", "v1.34.0", "v1.35.0", "v1.36.0"}}}
	p := upgrade.PlanUpgrade(topo, class, "v1.36.0")
	served := map[string][]string{}
	for _, h := range Hooks {
		served[h] = []string{"h.ext"}
	}
	delete(served, BeforeControlPlaneUpgrade)
	got := PreviewCalls(p, served)
	want := []string{
		"BeforeClusterUpgrade v1.32.0 → v1.36.0 (h.ext)",
		"AfterControlPlaneUpgrade v1.33.0 (h.ext)",
		"AfterControlPlaneUpgrade v1.34.0 (h.ext)",
		"AfterControlPlaneUpgrade v1.35.0 (h.ext)",
		"BeforeWorkersUpgrade v1.32.0 → v1.35.0 (h.ext)",
		"AfterWorkersUpgrade v1.35.0 (h.ext)",
		"AfterControlPlaneUpgrade v1.36.0 (h.ext)",
		"BeforeWorkersUpgrade v1.35.0 → v1.36.0 (h.ext)",
		"AfterWorkersUpgrade v1.36.0 (h.ext)",
		"AfterClusterUpgrade v1.36.0 (h.ext)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("preview calls:\n%s\nwant:\n%s\nsteps: %q", strings.Join(got, "\n"), strings.Join(want, "\n"), p.Lines())
	}
	if PreviewLines(p, nil) != nil {
		t.Error("with no extension registered, the preview lists hooks")
	}
}

// TestHookNamesAreTheRuntimeSDKs: the names sent in requests, kept in the
// pending-hooks annotation and matched against discovery are the Runtime
// SDK's, in the order a cluster's life meets them.
func TestHookNamesAreTheRuntimeSDKs(t *testing.T) {
	want := "BeforeClusterCreate AfterControlPlaneInitialized BeforeClusterUpgrade BeforeControlPlaneUpgrade AfterControlPlaneUpgrade BeforeWorkersUpgrade AfterWorkersUpgrade AfterClusterUpgrade BeforeClusterDelete"
	if got := strings.Join(Hooks, " "); got != want {
		t.Errorf("hooks %s, want %s", got, want)
	}
}

// TestControlPlaneInitializedInEitherCoreVersion reads the Cluster as
// upstream's controller does, at v1beta2 (the initialization field or the
// condition) and at v1beta1 (its own conditions), and never from a
// condition that is not True.
func TestControlPlaneInitializedInEitherCoreVersion(t *testing.T) {
	at := func(version string, status map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.x-k8s.io/" + version, "kind": "Cluster", "metadata": map[string]any{"name": "dev"}, "status": status}}
	}
	condition := func(status string) []any {
		return []any{map[string]any{"type": "ControlPlaneInitialized", "status": status, "reason": "R", "lastTransitionTime": "2026-11-29T08:00:00Z"}}
	}
	for _, tc := range []struct {
		name    string
		cluster *unstructured.Unstructured
		want    bool
	}{
		{"v1beta2 initialization", at("v1beta2", map[string]any{"initialization": map[string]any{"controlPlaneInitialized": true}}), true},
		{"v1beta2 condition", at("v1beta2", map[string]any{"conditions": condition("True")}), true},
		{"v1beta2 condition False", at("v1beta2", map[string]any{"conditions": condition("False")}), false},
		{"v1beta1 condition", at("v1beta1", map[string]any{"conditions": condition("True")}), true},
		{"v1beta1 condition False", at("v1beta1", map[string]any{"conditions": condition("False")}), false},
		{"v1beta1 nothing yet", at("v1beta1", map[string]any{"phase": "Provisioning"}), false},
		{"no Cluster", nil, false},
	} {
		if got := controlPlaneInitialized(tc.cluster); got != tc.want {
			t.Errorf("%s: controlPlaneInitialized = %v, want %v", tc.name, got, tc.want)
		}
	}
}
