package editor

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/draft"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/names"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/loader"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/picker"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/prompt"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func init() {
	// Golden files hold plain text: no colour escape codes.
	lipgloss.SetColorProfile(termenv.Ascii)
}

// exampleInputs is the example topology as the agent left it: every object
// created, the control plane stable at v1.33.1.
func exampleInputs(t *testing.T) Inputs { return inputsFor(t, false) }

// inputsFor builds the example, or with stress its 100-variable,
// 200-patch, 20-MachineDeployment expansion.
func inputsFor(t *testing.T, stress bool) Inputs {
	t.Helper()
	ex, err := fixture.LoadExample("default")
	if err != nil {
		t.Fatal(err)
	}
	if stress {
		ex.Class, ex.Topology = fixture.Stress(ex.Class, ex.Topology)
	}
	topo := ex.Topology.DeepCopy()
	topo.UID, topo.Generation, topo.ResourceVersion = "topo-uid", 1, "10"
	res, err := desiredstate.Compute(context.Background(), desiredstate.Input{Topology: topo, Class: ex.Class, Templates: clusterstate.NewTemplateIndex(ex.Templates...), Names: names.NewSeeded(7)})
	if err != nil {
		t.Fatal(err)
	}
	var current []*unstructured.Unstructured
	cpName := ""
	for _, o := range res.Desired.Objects() {
		o = o.DeepCopy()
		if o.GetKind() == "KubeadmControlPlane" { // as the provider reports it
			cpName = o.GetName()
			_ = unstructured.SetNestedField(o.Object, "v1.33.1", "status", "version")
			_ = unstructured.SetNestedField(o.Object, int64(3), "status", "replicas")
		}
		current = append(current, o)
	}
	topo.Spec.Variables = res.Variables
	obs := &upgrade.Observed{ControlPlane: upgrade.PartObserved{Exists: true, ObjectName: cpName, SpecVersion: "v1.33.1", StatusVersion: "v1.33.1", Replicas: 3, ReadyReplicas: 3, UpToDateReplicas: 3}, MachineDeployments: map[string]upgrade.PartObserved{}, MachinePools: map[string]upgrade.PartObserved{}}
	for _, md := range topo.Spec.Workers.MachineDeployments {
		obs.MachineDeployments[md.Name] = upgrade.PartObserved{Exists: true, SpecVersion: "v1.33.1"}
	}
	for _, mp := range topo.Spec.Workers.MachinePools {
		obs.MachinePools[mp.Name] = upgrade.PartObserved{Exists: true, SpecVersion: "v1.33.1"}
	}
	topo.Status.ObservedGeneration = 1
	topo.Status.Infrastructure = v1alpha2.InfrastructureProvisioned
	health.Summarize(topo, upgrade.Decide(topo, obs, upgrade.VersionPlan{}), obs, &topo.Status)
	state := loader.State(topo, ex.Class, current)
	observed, err := health.ObserveState(state)
	if err != nil {
		t.Fatal(err)
	}
	return Inputs{Topology: topo, Loaded: &loader.Loaded{Class: ex.Class, Templates: clusterstate.NewTemplateIndex(ex.Templates...), Objects: current, Current: state, Observed: observed}}
}

// fakeServer records applies; conflict makes the next one fail with latest.
type fakeServer struct {
	mu       sync.Mutex
	applied  []*v1alpha2.Topology
	conflict *v1alpha2.Topology
}

// serverChangedMeanwhile is a server on which someone else set the control
// plane to 5 replicas after the editor read the Topology: the first apply
// conflicts.
func serverChangedMeanwhile(in Inputs) *fakeServer {
	latest := in.Topology.DeepCopy()
	five := int32(5)
	latest.Spec.ControlPlane.Replicas = &five
	latest.ResourceVersion = "11"
	return &fakeServer{conflict: latest}
}

