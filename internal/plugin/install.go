package plugin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/installer"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/localagent"
	"github.com/kubectl-topology/kubectl-topology/internal/printer"
	"github.com/kubectl-topology/kubectl-topology/internal/version"
	"github.com/kubectl-topology/kubectl-topology/manifests"
)

// InstallOptions are the inputs of `install`.
type InstallOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	// Version picks the agent image tag; Image overrides the whole image.
	Version, Image string
	// TargetNamespace is where the agent runs.
	TargetNamespace string
	// WatchNamespace limits the agent to one namespace; empty watches all.
	WatchNamespace string
	// Replicas is how many agent Pods run: one leads, every ready one admits.
	Replicas int
	// DryRun "client" prints the components instead of applying them.
	DryRun string
	// Output is the format of --dry-run output: yaml or json.
	Output string
	// Wait waits until the agent is ready and its webhooks registered.
	Wait bool
	// Timeout bounds Wait.
	Timeout time.Duration
	// Local runs the agent binary out of cluster instead of a Deployment.
	Local bool
	// AgentBinary is the agent executable for Local.
	AgentBinary string
	// StateDir holds the local agent's pid file, log and certificates.
	StateDir string

	// replicasSet says --replicas was given: out of cluster one agent runs
	// unless it was.
	replicasSet bool

	access *live.Cluster
	objs   []*unstructured.Unstructured
}

// NewInstallOptions returns the inputs of `install`, with their defaults.
func NewInstallOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *InstallOptions {
	return &InstallOptions{configFlags: flags, IOStreams: streams, Replicas: components.DefaultReplicas}
}

// NewCmdInstall returns `install`.
func NewCmdInstall(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewInstallOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "install [--version V | --image IMAGE] [--target-namespace NS] [--watch-namespace NS] [--replicas N] [--local]",
		Short: "Install or upgrade the agent: ServiceAccount, RBAC, Service and Deployment; it installs its CRDs and webhooks itself",
		Long: `Install applies the agent's clusterctl-contract components (the same YAML
clusterctl init --addon and GitOps use), with clusterctl's transformations:
variable substitution, target namespace and image. It is idempotent and
upgrades in place. The agent then installs its CRDs, serving certificate and
admission webhooks, and reports ready; --wait waits for that.

With --local, no Deployment is made: the agent binary runs on this machine
against the cluster and registers its webhooks by URL — for the local
control plane (make local-up), which has no nodes to run Pods. It runs one
agent process unless --replicas asks for more; several run with leader
election, as the Pods do, and webhooks follow the newest or the leader.`,
		Example: `  kubectl topology install --wait
  kubectl topology install --watch-namespace team-a --target-namespace topology-team-a
  kubectl topology install --replicas 3
  kubectl topology install --dry-run=client -o yaml > agent.yaml
  kubectl topology install --local --agent-binary bin/agent`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.Version, "version", "", "Agent version (image tag) to install; default the plugin's")
	f.StringVar(&o.Image, "image", "", "Agent image, overriding --version")
	f.StringVar(&o.TargetNamespace, "target-namespace", components.Namespace, "Namespace the agent runs in")
	f.StringVar(&o.WatchNamespace, "watch-namespace", "", "Only reconcile Topologies in this namespace; default all")
	f.Var(&countFlag{value: &o.Replicas, set: &o.replicasSet}, "replicas", "Agent Pods: one leads and reconciles, every ready one admits, a standby takes over when the leader goes. With --local: agent processes, 1 unless given")
	f.StringVar(&o.DryRun, "dry-run", "none", `"client" prints what would be applied, without applying it`)
	f.StringVarP(&o.Output, "output", "o", "yaml", "Format of --dry-run=client output: yaml or json")
	f.BoolVar(&o.Wait, "wait", true, "Wait until the agent is ready and its webhooks are registered")
	f.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long --wait waits")
	f.BoolVar(&o.Local, "local", false, "Run the agent binary on this machine instead of a Deployment (local control plane)")
	f.StringVar(&o.AgentBinary, "agent-binary", "", "Agent executable for --local; default: kubectl-topology-agent or agent next to this plugin")
	f.StringVar(&o.StateDir, "state-dir", defaultStateDir(), "Where --local keeps the agent's pid file, log and certificates")
	return cmd
}

func defaultStateDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ".kubectl-topology"
	}
	return filepath.Join(home, ".kube", "kubectl-topology")
}

