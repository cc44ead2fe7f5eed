package editor

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/kubectl-topology/kubectl-topology/internal/draft"
	"github.com/kubectl-topology/kubectl-topology/internal/extension"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/form"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// applyNow confirms an apply and returns what the server received.
func applyNow(t *testing.T, m *Model, srv *fakeServer) *v1alpha2.Topology {
	t.Helper()
	press(m, tea.KeyMsg{Type: tea.KeyCtrlS}, typed("y"))
	if len(srv.applied) == 0 {
		t.Fatalf("nothing applied; message %q\n%s", m.bar.Message, m.View())
	}
	return srv.applied[len(srv.applied)-1]
}

func variableJSON(t *testing.T, vars []v1alpha2.ClusterVariable, name string) string {
	t.Helper()
	for _, v := range vars {
		if v.Name == name {
			var x any
			if err := json.Unmarshal(v.Value.Raw, &x); err != nil {
				t.Fatal(err)
			}
			return draft.Canonical(x)
		}
	}
	return "(unset)"
}

func TestEditNestedObjectFields(t *testing.T) {
	srv := &fakeServer{}
	m := newModel(t, exampleInputs(t), srv)
	goTo(t, m, "auditPolicy")
	press(m, typed("x"))
	if m.bar.Message != "an object: edit its fields below" {
		t.Errorf("typing on an object header: message %q", m.bar.Message)
	}
	goTo(t, m, "level")
	if f := m.form.Fields[m.form.Cursor]; f.Depth != 1 || f.Kind != form.KindChoice || strings.Join(f.Options, ",") != ",None,Metadata,Request,RequestResponse" {
		t.Fatalf("level is not an enum picker under auditPolicy: %+v", f)
	}
	choose(t, m, "RequestResponse")
	goTo(t, m, "enabled")
	choose(t, m, "false")
	got := applyNow(t, m, srv)
	if v := variableJSON(t, got.Spec.Variables, "auditPolicy"); v != `{"enabled":false,"level":"RequestResponse"}` {
		t.Errorf("auditPolicy applied as %s", v)
	}
}

func TestEditListItems(t *testing.T) {
	srv := &fakeServer{}
	m := newModel(t, exampleInputs(t), srv)
	goTo(t, m, "[1]")
	press(m, tea.KeyMsg{Type: tea.KeyCtrlN})
	if f := m.form.Fields[m.form.Cursor]; f.Label != "[2]" || f.Value != "" || !f.Present {
		t.Fatalf("after ctrl+n in the list the cursor is on %+v", f)
	}
	press(m, typed("10.0.0.1"))
	goTo(t, m, "[0]")
	press(m, tea.KeyMsg{Type: tea.KeyCtrlX})
	if m.bar.Message != "removed [0] from apiServerCertSANs" {
		t.Errorf("message after removing an item: %q", m.bar.Message)
	}
	got := applyNow(t, m, srv)
	if v := variableJSON(t, got.Spec.Variables, "apiServerCertSANs"); v != `["127.0.0.1","10.0.0.1"]` {
		t.Errorf("apiServerCertSANs applied as %s", v)
	}
}

func TestEditMapEntries(t *testing.T) {
	srv := &fakeServer{}
	m := newModel(t, exampleInputs(t), srv)
	goTo(t, m, "workerLabels")
	if f := m.form.Fields[m.form.Cursor]; f.Kind != form.KindMap || f.Value != "1 entry" {
		t.Fatalf("workerLabels (additionalProperties: string) is %+v, want a map of rows", f)
	}
	press(m, tea.KeyMsg{Type: tea.KeyCtrlN})
	if m.mode != prompting {
		t.Fatal("ctrl+n on a map does not ask for a key")
	}
	press(m, typed("team"), keyOf(tea.KeyEnter))
	if m.mode != prompting || !strings.Contains(m.View(), `workerLabels has an entry "team" already`) {
		t.Fatalf("a taken key was accepted:\n%s", m.View())
	}
	for range len("team") {
		press(m, keyOf(tea.KeyBackspace))
	}
	press(m, typed("tier"), keyOf(tea.KeyEnter))
	if f := m.form.Fields[m.form.Cursor]; m.mode == prompting || f.Label != "tier" || f.Depth != 1 {
		t.Fatalf("after naming the entry the cursor is on %+v", f)
	}
	press(m, typed("gold"))
	goTo(t, m, "team")
	press(m, tea.KeyMsg{Type: tea.KeyCtrlX})
	got := applyNow(t, m, srv)
	if v := variableJSON(t, got.Spec.Variables, "workerLabels"); v != `{"tier":"gold"}` {
		t.Errorf("workerLabels applied as %s", v)
	}
}

