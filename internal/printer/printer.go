// Package printer renders what the commands show a human: a Topology's
// status tree and the fleet's, the Topology table of get, fleet rollouts and
// the upgrade preview. Each printer takes data and an io.Writer, as kubectl's
// printers do, and reads nothing from a cluster, so that each is held by
// golden files.
package printer

import "cmp"

// dash is what a cell shows for nothing.
func dash(s string) string { return cmp.Or(s, "-") }