func (s *fakeServer) apply(_ context.Context, orig, edited *v1alpha2.Topology) (*v1alpha2.Topology, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conflict != nil {
		latest := s.conflict
		s.conflict = nil
		rebased, server, both := draft.Rebase(orig, edited, latest)
		return nil, &draft.ConflictError{Latest: latest, Rebased: rebased, ServerChanged: server, Both: both}
	}
	s.applied = append(s.applied, edited)
	return edited, nil
}

func newModel(t *testing.T, in Inputs, srv *fakeServer) *Model {
	t.Helper()
	m, err := New(context.Background(), in, srv.apply, false)
	if err != nil {
		t.Fatal(err)
	}
	m.compute.debounce = 0 // keystrokes here come one at a time; nothing to wait for
	settle(m, m.Init())
	return m
}

// press sends keys one by one, each followed by what it sets off (the
// checks of the new draft, an apply) until the editor is idle.
func press(m *Model, keys ...tea.KeyMsg) {
	for _, k := range keys {
		_, cmd := m.Update(k)
		settle(m, cmd)
	}
}

// settle runs cmd and every command the messages it yields set off, as the
// bubbletea runtime would, but the spinner's: it would turn for ever.
func settle(m *Model, cmd tea.Cmd) {
	queue := []tea.Cmd{cmd}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case nil, spinner.TickMsg, tea.QuitMsg:
		case tea.BatchMsg:
			queue = append(queue, msg...)
		default:
			_, next := m.Update(msg)
			queue = append(queue, next)
		}
	}
}

func typed(s string) tea.KeyMsg      { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }
func keyOf(k tea.KeyType) tea.KeyMsg { return tea.KeyMsg{Type: k} }

// replace clears the selected field and types s.
func replace(m *Model, s string) {
	for range len(m.form.Fields[m.form.Cursor].Value) {
		press(m, keyOf(tea.KeyBackspace))
	}
	press(m, typed(s))
}

// choose moves the selected choice field to option.
func choose(t *testing.T, m *Model, option string) {
	t.Helper()
	for range m.form.Fields[m.form.Cursor].Options {
		if f := m.form.Fields[m.form.Cursor]; f.Present && f.Value == option {
			return
		}
		press(m, keyOf(tea.KeyRight))
	}
	t.Fatalf("%s has no option %q", m.form.Fields[m.form.Cursor].Label, option)
}

// pickOption chooses option in the open picker.
func pickOption(t *testing.T, m *Model, option string) {
	t.Helper()
	if m.mode != picking {
		t.Fatalf("no picker is open; message %q", m.bar.Message)
	}
	for range m.overlay.picker.Options() {
		if m.overlay.picker.Selected() == option {
			press(m, keyOf(tea.KeyEnter))
			return
		}
		press(m, keyOf(tea.KeyDown))
	}
	t.Fatalf("picker %q has no option %q: %v", m.overlay.picker.Title(), option, m.overlay.picker.Options())
}

func goTo(t *testing.T, m *Model, label string) {
	t.Helper()
	for range m.form.Fields {
		if m.form.Fields[m.form.Cursor].Label == label {
			return
		}
		press(m, keyOf(tea.KeyDown))
	}
	t.Fatalf("no field %q", label)
}

// goldenView compares a view with testdata/<test name>.golden; -update (the
// golden package's flag) rewrites it.
func goldenView(t *testing.T, got string) {
	t.Helper()
	golden.RequireEqual(t, []byte(got))
}

// editVersionTo runs m in teatest, replaces the version v1.33.1 with version
// and waits until the preview shows the change and also.
func editVersionTo(t *testing.T, m *Model, version, also string) *teatest.TestModel {
	t.Helper()
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))
	for range len("v1.33.1") {
		tm.Send(keyOf(tea.KeyBackspace))
	}
	tm.Type(version)
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("v1.33.1 → "+version)) && bytes.Contains(b, []byte(also))
	}, teatest.WithDuration(10*time.Second))
	return tm
}