func TestEditNamesANewPool(t *testing.T) {
	srv := &fakeServer{}
	m := newModel(t, exampleInputs(t), srv)
	press(m, tea.KeyMsg{Type: tea.KeyCtrlN})
	pickOption(t, m, "MachineDeployment of class gpu")
	for range len("md-0") {
		press(m, keyOf(tea.KeyBackspace))
	}
	for _, bad := range []struct{ name, want string }{
		{"md-a", "a pool named md-a exists already"},
		{"gpu pool!", "must be a valid label value"},
	} {
		press(m, typed(bad.name), keyOf(tea.KeyEnter))
		if m.mode != prompting || !strings.Contains(m.View(), bad.want) {
			t.Fatalf("%s: want the prompt to stay with %q:\n%s", bad.name, bad.want, m.View())
		}
		for range len(bad.name) {
			press(m, keyOf(tea.KeyBackspace))
		}
	}
	press(m, typed("inference"), keyOf(tea.KeyEnter))
	if f := m.form.Fields[m.form.Cursor]; f.Label != "inference (gpu) replicas" {
		t.Fatalf("the new pool's row is %q", f.Label)
	}
	got := applyNow(t, m, srv)
	mds := got.Spec.Workers.MachineDeployments
	if last := mds[len(mds)-1]; last.Name != "inference" || last.Class != "gpu" {
		t.Errorf("applied %s (%s), want inference (gpu)", last.Name, last.Class)
	}
}

func TestEditListLimitFromSchema(t *testing.T) {
	m := newModel(t, exampleInputs(t), &fakeServer{})
	goTo(t, m, "apiServerCertSANs")
	for range 7 {
		press(m, tea.KeyMsg{Type: tea.KeyCtrlN})
	}
	goTo(t, m, "apiServerCertSANs")
	errs := m.form.Errs[m.form.Cursor]
	if len(errs) != 1 || !strings.Contains(errs[0], "must have at most 8 items") || m.canApply() {
		t.Errorf("9 items of a maxItems 8 list: errors at the list %q, can apply %v", errs, m.canApply())
	}
}

func TestEditOverrideForAPool(t *testing.T) {
	srv := &fakeServer{}
	m := newModel(t, exampleInputs(t), srv)
	goTo(t, m, "md-a (general) replicas")
	press(m, tea.KeyMsg{Type: tea.KeyCtrlO})
	pickOption(t, m, "maxPods")
	f := m.form.Fields[m.form.Cursor]
	if f.Label != "override maxPods" || f.Value != "110" || f.Scope != (draft.Scope{Kind: draft.MachineDeployment, Name: "md-a"}) {
		t.Fatalf("the new override starts as %+v; want md-a's maxPods at the Topology's 110", f)
	}
	replace(m, "5")
	if errs := m.form.Errs[m.form.Cursor]; len(errs) != 1 || errs[0] != "should be greater than or equal to 10" || m.canApply() {
		t.Errorf("override of 5: errors at the field %q", errs)
	}
	replace(m, "40")
	got := applyNow(t, m, srv)
	md := got.Spec.Workers.MachineDeployments[0]
	if md.Variables == nil || variableJSON(t, md.Variables.Overrides, "maxPods") != "40" {
		t.Fatalf("md-a applied with %+v; want maxPods overridden to 40", md.Variables)
	}
	if variableJSON(t, got.Spec.Variables, "maxPods") != "110" {
		t.Error("overriding for md-a changed the Topology's maxPods")
	}
	goTo(t, m, "override maxPods")
	press(m, tea.KeyMsg{Type: tea.KeyCtrlX})
	got = applyNow(t, m, srv)
	if got.Spec.Workers.MachineDeployments[0].Variables != nil {
		t.Errorf("removing md-a's only override left %+v", got.Spec.Workers.MachineDeployments[0].Variables)
	}
}

func TestEditOverrideNeedsAPart(t *testing.T) {
	m := newModel(t, exampleInputs(t), &fakeServer{})
	goTo(t, m, "maxPods")
	press(m, tea.KeyMsg{Type: tea.KeyCtrlO})
	if m.mode == picking || !strings.Contains(m.bar.Message, "select the control plane or a pool") {
		t.Errorf("ctrl+o on a Topology variable: picker %v, message %q", m.mode == picking, m.bar.Message)
	}
}

