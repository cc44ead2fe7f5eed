// Package editor is `kubectl topology edit`: a bubbletea model that composes
// the form, checks, preview, picker, prompt and status bar components over
// one common.Common, in one explicit mode at a time. The engine computes
// each draft off the UI goroutine; apply goes through draft's guarded write.
package editor
