package tui

import (
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kubectl-topology/kubectl-topology/internal/tui/keymap"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/styles"
)

// prompt asks for one line of text: the name of a new pool, or the key of a
// new map entry. It checks the text before taking it.
type prompt struct {
	title string
	input textinput.Model
	err   string
	// check says what is wrong with the text, or nil.
	check func(string) error
	// done takes the checked text.
	done func(string)
}

func newPrompt(title, value string, check func(string) error, done func(string)) *prompt {
	in := textinput.New()
	in.Prompt = "> "
	in.SetValue(value)
	in.CursorEnd()
	in.Focus()
	return &prompt{title: title, input: in, check: check, done: done}
}

// update handles a key; finished is true once the prompt is answered or
// cancelled.
func (p *prompt) update(keys keymap.KeyMap, msg tea.KeyMsg) (finished bool) {
	switch {
	case key.Matches(msg, keys.Select):
		if err := p.check(p.input.Value()); err != nil {
			p.err = err.Error()
			return false
		}
		p.done(p.input.Value())
		return true
	case msg.Type == tea.KeyEsc || msg.Type == tea.KeyCtrlC:
		return true
	}
	p.input, _ = p.input.Update(msg)
	p.err = ""
	return false
}

// lines renders the prompt: title, input and the reason the text was refused.
func (p *prompt) lines(s styles.Styles) []string {
	out := []string{s.Section.Render(p.title) + s.Hint.Render(" (enter takes it, esc cancels)"), p.input.View()}
	if p.err != "" {
		out = append(out, s.Error.Render("✗ "+p.err))
	}
	return out
}