func TestEditAddMachinePool(t *testing.T) {
	srv := &fakeServer{}
	m := newModel(t, exampleInputs(t), srv)
	m.SetSize(100, 50)
	press(m, tea.KeyMsg{Type: tea.KeyCtrlN})
	if v := m.View(); !strings.Contains(v, "Add a pool") || !strings.Contains(v, "MachinePool of class pool") {
		t.Fatalf("the pool picker is not shown:\n%s", v)
	}
	pickOption(t, m, "MachinePool of class pool")
	press(m, keyOf(tea.KeyEnter)) // the proposed name
	view := m.View()
	for _, want := range []string{"> mp-1 (pool) replicas", "created  MachinePool dev-mp-1-"} {
		if !strings.Contains(view, want) {
			t.Errorf("after adding a MachinePool the view lacks %q:\n%s", want, view)
		}
	}
	got := applyNow(t, m, srv)
	if mps := got.Spec.Workers.MachinePools; len(mps) != 2 || mps[1].Name != "mp-1" || mps[1].Class != "pool" {
		t.Errorf("applied MachinePools %+v", mps)
	}
}

func TestEditPickerCancel(t *testing.T) {
	m := newModel(t, exampleInputs(t), &fakeServer{})
	press(m, tea.KeyMsg{Type: tea.KeyCtrlN}, keyOf(tea.KeyEsc))
	if m.mode == picking || m.mode == quitting || len(m.work.changed) != 0 {
		t.Errorf("esc in the picker: picker open %v, quitting %v, changes %v", m.mode == picking, m.mode == quitting, m.work.changed)
	}
}

func TestEditUnsetReplicas(t *testing.T) {
	srv := &fakeServer{}
	m := newModel(t, exampleInputs(t), srv)
	goTo(t, m, "md-a (general) replicas")
	press(m, tea.KeyMsg{Type: tea.KeyCtrlU})
	if f := m.form.Fields[m.form.Cursor]; f.Present || !strings.Contains(m.View(), "(unset)") {
		t.Fatalf("ctrl+u left md-a's replicas at %q", f.Value)
	}
	if got := applyNow(t, m, srv); got.Spec.Workers.MachineDeployments[0].Replicas != nil {
		t.Errorf("applied replicas %d; want them unset", *got.Spec.Workers.MachineDeployments[0].Replicas)
	}
	goTo(t, m, "imageRepository")
	press(m, tea.KeyMsg{Type: tea.KeyCtrlU})
	if m.bar.Message != "imageRepository is required" {
		t.Errorf("unsetting a required variable: message %q", m.bar.Message)
	}
}

func TestEditUndoRestoresTheServerValue(t *testing.T) {
	m := newModel(t, exampleInputs(t), &fakeServer{})
	goTo(t, m, "[0]")
	replace(m, "example.com")
	press(m, tea.KeyMsg{Type: tea.KeyCtrlR})
	if f := m.form.Fields[m.form.Cursor]; f.Value != "localhost" || len(m.work.changed) != 0 {
		t.Errorf("ctrl+r: %q, changes %v", f.Value, m.work.changed)
	}
}

func TestEditNumberTyping(t *testing.T) {
	m := newModel(t, exampleInputs(t), &fakeServer{})
	goTo(t, m, "maxPods")
	replace(m, "3x")
	if errs := m.form.Errs[m.form.Cursor]; len(errs) != 1 || errs[0] != "must be a whole number" || m.canApply() {
		t.Errorf(`maxPods "3x": errors %q`, errs)
	}
	goTo(t, m, "md-a (general) replicas")
	replace(m, "-1")
	if errs := m.form.Errs[m.form.Cursor]; len(errs) != 1 || errs[0] != "must be a whole number, 0 or more" {
		t.Errorf(`replicas "-1": errors %q`, errs)
	}
}

func TestEditMachinesReplacedByAVariable(t *testing.T) {
	m := newModel(t, exampleInputs(t), &fakeServer{})
	m.SetSize(120, 50)
	goTo(t, m, "imageRepository")
	press(m, typed("registry.example.com"))
	view := m.View()
	if !strings.Contains(view, "Machines replaced") || !strings.Contains(view, "KubeadmControlPlane dev-xbp74: 3 machine(s) replaced (spec.kubeadmConfigSpec changes)") {
		t.Errorf("a kubeadm config change does not name the control plane Machines it replaces:\n%s", view)
	}
	goTo(t, m, "md-a (general) replicas")
	replace(m, "4")
	goTo(t, m, "imageRepository")
	press(m, tea.KeyMsg{Type: tea.KeyCtrlR})
	if strings.Contains(m.View(), "Machines replaced") {
		t.Errorf("a replicas change is shown as replacing Machines:\n%s", m.View())
	}
}

