// Package rules decides what is allowed: validating and defaulting classes
// and topologies (variables included), whether one class may replace
// another, version changes and upgrade preflight, and warnings about an edit.
// The admission webhooks, the editor and the agent call the same rules.
package rules
