package editor

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/kubectl-topology/kubectl-topology/internal/tui/form"
)

// flowStep is one thing a user does in a teatest flow, and what the screen
// shows once it is done.
type flowStep struct {
	keys  []tea.Msg
	until string
}

// downTo is the keys that move the cursor from the first field to label.
func downTo(t *testing.T, in Inputs, label string) []tea.Msg {
	t.Helper()
	m := newModel(t, in, &fakeServer{})
	for i, f := range m.form.Fields {
		if f.Label == label {
			keys := make([]tea.Msg, i)
			for j := range keys {
				keys[j] = keyOf(tea.KeyDown)
			}
			return keys
		}
	}
	t.Fatalf("no field %q", label)
	return nil
}

func typeKeys(s string) []tea.Msg {
	var out []tea.Msg
	for _, r := range s {
		out = append(out, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	return out
}

func backspaces(n int) []tea.Msg {
	out := make([]tea.Msg, n)
	for i := range out {
		out[i] = keyOf(tea.KeyBackspace)
	}
	return out
}

func concat(parts ...[]tea.Msg) []tea.Msg {
	var out []tea.Msg
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// runFlow drives the editor as a program at 80x24, step by step, then
// quits and compares the last screen with testdata/<test name>.golden. The
// editor reads no clock, so nothing in a screen depends on time.
func runFlow(t *testing.T, in Inputs, srv *fakeServer, steps []flowStep) *Model {
	t.Helper()
	m := newModel(t, in, srv)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24))
	for _, s := range steps {
		for _, k := range s.keys {
			tm.Send(k)
		}
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(s.until)) },
			teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	}
	tm.Send(tea.KeyMsg{Type: tea.KeyCtrlC})
	final := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
	final.mode = editing // the last screen before quitting
	if final.busy() {
		// The program quit before the checks of the last draft were in:
		// the screen compared is the one with them.
		settle(final, final.start())
	}
	goldenView(t, final.View())
	return final
}

func TestEditFlowUpgrade(t *testing.T) {
	srv := &fakeServer{}
	final := runFlow(t, exampleInputs(t), srv, []flowStep{
		{keys: concat(backspaces(len("v1.33.1")), typeKeys("v1.34.0")), until: "4. MachinePool mp-0"},
		{keys: []tea.Msg{tea.KeyMsg{Type: tea.KeyCtrlS}}, until: "? y/n"},
		{keys: typeKeys("y"), until: "Applied to default/dev"},
	})
	if len(srv.applied) != 1 || srv.applied[0].Spec.Version != "v1.34.0" || !final.Applied {
		t.Errorf("applied %d time(s); want v1.34.0 once", len(srv.applied))
	}
}

func TestEditFlowInvalidVariable(t *testing.T) {
	in := exampleInputs(t)
	srv := &fakeServer{}
	final := runFlow(t, in, srv, []flowStep{
		{keys: concat(downTo(t, in, "maxPods"), backspaces(3), typeKeys("5")), until: "greater than or equal to 10"},
		{keys: []tea.Msg{tea.KeyMsg{Type: tea.KeyCtrlS}}, until: "fix what is red first"},
	})
	if len(srv.applied) != 0 || final.canApply() {
		t.Errorf("an invalid variable was applied or can be")
	}
}

func TestEditFlowDowngrade(t *testing.T) {
	srv := &fakeServer{}
	final := runFlow(t, exampleInputs(t), srv, []flowStep{
		{keys: concat(backspaces(4), typeKeys("32.0")), until: "downgrading from v1.33.1 to v1.32.0 is not supported"},
		{keys: []tea.Msg{tea.KeyMsg{Type: tea.KeyCtrlS}}, until: "fix what is red first"},
	})
	if len(srv.applied) != 0 || final.canApply() {
		t.Errorf("a downgrade was applied or can be")
	}
}

func TestEditFlowConflict(t *testing.T) {
	in := exampleInputs(t)
	srv := serverChangedMeanwhile(in)
	final := runFlow(t, in, srv, []flowStep{
		{keys: concat(downTo(t, in, "md-a (general) replicas"), backspaces(1), typeKeys("4")), until: "1 setting(s) changed"},
		{keys: []tea.Msg{tea.KeyMsg{Type: tea.KeyCtrlS}, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("y")}}, until: "changed on the server"},
	})
	if len(srv.applied) != 0 {
		t.Fatal("the conflicting apply was recorded")
	}
	if f := final.form.Fields[2]; f.Label != "md-a (general) replicas" || f.Value != "4" || final.form.Fields[1].Value != "5" {
		t.Errorf("after the conflict: %s %q, control plane replicas %q; want the edit kept on the server's 5", f.Label, f.Value, final.form.Fields[1].Value)
	}
}

// A pinned pool shows its pin under its replicas, and a pin moved above the
// control plane is refused live, by the engine's rule, before any apply.
func TestEditFlowPinAboveTheControlPlane(t *testing.T) {
	in := exampleInputs(t)
	in.Topology.Spec.Workers.MachineDeployments[0].Version = "v1.33.1"
	srv := &fakeServer{}
	m := newModel(t, in, srv)
	at := slices.IndexFunc(m.form.Fields, func(f form.Field) bool { return f.Role == form.RolePin && f.Scope.Name == "md-a" })
	if at < 0 || m.form.Fields[at].Value != "v1.33.1" || !m.form.Fields[at].Present || m.form.Fields[at-1].Label != "md-a (general) replicas" {
		t.Fatalf("md-a's pin is not the row under its replicas, at v1.33.1: %+v", m.form.Fields)
	}
	if !strings.Contains(m.View(), "pinned version         v1.33.1") {
		t.Errorf("the editor does not show md-a's pin:\n%s", m.View())
	}
	down := make([]tea.Msg, at)
	for i := range down {
		down[i] = keyOf(tea.KeyDown)
	}
	final := runFlow(t, in, srv, []flowStep{
		{keys: concat(down, backspaces(4), typeKeys("34.0")), until: "md-a is pinned to v1.34.0, newer than"},
		{keys: []tea.Msg{tea.KeyMsg{Type: tea.KeyCtrlS}}, until: "fix what is red first"},
	})
	if len(srv.applied) != 0 || final.canApply() {
		t.Errorf("a pin above the control plane was applied or can be")
	}
	if got := final.work.topology.Spec.Workers.MachineDeployments[0].Version; got != "v1.34.0" {
		t.Errorf("the draft's md-a pin is %q, want v1.34.0 as typed", got)
	}
}