// Complete renders the components and, unless printing, connects.
func (o *InstallOptions) Complete([]string) error {
	image := o.Image
	if image == "" {
		// The agent of the plugin's own release, unless told otherwise.
		tag := o.Version
		if tag == "" {
			tag = version.Get()
		}
		image = components.Image(tag)
	}
	vars := map[string]string{"TOPOLOGY_WATCH_NAMESPACE": o.WatchNamespace, components.ReplicasVar: strconv.Itoa(o.Replicas)}
	objs, err := components.Transform(manifests.Components, vars, o.TargetNamespace, image)
	if err != nil {
		return err
	}
	o.objs = objs
	if o.DryRun == "client" {
		return nil
	}
	o.access, err = live.Connect(o.configFlags)
	return err
}

// Validate checks the flags.
func (o *InstallOptions) Validate() error {
	switch o.DryRun {
	case "none", "client":
	default:
		return fmt.Errorf(`--dry-run=%s is not supported; use "client" to print the components`, o.DryRun)
	}
	if o.Output != "yaml" && o.Output != "json" {
		return fmt.Errorf("--output %q is not supported; use yaml or json", o.Output)
	}
	if o.Local && (o.Image != "" || o.Version != "") {
		return fmt.Errorf("--local runs the agent binary; --image and --version apply to the Deployment only")
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout must be positive")
	}
	if o.Replicas < 1 {
		return fmt.Errorf("--replicas %d: run at least one agent (two or more keep admission and reconciling going while one is away)", o.Replicas)
	}
	return nil
}

// Run applies (or prints) the components and waits.
func (o *InstallOptions) Run(ctx context.Context) error {
	if o.DryRun == "client" {
		return printer.Objects(o.Out, o.objs, o.Output)
	}
	if o.Local {
		return o.runLocal(ctx)
	}
	in := installer.Installer{Cluster: o.access, Out: o.Out}
	if err := in.Apply(ctx, o.objs); err != nil {
		return err
	}
	if err := in.GrantProviders(ctx); err != nil {
		return err
	}
	if !o.Wait {
		fmt.Fprintln(o.Out, "The agent installs its CRDs and webhooks when it starts; `kubectl topology version` shows when it is ready.")
		return nil
	}
	fmt.Fprintf(o.Out, "Waiting up to %s for the agent in %s to be ready...\n", o.Timeout, o.TargetNamespace)
	if err := in.WaitReady(ctx, o.TargetNamespace, o.Timeout); err != nil {
		return err
	}
	fmt.Fprintln(o.Out, "The agent is ready; its webhooks are registered.")
	live.ProviderReport(ctx, o.Out, o.access)
	return nil
}

// runLocal starts the agent binary out of cluster, detached, as many
// replicas as asked (one unless --replicas says otherwise), keeping those
// that run and serve this cluster.
func (o *InstallOptions) runLocal(ctx context.Context) error {
	n := 1
	if o.replicasSet {
		n = o.Replicas
	}
	elect := n > 1
	// Replicas beyond n go; so does every running one without leader
	// election when there are to be several, or two would reconcile at once.
	for i, dir := range localagent.ReplicaDirs(o.StateDir) {
		rec, ok := localagent.Find(dir)
		if !ok || (i < n && (!elect || localagent.Elects(rec))) {
			continue
		}
		if err := localagent.StopReplica(dir); err != nil {
			return fmt.Errorf("stopping local agent replica %d (pid %d): %w; stop it by hand and run install --local again", i, rec.PID, err)
		}
		fmt.Fprintf(o.Out, "Stopped local agent replica %d (pid %d).\n", i, rec.PID)
	}
	bin, err := localagent.Binary(o.AgentBinary)
	if err != nil {
		return err
	}
	kubeconfig := os.Getenv("KUBECONFIG")
	if o.configFlags.KubeConfig != nil && *o.configFlags.KubeConfig != "" {
		kubeconfig = *o.configFlags.KubeConfig
	}
	for i := range n {
		dir := localagent.ReplicaDir(o.StateDir, i)
		what := "The local agent"
		if elect {
			what = fmt.Sprintf("Local agent replica %d", i)
		}
		if rec, ok := localagent.Find(dir); ok {
			problem := localagent.Problem(ctx, o.access.Client, rec)
			if problem == nil {
				fmt.Fprintf(o.Out, "%s is already running (pid %d).\n", what, rec.PID)
				continue
			}
			// A running agent nobody can reach is worse than none: every
			// Topology write would fail in its webhook. Replace it.
			fmt.Fprintf(o.Out, "%s (pid %d) runs but %v; stopping it and starting a new one.\n", what, rec.PID, problem)
			if err := localagent.StopReplica(dir); err != nil {
				return fmt.Errorf("stopping the local agent (pid %d) that does not answer: %w; stop it by hand and run install --local again", rec.PID, err)
			}
		}
		agent, err := localagent.Start(localagent.Options{Binary: bin, StateDir: dir, Kubeconfig: kubeconfig,
			AgentNamespace: o.TargetNamespace, WatchNamespace: o.WatchNamespace, LeaderElect: elect})
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "Started %s out of cluster (pid %d, log %s).\n", strings.ToLower(what[:1])+what[1:], agent.PID, agent.LogPath)
		if !o.Wait {
			continue
		}
		if err := agent.WaitReady(ctx, o.access.Client, o.Timeout); err != nil {
			return err
		}
	}
	if !o.Wait {
		return nil
	}
	fmt.Fprintln(o.Out, "The agent is ready; its webhooks are registered.")
	live.ProviderReport(ctx, o.Out, o.access)
	return nil
}

