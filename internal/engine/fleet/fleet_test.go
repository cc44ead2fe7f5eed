package fleet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

var t0 = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC) // a Thursday

func refs(n int) []v1alpha2.RolloutClusterRef {
	var out []v1alpha2.RolloutClusterRef
	for i := n; i >= 1; i-- { // reversed: Assign sorts
		out = append(out, v1alpha2.RolloutClusterRef{Kind: v1alpha2.RolloutKindTopology, Namespace: "fleet", Name: fmt.Sprintf("c%d", i)})
	}
	return out
}

func waves(sizes ...string) []v1alpha2.RolloutWave {
	var out []v1alpha2.RolloutWave
	for _, s := range sizes {
		out = append(out, v1alpha2.RolloutWave{Clusters: intstr.Parse(s)})
	}
	return out
}

func TestWaveSizesResolveCountsAndPercentagesOfTheFleet(t *testing.T) {
	for _, tc := range []struct {
		waves []string
		n     int
		want  string
		err   string
	}{
		{waves: []string{"1", "2", "100%"}, n: 7, want: "[1 2 4]"},
		{waves: []string{"10%", "50%", "100%"}, n: 7, want: "[1 4 2]"},
		{waves: []string{"1", "100%"}, n: 1, want: "[1 0]"},
		{waves: []string{"1", "2"}, n: 7, err: "the waves cover 3 of the 7 clusters"},
		{waves: []string{"0", "100%"}, n: 7, err: "at least one cluster"},
		{waves: []string{"half"}, n: 7, err: "must be a count"},
	} {
		sizes, errs := WaveSizes(waves(tc.waves...), tc.n)
		if tc.err != "" {
			if errs.ToAggregate() == nil || !strings.Contains(errs.ToAggregate().Error(), tc.err) {
				t.Errorf("%v over %d: got %v, want an error with %q", tc.waves, tc.n, errs, tc.err)
			}
			continue
		}
		if got := fmt.Sprint(sizes); got != tc.want || len(errs) > 0 {
			t.Errorf("%v over %d: got %s %v, want %s", tc.waves, tc.n, got, errs, tc.want)
		}
	}
}

func TestAssignOrdersClustersByNamespaceAndNameIntoWaves(t *testing.T) {
	clusters, ws, errs := Assign(refs(4), waves("1", "100%"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var got []string
	for _, c := range clusters {
		got = append(got, fmt.Sprintf("%s:%d", c.Name, c.Wave))
	}
	if strings.Join(got, " ") != "c1:1 c2:2 c3:2 c4:2" || len(ws) != 2 || ws[1].Clusters != 3 {
		t.Errorf("got %v waves %+v", got, ws)
	}
}

func TestWindowsOpenOnTheirDaysAndAcrossMidnight(t *testing.T) {
	nightly := []v1alpha2.MaintenanceWindow{{Days: []string{"Thu"}, Start: "22:00", End: "02:00"}}
	for _, tc := range []struct {
		at   time.Time
		want bool
	}{
		{time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC), true},  // Thursday night
		{time.Date(2026, 11, 27, 1, 59, 0, 0, time.UTC), true},  // Friday early: Thursday's window
		{time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC), false},  // closed
		{time.Date(2026, 11, 27, 23, 0, 0, 0, time.UTC), false}, // Friday night: not its day
	} {
		if got := InWindow(nightly, tc.at); got != tc.want {
			t.Errorf("at %s: open %v, want %v", tc.at, got, tc.want)
		}
	}
	if next := NextWindow(nightly, t0); !next.Equal(time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC)) {
		t.Errorf("next window after %s is %s", t0, next)
	}
	if errs := ValidateWindows([]v1alpha2.MaintenanceWindow{{Days: []string{"Funday"}, Start: "25:00", End: "01:00"}}); len(errs) != 2 {
		t.Errorf("want the day and the start refused, got %v", errs)
	}
}

// fleetRollout is a rollout of n clusters to v1.35.0 in the given waves.
func fleetRollout(t testing.TB, n int, maxInFlight int32, soak time.Duration, ws ...string) *v1alpha2.TopologyRollout {
	t.Helper()
	r := &v1alpha2.TopologyRollout{Spec: v1alpha2.TopologyRolloutSpec{
		Change:   v1alpha2.RolloutChange{Version: "v1.35.0"},
		Strategy: v1alpha2.RolloutStrategy{Waves: waves(ws...), MaxInFlight: maxInFlight, Soak: metav1.Duration{Duration: soak}},
	}}
	clusters, wavesStatus, errs := Assign(refs(n), r.Spec.Strategy.Waves)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	r.Status.Clusters, r.Status.Waves = clusters, wavesStatus
	return r
}

