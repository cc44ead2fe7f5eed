// Package common is what every component of the terminal UI shares: the
// terminal's size, the styles and the keys, as soft-serve's ui/common is.
package common

import (
	"fmt"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"

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

// Component is one part of the screen: a bubbletea model with its keys
// and a size that decides what it draws.
type Component interface {
	tea.Model
	help.KeyMap
	SetSize(width, height int)
}

// Cut fits lines into rows: when there are more, the last row says how
// many are not shown.
func (c *Common) Cut(lines []string, rows int) []string {
	if rows <= 0 {
		return nil
	}
	if len(lines) <= rows {
		return lines
	}
	out := append([]string{}, lines[:rows-1]...)
	return append(out, c.Styles.Hint.Render(fmt.Sprintf("… %d more", len(lines)-rows+1)))
}
