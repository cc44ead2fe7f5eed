// Package plugin holds the kubectl-topology commands: each is an options struct
// with Complete, Validate and Run, built on cli-runtime's flags and printers.
// Decisions belong to internal/engine; this package turns flags into engine calls.
package plugin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// NewRootCommand returns `kubectl topology` with every subcommand.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	cmd := &cobra.Command{
		Use: "kubectl-topology",
		// Shown in usage and help: "kubectl topology" when run as a kubectl plugin.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: commandName()},
		Short:       "Managed Cluster API topologies: plan, convert, edit and upgrade clusters stamped from a class",
		Long: `kubectl topology manages clusters stamped from a TopologyClass (Cluster API's
ClusterClass semantics, without the upstream feature gate).

Plan what a topology creates and changes, offline from files:
  kubectl topology plan -f class.yaml -f cluster.yaml

Install the agent, then watch and upgrade clusters:
  kubectl topology install
  kubectl topology get
  kubectl topology status NAME --watch
  kubectl topology upgrade NAME --version v1.34.0`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	flags.AddFlags(cmd.PersistentFlags())
	_ = cmd.RegisterFlagCompletionFunc("namespace", completeNamespaces(flags))
	cmd.AddCommand(
		NewPlanCommand(flags, streams),
		NewConvertCommand(flags, streams),
		NewGetCommand(flags, streams),
		NewStatusCommand(flags, streams),
		NewUpgradeCommand(flags, streams),
		NewScaleCommand(flags, streams),
		NewSetCommand(flags, streams),
		NewPauseCommand(flags, streams, true),
		NewPauseCommand(flags, streams, false),
		NewGenerateCommand(flags, streams),
		NewEditCommand(flags, streams),
		NewAdoptCommand(flags, streams),
		NewInstallCommand(flags, streams),
		NewGrantCommand(flags, streams),
		NewUninstallCommand(flags, streams),
		NewVersionCommand(flags, streams),
	)
	return cmd
}

// noArgCommand is the shape of a command that takes no arguments.
type noArgCommand interface {
	Complete() error
	Validate() error
	Run(context.Context) error
}

// runNoArgs is such a command's RunE: Complete, Validate, Run.
func runNoArgs(o noArgCommand) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if err := o.Complete(); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
}

// commandName shows `kubectl topology` when run as a kubectl plugin.
func commandName() string {
	if strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-") {
		return "kubectl topology"
	}
	return "kubectl-topology"
}

// Execute runs the command and returns the process exit code; errors go to
// ErrOut once, without usage noise.
func Execute(cmd *cobra.Command, streams genericiooptions.IOStreams) int {
	if err := cmd.Execute(); err != nil {
		fmt.Fprintf(streams.ErrOut, "error: %v\n", err)
		return 1
	}
	return 0
}
