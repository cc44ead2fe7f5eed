// Package keymap is every key the terminal UI answers to, in one place.
package keymap

import "github.com/charmbracelet/bubbles/key"

// KeyMap is every key the editor answers to, in one place; the help line and
// full help are built from it.
type KeyMap struct {
	Up, Down, Left, Right, Select, Apply, Yes, No, Reset, Unset, Add, Remove, Override, Diff, PageUp, PageDown, Help, Quit, QuitNow key.Binding
}

// Default returns the editor's keys. Letters are left to typing.
func Default() KeyMap {
	return KeyMap{
		Up:       key.NewBinding(key.WithKeys("up", "shift+tab"), key.WithHelp("↑", "previous field")),
		Down:     key.NewBinding(key.WithKeys("down", "tab"), key.WithHelp("↓", "next field")),
		Left:     key.NewBinding(key.WithKeys("left"), key.WithHelp("←/→", "change choice")),
		Right:    key.NewBinding(key.WithKeys("right")),
		Select:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "pick")),
		Apply:    key.NewBinding(key.WithKeys("ctrl+s"), key.WithHelp("ctrl+s", "apply")),
		Yes:      key.NewBinding(key.WithKeys("y", "Y")),
		No:       key.NewBinding(key.WithKeys("n", "N", "esc")),
		Reset:    key.NewBinding(key.WithKeys("ctrl+r"), key.WithHelp("ctrl+r", "undo field")),
		Unset:    key.NewBinding(key.WithKeys("ctrl+u"), key.WithHelp("ctrl+u", "unset")),
		Add:      key.NewBinding(key.WithKeys("ctrl+n"), key.WithHelp("ctrl+n", "add pool/item")),
		Remove:   key.NewBinding(key.WithKeys("ctrl+x"), key.WithHelp("ctrl+x", "remove")),
		Override: key.NewBinding(key.WithKeys("ctrl+o"), key.WithHelp("ctrl+o", "override var")),
		Diff:     key.NewBinding(key.WithKeys("ctrl+d"), key.WithHelp("ctrl+d", "object diff")),
		PageUp:   key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "diff up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "diff down")),
		Help:     key.NewBinding(key.WithKeys("f1"), key.WithHelp("f1", "help")),
		// Esc asks first when edits are unsaved; ctrl+c is the way out that never asks.
		Quit:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "quit")),
		QuitNow: key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit now")),
	}
}

// ShortHelp is the help line.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Down, k.Left, k.Apply, k.Help, k.Quit}
}

// FullHelp is the full help.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down, k.Left, k.Select}, {k.Apply, k.Reset, k.Unset, k.Diff, k.PageDown}, {k.Add, k.Remove, k.Override, k.QuitNow}, {k.Help, k.Quit}}
}

// Watch is what the live status view answers to: q, esc or ctrl+c leave it.
type Watch struct {
	Quit key.Binding
}

// DefaultWatch returns the live status view's keys.
func DefaultWatch() Watch {
	return Watch{Quit: key.NewBinding(key.WithKeys("q", "esc", "ctrl+c"), key.WithHelp("q", "quit"))}
}

// ShortHelp is the help line.
func (k Watch) ShortHelp() []key.Binding { return []key.Binding{k.Quit} }

// FullHelp is the full help.
func (k Watch) FullHelp() [][]key.Binding { return [][]key.Binding{{k.Quit}} }
