package editor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kubectl-topology/kubectl-topology/internal/draft"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/variables"
	"github.com/kubectl-topology/kubectl-topology/internal/extension"
	"github.com/kubectl-topology/kubectl-topology/internal/loader"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/checks"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/form"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/picker"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/preview"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/prompt"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/statusbar"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Applier writes edited, an edit of orig, guarded by orig's resourceVersion,
// as draft.Write does: on a conflict it returns a *draft.ConflictError.
type Applier func(ctx context.Context, orig, edited *v1alpha2.Topology) (*v1alpha2.Topology, error)

// Inputs are what the editor works on, read once when it opens.
type Inputs struct {
	// Topology as read from the server.
	Topology *v1alpha2.Topology
	// Loaded is its class, templates, objects and rollout state, as the
	// agent reads them.
	*loader.Loaded
	// External runs the class's external patches, best effort; nil when it has none.
	External *extension.Patcher
	// Hooks name, per lifecycle hook, the handlers the agent calls for the
	// Topology, for the upgrade preview; nil when none is registered.
	Hooks map[string][]string
}

// Model is the Topology editor: a form on top, checks and the rollout
// preview below, recomputed with the engine on every keystroke. The user's
// Topology is a draft of the server's; the form is rebuilt from it.
type Model struct {
	in      Inputs
	catalog *variables.Catalog
	common  *common.Common
	form    *form.Model
	checks  *checks.Model
	preview *preview.Model
	bar     *statusbar.Model
	apply   Applier
	// readOnly opens the editor to look, not to change.
	readOnly bool
	// server is the Topology as stored, to tell what the draft changes.
	server baseline
	// work is the draft and the user's edits of it.
	work edits
	// mode is what keys do now, overlay what the overlay modes show.
	mode    mode
	overlay overlay
	// compute runs the checks and preview of the draft; see editcompute.go.
	compute computation
	// Applied is true once an apply succeeded.
	Applied bool
}

// baseline is what the server holds, as the form and the settings show it.
type baseline struct {
	fields   map[string]form.Field
	settings map[string]draft.Setting
}

// edits is the draft and what the user did to it.
type edits struct {
	topology *v1alpha2.Topology
	changed  []draft.Change
	// focus, when set, is the key of the field the next refresh selects:
	// what the user just added.
	focus string
	// buffers hold what is typed into fields and not yet parsed.
	buffers map[string]string
}

// overlay is the picker or prompt open over the preview (modes picking and
// prompting), with what its answer does.
type overlay struct {
	picker   *picker.Model
	onPick   func(i int)
	prompt   *prompt.Model
	onAnswer func(string)
}

// New opens the editor on in; apply writes the result.
func New(ctx context.Context, in Inputs, apply Applier, readOnly bool) (*Model, error) {
	cat, err := rules.CompileClass(ctx, in.Class)
	if err != nil {
		return nil, err
	}
	m := &Model{in: in, catalog: cat, common: common.New(), apply: apply, readOnly: readOnly,
		compute: computation{ctx: ctx, now: time.Now, debounce: defaultDebounce, spinner: spinner.New(spinner.WithSpinner(spinner.MiniDot))}}
	m.form = form.New(m.common)
	m.checks, m.preview, m.bar = checks.New(m.common), preview.New(m.common), statusbar.New(m.common)
	m.reset(in.Topology)
	m.refresh()
	return m, nil
}

// reset makes t the server's Topology and a fresh draft of it.
func (m *Model) reset(t *v1alpha2.Topology) {
	m.in.Topology = t
	m.work.topology = t.DeepCopy()
	m.work.buffers = map[string]string{}
	m.setOriginal()
}

func (m *Model) setOriginal() {
	m.server.settings = draft.Settings(m.in.Topology)
	m.server.fields = map[string]form.Field{}
	for _, f := range form.Build(m.in.Topology, m.in.Class) {
		m.server.fields[f.Key] = f
	}
}

// SetSize fits the editor and its components to the terminal.
func (m *Model) SetSize(w, h int) {
	m.common.SetSize(w, h)
	m.bar.SetSize(w, h)
	if m.overlay.prompt != nil {
		m.overlay.prompt.SetSize(w, h)
	}
}