// TestEditUpgradeFlow drives the real program with teatest: change the
// version, see the ordered rollout, apply, confirm.
func TestEditUpgradeFlow(t *testing.T) {
	srv := &fakeServer{}
	m := newModel(t, exampleInputs(t), srv)
	tm := editVersionTo(t, m, "v1.34.0", "1. control plane")
	tm.Send(tea.KeyMsg{Type: tea.KeyCtrlS})
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("? y/n")) }, teatest.WithDuration(5*time.Second))
	tm.Type("y")
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("Applied to default/dev")) }, teatest.WithDuration(5*time.Second))
	tm.Send(tea.KeyMsg{Type: tea.KeyEsc})
	final := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
	if len(srv.applied) != 1 || srv.applied[0].Spec.Version != "v1.34.0" || srv.applied[0].ResourceVersion != "10" {
		t.Fatalf("applied %+v; want one write of v1.34.0 guarded by resourceVersion 10", srv.applied)
	}
	if !final.Applied {
		t.Error("the model does not know it applied")
	}
}

func TestEditPreviewGolden(t *testing.T) {
	m := newModel(t, exampleInputs(t), &fakeServer{})
	m.SetSize(80, 24)
	replace(m, "v1.34.0")
	goTo(t, m, "md-a (general) replicas")
	replace(m, "4")
	goldenView(t, m.View())
	if !m.canApply() {
		t.Error("a valid edit cannot be applied")
	}
}

func TestEditInvalidVariable(t *testing.T) {
	m := newModel(t, exampleInputs(t), &fakeServer{})
	m.SetSize(80, 24)
	goTo(t, m, "maxPods")
	replace(m, "5")
	view := m.View()
	if !strings.Contains(view, "✗ should be greater than or equal to 10") || m.canApply() {
		t.Errorf("maxPods=5: want the schema's error at the field and apply disabled:\n%s", view)
	}
	goTo(t, m, "level")
	choose(t, m, "None")
	goTo(t, m, "maxPods")
	replace(m, "30")
	if !strings.Contains(m.View(), "an enabled audit policy needs a level other than None") {
		t.Errorf("the class's CEL rule is not shown:\n%s", m.View())
	}
	press(m, tea.KeyMsg{Type: tea.KeyCtrlS})
	if m.mode == confirming || m.bar.Message != "fix what is red first" {
		t.Errorf("apply with errors: confirming %v, message %q", m.mode == confirming, m.bar.Message)
	}
	goldenView(t, m.View())
}

func TestEditDowngradeBlocked(t *testing.T) {
	m := newModel(t, exampleInputs(t), &fakeServer{})
	replace(m, "v1.32.0")
	if !strings.Contains(m.View(), "downgrading from v1.33.1 to v1.32.0 is not supported") || m.canApply() {
		t.Errorf("downgrade not blocked:\n%s", m.View())
	}
	replace(m, "v1.35.0")
	if !strings.Contains(m.View(), "skips a minor version") || m.canApply() {
		t.Errorf("skipped minor not blocked:\n%s", m.View())
	}
}

func TestEditConflictKeepsEdits(t *testing.T) {
	in := exampleInputs(t)
	srv := serverChangedMeanwhile(in)
	m := newModel(t, in, srv)
	replace(m, "v1.34.0")
	press(m, tea.KeyMsg{Type: tea.KeyCtrlS}, typed("y"))
	if !strings.Contains(m.bar.Message, `control plane replicas: 3 → 5`) || m.form.Fields[0].Value != "v1.34.0" || m.form.Fields[1].Value != "5" {
		t.Fatalf("after a conflict: message %q, version %q, replicas %q", m.bar.Message, m.form.Fields[0].Value, m.form.Fields[1].Value)
	}
	press(m, tea.KeyMsg{Type: tea.KeyCtrlS}, typed("y"))
	if len(srv.applied) != 1 || srv.applied[0].ResourceVersion != "11" || *srv.applied[0].Spec.ControlPlane.Replicas != 5 || srv.applied[0].Spec.Version != "v1.34.0" {
		t.Fatalf("re-applied %+v; want v1.34.0 on top of the server's resourceVersion 11 with its 5 replicas", srv.applied)
	}
}