// world is the clusters as a test makes them look.
type world map[string]Observation

func (w world) set(name string, version string, settled bool, problems ...string) {
	w["Topology/fleet/"+name] = Observation{Found: true, Has: v1alpha2.RolloutChange{Version: version}, Settled: settled, Problems: problems}
}

func newWorld(n int) world {
	w := world{}
	for i := 1; i <= n; i++ {
		w.set(fmt.Sprintf("c%d", i), "v1.34.2", true)
	}
	return w
}

// pass runs Step and, as the controller does, starts every candidate and
// writes the change; it returns the names started.
func pass(r *v1alpha2.TopologyRollout, w world, now time.Time) (Pass, []string) {
	p := Step(r, View{Clusters: w}, now)
	var started []string
	for _, i := range p.Start {
		c := p.Status.Clusters[i]
		Start(p.Status, i, w[c.Key()].Has, now)
		started = append(started, c.Name)
		w.set(c.Name, "v1.35.0", false, "control plane: RollingOut")
	}
	Summarize(r, p.Status, now)
	r.Status = *p.Status
	return p, started
}

func phases(r *v1alpha2.TopologyRollout) string {
	var out []string
	for _, c := range r.Status.Clusters {
		out = append(out, c.Name+"="+string(c.Phase))
	}
	return strings.Join(out, " ")
}

func TestTheCanaryFinishesItsSoakBeforeTheNextWaveStarts(t *testing.T) {
	r := fleetRollout(t, 4, 2, 10*time.Minute, "1", "100%")
	w := newWorld(4)
	if _, started := pass(r, w, t0); fmt.Sprint(started) != "[c1]" {
		t.Fatalf("first pass started %v, want the canary c1 alone", started)
	}
	w.set("c1", "v1.35.0", true)
	pass(r, w, t0.Add(time.Minute))
	if r.Status.Clusters[0].Phase != v1alpha2.ClusterSoaking {
		t.Fatalf("settled canary: %s", phases(r))
	}
	if _, started := pass(r, w, t0.Add(5*time.Minute)); len(started) != 0 {
		t.Fatalf("wave 2 started during the canary's soak: %v", started)
	}
	_, started := pass(r, w, t0.Add(11*time.Minute))
	if r.Status.Clusters[0].Phase != v1alpha2.ClusterSucceeded || fmt.Sprint(started) != "[c2 c3]" {
		t.Fatalf("after the soak: %s, started %v; want c1 Succeeded and two of wave 2 started (maxInFlight 2)", phases(r), started)
	}
	if r.Status.Wave != 2 || r.Status.InFlight != 2 || r.Status.Waves[0].CompletedAt == nil || r.Status.Waves[1].StartedAt == nil {
		t.Errorf("status: wave %d inFlight %d waves %+v", r.Status.Wave, r.Status.InFlight, r.Status.Waves)
	}
}