// mode is what the editor's keys do now: one at a time, never a mix of flags.
type mode int

const (
	// editing: keys move through and change the form.
	editing mode = iota
	// picking: a picker is open over the preview.
	picking
	// prompting: a prompt is open over the preview.
	prompting
	// confirming: apply waits for y or n.
	confirming
	// confirmingUnchecked: apply was asked for while the draft's checks ran;
	// y or n answers already, and the question stands once they are in.
	confirmingUnchecked
	// applyWhenChecked: y came before the checks were in; the draft is
	// applied once they pass.
	applyWhenChecked
	// quitAsking: quitting waits for y or n before unsaved edits are thrown away.
	quitAsking
	// applying: the draft is being written; keys move and show, but do not
	// edit, apply again or ask before quitting.
	applying
	// quitting: the editor is closing and shows nothing more.
	quitting
)

// openPicker shows p over the preview; onPick takes the entry picked.
func (m *Model) openPicker(p *picker.Model, onPick func(i int)) {
	m.mode, m.overlay.picker, m.overlay.onPick = picking, p, onPick
}

// openPrompt shows p over the preview; onAnswer takes the checked text.
func (m *Model) openPrompt(p *prompt.Model, onAnswer func(string)) {
	p.SetSize(m.common.Width, m.common.Height)
	m.mode, m.overlay.prompt, m.overlay.onAnswer = prompting, p, onAnswer
}

// closeOverlay goes back to editing.
// fromOpen tells whether an overlay's message (from picker p or prompt q)
// comes from the one open now: a second key can send one after it closed.
func (m *Model) fromOpen(p *picker.Model, q *prompt.Model) bool {
	return (p != nil && m.mode == picking && p == m.overlay.picker) || (q != nil && m.mode == prompting && q == m.overlay.prompt)
}

func (m *Model) closeOverlay() {
	m.mode, m.overlay.picker, m.overlay.onPick, m.overlay.prompt, m.overlay.onAnswer = editing, nil, nil, nil, nil
}

// refresh rebuilds the form from the draft, keeping what is typed and where
// the cursor is, and recomputes every check and the preview.
func (m *Model) refresh() {
	selected := m.work.focus
	if selected == "" && len(m.form.Fields) > 0 {
		selected = m.form.Fields[m.form.Cursor].Key
	}
	m.work.focus = ""
	m.form.Fields = form.Build(m.work.topology, m.in.Class)
	for i := range m.form.Fields {
		f := &m.form.Fields[i]
		if o, ok := m.server.fields[f.Key]; ok {
			f.Original, f.OriginalPresent = o.Value, o.Present
		}
		if buf, ok := m.work.buffers[f.Key]; ok {
			f.Value, f.Present = buf, buf != ""
		}
		if f.Key == selected {
			m.form.Cursor = i
		}
	}
	m.form.Cursor = min(m.form.Cursor, len(m.form.Fields)-1)
	m.recompute()
}

// forget drops what was typed into a field and everything under it.
func (m *Model) forget(key string) {
	for k := range m.work.buffers {
		if k == key || strings.HasPrefix(k, key+".") || strings.HasPrefix(k, key+"[") {
			delete(m.work.buffers, k)
		}
	}
}

// write puts a field's value into the draft.
func (m *Model) write(f *form.Field, value any, present bool) error {
	switch f.Role {
	case form.RoleVersion:
		s, _ := value.(string)
		m.work.topology.Spec.Version = s
	case form.RoleReplicas:
		p := draft.Replicas(m.work.topology, f.Scope)
		if p == nil {
			return fmt.Errorf("%s does not exist", f.Scope.Label())
		}
		*p = nil
		if present {
			n, err := value.(json.Number).Int64() // parse checked it fits
			if err != nil {
				return err
			}
			v := int32(n)
			*p = &v
		}
	case form.RolePin:
		p := draft.Pin(m.work.topology, f.Scope)
		if p == nil {
			return fmt.Errorf("%s does not exist", f.Scope.Label())
		}
		*p, _ = value.(string)
	case form.RoleVariable:
		return draft.SetVariable(m.work.topology, f.Scope, f.Variable, f.Sub, value, present)
	}
	return nil
}

