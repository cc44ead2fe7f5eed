package main

import (
	"runtime/debug"
	"testing"
)

// TestSetGCPercent: without GOGC the agent collects at gcPercent; a GOGC
// the user set is left in force.
func TestSetGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	unset := func(string) (string, bool) { return "", false }
	if got := setGCPercent(unset); got != gcPercent {
		t.Errorf("without GOGC: %d, want %d", got, gcPercent)
	}
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("without GOGC the runtime's target is %d, want %d", got, gcPercent)
	}
	// The runtime read GOGC=200 at start; setGCPercent must not change it.
	debug.SetGCPercent(200)
	set := func(string) (string, bool) { return "200", true }
	if got := setGCPercent(set); got != 200 {
		t.Errorf("with GOGC=200: %d, want 200", got)
	}
	if got := debug.SetGCPercent(100); got != 200 {
		t.Errorf("with GOGC=200 the runtime's target is %d, want 200", got)
	}
}
