// Package common is what every component of the terminal UI shares: the
// terminal's size, the styles and the keys, as soft-serve's ui/common is.
package common

import (
	"github.com/charmbracelet/bubbles/help"

	"github.com/kubectl-topology/kubectl-topology/internal/tui/keymap"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/styles"
)

// Common is embedded by every component: one value, shared, so a resize or
// a style is seen by all at once.
type Common struct {
	Width, Height int
	Styles        styles.Styles
	Keys          keymap.KeyMap
}

// New returns the shared state of an 80x24 terminal with the default styles and keys.
func New() *Common {
	return &Common{Width: 80, Height: 24, Styles: styles.Default(), Keys: keymap.Default()}
}

// SetSize records the terminal's size.
func (c *Common) SetSize(width, height int) { c.Width, c.Height = width, height }

// Component is one part of the screen: a model with its keys and size.
type Component interface {
	help.KeyMap
	SetSize(width, height int)
}
