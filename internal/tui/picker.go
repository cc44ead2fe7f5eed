package tui

import (
	"fmt"

	"github.com/kubectl-topology/kubectl-topology/internal/tui/styles"
)

// picker is a list to choose one entry from: a worker class for a new pool,
// or the variable a part overrides.
type picker struct {
	title   string
	options []string
	index   int
	pick    func(i int)
}

func (p *picker) move(step int) {
	p.index = (p.index + step + len(p.options)) % len(p.options)
}

// lines renders the picker in at most rows lines, keeping the choice in view.
func (p *picker) lines(s styles.Styles, rows int) []string {
	out := []string{s.Section.Render(p.title) + s.Hint.Render(" (enter picks, esc cancels)")}
	rows = max(1, rows-1)
	start := 0
	if p.index >= rows {
		start = p.index - rows + 1
	}
	for i := start; i < len(p.options) && i < start+rows; i++ {
		if i == p.index {
			out = append(out, s.Selected.Render(fmt.Sprintf("> %s", p.options[i])))
			continue
		}
		out = append(out, "  "+p.options[i])
	}
	return out
}