func TestEditReadOnly(t *testing.T) {
	m, err := New(context.Background(), exampleInputs(t), (&fakeServer{}).apply, true)
	if err != nil {
		t.Fatal(err)
	}
	press(m, typed("x"), tea.KeyMsg{Type: tea.KeyCtrlS})
	if m.form.Fields[0].Value != "v1.33.1" || m.mode == confirming {
		t.Errorf("read-only editor changed: %q, confirming %v", m.form.Fields[0].Value, m.mode == confirming)
	}
}

// keystrokes runs stroke on md-a's replicas with a digit, then a backspace,
// b.N times, on the example class and on the stress class (100 variables,
// 200 patches, 20 MachineDeployments), and reports the time per keystroke.
func keystrokes(b *testing.B, unit string, stroke func(*Model, tea.KeyMsg)) {
	for _, stress := range []bool{false, true} {
		name := "example"
		if stress {
			name = "stress"
		}
		b.Run(name, func(b *testing.B) {
			t := &testing.T{}
			m := newModel(t, inputsFor(t, stress), &fakeServer{})
			goTo(t, m, "md-a (general) replicas")
			b.ResetTimer()
			for i := range b.N {
				stroke(m, typed(fmt.Sprint(i%10)))
				stroke(m, keyOf(tea.KeyBackspace))
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(2*b.N)/1000, unit)
		})
	}
}

// BenchmarkEditKeystroke measures one keystroke's recompute in the editor —
// validation, version rules, desired state and the list of changes. The
// frame budget is 16 ms.
func BenchmarkEditKeystroke(b *testing.B) {
	keystrokes(b, "ms/keystroke", func(m *Model, k tea.KeyMsg) { press(m, k) })
}

// BenchmarkEditKeystrokeToEcho measures the time from a keystroke to the
// frame that echoes it: the engine runs in the background, not waited for.
func BenchmarkEditKeystrokeToEcho(b *testing.B) {
	keystrokes(b, "ms/frame", func(m *Model, k tea.KeyMsg) {
		m.Update(k)
		_ = m.View()
	})
}

// BenchmarkEditKeystrokeToPreview measures the time from a keystroke to the
// frame with the new draft's checks and preview.
func BenchmarkEditKeystrokeToPreview(b *testing.B) {
	keystrokes(b, "ms/frame", func(m *Model, k tea.KeyMsg) {
		press(m, k)
		_ = m.View()
	})
}

func TestEditAddAndRemovePools(t *testing.T) {
	srv := &fakeServer{}
	m := newModel(t, exampleInputs(t), srv)
	m.SetSize(100, 40)
	press(m, tea.KeyMsg{Type: tea.KeyCtrlN})
	pickOption(t, m, "MachineDeployment of class general")
	press(m, keyOf(tea.KeyEnter)) // the proposed name
	if !strings.Contains(m.bar.Message, "added MachineDeployment md-0 (general)") {
		t.Fatalf("message after adding: %q", m.bar.Message)
	}
	view := m.View()
	for _, want := range []string{"md-0 (general) replicas", "created  MachineDeployment dev-md-0-", "created  DockerMachineTemplate dev-md-0-", "1 setting(s) changed"} {
		if !strings.Contains(view, want) {
			t.Errorf("after adding md-0 the view lacks %q:\n%s", want, view)
		}
	}
	goTo(t, m, "md-gpu (gpu) replicas")
	press(m, tea.KeyMsg{Type: tea.KeyCtrlX})
	view = m.View()
	if strings.Contains(view, "md-gpu (gpu) replicas") || !strings.Contains(view, "deleted  MachineDeployment dev-gpu-md-gpu-") {
		t.Errorf("after removing md-gpu:\n%s", view)
	}
	press(m, tea.KeyMsg{Type: tea.KeyCtrlS}, typed("y"))
	if len(srv.applied) != 1 {
		t.Fatal("nothing applied")
	}
	var pools []string
	for _, md := range srv.applied[0].Spec.Workers.MachineDeployments {
		pools = append(pools, md.Name)
	}
	if strings.Join(pools, ",") != "md-a,md-0" {
		t.Errorf("applied pools %v, want md-a and the new md-0", pools)
	}
}