func TestAFailureBeyondTheBudgetHaltsAndRetryGoesOn(t *testing.T) {
	r := fleetRollout(t, 3, 1, 5*time.Minute, "1", "100%")
	w := newWorld(3)
	pass(r, w, t0)
	w.set("c1", "v1.35.0", true)
	pass(r, w, t0.Add(time.Minute)) // soaking
	pass(r, w, t0.Add(7*time.Minute))
	if r.Status.Clusters[0].Phase != v1alpha2.ClusterSucceeded || r.Status.Clusters[1].Phase != v1alpha2.ClusterInProgress {
		t.Fatalf("%s", phases(r))
	}
	w.set("c2", "v1.35.0", true)
	pass(r, w, t0.Add(8*time.Minute))
	w.set("c2", "v1.35.0", false, "md-0: Degraded")
	pass(r, w, t0.Add(9*time.Minute))
	if c := r.Status.Clusters[1]; c.Phase != v1alpha2.ClusterSoaking || c.UnhealthySince == nil || !strings.Contains(c.Message, "md-0: Degraded") {
		t.Fatalf("c2, unhealthy for less than the tolerance: %+v", c)
	}
	p, started := pass(r, w, t0.Add(10*time.Minute))
	c2 := r.Status.Clusters[1]
	if c2.Phase != v1alpha2.ClusterFailed || c2.Reason != ReasonHealthGate || !strings.Contains(c2.Message, "md-0: Degraded") {
		t.Fatalf("c2: %+v", c2)
	}
	if r.Status.Phase != v1alpha2.RolloutHalted || r.Status.Wave != 2 || len(started) != 0 || !strings.Contains(r.Status.Message, "Topology/fleet/c2") {
		t.Fatalf("phase %s %q, started %v", r.Status.Phase, r.Status.Message, started)
	}
	if len(p.Events) == 0 || !p.Events[0].Warning {
		t.Errorf("want a warning event, got %+v", p.Events)
	}
	// Fixed; retried.
	w.set("c2", "v1.35.0", true)
	r.Spec.Retry = []v1alpha2.RolloutRetry{{RolloutClusterRef: c2.RolloutClusterRef, Attempt: 2}}
	pass(r, w, t0.Add(10*time.Minute+30*time.Second))
	if c := r.Status.Clusters[1]; c.Phase != v1alpha2.ClusterInProgress || c.Attempt != 2 || r.Status.Phase != v1alpha2.RolloutProgressing {
		t.Fatalf("after retry: %+v, rollout %s", c, r.Status.Phase)
	}
	for i := 11; i < 60; i += 3 {
		w.set("c2", "v1.35.0", true)
		if r.Status.Clusters[2].Phase == v1alpha2.ClusterInProgress {
			w.set("c3", "v1.35.0", true)
		}
		pass(r, w, t0.Add(time.Duration(i)*time.Minute))
	}
	if r.Status.Phase != v1alpha2.RolloutCompleted || r.Status.Succeeded != 3 || r.Status.CompletedAt == nil {
		t.Fatalf("want Completed with 3 succeeded: %s %s", r.Status.Phase, phases(r))
	}
}

func TestAShortUnhealthySpellStartsTheSoakOver(t *testing.T) {
	r := fleetRollout(t, 1, 1, 5*time.Minute, "1")
	w := newWorld(1)
	pass(r, w, t0)
	w.set("c1", "v1.35.0", true)
	pass(r, w, t0.Add(time.Minute)) // soaking from 1m
	w.set("c1", "v1.35.0", false, "control plane: NotReady")
	pass(r, w, t0.Add(3*time.Minute))
	w.set("c1", "v1.35.0", true)
	p, _ := pass(r, w, t0.Add(3*time.Minute+30*time.Second))
	c := r.Status.Clusters[0]
	if c.Phase != v1alpha2.ClusterSoaking || c.UnhealthySince != nil || !c.SoakStartedAt.Time.Equal(t0.Add(3*time.Minute+30*time.Second)) {
		t.Fatalf("after a 30s spell: %+v, want soaking again from 3m30s", c)
	}
	if len(p.Events) != 1 || p.Events[0].Reason != "Recovered" {
		t.Errorf("events %+v, want Recovered", p.Events)
	}
	pass(r, w, t0.Add(7*time.Minute)) // a soak from 1m would have ended at 6m
	if c := r.Status.Clusters[0]; c.Phase != v1alpha2.ClusterSoaking {
		t.Fatalf("at 7m: %s, want still soaking: the soak started over at 3m30s", c.Phase)
	}
	pass(r, w, t0.Add(8*time.Minute+31*time.Second))
	if c := r.Status.Clusters[0]; c.Phase != v1alpha2.ClusterSucceeded || r.Status.Phase != v1alpha2.RolloutCompleted {
		t.Fatalf("after a whole soak of health: %s, rollout %s", c.Phase, r.Status.Phase)
	}
}

func TestAClusterThatKeepsTurningUnhealthyTimesOut(t *testing.T) {
	r := fleetRollout(t, 1, 1, 5*time.Minute, "1")
	r.Spec.Strategy.ClusterTimeout = metav1.Duration{Duration: 10 * time.Minute}
	w := newWorld(1)
	pass(r, w, t0)
	for m := time.Minute; m < 20*time.Minute && r.Status.Clusters[0].Phase != v1alpha2.ClusterFailed; m += time.Minute {
		w.set("c1", "v1.35.0", true)
		pass(r, w, t0.Add(m))
		w.set("c1", "v1.35.0", false, "md-0: Degraded")
		pass(r, w, t0.Add(m+30*time.Second))
	}
	c := r.Status.Clusters[0]
	if c.Phase != v1alpha2.ClusterFailed || c.Reason != ReasonTimeout || !c.CompletedAt.After(t0.Add(15*time.Minute)) {
		t.Fatalf("a cluster unhealthy half of every minute: %+v, want Failed on Timeout after the timeout and a soak", c)
	}
}

