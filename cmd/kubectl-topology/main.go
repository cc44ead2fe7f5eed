// Command kubectl-topology is the kubectl plugin for managed Cluster API topologies.
package main

import (
	"os"
	"runtime/debug"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-topology/kubectl-topology/pkg/plugin"
)

func main() {
	// A plan lives for tens of milliseconds with a few MB of heap; the default
	// GC target collects three times before exit. Users' GOGC still wins.
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(400)
	}
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(plugin.Execute(plugin.NewRootCommand(streams), streams))
}