// typeInto sets the selected field to text as typed. Typing changes no
// other row, so the form is not rebuilt: this is the editor's hot path.
func (m *Model) typeInto(text string) {
	f := &m.form.Fields[m.form.Cursor]
	switch f.Kind {
	case form.KindText:
		_ = m.write(f, text, true)
		// An empty pin is no pin: the pool follows the Topology's version.
		f.Present = f.Role != form.RolePin || text != ""
	case form.KindNumber, form.KindJSON:
		m.work.buffers[f.Key] = text
		f.Present = text != ""
		if v, ok, err := f.Parse(text); err == nil {
			if err := m.write(f, v, ok); err != nil {
				m.bar.Message = err.Error()
			}
		}
	}
	f.Value = text
	m.recompute()
}

// recompute takes the draft as it is now: what needs no engine (values that
// do not parse, the settings changed) at once, and the engine's checks and
// preview in the background (see editcompute.go), so that typing never waits
// for them.
func (m *Model) recompute() {
	m.compute.gen++
	m.form.Errs = map[int][]string{}
	m.work.changed = draft.Diff(m.server.settings, draft.Settings(m.work.topology))
	for i, f := range m.form.Fields {
		if buf, ok := m.work.buffers[f.Key]; ok {
			if _, _, err := f.Parse(buf); err != nil {
				m.form.Errs[i] = append(m.form.Errs[i], err.Error())
			}
		}
	}
	if len(m.form.Errs) == 0 {
		if _, err := upgrade.ParseVersion(m.work.topology.Spec.Version); err != nil {
			m.form.Errs[0] = append(m.form.Errs[0], "must be a Kubernetes version such as v1.34.0")
		}
	}
	if len(m.form.Errs) > 0 {
		// Nothing for the engine to look at: the preview is of nothing. With
		// the form in error no apply can start, so show returns no command.
		_ = m.show(m.compute.gen, findings{})
		return
	}
	m.compute.dirty = true
}

// attach puts an engine error on the field whose path it names most closely.
func (m *Model) attach(path, msg string) {
	best, bestLen := -1, 0
	for i, f := range m.form.Fields {
		if !strings.HasPrefix(path, f.Path) || len(f.Path) <= bestLen {
			continue
		}
		if rest := path[len(f.Path):]; rest != "" && rest[0] != '.' && rest[0] != '[' {
			continue // spec.variables[a] is not a prefix of spec.variables[ab]
		}
		best, bestLen = i, len(f.Path)
	}
	if best < 0 {
		m.checks.Problems = append(m.checks.Problems, path+": "+msg)
		return
	}
	m.form.Errs[best] = append(m.form.Errs[best], msg)
}

// canApply reports whether apply is allowed: something changed, the checks
// are of the draft as it is, and nothing is red.
func (m *Model) canApply() bool {
	return !m.readOnly && !m.busy() && len(m.work.changed) > 0 && len(m.form.Errs) == 0 && len(m.checks.Problems) == 0
}

// Init implements tea.Model: the first checks and preview.
func (m *Model) Init() tea.Cmd { return m.startPending() }

type appliedMsg struct {
	latest *v1alpha2.Topology
	err    error
}

// Update implements tea.Model. Whatever a message changes in the draft
// schedules the checks and preview of the new draft.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case computeDue:
		cmd = m.onComputeDue(msg)
	case computed:
		cmd = m.onComputed(msg)
	case spinner.TickMsg:
		cmd = m.onSpinnerTick(msg)
	default:
		_, cmd = m.update(msg)
	}
	return m, tea.Batch(cmd, m.startPending())
}

