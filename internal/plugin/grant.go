package plugin

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-topology/kubectl-topology/internal/installer"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
)

// GrantOptions are the inputs of `grant`.
type GrantOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	access *live.Cluster
}

// NewGrantOptions returns the inputs of `grant`, with their defaults.
func NewGrantOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *GrantOptions {
	return &GrantOptions{configFlags: flags, IOStreams: streams}
}

// NewCmdGrant returns `grant`.
func NewCmdGrant(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewGrantOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "grant",
		Short: "Let the agent manage the kinds of every infrastructure provider installed",
		Long: `Grant gives the agent, one ClusterRole per infrastructure provider found
(by its CRDs' clusterctl provider label), the right to create and change
that provider's kinds: explicit resources, never a whole API group,
aggregated into the agent's role. install does it too; run grant after
clusterctl init --addon kubectl-topology, whose components cannot know the
providers of your cluster, and after installing another provider. The roles
survive clusterctl upgrade; uninstall removes them.`,
		Example: `  clusterctl init --infrastructure docker --addon kubectl-topology
  kubectl topology grant`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	return cmd
}

// Complete connects to the cluster.
func (o *GrantOptions) Complete([]string) error {
	var err error
	o.access, err = connect(o.configFlags)
	return err
}

// Validate has nothing to check: grant takes no arguments.
func (o *GrantOptions) Validate() error { return nil }

// Run applies a role per infrastructure provider found.
func (o *GrantOptions) Run(ctx context.Context) error {
	return installer.Installer{Cluster: o.access, Out: o.Out}.GrantProviders(ctx)
}