func TestEditDiffView(t *testing.T) {
	m := newModel(t, exampleInputs(t), &fakeServer{})
	m.SetSize(100, 40)
	goTo(t, m, "md-a (general) replicas")
	replace(m, "4")
	press(m, tea.KeyMsg{Type: tea.KeyCtrlD})
	view := m.View()
	if !strings.Contains(view, "Diff 1/1: modified MachineDeployment dev-md-a-") || !strings.Contains(view, "+  replicas: 4") || !strings.Contains(view, "-  replicas: 2") {
		t.Errorf("diff view:\n%s", view)
	}
	press(m, tea.KeyMsg{Type: tea.KeyCtrlD})
	if strings.Contains(m.View(), "Diff 1/1") {
		t.Error("ctrl+d past the last change does not return to the list")
	}
}

func TestEditConflictKeepsAddedPool(t *testing.T) {
	in := exampleInputs(t)
	latest := in.Topology.DeepCopy()
	latest.ResourceVersion = "11"
	latest.Spec.Version = "v1.33.1"
	seven := int32(7)
	latest.Spec.Workers.MachineDeployments[0].Replicas = &seven
	srv := &fakeServer{conflict: latest}
	m := newModel(t, in, srv)
	press(m, tea.KeyMsg{Type: tea.KeyCtrlN}, keyOf(tea.KeyEnter), keyOf(tea.KeyEnter), tea.KeyMsg{Type: tea.KeyCtrlS}, typed("y"))
	if !strings.Contains(m.bar.Message, `md-a (general) replicas: 2 → 7`) {
		t.Fatalf("conflict message %q", m.bar.Message)
	}
	press(m, tea.KeyMsg{Type: tea.KeyCtrlS}, typed("y"))
	if len(srv.applied) != 1 {
		t.Fatal("not re-applied")
	}
	got := srv.applied[0].Spec.Workers.MachineDeployments
	if len(got) != 3 || *got[0].Replicas != 7 || got[2].Name != "md-0" {
		t.Errorf("re-applied pools %+v; want the server's 7 replicas for md-a and the added md-0", got)
	}
}

// TestEditWarnsOfAControlPlaneAtZero: the editor shows the warning `scale`
// asks about, from the same engine rule, and still lets the user apply.
func TestEditWarnsOfAControlPlaneAtZero(t *testing.T) {
	m := newModel(t, exampleInputs(t), &fakeServer{})
	goTo(t, m, "control plane replicas")
	replace(m, "0")
	if !strings.Contains(m.View(), "control plane replicas 0 deletes every control plane machine") || !m.canApply() {
		t.Errorf("a control plane scaled to 0 is not warned of, or cannot be applied:\n%s", m.View())
	}
}

// TestEditSaysWhichHookHolds: a lifecycle hook holding the Topology is
// named beside the preview of a change, which it holds too, and the
// upgrade's preview lists the hooks the registered extensions serve.
func TestEditSaysWhichHookHolds(t *testing.T) {
	in := exampleInputs(t)
	in.Topology.Status.Hooks = &v1alpha2.HooksStatus{Holding: []v1alpha2.HookHold{{Hook: "AfterClusterUpgrade", Handlers: []string{"after.ops"}, Holds: "the next upgrade", Message: "smoke tests running"}}}
	in.Hooks = map[string][]string{"BeforeClusterUpgrade": {"before.ops"}, "AfterClusterUpgrade": {"after.ops"}}
	m := newModel(t, in, &fakeServer{})
	m.SetSize(200, 80)
	replace(m, "v1.34.0")
	view := m.View()
	for _, want := range []string{"HELD: hook AfterClusterUpgrade (after.ops) holds the next upgrade — smoke tests running", "BeforeClusterUpgrade v1.33.1 → v1.34.0 (before.ops)"} {
		if !strings.Contains(view, want) {
			t.Errorf("the editor lacks %q:\n%s", want, view)
		}
	}
}

