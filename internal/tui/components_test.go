package tui

import (
	"github.com/kubectl-topology/kubectl-topology/internal/tui/checks"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/common"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/form"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/picker"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/preview"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/prompt"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/rolloutview"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/statusbar"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/statusview"
)

// Every part of the screen is a component: a bubbletea model with keys and
// a size, over one Common.
var (
	_ common.Component = (*form.Model)(nil)
	_ common.Component = (*checks.Model)(nil)
	_ common.Component = (*preview.Model)(nil)
	_ common.Component = (*picker.Model)(nil)
	_ common.Component = (*prompt.Model)(nil)
	_ common.Component = (*statusbar.Model)(nil)
	_ common.Component = (*statusview.Model)(nil)
	_ common.Component = (*rolloutview.Model)(nil)
)