func (m *Model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.SetSize(msg.Width, msg.Height)
		return m, nil
	case appliedMsg:
		if m.mode == applying {
			m.mode = editing
		}
		var conflict *draft.ConflictError
		switch {
		case errors.As(msg.err, &conflict):
			m.rebase(conflict)
		case msg.err != nil:
			m.bar.Message = "apply failed: " + msg.err.Error()
		default:
			m.Applied = true
			m.bar.Message = fmt.Sprintf("Applied to %s/%s. Follow it with: kubectl topology status %s --watch", m.in.Topology.Namespace, m.in.Topology.Name, m.in.Topology.Name)
			m.reset(msg.latest)
			m.refresh()
		}
		return m, nil
	case picker.PickedMsg:
		m.onPicked(msg)
		return m, nil
	case picker.CancelledMsg:
		if m.fromOpen(msg.From, nil) {
			m.closeOverlay()
			m.bar.Message = ""
		}
		return m, nil
	case prompt.AnsweredMsg:
		m.onAnswered(msg)
		return m, nil
	case prompt.CancelledMsg:
		if m.fromOpen(nil, msg.From) {
			m.closeOverlay()
			m.refresh()
		}
		return m, nil
	case tea.MouseMsg:
		m.onMouse(msg)
		return m, nil
	case tea.KeyMsg:
		return m.onKey(msg)
	}
	return m, nil
}

// onMouse selects the row clicked and scrolls with the wheel.
func (m *Model) onMouse(msg tea.MouseMsg) {
	if msg.Action != tea.MouseActionPress || (m.mode != editing && m.mode != applying) {
		return
	}
	switch msg.Button {
	case tea.MouseButtonWheelUp, tea.MouseButtonWheelDown:
		m.form.Update(msg)
	case tea.MouseButtonLeft:
		if _, rows := m.render(); msg.Y >= 0 && msg.Y < len(rows) && rows[msg.Y] >= 0 {
			m.form.Cursor = rows[msg.Y]
		}
	}
}

func (m *Model) onKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	if key.Matches(msg, m.common.Keys.QuitNow) {
		m.mode = quitting
		return m, tea.Quit
	}
	switch m.mode {
	case quitAsking:
		return m.onQuitKey(msg)
	case confirming, confirmingUnchecked, applyWhenChecked:
		return m.onConfirmKey(msg)
	case prompting:
		_, cmd := m.overlay.prompt.Update(msg)
		return m, cmd
	case picking:
		_, cmd := m.overlay.picker.Update(msg)
		return m, cmd
	}
	switch {
	case key.Matches(msg, m.common.Keys.Quit) && len(m.work.changed) > 0 && !m.readOnly && m.mode != applying:
		m.mode = quitAsking
		m.bar.Message = fmt.Sprintf("%d unsaved change(s): quit and discard them? y/n", len(m.work.changed))
	case key.Matches(msg, m.common.Keys.Quit):
		m.mode = quitting
		return m, tea.Quit
	case key.Matches(msg, m.common.Keys.Help):
		m.bar.Update(msg)
	case key.Matches(msg, m.common.Keys.Up), key.Matches(msg, m.common.Keys.Down), key.Matches(msg, m.common.Keys.Select):
		m.form.Update(msg)
	case key.Matches(msg, m.common.Keys.Diff), key.Matches(msg, m.common.Keys.PageUp), key.Matches(msg, m.common.Keys.PageDown):
		m.preview.Update(msg)
	case key.Matches(msg, m.common.Keys.Apply):
		m.onApply()
	case m.mode == applying:
		// A success resets the draft to what the server then holds, so an
		// edit made now would be lost; and an overlay would end the mode.
		m.bar.Message = "applying...: edit again once it is done"
	case m.readOnly:
		m.bar.Message = "read-only: nothing can be changed"
	default:
		m.onEditKey(msg)
	}
	return m, nil
}

func (m *Model) onApply() {
	switch {
	case m.readOnly:
		m.bar.Message = "read-only: nothing can be applied"
	case m.mode == applying:
		m.bar.Message = "applying..."
	case m.busy() && len(m.work.changed) > 0:
		// Asked for as soon as the checks of the draft as it is are in. The
		// question opens now, so a y typed at once answers it instead of
		// going into the field.
		m.mode = confirmingUnchecked
		m.bar.Message = "checking the change before applying it…"
	case m.canApply():
		m.mode = confirming
		m.bar.Message = ""
	case len(m.work.changed) == 0:
		m.bar.Message = "nothing changed"
	default:
		m.bar.Message = "fix what is red first"
	}
}

// onQuitKey answers the question before unsaved edits are discarded: y (or
// quitting again) quits, n goes back to the edits.
func (m *Model) onQuitKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch {
	case key.Matches(msg, m.common.Keys.Yes), key.Matches(msg, m.common.Keys.Quit):
		m.mode = quitting
		return m, tea.Quit
	case key.Matches(msg, m.common.Keys.No):
		m.mode = editing
		m.bar.Message = "not quit: your edits are still here"
	}
	return m, nil
}

