// Package tui holds kubectl-topology's terminal UI: the Topology editor and
// the live status view, composed of components (form, preview, checks,
// picker, prompt, status bar) that share one common.Common. Every check and
// preview it shows comes from internal/engine, so it never accepts what the
// agent's webhook would reject.
package tui