func TestEditUpgradeWaitsForAStableControlPlane(t *testing.T) {
	in := exampleInputs(t)
	in.Topology.Status.ControlPlane.Phase = v1alpha2.PhaseCreating
	in.Topology.Status.ControlPlane.State = v1alpha2.StateProvisioning
	m := newModel(t, in, &fakeServer{})
	replace(m, "v1.34.0")
	if !strings.Contains(m.View(), "the control plane is Provisioning") || !strings.Contains(m.View(), "--force") || m.canApply() {
		t.Errorf("a version change while the control plane is created is not blocked:\n%s", m.View())
	}
	goTo(t, m, "md-a (general) replicas")
	replace(m, "3")
	goTo(t, m, "version")
	replace(m, "v1.33.1")
	if !m.canApply() {
		t.Errorf("a replicas change is blocked by a rule about upgrades:\n%s", m.View())
	}
}

// An apply asked for while the checks of the draft still run opens the
// question at once and waits for the checks before it can be answered: a
// quick typist's ctrl+s is not refused.
func TestEditApplyWhileChecking(t *testing.T) {
	m := newModel(t, exampleInputs(t), &fakeServer{})
	goTo(t, m, "md-a (general) replicas")
	_, pending := m.Update(typed("1")) // the checks of "21" are not run yet
	m.Update(tea.KeyMsg{Type: tea.KeyCtrlS})
	if m.mode != confirmingUnchecked || !strings.Contains(m.View(), "once the checks pass? y/n") {
		t.Fatalf("mode %d, message %q: want the question open and the apply held until the checks are in", m.mode, m.bar.Message)
	}
	settle(m, pending)
	if m.mode != confirming {
		t.Errorf("the checks are in and pass, yet apply does not ask; message %q", m.bar.Message)
	}
}

// A y typed right after ctrl+s, before the checks are in, answers the
// question instead of going into the field; the draft is applied once the
// checks pass, not before.
func TestEditYesBeforeTheChecksAreIn(t *testing.T) {
	srv := &fakeServer{}
	m := newModel(t, exampleInputs(t), srv)
	goTo(t, m, "md-a (general) replicas")
	_, pending := m.Update(typed("1"))
	m.Update(tea.KeyMsg{Type: tea.KeyCtrlS})
	m.Update(typed("y"))
	if got := m.form.Selected().Value; got != "21" || len(srv.applied) != 0 || m.mode != applyWhenChecked {
		t.Fatalf("field %q, applied %d, mode %d: want y taken as the answer and nothing applied before the checks", got, len(srv.applied), m.mode)
	}
	settle(m, pending)
	if len(srv.applied) != 1 || !m.Applied {
		t.Fatalf("applied %d (Applied %v, message %q): want the draft applied once its checks passed", len(srv.applied), m.Applied, m.bar.Message)
	}
	if md := srv.applied[0].Spec.Workers.MachineDeployments[0]; md.Replicas == nil || *md.Replicas != 21 {
		t.Errorf("applied md-a replicas %v, want 21", md.Replicas)
	}
}

// TestEscAsksBeforeDiscardingEdits: Esc with unsaved edits asks; n keeps
// them, y quits; nothing is written either way.
func TestEscAsksBeforeDiscardingEdits(t *testing.T) {
	srv := &fakeServer{}
	m := newModel(t, exampleInputs(t), srv)
	tm := editVersionTo(t, m, "v1.34.0", "")
	tm.Send(tea.KeyMsg{Type: tea.KeyEsc})
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("unsaved change(s): quit and discard them? y/n")) }, teatest.WithDuration(5*time.Second))
	tm.Type("n")
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("not quit: your edits are still here")) }, teatest.WithDuration(5*time.Second))
	tm.Send(tea.KeyMsg{Type: tea.KeyEsc})
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("quit and discard them? y/n")) }, teatest.WithDuration(5*time.Second))
	tm.Type("y")
	final := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
	if final.mode != quitting || len(srv.applied) != 0 || final.work.topology.Spec.Version != "v1.34.0" {
		t.Errorf("quitting %v, applied %d, draft version %s; want quit with the edit unapplied", final.mode == quitting, len(srv.applied), final.work.topology.Spec.Version)
	}
}

