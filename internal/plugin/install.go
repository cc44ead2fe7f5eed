package plugin

import (
	"cmp"
	"context"
	"errors"
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
	"github.com/kubectl-topology/kubectl-topology/internal/shard"
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
	// WatchNamespaces limit the agent to these namespaces; none watches all.
	WatchNamespaces []string
	// WatchFilter limits the agent to Topologies labelled
	// cluster.x-k8s.io/watch-filter with this value; empty takes all.
	WatchFilter string
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
	// reconcileOnly is an agent added as a shard beside one that admits.
	reconcileOnly bool
	image         string
	// claimHolder names this install on the shard's claim; claimed says it
	// wrote one, to release should the install stop short.
	claimHolder string
	claimed     bool

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
		Use:   "install [--version V | --image IMAGE] [--target-namespace NS] [--watch-namespace NS,...] [--watch-filter VALUE] [--replicas N] [--local]",
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
election, as the Pods do, and webhooks follow the newest or the leader.

Several agents can divide a shared management cluster, as Cluster API's
managers do with --namespace and --watch-filter: install each into its own
--target-namespace with its --watch-namespace or --watch-filter. Install
refuses a shard that overlaps one already installed. The first agent
serves the admission webhooks for every shard; agents added later only
reconcile.`,
		Example: `  kubectl topology install --wait
  kubectl topology install --watch-namespace team-a --target-namespace topology-team-a
  kubectl topology install --watch-namespace team-b,team-c --target-namespace topology-team-b
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
	f.StringSliceVar(&o.WatchNamespaces, "watch-namespace", nil, "Only reconcile Topologies in these namespaces (comma-separated or repeated); default all")
	f.StringVar(&o.WatchFilter, "watch-filter", "", "Only reconcile Topologies labelled "+shard.WatchLabel+" with this value, as Cluster API's managers do; default all")
	f.Var(&countFlag{value: &o.Replicas, set: &o.replicasSet}, "replicas", "Agent Pods: one leads and reconciles, every ready one admits, a standby takes over when the leader goes. With --local: agent processes, 1 unless given")
	f.StringVar(&o.DryRun, "dry-run", "none", `"client" prints what would be applied, without applying it`)
	f.StringVarP(&o.Output, "output", "o", "yaml", "Format of --dry-run=client output: yaml or json")
	f.BoolVar(&o.Wait, "wait", true, "Wait until the agent is ready and its webhooks are registered")
	f.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long --wait waits")
	f.BoolVar(&o.Local, "local", false, "Run the agent binary on this machine instead of a Deployment (local control plane)")
	f.StringVar(&o.AgentBinary, "agent-binary", "", "Agent executable for --local; default: kubectl-topology-agent or agent next to this plugin")
	f.StringVar(&o.StateDir, "state-dir", defaultStateDir(), "Where --local keeps the agent's pid file, log and certificates; an agent in another --target-namespace keeps them in a directory of that name below it")
	cmd.PreRun = shardStateDirUnlessGiven(&o.StateDir, &o.TargetNamespace)
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
	o.image = image
	host, _ := os.Hostname()
	o.claimHolder = fmt.Sprintf("kubectl-topology install on %s (pid %d)", cmp.Or(host, "?"), os.Getpid())
	if err := o.render(); err != nil {
		return err
	}
	if o.DryRun == "client" {
		return nil
	}
	var err error
	o.access, err = connect(o.configFlags)
	return err
}

// render transforms the components for the flags and the shard's place.
func (o *InstallOptions) render() error {
	vars := map[string]string{
		"TOPOLOGY_WATCH_NAMESPACE": strings.Join(o.shard().Namespaces, ","),
		"TOPOLOGY_WATCH_FILTER":    o.WatchFilter,
		"TOPOLOGY_WEBHOOKS":        strconv.FormatBool(!o.reconcileOnly),
		components.ReplicasVar:     strconv.Itoa(o.Replicas),
	}
	objs, err := components.Transform(manifests.Components, vars, o.TargetNamespace, o.image)
	o.objs = objs
	return err
}

func (o *InstallOptions) shard() shard.Shard { return shard.New(o.WatchNamespaces, o.WatchFilter) }

// shardStateDirUnlessGiven moves a local agent's state directory, unless
// --state-dir was given, to where the agent running in the target namespace
// keeps it: the default agent in the default directory, a shard in a
// directory below it. install and uninstall find the same one.
func shardStateDirUnlessGiven(stateDir, namespace *string) func(*cobra.Command, []string) {
	return func(cmd *cobra.Command, _ []string) {
		if !cmd.Flags().Changed("state-dir") && *namespace != components.Namespace {
			*stateDir = filepath.Join(*stateDir, "shards", *namespace)
		}
	}
}

// placeShard refuses a shard that overlaps another agent's, and decides
// whether this agent serves the webhooks: the agent that registered them
// keeps them, and an agent added beside it only reconciles.
//
// Between its check and the new agent's first heartbeat, the shard is
// claimed (installer.ClaimShard), and the check is made again after the
// claim: of two installs that check at the same moment, at least the later
// one sees the other's claim and backs off, and no two overlapping agents
// are ever placed.
func (o *InstallOptions) placeShard(ctx context.Context) error {
	agents := live.ReadAgents(ctx, o.access.Client, time.Now())
	if err := o.refuseOverlap(agents, ""); err != nil {
		return err
	}
	in := installer.Installer{Cluster: o.access, Out: o.Out}
	claimed, err := in.ClaimShard(ctx, o.TargetNamespace, o.shard(), o.claimHolder, time.Now(), o.Timeout+claimGrace)
	if err != nil {
		return err
	}
	o.claimed = claimed
	if claimed {
		if err := o.refuseOverlap(live.ReadAgents(ctx, o.access.Client, time.Now()), " (placed while this install was checking)"); err != nil {
			return errors.Join(err, in.ReleaseShard(ctx, o.TargetNamespace, o.claimHolder))
		}
	}
	// Webhooks left by an agent that no longer reports are taken over.
	owner, registered := live.WebhookOwner(ctx, o.access.Client)
	o.reconcileOnly = registered && owner != o.TargetNamespace && agents.Live(owner)
	if o.reconcileOnly {
		fmt.Fprintf(o.Out, "The agent in %s serves the admission webhooks for every shard; this one reconciles only.\n", owner)
	}
	return o.render()
}