func TestAStartedClusterWhoseWriteWasLostIsWrittenNotRestarted(t *testing.T) {
	r := fleetRollout(t, 2, 1, 0, "1", "100%")
	w := newWorld(2)
	p := Step(r, View{Clusters: w}, t0)
	Start(p.Status, p.Start[0], w["Topology/fleet/c1"].Has, t0)
	r.Status = *p.Status // the status was written; the agent died before the change
	p = Step(r, View{Clusters: w}, t0.Add(time.Second))
	if fmt.Sprint(p.Apply) != "[0]" || len(p.Start) != 0 || p.Status.Clusters[0].Attempt != 1 {
		t.Fatalf("apply %v start %v attempt %d: want c1 written once more, nothing started", p.Apply, p.Start, p.Status.Clusters[0].Attempt)
	}
}

func TestAClusterEditedByHandIsReportedNotOverwritten(t *testing.T) {
	r := fleetRollout(t, 2, 1, 0, "1", "100%")
	w := newWorld(2)
	pass(r, w, t0)
	r.Status.Clusters[0].Applied = true
	w.set("c1", "v1.34.3", false) // someone set another version
	p, _ := pass(r, w, t0.Add(time.Minute))
	c := r.Status.Clusters[0]
	if c.Phase != v1alpha2.ClusterFailed || c.Reason != ReasonEditedByHand || !strings.Contains(c.Message, "version is v1.34.3 (the rollout sets v1.35.0)") || len(p.Apply) != 0 {
		t.Fatalf("%+v apply %v", c, p.Apply)
	}
}

func TestPausedHeldAbortedAndWindowsStartNothing(t *testing.T) {
	r := fleetRollout(t, 2, 1, 0, "1", "100%")
	w := newWorld(2)
	r.Spec.Paused = true
	if p, _ := pass(r, w, t0); len(p.Start) != 0 || r.Status.Phase != v1alpha2.RolloutPaused {
		t.Fatalf("paused: start %v phase %s", p.Start, r.Status.Phase)
	}
	r.Spec.Paused = false
	w["Topology/fleet/c1"] = Observation{Found: true, Has: v1alpha2.RolloutChange{Version: "v1.34.2"}, Hold: "Topology fleet/c1 is paused"}
	if p, _ := pass(r, w, t0); len(p.Start) != 0 || r.Status.Clusters[0].Reason != ReasonHeld {
		t.Fatalf("held: start %v %+v", p.Start, r.Status.Clusters[0])
	}
	w.set("c1", "v1.34.2", true)
	r.Spec.Strategy.Windows = []v1alpha2.MaintenanceWindow{{Start: "22:00", End: "23:00"}}
	if p, _ := pass(r, w, t0); len(p.Start) != 0 || r.Status.Phase != v1alpha2.RolloutWaitingForWindow || p.Requeue != 12*time.Hour {
		t.Fatalf("outside the window: start %v phase %s requeue %s", p.Start, r.Status.Phase, p.Requeue)
	}
	if _, started := pass(r, w, t0.Add(12*time.Hour)); fmt.Sprint(started) != "[c1]" {
		t.Fatalf("in the window: started %v", started)
	}
	r.Spec.Aborted = true
	w.set("c1", "v1.35.0", true)
	if p, _ := pass(r, w, t0.Add(13*time.Hour)); len(p.Start) != 0 || r.Status.Phase != v1alpha2.RolloutAborted || r.Status.Clusters[0].Phase != v1alpha2.ClusterInProgress {
		t.Fatalf("aborted: start %v phase %s %s", p.Start, r.Status.Phase, phases(r))
	}
}

func TestSkipFinishesAClusterAndTheWaveMovesOn(t *testing.T) {
	r := fleetRollout(t, 2, 1, 0, "1", "100%")
	w := newWorld(2)
	r.Spec.Skip = []v1alpha2.RolloutClusterRef{r.Status.Clusters[0].RolloutClusterRef}
	if _, started := pass(r, w, t0); fmt.Sprint(started) != "[c2]" || r.Status.Clusters[0].Phase != v1alpha2.ClusterSkipped {
		t.Fatalf("started %v: %s", started, phases(r))
	}
}