// TestEditModelKeepsItsStateInComponents: the editor's own state stays
// small; what belongs together (the draft's edits, the server's baseline,
// the overlay, the background checks) lives in one field each, and what the
// editor is doing is one mode, never a set of flags.
func TestEditModelKeepsItsStateInComponents(t *testing.T) {
	typ := reflect.TypeFor[Model]()
	if n := typ.NumField(); n > 15 {
		t.Errorf("Model has %d fields; keep it at 15 or fewer by giving related state a type of its own", n)
	}
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Type.Kind() == reflect.Bool && f.Name != "readOnly" && f.Name != "Applied" {
			t.Errorf("Model.%s is a flag; say it as a mode", f.Name)
		}
	}
}

// TestEditWhileApplyingChangesNothing: while an apply is under way, a key
// that would edit is refused with a message, so that no edit is lost to the
// draft's reset on success and no overlay ends the applying mode.
func TestEditWhileApplyingChangesNothing(t *testing.T) {
	srv := &fakeServer{}
	m := newModel(t, exampleInputs(t), srv)
	replace(m, "v1.34.0")
	press(m, tea.KeyMsg{Type: tea.KeyCtrlS})
	_, applyCmd := m.Update(typed("y"))
	if m.mode != applying {
		t.Fatalf("after y: mode %v, want applying", m.mode)
	}
	press(m, keyOf(tea.KeyBackspace), typed("9"), tea.KeyMsg{Type: tea.KeyCtrlS})
	if m.mode != applying || m.form.Fields[0].Value != "v1.34.0" || !strings.Contains(m.bar.Message, "applying...") {
		t.Errorf("keys while applying: mode %v, version %q, message %q; want the edit refused", m.mode, m.form.Fields[0].Value, m.bar.Message)
	}
	settle(m, applyCmd)
	if m.mode != editing || len(srv.applied) != 1 || srv.applied[0].Spec.Version != "v1.34.0" || !m.Applied {
		t.Errorf("after the apply: mode %v, applied %d, Applied %v", m.mode, len(srv.applied), m.Applied)
	}
}

// TestAChoiceFromAClosedPickerIsDropped: the picker and the prompt answer
// by message, so a second enter can deliver a choice after its picker has
// closed; it changes nothing, and the question it opened stays open.
func TestAChoiceFromAClosedPickerIsDropped(t *testing.T) {
	m := newModel(t, exampleInputs(t), &fakeServer{})
	m.SetSize(100, 40)
	press(m, tea.KeyMsg{Type: tea.KeyCtrlN})
	closed := m.overlay.picker
	press(m, keyOf(tea.KeyEnter)) // a class: the prompt for its name opens
	if m.mode != prompting {
		t.Fatalf("after picking a class the mode is %v, want the name's prompt", m.mode)
	}
	asking := m.overlay.prompt
	_, cmd := m.Update(picker.PickedMsg{From: closed, Index: 0})
	settle(m, cmd)
	if m.mode != prompting || m.overlay.prompt != asking {
		t.Errorf("a choice from the closed picker changed the question: mode %v", m.mode)
	}
	_, cmd = m.Update(prompt.CancelledMsg{From: &prompt.Model{}})
	settle(m, cmd)
	if m.mode != prompting {
		t.Errorf("another prompt's cancel closed this one: mode %v", m.mode)
	}
	press(m, keyOf(tea.KeyEnter))
	if !strings.Contains(m.bar.Message, "added MachineDeployment") {
		t.Errorf("the open prompt's answer was not taken: %q", m.bar.Message)
	}
}
