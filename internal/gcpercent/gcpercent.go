// Package gcpercent raises the garbage collector's target for short-lived
// commands before the packages they link start up. Importing it for its side
// effect is the whole API.
//
// A plan lives for tens of milliseconds with a few MB of heap, most of it
// allocated while client-go, apiextensions and CEL register their types;
// with the default target the collector runs during that start-up. Package
// initialisation follows import-path order among ready packages, and this
// one needs only os and runtime/debug, so it runs ahead of k8s.io and
// sigs.k8s.io. A GOGC the user set still wins.
package gcpercent

import (
	"os"
	"runtime/debug"
)

// Percent is the target set when GOGC is not.
const Percent = 400

func init() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(Percent)
	}
}
