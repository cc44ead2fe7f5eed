// Package tui is the root of kubectl-topology's terminal UI: the Topology
// editor (editor), the live status views (statusview, rolloutview) and the
// components they are composed of (form, preview, checks, picker, prompt,
// statusbar), which share one common.Common, one keymap and one set of
// styles. Every check and preview the editor shows comes from
// internal/engine, so it never accepts what the agent's webhook would reject.
// This package holds only the test that every component is one.
package tui