func TestATimedOutClusterFailsWithItsProblems(t *testing.T) {
	r := fleetRollout(t, 1, 1, 0, "1")
	r.Spec.Strategy.ClusterTimeout = metav1.Duration{Duration: 10 * time.Minute}
	w := newWorld(1)
	pass(r, w, t0)
	w.set("c1", "v1.35.0", false, "control plane: RollingOut, 1/3 machines")
	pass(r, w, t0.Add(11*time.Minute))
	if c := r.Status.Clusters[0]; c.Phase != v1alpha2.ClusterFailed || c.Reason != ReasonTimeout || !strings.Contains(c.Message, "1/3 machines") {
		t.Fatalf("%+v", c)
	}
}

func TestChangeMatchesVariablesAsJSON(t *testing.T) {
	change := v1alpha2.RolloutChange{Version: "v1.35.0", Variables: []v1alpha2.ClusterVariable{{Name: "a", Value: jsonOf(`{"x": 1, "y": 2}`)}}}
	topo := &v1alpha2.Topology{Spec: v1alpha2.TopologySpec{Version: "v1.34.0", Variables: []v1alpha2.ClusterVariable{{Name: "a", Value: jsonOf(`{"y":2,"x":1}`)}, {Name: "b", Value: jsonOf(`1`)}}}}
	if Matches(change, Has(change, topo)) {
		t.Fatal("the version differs")
	}
	Apply(change, topo)
	if !Matches(change, Has(change, topo)) || len(topo.Spec.Variables) != 2 || topo.Spec.Version != "v1.35.0" {
		t.Fatalf("after Apply: %+v", topo.Spec)
	}
}

func jsonOf(s string) apiextensionsv1.JSON { return apiextensionsv1.JSON{Raw: []byte(s)} }

func TestARefusedPreflightCountsAsAnAttemptThatRetryGoesPast(t *testing.T) {
	r := fleetRollout(t, 2, 1, 0, "1", "100%")
	w := newWorld(2)
	p := Step(r, View{Clusters: w}, t0)
	Refused(p.Status, p.Start[0], "change freeze", t0)
	Summarize(r, p.Status, t0)
	r.Status = *p.Status
	if c := r.Status.Clusters[0]; c.Phase != v1alpha2.ClusterFailed || c.Reason != ReasonPreflight || c.Attempt != 1 || r.Status.Phase != v1alpha2.RolloutHalted {
		t.Fatalf("%+v, rollout %s", c, r.Status.Phase)
	}
	r.Spec.Retry = []v1alpha2.RolloutRetry{{RolloutClusterRef: r.Status.Clusters[0].RolloutClusterRef, Attempt: 2}}
	if _, started := pass(r, w, t0.Add(time.Minute)); fmt.Sprint(started) != "[c1]" || r.Status.Clusters[0].Attempt != 2 {
		t.Fatalf("after retry: started %v, %+v", started, r.Status.Clusters[0])
	}
}

func TestARefusalFailsTheClusterAfterTheToleranceWordForWord(t *testing.T) {
	r := fleetRollout(t, 2, 1, 0, "1", "100%")
	r.Spec.Strategy.HealthTolerance = metav1.Duration{Duration: 30 * time.Second}
	w := newWorld(2)
	pass(r, w, t0)
	const refusal = `MachineDeployment fleet/c1-md-0: admission policy "freeze" denied request: change freeze`
	o := w["Topology/fleet/c1"]
	o.Has, o.Settled, o.Refused = v1alpha2.RolloutChange{Version: "v1.35.0"}, false, refusal
	w["Topology/fleet/c1"] = o
	pass(r, w, t0.Add(10*time.Second))
	if c := r.Status.Clusters[0]; c.Phase != v1alpha2.ClusterInProgress || c.RefusedSince == nil || !strings.Contains(c.Message, refusal) {
		t.Fatalf("refused for less than the tolerance: %+v", c)
	}
	// The refusal stops (the policy was taken back): the clock starts over.
	o.Refused = ""
	w["Topology/fleet/c1"] = o
	pass(r, w, t0.Add(20*time.Second))
	if c := r.Status.Clusters[0]; c.RefusedSince != nil || c.Phase != v1alpha2.ClusterInProgress {
		t.Fatalf("after the refusal stopped: %+v", c)
	}
	o.Refused = refusal
	w["Topology/fleet/c1"] = o
	pass(r, w, t0.Add(30*time.Second))
	pass(r, w, t0.Add(50*time.Second))
	if c := r.Status.Clusters[0]; c.Phase != v1alpha2.ClusterInProgress {
		t.Fatalf("20s into a second refusal, tolerance 30s: %+v", c)
	}
	_, started := pass(r, w, t0.Add(61*time.Second))
	c := r.Status.Clusters[0]
	if c.Phase != v1alpha2.ClusterFailed || c.Reason != ReasonRefused || c.Message != refusal {
		t.Fatalf("refused past the tolerance: %+v", c)
	}
	if r.Status.Phase != v1alpha2.RolloutHalted || len(started) != 0 {
		t.Errorf("phase %s, started %v: a budget of 0 halts at the first failure", r.Status.Phase, started)
	}
}

