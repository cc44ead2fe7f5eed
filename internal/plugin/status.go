package plugin

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/printer"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/statusview"
	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	statusv1 "github.com/kubectl-topology/kubectl-topology/pkg/api/status/v1"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// StatusOptions are the inputs of `status`.
type StatusOptions struct {
	liveFlags
	genericiooptions.IOStreams

	// Name is the Topology; empty lists every Topology of the namespace.
	Name string
	// AllNamespaces lists the Topologies of every namespace.
	AllNamespaces bool
	// Output is "" for text, or json or yaml (the versioned statusv1.StatusReport).
	Output string
	// Watch follows the rollout until it settles.
	Watch bool
	// Interval between reads while watching.
	Interval time.Duration
	// Timeout ends a watch that has not settled with an error; 0 waits on.
	Timeout time.Duration

	terminal bool
	now      clock
}

// statusLong documents the states and the report schema: what an on-call
// engineer reads in `status --help`.
const statusLong = `Status shows where a Topology's rollout stands and whether its machines are
healthy: the Topology, then the control plane and each pool, with the state of
each, since when, and why. Without NAME it lists every Topology of the
namespace (-A: of all namespaces), what needs a human first.

States, from what needs a human most:
  Deleting      the Topology is being deleted with its cluster
  Paused        spec.paused is set: nothing is applied (kubectl topology resume)
  Degraded      machines are not ready or available, or Cluster API reports a
                fault (etcd, control plane components, a remediation)
  Provisioning  being created: infrastructure or first machines coming up
  RollingOut    machines are being replaced (an upgrade or a template change)
  Scaling       the number of machines moves towards the replicas asked for
  Held          waits on the hold annotation
  Deferred      waits on the defer annotation
  Waiting       waits its turn (the control plane, the upgrade concurrency)
  Ready         at the version and replicas asked for, every machine ready

READY reads ready/asked for; "-" means an autoscaler sets the replicas, and in
a sum "3+" means 3 plus pools an autoscaler sizes.

Status is what the agent last reported: it warns when the agent's heartbeat is
old or the agent has not seen the latest change, and lists recent Warning
events of the Topology and its objects.

--watch ends when the rollout has settled: the agent reconciled the latest
change and every part is Ready. With --timeout it gives up with exit code 1
and names what holds it.

-o json|yaml prints a statusv1.StatusReport (apiVersion ` + statusv1.APIVersion + `): agent
{lastHeartbeat, problem}, and items[] of {namespace, name, class, version,
state, stateSince, settled, paused, deleting, infrastructure, reconciled
{status, reason, message, since}, stale[], problems[], parts[] {name, kind,
class, object, state, stateSince, phase, version, desiredVersion, replicas
{desired, current, ready, upToDate, available}, message, problems[] {object,
reason, message, since}}, events[] {time, object, reason, message, count}}.
Fields are only added within a version.`

// NewStatusOptions returns the inputs of `status`, with their defaults.
func NewStatusOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *StatusOptions {
	return &StatusOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams, Interval: 2 * time.Second}
}

// NewCmdStatus returns `status`.
func NewCmdStatus(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewStatusOptions(flags, streams)
	cmd := &cobra.Command{
		Use:               "status [NAME | -A] [--watch [--timeout D]] [-o json|yaml]",
		ValidArgsFunction: completeTopologyNames(flags),
		Short:             "Show a Topology's rollout and health: the control plane, then each pool, and why a part waits",
		Long:              statusLong,
		Example: `  kubectl topology status dev
  kubectl topology status dev --watch
  kubectl topology status cluster/dev                 # an upstream Cluster with spec.topology
  kubectl topology status dev --watch --timeout 30m   # exit 1 if not settled by then
  kubectl topology status -A                          # every Topology, problems first
  kubectl topology status -A -o json                  # for alerting`,
		Args: cobra.MaximumNArgs(1),
		RunE: runE(o),
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List the Topologies of every namespace")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml (a statusv1.StatusReport, see above); default text")
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "Follow the rollout until it settles: a live view in a terminal, a line per change when piped")
	cmd.Flags().DurationVar(&o.Interval, "interval", o.Interval, "How often to read the Topology while watching")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "With --watch: give up and exit 1 if the rollout has not settled by then (0: wait on); the rollout itself goes on")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Complete reads the arguments.
func (o *StatusOptions) Complete(args []string) error {
	if len(args) == 1 {
		o.Name = args[0]
	}
	o.terminal = isTerminal(o.Out)
	return nil
}

// isTerminal tells whether w is a terminal, where a watch is a live view.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// Validate checks the flags.
func (o *StatusOptions) Validate() error {
	if o.Interval <= 0 {
		return fmt.Errorf("--interval must be positive, got %s", o.Interval)
	}
	switch o.Output {
	case "", "json", "yaml":
	default:
		return fmt.Errorf("--output %q is not supported; use json or yaml, or leave it out for text", o.Output)
	}
	if o.Name != "" && o.AllNamespaces {
		return fmt.Errorf("a NAME and --all-namespaces cannot be combined: a name is looked up in one namespace")
	}
	if o.Watch && o.Name == "" {
		return fmt.Errorf("--watch follows one Topology: give its NAME (to follow many, use `kubectl topology get -w`)")
	}
	if o.Watch && o.Output != "" {
		return fmt.Errorf("--watch and --output cannot be combined: --watch draws for a human; poll `status -o %s` for a machine", o.Output)
	}
	return validateFollowTimeout(o.Timeout, o.Watch, "--watch")
}