func (m *Model) onConfirmKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch {
	case key.Matches(msg, m.common.Keys.Yes) && m.mode == confirmingUnchecked:
		m.mode = applyWhenChecked
		m.bar.Message = "applying once the checks are in…"
	case key.Matches(msg, m.common.Keys.Yes) && m.mode == confirming:
		return m, m.startApply()
	case key.Matches(msg, m.common.Keys.No):
		m.mode = editing
		m.bar.Message = "not applied"
	}
	return m, nil
}

// startApply applies the draft in the background.
func (m *Model) startApply() tea.Cmd {
	m.mode = applying
	m.bar.Message = "applying..."
	orig, edited := m.in.Topology.DeepCopy(), m.work.topology.DeepCopy()
	apply := m.apply
	return func() tea.Msg {
		latest, err := apply(context.Background(), orig, edited)
		return appliedMsg{latest: latest, err: err}
	}
}

// onPicked takes a choice from the picker open now; one from a picker
// already closed (a second enter) is dropped.
func (m *Model) onPicked(msg picker.PickedMsg) {
	if !m.fromOpen(msg.From, nil) {
		return
	}
	onPick := m.overlay.onPick
	m.closeOverlay()
	onPick(msg.Index) // may open the next question: a picked class asks for a name
	m.refresh()
}

// onAnswered takes the answer of the prompt open now.
func (m *Model) onAnswered(msg prompt.AnsweredMsg) {
	if !m.fromOpen(nil, msg.From) {
		return
	}
	onAnswer := m.overlay.onAnswer
	m.closeOverlay()
	onAnswer(msg.Value)
	m.refresh()
}

// onEditKey handles the keys that change the draft.
func (m *Model) onEditKey(msg tea.KeyMsg) {
	f := &m.form.Fields[m.form.Cursor]
	switch {
	case key.Matches(msg, m.common.Keys.Add):
		m.add()
	case key.Matches(msg, m.common.Keys.Remove):
		m.remove(f)
	case key.Matches(msg, m.common.Keys.Override):
		m.override(f)
	case key.Matches(msg, m.common.Keys.Reset):
		m.undo(f)
	case key.Matches(msg, m.common.Keys.Unset):
		m.unset(f)
	case key.Matches(msg, m.common.Keys.Left), key.Matches(msg, m.common.Keys.Right):
		if f.Kind == form.KindChoice {
			step := 1
			if key.Matches(msg, m.common.Keys.Left) {
				step = -1
			}
			m.choose(f, step)
		}
	case msg.Type == tea.KeyBackspace:
		if f.Editable() && f.Value != "" {
			r := []rune(f.Value)
			m.typeInto(string(r[:len(r)-1]))
		}
	case msg.Type == tea.KeyRunes || msg.Type == tea.KeySpace:
		switch {
		case f.Editable():
			text := string(msg.Runes)
			if msg.Type == tea.KeySpace {
				text = " "
			}
			m.typeInto(f.Value + text)
		case f.Kind == form.KindChoice && msg.Type == tea.KeySpace:
			m.choose(f, 1)
		case f.Kind == form.KindObject:
			m.bar.Message = "an object: edit its fields below"
		case f.Kind == form.KindList:
			m.bar.Message = "a list: ctrl+n adds an item"
		case f.Kind == form.KindMap:
			m.bar.Message = "a map: ctrl+n adds an entry"
		}
	}
}

// choose moves a choice field step options on.
func (m *Model) choose(f *form.Field, step int) {
	i := indexOf(f.Options, f.Value)
	if !f.Present && len(f.Options) > 0 && f.Options[0] == "" {
		i = 0
	}
	i = (i + step + len(f.Options)) % len(f.Options)
	if f.Raws[i] == nil {
		_ = m.write(f, nil, false)
	} else {
		v, _ := draft.DecodeJSON(f.Raws[i])
		_ = m.write(f, v, true)
	}
	m.refresh()
}

func indexOf(options []string, v string) int {
	for i, o := range options {
		if o == v {
			return i
		}
	}
	return -1
}
