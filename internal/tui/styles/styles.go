// Package styles is every style the terminal UI draws with, in one place.
package styles

import "github.com/charmbracelet/lipgloss"

// Styles are every style the TUI uses, in one place. lipgloss drops colour
// by itself when NO_COLOR is set or the output is not a colour terminal.
type Styles struct {
	Title, Section, Label, Selected, Value, Changed, Hint, Error, OK, Warn, Help lipgloss.Style
}

// Default returns the TUI's styles.
func Default() Styles {
	return Styles{
		Title:    lipgloss.NewStyle().Bold(true),
		Section:  lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("12")),
		Label:    lipgloss.NewStyle(),
		Selected: lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("14")),
		Value:    lipgloss.NewStyle(),
		Changed:  lipgloss.NewStyle().Foreground(lipgloss.Color("11")),
		Hint:     lipgloss.NewStyle().Faint(true),
		Error:    lipgloss.NewStyle().Foreground(lipgloss.Color("9")),
		OK:       lipgloss.NewStyle().Foreground(lipgloss.Color("10")),
		Warn:     lipgloss.NewStyle().Foreground(lipgloss.Color("11")),
		Help:     lipgloss.NewStyle().Faint(true),
	}
}