func TestEditConflictOnAVariableBothChanged(t *testing.T) {
	in := exampleInputs(t)
	latest := in.Topology.DeepCopy()
	latest.ResourceVersion = "11"
	for i := range latest.Spec.Variables {
		if latest.Spec.Variables[i].Name == "maxPods" {
			latest.Spec.Variables[i].Value.Raw = []byte("200")
		}
	}
	srv := &fakeServer{conflict: latest}
	m := newModel(t, in, srv)
	goTo(t, m, "maxPods")
	replace(m, "50")
	press(m, tea.KeyMsg{Type: tea.KeyCtrlS}, typed("y"))
	if !strings.Contains(m.bar.Message, `maxPods: 110 → 200`) || !strings.Contains(m.bar.Message, "both changed maxPods, and your values are kept") {
		t.Fatalf("conflict message %q", m.bar.Message)
	}
	got := applyNow(t, m, srv)
	if got.ResourceVersion != "11" || variableJSON(t, got.Spec.Variables, "maxPods") != "50" {
		t.Errorf("re-applied maxPods %s at resourceVersion %s; want 50 at 11", variableJSON(t, got.Spec.Variables, "maxPods"), got.ResourceVersion)
	}
}

// TestEditResizes checks that every size, down to a small terminal, draws no
// line wider than the terminal and no more lines than it has.
func TestEditResizes(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {60, 16}, {120, 40}, {40, 12}, {200, 60}} {
		m := newModel(t, exampleInputs(t), &fakeServer{})
		m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		goTo(t, m, "maxPods")
		replace(m, "5")
		for _, withHelp := range []bool{false, true} {
			if withHelp {
				press(m, tea.KeyMsg{Type: tea.KeyF1})
			}
			lines := strings.Split(m.View(), "\n")
			if len(lines) > size[1] {
				t.Errorf("%dx%d (full help %v): %d lines", size[0], size[1], withHelp, len(lines))
			}
			for _, l := range lines {
				if w := ansi.StringWidth(l); w > size[0] {
					t.Errorf("%dx%d: line %q is %d wide", size[0], size[1], l, w)
				}
			}
			if !strings.Contains(m.View(), "> maxPods") {
				t.Errorf("%dx%d: the selected field is scrolled out of view:\n%s", size[0], size[1], m.View())
			}
		}
	}
}

// TestEditFullHelpFitsAt80Columns checks that f1 shows every key at 80
// columns: help columns past the width are cut, keys and all.
func TestEditFullHelpFitsAt80Columns(t *testing.T) {
	m := newModel(t, exampleInputs(t), &fakeServer{})
	m.SetSize(80, 24)
	press(m, keyOf(tea.KeyF1))
	view := m.View()
	for _, k := range []string{"ctrl+s", "ctrl+r", "ctrl+u", "ctrl+d", "ctrl+n", "ctrl+x", "ctrl+o", "f1", "esc"} {
		if !strings.Contains(view, k) {
			t.Errorf("full help at 80 columns lacks %s:\n%s", k, view)
		}
	}
}

func TestEditMouse(t *testing.T) {
	m := newModel(t, exampleInputs(t), &fakeServer{})
	m.SetSize(100, 40)
	view := strings.Split(m.View(), "\n")
	row := -1
	for i, l := range view {
		if strings.Contains(l, "mp-0 (pool) replicas") {
			row = i
		}
	}
	m.Update(tea.MouseMsg{X: 4, Y: row, Action: tea.MouseActionPress, Button: tea.MouseButtonLeft})
	if m.form.Fields[m.form.Cursor].Label != "mp-0 (pool) replicas" {
		t.Errorf("a click on row %d selected %q", row, m.form.Fields[m.form.Cursor].Label)
	}
	m.Update(tea.MouseMsg{Action: tea.MouseActionPress, Button: tea.MouseButtonWheelUp})
	if m.form.Fields[m.form.Cursor].Label == "mp-0 (pool) replicas" {
		t.Error("the wheel does not move the selection")
	}
}

