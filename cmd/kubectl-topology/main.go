// Command kubectl-topology is the kubectl plugin for managed Cluster API topologies.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	// Before the packages below start up: see the package's doc.
	_ "github.com/kubectl-topology/kubectl-topology/internal/gcpercent"
	"github.com/kubectl-topology/kubectl-topology/internal/plugin"
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(plugin.Execute(plugin.NewRootCommand(streams), streams))
}