// claimGrace is how much longer than --timeout a claim holds: the agent's
// first heartbeat takes it over, which can come a little after --wait ends.
const claimGrace = time.Minute

// refuseOverlap is the refusal of a shard that overlaps a live agent's (or
// another install's claim), naming each; when says when it was found.
func (o *InstallOptions) refuseOverlap(agents live.Agents, when string) error {
	over := agents.Overlapping(o.TargetNamespace, o.shard())
	if len(over) == 0 {
		return nil
	}
	var what []string
	for _, a := range over {
		what = append(what, fmt.Sprintf("the agent in %s watches %s%s", a.Namespace, a.Shard, when))
	}
	return fmt.Errorf("refusing to install an agent in %s watching %s: %s, and two agents would write the same clusters. Give this one --watch-namespace or --watch-filter that it does not cover, or uninstall the other (uninstall --target-namespace %s)",
		o.TargetNamespace, o.shard(), strings.Join(what, "; "), over[0].Namespace)
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
	if err := o.placeShard(ctx); err != nil {
		return err
	}
	in := installer.Installer{Cluster: o.access, Out: o.Out}
	var err error
	if o.Local {
		err = o.runLocal(ctx)
	} else if err = in.Apply(ctx, o.objs); err == nil {
		return o.grantAndWait(ctx, in)
	}
	// No agent was placed: the claim would only hold the shard from others.
	if err != nil && o.claimed {
		err = errors.Join(err, in.ReleaseShard(context.WithoutCancel(ctx), o.TargetNamespace, o.claimHolder))
	}
	return err
}

// grantAndWait grants the applied agent the providers' kinds and waits, as
// asked, until it is ready.
func (o *InstallOptions) grantAndWait(ctx context.Context, in installer.Installer) error {
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
			AgentNamespace: o.TargetNamespace, Shard: o.shard(), ReconcileOnly: o.reconcileOnly, LeaderElect: elect})
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

// refuseSharedRemoval says why removing the agent in TargetNamespace,
// while the agents in others remain, would harm them: they would lose the
// webhooks it serves, or their CRDs.
func (o *UninstallOptions) refuseSharedRemoval(ctx context.Context, ca *live.Cluster, others []string) error {
	if o.IncludeCRDs {
		return fmt.Errorf("refusing --include-crds: the agents in %s still use them; uninstall them first", strings.Join(others, ", "))
	}
	if owner, ok := live.WebhookOwner(ctx, ca.Client); ok && owner == o.TargetNamespace {
		return fmt.Errorf("refusing to uninstall the agent in %s: it serves the admission webhooks for every shard, and the agents in %s would admit nothing. Uninstall them first", o.TargetNamespace, strings.Join(others, ", "))
	}
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
	cmd.Flags().StringVar(&o.StateDir, "state-dir", defaultStateDir(), "Where a --local agent keeps its pid file; an agent in another --target-namespace keeps it in a directory of that name below it")
	cmd.Flags().BoolVar(&o.IncludeCRDs, "include-crds", false, "Delete kubectl-topology's CRDs too")
	cmd.PreRun = shardStateDirUnlessGiven(&o.StateDir, &o.TargetNamespace)
	return cmd
}

// Complete has nothing to fill in: the command takes no arguments.
func (o *UninstallOptions) Complete([]string) error { return nil }

// Validate has nothing to check: the command takes no arguments.
func (o *UninstallOptions) Validate() error { return nil }

// Run refuses while Topologies exist, then deletes the components, the
// webhook registrations and a local agent.
func (o *UninstallOptions) Run(ctx context.Context) error {
	ca, err := connect(o.configFlags)
	if err != nil {
		return err
	}
	in := installer.Installer{Cluster: ca, Out: o.Out}
	agents := live.ReadAgents(ctx, ca.Client, time.Now())
	var this shard.Shard // every namespace, unless its heartbeat says less
	if a, ok := agents.In(o.TargetNamespace); ok {
		this = a.Shard
	}
	var others []string
	for _, a := range agents.Others(o.TargetNamespace) {
		others = append(others, a.Namespace)
	}
	last := len(others) == 0
	if !last {
		if err := o.refuseSharedRemoval(ctx, ca, others); err != nil {
			return err
		}
	}
	names, err := in.Topologies(ctx, this)
	if err != nil {
		return err
	}
	if len(names) > 0 {
		return fmt.Errorf("refusing to uninstall: %d Topologies the agent in %s reconciles still exist (%s); without the agent their clusters would be unmanaged. Delete them first", len(names), o.TargetNamespace, strings.Join(names, ", "))
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
	if err := in.Remove(ctx, objs, o.IncludeCRDs, last); err != nil {
		return err
	}
	// Out of cluster the namespace stays: its heartbeat must not speak for
	// an agent that is gone.
	if err := in.ForgetHeartbeat(ctx, o.TargetNamespace); err != nil {
		return err
	}
	fmt.Fprintln(o.Out, "The agent is uninstalled.")
	return nil
}