func TestAClusterWithoutProgressFailsAtTheDeadline(t *testing.T) {
	r := fleetRollout(t, 1, 1, 0, "100%")
	r.Spec.Strategy.ProgressDeadline = metav1.Duration{Duration: 2 * time.Minute}
	w := newWorld(1)
	pass(r, w, t0)
	o := w["Topology/fleet/c1"]
	o.Has, o.Settled, o.Problems, o.Progress = v1alpha2.RolloutChange{Version: "v1.35.0"}, false, []string{"control plane: RollingOut, 0 of 1 up to date"}, "a"
	w["Topology/fleet/c1"] = o
	pass(r, w, t0.Add(time.Minute))
	// A Machine replaced: progress, so the deadline counts from here.
	o.Progress = "b"
	w["Topology/fleet/c1"] = o
	pass(r, w, t0.Add(90*time.Second))
	pass(r, w, t0.Add(3*time.Minute))
	if c := r.Status.Clusters[0]; c.Phase != v1alpha2.ClusterInProgress || !c.ProgressAt.Time.Equal(t0.Add(90*time.Second)) {
		t.Fatalf("90s after its last progress, deadline 2m: %+v", c)
	}
	pass(r, w, t0.Add(3*time.Minute+30*time.Second))
	c := r.Status.Clusters[0]
	if c.Phase != v1alpha2.ClusterFailed || c.Reason != ReasonProgressDeadline || !strings.Contains(c.Message, "no progress for 2m0s") || !strings.Contains(c.Message, "0 of 1 up to date") {
		t.Fatalf("at the deadline: %+v", c)
	}
}

func TestAWaveThatNeedsApprovalWaitsForIt(t *testing.T) {
	r := fleetRollout(t, 3, 2, 0, "1", "100%")
	r.Name = "to-135"
	r.Spec.Strategy.Waves[1].Approval = true
	w := newWorld(3)
	pass(r, w, t0)
	w.set("c1", "v1.35.0", true)
	p, _ := pass(r, w, t0.Add(time.Minute)) // no soak: c1 succeeds, wave 2 is next
	if !slicesContainsEvent(p.Events, ReasonWaitingForApproval, "Topology/fleet/c2 waits: wave 2 needs an approval: kubectl topology rollout approve to-135 --wave 2") {
		t.Errorf("no event says wave 2 waits: %+v", p.Events)
	}
	p, started := pass(r, w, t0.Add(2*time.Minute))
	if len(started) != 0 || r.Status.Phase != v1alpha2.RolloutWaitingForApproval || !strings.Contains(r.Status.Message, "kubectl topology rollout approve to-135 --wave 2") {
		t.Fatalf("wave 2 before its approval: started %v, %s %q", started, r.Status.Phase, r.Status.Message)
	}
	if c := r.Status.Clusters[1]; c.Reason != ReasonWaitingForApproval {
		t.Errorf("c2 waits with reason %q", c.Reason)
	}
	if len(p.Events) != 0 {
		t.Errorf("a wait already reported is reported again: %+v", p.Events)
	}
	r.Spec.Approvals = []v1alpha2.RolloutApproval{{Wave: 2, By: "alice", At: metav1.NewTime(t0.Add(3 * time.Minute))}}
	p, started = pass(r, w, t0.Add(4*time.Minute))
	if fmt.Sprint(started) != "[c2 c3]" || r.Status.Phase != v1alpha2.RolloutProgressing {
		t.Fatalf("after the approval: started %v, %s", started, r.Status.Phase)
	}
	if !slicesContainsEvent(p.Events, "Approved", "wave 2 approved by alice at 2026-11-26T10:03:00Z") {
		t.Errorf("no approval event: %+v", p.Events)
	}
}