// validateFollowTimeout checks a --timeout that bounds following a rollout,
// which the flag named follow turns on.
func validateFollowTimeout(timeout time.Duration, following bool, follow string) error {
	if timeout < 0 {
		return fmt.Errorf("--timeout must be 0 (wait on) or positive, got %s", timeout)
	}
	if timeout > 0 && !following {
		return fmt.Errorf("--timeout bounds %[1]s; add %[1]s, or drop --timeout", follow)
	}
	return nil
}

// Run prints the rollout once, lists the fleet, or follows it with --watch.
func (o *StatusOptions) Run(ctx context.Context) error {
	if o.Name == "" {
		return o.runFleet(ctx)
	}
	if o.Watch {
		return o.watch(ctx)
	}
	t, err := o.readTopology(ctx, o.Name)
	if err != nil {
		return err
	}
	now := o.now.now()
	agent := o.agentFor(ctx, t, now)
	report := live.TopologyReport(t, agent, live.WarningEvents(ctx, o.access.Client, t, now))
	if o.Output != "" {
		return printer.StatusReport(o.Out, o.Output, statusv1.StatusReport{Agent: agent, Items: []statusv1.TopologyReport{report}})
	}
	return printer.Status(o.Out, t, agent, report, now)
}

// watch follows one Topology until its rollout settles or --timeout ends.
func (o *StatusOptions) watch(ctx context.Context) error {
	read := func(ctx context.Context) (*v1alpha2.Topology, error) { return o.readTopology(ctx, o.Name) }
	t, err := read(ctx)
	ctx, cancel := watchDeadline(ctx, o.Timeout)
	defer cancel()
	if t, err = readAgain(ctx, o.ErrOut, o.Interval, read, t, err); err != nil {
		return err
	}
	f := follower[*v1alpha2.Topology]{
		read: read,
		render: func(w io.Writer, t *v1alpha2.Topology) error {
			agent := o.agentFor(ctx, t, o.now.now())
			if agent.Problem != "" && !agent.Unwatched {
				// Without its age, which would make every read a new block.
				agent.Problem = live.AgentSilent
			}
			return printer.Status(w, t, agent, live.TopologyReport(t, agent, nil), time.Time{})
		},
		done:   func(t *v1alpha2.Topology) (bool, error) { return health.Settled(t), nil },
		gaveUp: o.unsettled,
	}
	if o.terminal {
		// In a terminal: the editor's components, redrawn in place.
		m := statusview.New(f.read, o.Interval)
		return followLive(ctx, o.IOStreams, m, m.Model, t, f)
	}
	return follow(ctx, o.IOStreams, o.Interval, t, f)
}

// agentFor is the agent's report where t is the agent's to reconcile; an
// upstream Cluster is Cluster API's, whatever the agent does.
func (o *StatusOptions) agentFor(ctx context.Context, t *v1alpha2.Topology, now time.Time) statusv1.AgentReport {
	if upstream.IsCluster(t) {
		return statusv1.AgentReport{}
	}
	return live.ReadAgents(ctx, o.access.Client, now).For(t)
}

// unsettled is the error of a watch that timed out: where the rollout stands
// and why, and that it goes on.
func (o *StatusOptions) unsettled(t *v1alpha2.Topology) error {
	msg := fmt.Sprintf("%s %s/%s did not settle within %s: %s", contract.KindOf(t), t.Namespace, t.Name, o.Timeout, cmp.Or(string(health.TopologyState(t)), "-"))
	for _, hold := range append(health.Holds(t), health.PartsNotReady(t, o.now.now())...) {
		msg += "\n  " + hold
	}
	return fmt.Errorf("%s\nThe rollout goes on; follow it with `kubectl topology status %s -n %s --watch`", msg, upstream.Ref(t), t.Namespace)
}

// runFleet lists every Topology of the namespace (or all), problems first.
func (o *StatusOptions) runFleet(ctx context.Context) error {
	if err := o.connectOnce(); err != nil {
		return err
	}
	items, err := o.access.ListAll(ctx, o.AllNamespaces, o.ErrOut)
	if err != nil {
		return err
	}
	now := o.now.now()
	report := statusv1.StatusReport{Items: []statusv1.TopologyReport{}}
	ours := slices.ContainsFunc(items, func(t v1alpha2.Topology) bool { return !upstream.IsCluster(&t) })
	var agents live.Agents
	if ours {
		// Only Topologies are the agent's: a fleet of upstream Clusters
		// alone says nothing of an agent.
		agents = live.ReadAgents(ctx, o.access.Client, now)
		if agents.Sharded() {
			report.Shards = agents.Reports()
		} else {
			report.Agent = agents.Report()
		}
	}
	for i := range items {
		var agent statusv1.AgentReport
		if !upstream.IsCluster(&items[i]) {
			agent = agents.For(&items[i])
		}
		report.Items = append(report.Items, live.TopologyReport(&items[i], agent, nil))
	}
	live.SortReports(report.Items)
	if o.Output != "" {
		return printer.StatusReport(o.Out, o.Output, report)
	}
	if len(report.Items) == 0 {
		o.access.NoTopologies(o.ErrOut, o.AllNamespaces)
		return nil
	}
	return printer.StatusList(o.Out, report, items, now)
}
