// Package plugin holds the kubectl-topology commands, the cobra layer: each is
// NewXxxOptions + NewCmdXxx, its RunE Complete → Validate → Run (runE).
// Decisions belong to internal/engine and cluster access to internal/live;
// this package turns flags and arguments into their calls and prints.
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
		NewCmdPlan(flags, streams),
		NewCmdConvert(flags, streams),
		NewCmdGet(flags, streams),
		NewCmdStatus(flags, streams),
		NewCmdUpgrade(flags, streams),
		NewCmdScale(flags, streams),
		NewCmdSet(flags, streams),
		NewCmdPause(flags, streams),
		NewCmdResume(flags, streams),
		NewCmdGenerate(flags, streams),
		NewCmdEdit(flags, streams),
		NewCmdRollout(flags, streams),
		NewCmdAdopt(flags, streams),
		NewCmdInstall(flags, streams),
		NewCmdGrant(flags, streams),
		NewCmdUninstall(flags, streams),
		NewCmdVersion(flags, streams),
	)
	return cmd
}

// command is the shape of every subcommand, as kubernetes/sample-cli-plugin's:
// Complete fills in what the arguments and flags leave open, Validate
// refuses bad input before any cluster is asked anything, Run does the work.
type command interface {
	Complete(args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// runE is every subcommand's RunE: Complete, Validate, Run, always.
// TestEveryCommandRunsCompleteValidateRun keeps it so.
func runE(o command) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := o.Complete(args); err != nil {
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
