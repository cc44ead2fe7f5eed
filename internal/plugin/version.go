package plugin

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"

	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/localagent"
	"github.com/kubectl-topology/kubectl-topology/internal/printer"
	"github.com/kubectl-topology/kubectl-topology/internal/version"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// VersionOptions are the inputs of `version`.
type VersionOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	// Client prints only the plugin's version, without contacting a cluster.
	Client bool
	// StateDir is where a --local agent keeps its pid file.
	StateDir string
}

// NewVersionOptions returns the inputs of `version`, with their defaults.
func NewVersionOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *VersionOptions {
	return &VersionOptions{configFlags: flags, IOStreams: streams}
}

// NewCmdVersion returns `version`.
func NewCmdVersion(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewVersionOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Show the plugin's version, the agent's, and the API versions the cluster serves",
		Args:  cobra.NoArgs,
		RunE:  runE(o),
	}
	cmd.Flags().BoolVar(&o.Client, "client", false, "Only the plugin's version; do not contact the cluster")
	cmd.Flags().StringVar(&o.StateDir, "state-dir", defaultStateDir(), "Where a --local agent keeps its pid file")
	return cmd
}

// Complete has nothing to fill in: the command takes no arguments.
func (o *VersionOptions) Complete([]string) error { return nil }

// Validate has nothing to check: the command takes no arguments.
func (o *VersionOptions) Validate() error { return nil }

// Run prints the versions.
func (o *VersionOptions) Run(ctx context.Context) error {
	fmt.Fprintf(o.Out, "plugin: %s\n", version.Get())
	if o.Client {
		return nil
	}
	ca, err := connect(o.configFlags)
	if err != nil {
		return err
	}
	install, err := ca.AgentInstall(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	leader := live.AgentReport(ctx, ca.Client, now).Leader
	fmt.Fprintf(o.Out, "agent: %s\n", agentDescription(install, o.StateDir, leader))
	// The line above is the default agent's; with shards, each says its own.
	if agents := live.ReadAgents(ctx, ca.Client, now); agents.Sharded() {
		printer.ShardLines(o.Out, agents.Reports(), now)
		if owner, ok := live.WebhookOwner(ctx, ca.Client); ok {
			fmt.Fprintf(o.Out, "admission: the agent in %s serves the webhooks for every shard\n", owner)
		}
	}
	if v := install.Release; v != "" {
		fmt.Fprintf(o.Out, "agent release: %s\n", v)
		if v != version.Get() {
			fmt.Fprintf(o.ErrOut, "Warning: the agent is release %s and this plugin %s: previews and checks may differ from what the agent does; install the plugin's release (kubectl topology install) or use the plugin of the agent's\n", v, version.Get())
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(ca.Config)
	if err != nil {
		return err
	}
	groups, err := dc.ServerGroups()
	if err != nil {
		return live.Explain(err, ca)
	}
	var served []string
	for _, g := range groups.Groups {
		if g.Name == v1alpha2.GroupVersion.Group {
			for _, v := range g.Versions {
				served = append(served, v.GroupVersion)
			}
		}
	}
	sort.Strings(served)
	if len(served) == 0 {
		served = []string{"none (run `kubectl topology install`)"}
	}
	fmt.Fprintf(o.Out, "API: %s\n", strings.Join(served, ", "))
	if sv, err := dc.ServerVersion(); err == nil {
		fmt.Fprintf(o.Out, "server: %s\n", sv.GitVersion)
	}
	live.ProviderReport(ctx, o.Out, ca)
	return nil
}

// agentDescription describes the installed agent: the Deployment's image,
// or an out-of-cluster agent registered by URL, or none.
func agentDescription(install live.AgentInstall, stateDir, leader string) string {
	switch d := install.Deployment; {
	case d != nil:
		return fmt.Sprintf("%s (Deployment %s/%s, %d/%d ready)", d.Spec.Template.Spec.Containers[0].Image, d.Namespace, d.Name, d.Status.ReadyReplicas, d.Status.Replicas)
	case install.URL != "":
		return localagent.State(install.URL, stateDir, leader)
	}
	return "not installed (run `kubectl topology install`)"
}
