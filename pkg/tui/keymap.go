package tui

import "github.com/charmbracelet/bubbles/key"

// KeyMap is every key the editor answers to, in one place; the help line and
// full help are built from it.
type KeyMap struct {
	Up, Down, Left, Right, Apply, Yes, No, Reset, AddPool, RemovePool, Diff, Help, Quit key.Binding
}

// DefaultKeyMap returns the editor's keys. Letters are left to typing.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:         key.NewBinding(key.WithKeys("up", "shift+tab"), key.WithHelp("↑", "previous field")),
		Down:       key.NewBinding(key.WithKeys("down", "tab"), key.WithHelp("↓", "next field")),
		Left:       key.NewBinding(key.WithKeys("left"), key.WithHelp("←/→", "change choice")),
		Right:      key.NewBinding(key.WithKeys("right")),
		Apply:      key.NewBinding(key.WithKeys("ctrl+s"), key.WithHelp("ctrl+s", "apply")),
		Yes:        key.NewBinding(key.WithKeys("y", "Y")),
		No:         key.NewBinding(key.WithKeys("n", "N", "esc")),
		Reset:      key.NewBinding(key.WithKeys("ctrl+r"), key.WithHelp("ctrl+r", "undo field")),
		AddPool:    key.NewBinding(key.WithKeys("ctrl+n"), key.WithHelp("ctrl+n", "add MachineDeployment")),
		RemovePool: key.NewBinding(key.WithKeys("ctrl+x"), key.WithHelp("ctrl+x", "remove MachineDeployment")),
		Diff:       key.NewBinding(key.WithKeys("ctrl+d"), key.WithHelp("ctrl+d", "next object's diff")),
		Help:       key.NewBinding(key.WithKeys("f1"), key.WithHelp("f1", "help")),
		Quit:       key.NewBinding(key.WithKeys("esc", "ctrl+c"), key.WithHelp("esc", "quit")),
	}
}

// ShortHelp is the help line.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Down, k.Left, k.Apply, k.Help, k.Quit}
}

// FullHelp is the full help.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down, k.Left}, {k.Apply, k.Reset, k.Diff}, {k.AddPool, k.RemovePool}, {k.Help, k.Quit}}
}