// countFlag is an int flag that remembers being given, for a default that
// depends on other flags (--replicas: 2 Pods, 1 process with --local).
type countFlag struct {
	value *int
	set   *bool
}

func (f *countFlag) String() string { return strconv.Itoa(*f.value) }

func (f *countFlag) Type() string { return "int" }

func (f *countFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q is not a whole number", s)
	}
	*f.value, *f.set = n, true
	return nil
}

// UninstallOptions are the inputs of `uninstall`.
type UninstallOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	// TargetNamespace is where the agent runs.
	TargetNamespace string
	// StateDir is where a --local agent keeps its pid file.
	StateDir string
	// IncludeCRDs deletes the CRDs too (there are no Topologies left to lose).
	IncludeCRDs bool
}

// NewUninstallOptions returns the inputs of `uninstall`, with their defaults.
func NewUninstallOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *UninstallOptions {
	return &UninstallOptions{configFlags: flags, IOStreams: streams}
}

// NewCmdUninstall returns `uninstall`.
func NewCmdUninstall(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewUninstallOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "uninstall [--include-crds]",
		Short: "Remove the agent; refused while Topologies exist",
		Args:  cobra.NoArgs,
		RunE:  runE(o),
	}
	cmd.Flags().StringVar(&o.TargetNamespace, "target-namespace", components.Namespace, "Namespace the agent runs in")
	cmd.Flags().StringVar(&o.StateDir, "state-dir", defaultStateDir(), "Where a --local agent keeps its pid file")
	cmd.Flags().BoolVar(&o.IncludeCRDs, "include-crds", false, "Delete kubectl-topology's CRDs too")
	return cmd
}

// Complete has nothing to fill in: the command takes no arguments.
func (o *UninstallOptions) Complete([]string) error { return nil }

// Validate has nothing to check: the command takes no arguments.
func (o *UninstallOptions) Validate() error { return nil }

// Run refuses while Topologies exist, then deletes the components, the
// webhook registrations and a local agent.
func (o *UninstallOptions) Run(ctx context.Context) error {
	ca, err := live.Connect(o.configFlags)
	if err != nil {
		return err
	}
	in := installer.Installer{Cluster: ca, Out: o.Out}
	names, err := in.Topologies(ctx)
	if err != nil {
		return err
	}
	if len(names) > 0 {
		return fmt.Errorf("refusing to uninstall: %d Topologies still exist (%s); without the agent their clusters would be unmanaged. Delete them first", len(names), strings.Join(names, ", "))
	}
	if rec, ok := localagent.Find(o.StateDir); ok {
		pid := rec.PID
		if err := localagent.Stop(o.StateDir); err != nil {
			return fmt.Errorf("stopping the local agent (pid %d): %w", pid, err)
		}
		fmt.Fprintf(o.Out, "Stopped the local agent (pid %d).\n", pid)
	}
	objs, err := components.Transform(manifests.Components, nil, o.TargetNamespace, "")
	if err != nil {
		return err
	}
	if err := in.Remove(ctx, objs, o.IncludeCRDs); err != nil {
		return err
	}
	fmt.Fprintln(o.Out, "The agent is uninstalled.")
	return nil
}