// extensionInputs is the example with an external patch in its class, run by
// a best-effort client against srv's handlers (srv may be stopped).
func extensionInputs(t *testing.T, srv *fixture.ExtensionServer) Inputs {
	t.Helper()
	in := exampleInputs(t)
	in.Class = in.Class.DeepCopy()
	gen := "generate.ext"
	in.Class.Spec.Patches = append(in.Class.Spec.Patches, v1alpha2.ClusterClassPatch{Name: "ext", External: &v1alpha2.ExternalPatchDefinition{GeneratePatchesExtension: &gen}})
	c := &extension.Client{Registry: extension.NewRegistry(), BestEffort: true}
	ext := &v1alpha2.TopologyExtension{}
	ext.Name, ext.Spec.ClientConfig = "ext", srv.ClientConfig()
	ext.Status.Handlers = []v1alpha2.ExtensionHandler{{Name: gen, RequestHook: v1alpha2.GroupVersionHook{APIVersion: extension.APIVersion, Hook: extension.HookGeneratePatches}}}
	if err := c.Registry.FromStatus(ext); err != nil {
		t.Fatal(err)
	}
	in.External = extension.NewPatcher(c, in.Class)
	return in
}

func TestEditRunsExternalPatches(t *testing.T) {
	srv := fixture.StartExtensionServer()
	defer srv.Close()
	m := newModel(t, extensionInputs(t, srv), &fakeServer{})
	m.SetSize(120, 50)
	goTo(t, m, "md-a (general) replicas")
	replace(m, "3")
	// The extension preloads an image on md-a's machines, which the live
	// objects (computed without it) lack: the preview rotates the template.
	if view := m.View(); !strings.Contains(view, "created  DockerMachineTemplate dev-md-a-") || strings.Contains(view, "⚠") {
		t.Errorf("the extension's change is not previewed:\n%s", view)
	}
}

func TestEditWithAnUnreachableExtension(t *testing.T) {
	srv := fixture.StartExtensionServer()
	in := extensionInputs(t, srv)
	srv.Close()
	m := newModel(t, in, &fakeServer{})
	m.SetSize(120, 50)
	goTo(t, m, "md-a (general) replicas")
	replace(m, "3")
	view := m.View()
	if !strings.Contains(view, "⚠ external patch handler generate.ext was not run from here, so the preview lacks") || !m.canApply() {
		t.Errorf("an extension this machine cannot reach should be named, and not stop the edit:\n%s", view)
	}
}

// TestEditStaysResponsiveWhileAnExtensionIsSlow: the checks and preview used
// to run in Update, so an extension taking seconds froze the editor. Now
// keys echo and the spinner turns while the extension holds the call.
func TestEditStaysResponsiveWhileAnExtensionIsSlow(t *testing.T) {
	srv := fixture.StartExtensionServer()
	defer srv.Close()
	defer srv.Release()
	// Held until released, so the call is still under way however slow this machine is.
	srv.Hang()
	m, err := New(context.Background(), extensionInputs(t, srv), (&fakeServer{}).apply, false)
	if err != nil {
		t.Fatal(err)
	}
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))
	tm.Send(keyOf(tea.KeyDown)) // control plane replicas, 3
	tm.Send(typed("4"))
	// The spinner starts before the request reaches the extension: wait
	// until the extension holds it, then judge the editor.
	fixture.EventuallyEvery(t, 10*time.Millisecond, 10*time.Second, "the extension holds a GeneratePatches call", func(context.Context) (bool, error) {
		return srv.InFlight() > 0, nil
	})
	// Only what the editor draws from now on counts.
	if _, err := io.ReadAll(tm.Output()); err != nil {
		t.Fatal(err)
	}
	tm.Send(typed("5"))
	frames := map[string]bool{}
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		for _, f := range spinner.MiniDot.Frames {
			if bytes.Contains(b, []byte(f+" checking…")) {
				frames[f] = true
			}
		}
		return bytes.Contains(b, []byte("345")) && len(frames) >= 2
	}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	if srv.InFlight() == 0 {
		t.Error("the extension's call ended before the editor was judged: the test proved nothing")
	}
	srv.Release()
	tm.Send(tea.KeyMsg{Type: tea.KeyCtrlC})
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
}

// TestEditShowsVariableMetadata: a schema's x-metadata is shown with the
// field's hint, sorted, so what a class tells tools about a variable reaches
// the person editing it.
func TestEditShowsVariableMetadata(t *testing.T) {
	m := newModel(t, exampleInputs(t), &fakeServer{})
	goTo(t, m, "imageRepository")
	want := "Registry kubeadm pulls control plane images from; empty keeps kubeadm's default. · ui.kubectl-topology.io/group=images"
	if hint := m.form.Fields[m.form.Cursor].Hint; !strings.HasSuffix(hint, want) {
		t.Errorf("imageRepository's hint is %q, want it to end %q", hint, want)
	}
}