func TestTheNextWaveWaitsAfterTheOneBeforeAndForAnotherRollout(t *testing.T) {
	r := fleetRollout(t, 2, 1, 0, "1", "100%")
	r.Spec.Strategy.WaitAfterWave = metav1.Duration{Duration: 10 * time.Minute}
	w := newWorld(2)
	// staging has not completed: nothing starts.
	p := Step(r, View{Clusters: w, Blocking: []string{"TopologyRollout staging (Progressing)"}}, t0)
	r.Status = *p.Status
	if len(p.Start) != 0 || r.Status.Phase != v1alpha2.RolloutWaitingForRollout || !strings.Contains(r.Status.Message, "staging") {
		t.Fatalf("blocked by staging: start %v, %s %q", p.Start, r.Status.Phase, r.Status.Message)
	}
	pass(r, w, t0.Add(time.Minute))
	w.set("c1", "v1.35.0", true)
	pass(r, w, t0.Add(2*time.Minute)) // c1 succeeds at 10:02
	_, started := pass(r, w, t0.Add(5*time.Minute))
	if len(started) != 0 || !strings.Contains(r.Status.Message, "wave 2 starts at 2026-11-26T10:12:00Z") {
		t.Fatalf("3 minutes after wave 1: started %v, %q", started, r.Status.Message)
	}
	if _, started = pass(r, w, t0.Add(12*time.Minute)); fmt.Sprint(started) != "[c2]" {
		t.Fatalf("after the wait: started %v", started)
	}
}

func TestAClusterThatHadTheChangeSucceedsWithoutAWrite(t *testing.T) {
	r := fleetRollout(t, 2, 2, time.Hour, "100%")
	w := newWorld(2)
	w.set("c2", "v1.35.0", true)
	_, started := pass(r, w, t0)
	if fmt.Sprint(started) != "[c1]" {
		t.Fatalf("started %v", started)
	}
	if c := r.Status.Clusters[1]; c.Phase != v1alpha2.ClusterSucceeded || c.Reason != ReasonAlreadyAtTarget || c.Attempt != 0 {
		t.Errorf("c2, already at v1.35.0: %+v", c)
	}
}

func TestReverseUndoesClassAndVariablesButNoVersion(t *testing.T) {
	raw := func(s string) apiextensionsv1.JSON { return apiextensionsv1.JSON{Raw: []byte(s)} }
	change := v1alpha2.RolloutChange{Class: "b", Variables: []v1alpha2.ClusterVariable{{Name: "logLevel", Value: raw(`"debug"`)}, {Name: "extra", Value: raw(`1`)}}}
	topo := &v1alpha2.Topology{Spec: v1alpha2.TopologySpec{ClassRef: v1alpha2.ClassRef{Name: "a"}, Variables: []v1alpha2.ClusterVariable{{Name: "logLevel", Value: raw(`"info"`)}}}}
	from := Has(change, topo)
	Apply(change, topo)
	back, ok := Reverse(change, from)
	if !ok || back.Class != "a" || len(back.Variables) != 1 || string(back.Variables[0].Value.Raw) != `"info"` || fmt.Sprint(back.UnsetVariables) != "[extra]" {
		t.Fatalf("reverse: %+v %v", back, ok)
	}
	if Matches(back, Has(back, topo)) {
		t.Fatalf("the changed topology already matches its undo")
	}
	Apply(back, topo)
	if !Matches(back, Has(back, topo)) || topo.Spec.ClassRef.Name != "a" || len(topo.Spec.Variables) != 1 || string(topo.Spec.Variables[0].Value.Raw) != `"info"` {
		t.Errorf("undone: class %s, variables %+v", topo.Spec.ClassRef.Name, topo.Spec.Variables)
	}
	if _, ok := Reverse(v1alpha2.RolloutChange{Version: "v1.35.0"}, v1alpha2.RolloutChange{Version: "v1.34.2"}); ok {
		t.Errorf("a version change has a reverse")
	}
}

func slicesContainsEvent(events []Event, reason, message string) bool {
	for _, e := range events {
		if e.Reason == reason && e.Message == message {
			return true
		}
	}
	return false
}

func TestLateMatchesJoinTheLastWaveOnlyWhenAskedAndFree(t *testing.T) {
	r := fleetRollout(t, 2, 1, 0, "1", "100%")
	late := []v1alpha2.RolloutClusterRef{{Kind: v1alpha2.RolloutKindTopology, Namespace: "fleet", Name: "c3"}, {Kind: v1alpha2.RolloutKindTopology, Namespace: "fleet", Name: "c4"}}
	members := append(refs(2), late...)
	events := Join(r, &r.Status, members, nil)
	if len(r.Status.Clusters) != 2 || len(r.Status.JoinedLate) != 2 || len(events) != 2 {
		t.Fatalf("without joinLate: clusters %d, joinedLate %v, events %+v", len(r.Status.Clusters), r.Status.JoinedLate, events)
	}
	if events = Join(r, &r.Status, members, nil); len(events) != 0 {
		t.Errorf("late matches reported again: %+v", events)
	}
	r.Spec.Targets.JoinLate = true
	busy := map[string]Hold{late[1].Key(): {Rollout: "other", Phase: v1alpha2.ClusterInProgress}}
	events = Join(r, &r.Status, members, busy)
	if len(r.Status.Clusters) != 3 || r.Status.Clusters[2].Name != "c3" || r.Status.Clusters[2].Wave != 2 || !r.Status.Clusters[2].JoinedLate || r.Status.Waves[1].Clusters != 2 {
		t.Fatalf("with joinLate: %+v waves %+v", r.Status.Clusters, r.Status.Waves)
	}
	if len(r.Status.JoinedLate) != 1 || r.Status.JoinedLate[0].Name != "c4" {
		t.Errorf("c4, in another rollout, should stay out and listed: %v", r.Status.JoinedLate)
	}
	if !slicesContainsEvent(events, "JoinedLate", "Topology/fleet/c3 matches the targets since the rollout started; it joins wave 2") {
		t.Errorf("events %+v", events)
	}
}

func TestOnlyMinorDifferTellsProgressTextFromProgress(t *testing.T) {
	r := fleetRollout(t, 2, 1, 0, "100%")
	a := r.Status.DeepCopy()
	b := a.DeepCopy()
	at := metav1.NewTime(t0)
	b.Message, b.Clusters[0].Message, b.Clusters[0].ProgressMark, b.Clusters[0].ProgressAt = "wave 1 of 1", "refused for 10s", "9f", &at
	if !OnlyMinorDiffer(a, b) {
		t.Errorf("messages and a progress mark alone differ, but it says more does")
	}
	b.Clusters[0].RefusedSince = &at
	if OnlyMinorDiffer(a, b) {
		t.Errorf("a refusal's start differs, but it says only minor fields do")
	}
	b.Clusters[0].RefusedSince = nil
	b.Clusters[0].Phase = v1alpha2.ClusterFailed
	if OnlyMinorDiffer(a, b) {
		t.Errorf("a phase differs, but it says only messages do")
	}
	b.Clusters[0].Phase = a.Clusters[0].Phase
	a.Conditions = []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Rolling", Message: "1 of 2"}}
	b.Conditions = []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Rolling", Message: "2 of 2"}}
	if !OnlyMinorDiffer(a, b) {
		t.Errorf("a condition's message alone differs, but it says more does")
	}
	b.Conditions[0].Reason = "Halted"
	if OnlyMinorDiffer(a, b) {
		t.Errorf("a condition's reason differs, but it says only messages do")
	}
	b.Conditions[0].Reason = "Rolling"
	b.Clusters = b.Clusters[:1]
	if OnlyMinorDiffer(a, b) {
		t.Errorf("a cluster is missing, but it says only messages differ")
	}
	b = a.DeepCopy()
	b.InFlight++
	if OnlyMinorDiffer(a, b) {
		t.Errorf("the count in flight differs, but it says only messages do")
	}
}

// BenchmarkOnlyMinorDiffer1000 is the rollout controller's check before a
// status write, at 1,000 clusters whose progress text moved.
func BenchmarkOnlyMinorDiffer1000(b *testing.B) {
	r := fleetRollout(b, 1000, 1, 0, "100%")
	x := r.Status.DeepCopy()
	y := x.DeepCopy()
	at := metav1.NewTime(t0)
	for i := range y.Clusters {
		y.Clusters[i].Message, y.Clusters[i].ProgressMark, y.Clusters[i].ProgressAt = "rolling", "3f", &at
	}
	b.ReportAllocs()
	for b.Loop() {
		if !OnlyMinorDiffer(x, y) {
			b.Fatal("only progress text differs")
		}
	}
}
