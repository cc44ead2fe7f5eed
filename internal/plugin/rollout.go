package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/membership"
	"github.com/kubectl-topology/kubectl-topology/internal/printer"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/rolloutview"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// NewCmdRollout returns `rollout` and its subcommands: a change carried
// across a fleet in waves by the agent.
func NewCmdRollout(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Roll a version, class or variable change across many clusters in waves: a canary, a soak, health gates and a stop",
		Long: `A TopologyRollout carries one change across the Topologies and upstream
Clusters a label selector picks, in waves: the first wave is the canary, each
cluster soaks healthy (every part Ready, nothing Degraded) before it counts,
at most --max-in-flight clusters move at once, and the rollout stops when
more clusters fail than its failure budget. The agent carries it out, so it
does not depend on this terminal staying open.`,
		Example: `  kubectl topology rollout create to-1-35 -l env=prod --version v1.35.0 --waves 1,10%,100% --max-in-flight 2 --soak 10m --dry-run
  kubectl topology rollout status to-1-35 --watch
  kubectl topology rollout retry to-1-35 topology/prod-7 -n team-a`,
	}
	cmd.AddCommand(
		NewCmdRolloutCreate(flags, streams),
		NewCmdRolloutStatus(flags, streams),
		NewCmdRolloutPause(flags, streams),
		NewCmdRolloutResume(flags, streams),
		NewCmdRolloutAbort(flags, streams),
		NewCmdRolloutRetry(flags, streams),
		NewCmdRolloutSkip(flags, streams),
		NewCmdRolloutApprove(flags, streams),
		NewCmdRolloutUndo(flags, streams),
		NewCmdRolloutList(flags, streams),
	)
	return cmd
}

// RolloutCreateOptions are the inputs of `rollout create`.
type RolloutCreateOptions struct {
	liveFlags
	genericiooptions.IOStreams

	Name, File string
	// Targets.
	Selector, OfClass  string
	Kinds, Namespaces  []string
	Version, Class     string
	Set, Windows       []string
	Waves              string
	MaxInFlight        int32
	FailureBudget      int32
	Soak, Timeout      time.Duration
	HealthTolerance    time.Duration
	ProgressDeadline   time.Duration
	WaitAfterWave      time.Duration
	Approval           []int32
	WaitFor            []string
	JoinLate           bool
	DryRun, Yes, Quiet bool

	rollout *v1alpha2.TopologyRollout
}

// NewRolloutCreateOptions returns the inputs of `rollout create`, with their defaults.
func NewRolloutCreateOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *RolloutCreateOptions {
	return &RolloutCreateOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams, MaxInFlight: 1}
}

// NewCmdRolloutCreate returns `rollout create`.
func NewCmdRolloutCreate(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewRolloutCreateOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "create NAME -l SELECTOR (--version V | --class C | --set NAME=VALUE) [--waves 1,2,100%] [--dry-run] | create -f FILE",
		Short: "Check a fleet rollout against every cluster it selects, preview it per wave and cluster, and create it",
		Long: `Create checks the rollout as the agent's webhook does — the selector matches
clusters, the waves cover them, each cluster's class allows the version or
class, no cluster is in another rollout — then shows, per wave and cluster,
what changes and how many Machines are replaced, and the fleet's total.
--dry-run stops there. Each cluster is preflighted again by the agent right
before it starts, as ` + "`upgrade`" + ` does.`,
		Example: `  kubectl topology rollout create to-1-35 -l env=prod --version v1.35.0 --waves 1,2,100% --max-in-flight 2 --soak 10m
  kubectl topology rollout create rebase -l team=a --class quick-start-v2 --dry-run
  kubectl topology rollout create nightly -l env=dev --set logLevel=debug --window "Mon,Tue,Wed,Thu,Fri 01:00-05:00"
  kubectl topology rollout create -f rollout.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: runE(o),
	}
	f := cmd.Flags()
	f.StringVarP(&o.File, "filename", "f", "", "Create the TopologyRollout in this file instead of from flags")
	f.StringVarP(&o.Selector, "selector", "l", "", "Label selector over Topologies and Clusters, e.g. env=prod,tier!=canary (required)")
	f.StringSliceVar(&o.Kinds, "kinds", nil, "Only these kinds: Topology, Cluster (upstream Clusters with spec.topology); both when unset")
	f.StringVar(&o.OfClass, "of-class", "", "Only clusters of this class")
	f.StringSliceVar(&o.Namespaces, "target-namespaces", nil, "Only clusters in these namespaces; all when unset")
	f.StringVar(&o.Version, "version", "", "Kubernetes version to move every cluster to, e.g. v1.35.0")
	f.StringVar(&o.Class, "class", "", "Class to rebase every cluster onto (in its class's namespace)")
	f.StringArrayVar(&o.Set, "set", nil, "Variable to set on every cluster, NAME=VALUE (VALUE as JSON where it parses); repeatable")
	f.StringVar(&o.Waves, "waves", "1,100%", "Wave sizes in order, each a count or a percentage of the fleet; the first is the canary")
	f.Int32Var(&o.MaxInFlight, "max-in-flight", 1, "Clusters changing or soaking at once")
	f.DurationVar(&o.Soak, "soak", 0, "How long each cluster must stay healthy after its change settles before it counts")
	f.DurationVar(&o.HealthTolerance, "health-tolerance", 0, "How long a soaking cluster may read unhealthy before it fails; a shorter spell starts its soak over (default 1m)")
	f.DurationVar(&o.Timeout, "cluster-timeout", 0, "Fail a cluster whose change has not settled this long after it started (default 1h)")
	f.DurationVar(&o.ProgressDeadline, "progress-deadline", 0, "Fail a cluster in progress when nothing of it moves this long: no Machine created, replaced or ready, no part changing state (default 10m)")
	f.DurationVar(&o.WaitAfterWave, "wait-after-wave", 0, "Wait this long after a wave has finished before the next starts")
	f.Int32SliceVar(&o.Approval, "approval", nil, "Waves that wait for `rollout approve` before they start, e.g. 2,3")
	f.StringSliceVar(&o.WaitFor, "wait-for", nil, "Rollouts that must complete before this one starts, e.g. staging")
	f.BoolVar(&o.JoinLate, "join-late", false, "Let clusters that match after the start join the last wave (else they are only reported)")
	f.Int32Var(&o.FailureBudget, "failure-budget", 0, "Clusters that may fail before the rollout stops starting clusters")
	f.StringArrayVar(&o.Windows, "window", nil, `Maintenance window in UTC, "[DAYS ]HH:MM-HH:MM" such as "Sat,Sun 02:00-06:00"; repeatable; any time when unset`)
	f.BoolVar(&o.DryRun, "dry-run", false, "Check and preview only; create nothing")
	f.BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "Print the waves and the fleet's total, not a line per cluster")
	return cmd
}

// Complete builds the TopologyRollout from the file or the flags.
func (o *RolloutCreateOptions) Complete(args []string) error {
	if len(args) == 1 {
		o.Name = args[0]
	}
	if o.File != "" {
		data, err := os.ReadFile(o.File)
		if err != nil {
			return fmt.Errorf("reading %s: %w", o.File, err)
		}
		ro := &v1alpha2.TopologyRollout{}
		if err := yaml.UnmarshalStrict(data, ro); err != nil {
			return fmt.Errorf("%s is not a TopologyRollout: %w", o.File, err)
		}
		if o.Name != "" {
			ro.Name = o.Name
		}
		ro.APIVersion, ro.Kind = v1alpha2.GroupVersion.String(), v1alpha2.TopologyRolloutKind
		o.rollout = ro
		return nil
	}
	sel, err := metav1.ParseToLabelSelector(o.Selector)
	if err != nil {
		return fmt.Errorf("--selector %q: %w", o.Selector, err)
	}
	ro := &v1alpha2.TopologyRollout{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: v1alpha2.TopologyRolloutKind},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Spec: v1alpha2.TopologyRolloutSpec{
			Change:  v1alpha2.RolloutChange{Version: o.Version, Class: o.Class},
			Targets: v1alpha2.RolloutTargets{Selector: *sel, Kinds: canonicalKinds(o.Kinds), Class: o.OfClass, Namespaces: o.Namespaces, JoinLate: o.JoinLate},
			Strategy: v1alpha2.RolloutStrategy{
				MaxInFlight: o.MaxInFlight, FailureBudget: o.FailureBudget,
				Soak: metav1.Duration{Duration: o.Soak}, ClusterTimeout: metav1.Duration{Duration: o.Timeout},
				HealthTolerance:  metav1.Duration{Duration: o.HealthTolerance},
				ProgressDeadline: metav1.Duration{Duration: o.ProgressDeadline},
				WaitAfterWave:    metav1.Duration{Duration: o.WaitAfterWave},
			},
			WaitFor: o.WaitFor,
		},
	}
	for _, kv := range o.Set {
		name, raw, err := parseVariable(kv)
		if err != nil {
			return fmt.Errorf("--set %w", err)
		}
		ro.Spec.Change.Variables = append(ro.Spec.Change.Variables, v1alpha2.ClusterVariable{Name: name, Value: apiextensionsv1.JSON{Raw: raw}})
	}
	for _, w := range strings.Split(o.Waves, ",") {
		ro.Spec.Strategy.Waves = append(ro.Spec.Strategy.Waves, v1alpha2.RolloutWave{Clusters: intstr.Parse(strings.TrimSpace(w))})
	}
	for _, n := range o.Approval {
		if n < 1 || int(n) > len(ro.Spec.Strategy.Waves) {
			return fmt.Errorf("--approval %d: the rollout has waves 1 to %d (--waves %s)", n, len(ro.Spec.Strategy.Waves), o.Waves)
		}
		ro.Spec.Strategy.Waves[n-1].Approval = true
	}
	for _, w := range o.Windows {
		win, err := parseWindow(w)
		if err != nil {
			return err
		}
		ro.Spec.Strategy.Windows = append(ro.Spec.Strategy.Windows, win)
	}
	o.rollout = ro
	return nil
}

// canonicalKinds spells kinds as the API does, whatever case was typed.
func canonicalKinds(kinds []string) []string {
	var out []string
	for _, k := range kinds {
		if known, ok := live.KindOf(k); ok {
			k = known
		}
		out = append(out, k)
	}
	return out
}

// parseWindow reads "[DAYS ]HH:MM-HH:MM".
func parseWindow(s string) (v1alpha2.MaintenanceWindow, error) {
	var w v1alpha2.MaintenanceWindow
	fields := strings.Fields(s)
	hours := fields[len(fields)-1:]
	if len(fields) == 2 {
		w.Days = strings.Split(fields[0], ",")
	}
	start, end, ok := strings.Cut(hours[0], "-")
	if len(fields) > 2 || !ok {
		return w, fmt.Errorf(`--window %q: give "[DAYS ]HH:MM-HH:MM" such as "Sat,Sun 02:00-06:00"`, s)
	}
	w.Start, w.End = start, end
	return w, nil
}

// Validate refuses a rollout that says nothing to do or nowhere to do it.
func (o *RolloutCreateOptions) Validate() error {
	ro := o.rollout
	switch {
	case ro.Name == "":
		return errors.New("give the rollout a NAME, e.g. `kubectl topology rollout create to-1-35 ...`")
	case fleet.Empty(ro.Spec.Change):
		return errors.New("nothing to roll out: give --version, --class and/or --set NAME=VALUE")
	case o.File == "" && o.Selector == "":
		return errors.New("--selector is required: the labels of the clusters to change, e.g. -l env=prod")
	case ro.Spec.Strategy.MaxInFlight < 1:
		return fmt.Errorf("--max-in-flight must be at least 1, got %d", ro.Spec.Strategy.MaxInFlight)
	case ro.Spec.Strategy.FailureBudget < 0:
		return fmt.Errorf("--failure-budget must be 0 or more, got %d", ro.Spec.Strategy.FailureBudget)
	}
	// The flags' or the file's strategy, named by its field (--waves is
	// spec.strategy.waves, --window spec.strategy.windows).
	if errs := fleet.ValidateStrategy(ro.Spec.Strategy); len(errs) > 0 {
		return refusal(ro, errs)
	}
	return nil
}

// Run checks the rollout as the webhook does, previews it, asks, and creates it.
func (o *RolloutCreateOptions) Run(ctx context.Context) error {
	if err := o.connectOnce(); err != nil {
		return err
	}
	return createRollout(ctx, o.access, o.IOStreams, o.rollout, o.DryRun, o.Yes, o.Quiet)
}

// createRollout is what `rollout create` and `rollout undo` share: it
// checks ro as the agent's webhook does, previews it per wave and cluster
// with each cluster's preflight (an undo's clusters each with the value it
// goes back to), stops there with dryRun, asks unless yes, and creates it.
func createRollout(ctx context.Context, ca *live.Cluster, streams genericiooptions.IOStreams, ro *v1alpha2.TopologyRollout, dryRun, yes, quiet bool) error {
	core, _ := ca.CoreVersion() // no Cluster API: Topologies only
	m := membership.Reader{Client: ca.Client, CoreVersion: core}
	classes := m.Classes()
	selected, back, errs := m.Admit(ctx, ro, classes)
	if len(errs) > 0 {
		return refusal(ro, errs)
	}
	question := fmt.Sprintf("Create TopologyRollout %s over %d cluster(s)?", ro.Name, len(selected))
	started := "the agent starts wave 1"
	if ro.Spec.Undo != "" {
		question = fmt.Sprintf("Create TopologyRollout %s, undoing %s over %d cluster(s)?", ro.Name, ro.Spec.Undo, len(selected))
		started += " of the undo"
	}
	preview, err := m.Preview(ctx, classes, ca, ro, selected, back)
	if err != nil {
		return err
	}
	if quiet {
		printer.RolloutPreviewSummary(streams.Out, ro, preview)
	} else {
		printer.RolloutPreview(streams.Out, ro, preview)
	}
	if dryRun {
		fmt.Fprintln(streams.Out, "Dry run: nothing was created.")
		return nil
	}
	if !yes && !confirm(streams.In, streams.Out, question) {
		fmt.Fprintln(streams.Out, "Nothing was created.")
		return nil
	}
	if err := ca.CreateRollout(ctx, ro); err != nil {
		return err
	}
	fmt.Fprintf(streams.Out, "TopologyRollout %s created: %s.\nFollow it with: kubectl topology rollout status %s --watch\n", ro.Name, started, ro.Name)
	return nil
}

// refusal says every reason a rollout is refused, one per line.
func refusal(ro *v1alpha2.TopologyRollout, errs field.ErrorList) error {
	msg := fmt.Sprintf("TopologyRollout %s is refused; nothing was created:", ro.Name)
	for _, e := range errs {
		msg += fmt.Sprintf("\n  - %s: %s", e.Field, e.ErrorBody())
	}
	return errors.New(msg)
}

// RolloutStatusOptions are the inputs of `rollout status`.
type RolloutStatusOptions struct {
	liveFlags
	genericiooptions.IOStreams

	Name     string
	Watch    bool
	Output   string
	Interval time.Duration
	Timeout  time.Duration

	now      clock
	terminal bool
}

// NewRolloutStatusOptions returns the inputs of `rollout status`, with their defaults.
func NewRolloutStatusOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *RolloutStatusOptions {
	return &RolloutStatusOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams, Interval: 2 * time.Second}
}

// NewCmdRolloutStatus returns `rollout status`.
func NewCmdRolloutStatus(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewRolloutStatusOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "status NAME [--watch [--timeout D]] [-o json|yaml]",
		Short: "Show a fleet rollout per wave and per cluster: phase, attempts, times, and why a cluster waits or failed",
		Example: `  kubectl topology rollout status to-1-35
  kubectl topology rollout status to-1-35 --watch
  kubectl topology rollout status to-1-35 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: runE(o),
	}
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "Follow the rollout until it completes, halts or is aborted (a live view in a terminal)")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "json or yaml: the TopologyRollout as stored, for automation")
	cmd.Flags().DurationVar(&o.Interval, "interval", o.Interval, "With --watch: time between reads")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "With --watch: give up and exit 1 after this long (0: wait on); the rollout goes on")
	return cmd
}

// Complete takes the rollout's name and whether the output is a terminal.
func (o *RolloutStatusOptions) Complete(args []string) error {
	o.Name = args[0]
	o.terminal = isTerminal(o.Out)
	return nil
}

// Validate checks the flags.
func (o *RolloutStatusOptions) Validate() error {
	if o.Output != "" && o.Output != "json" && o.Output != "yaml" {
		return fmt.Errorf("--output %q: give json or yaml", o.Output)
	}
	if o.Output != "" && o.Watch {
		return errors.New("--watch and --output do not go together: --output prints the rollout once")
	}
	if o.Interval <= 0 {
		return fmt.Errorf("--interval must be positive, got %s", o.Interval)
	}
	return validateFollowTimeout(o.Timeout, o.Watch, "--watch")
}

func (o *RolloutStatusOptions) read(ctx context.Context) (*v1alpha2.TopologyRollout, error) {
	if err := o.connectOnce(); err != nil {
		return nil, err
	}
	return o.access.Rollout(ctx, o.Name)
}

// Run prints the rollout once, or follows it.
func (o *RolloutStatusOptions) Run(ctx context.Context) error {
	ro, err := o.read(ctx)
	if o.Watch {
		var cancel context.CancelFunc
		ctx, cancel = watchDeadline(ctx, o.Timeout)
		defer cancel()
		ro, err = readAgain(ctx, o.ErrOut, o.Interval, o.read, ro, err)
	}
	if err != nil {
		return err
	}
	// Read typed, the object has no kind; printed, it must.
	ro.SetGroupVersionKind(v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyRolloutKind))
	switch {
	case o.Output == "json":
		return (&printers.JSONPrinter{}).PrintObj(ro, o.Out)
	case o.Output == "yaml":
		return (&printers.YAMLPrinter{}).PrintObj(ro, o.Out)
	case !o.Watch:
		return printer.Rollout(o.Out, ro, o.now.now())
	}
	f := follower[*v1alpha2.TopologyRollout]{
		read: o.read,
		render: func(w io.Writer, ro *v1alpha2.TopologyRollout) error {
			return printer.Rollout(w, ro, time.Time{})
		},
		done: rolloutEnded,
		gaveUp: func(ro *v1alpha2.TopologyRollout) error {
			return fmt.Errorf("TopologyRollout %s has not ended after %s: %s (it goes on)", ro.Name, o.Timeout, ro.Status.Message)
		},
	}
	if o.terminal {
		m := rolloutview.New(o.read, o.Interval)
		return followLive(ctx, o.IOStreams, m, m.Model, ro, f)
	}
	return follow(ctx, o.IOStreams, o.Interval, ro, f)
}

// rolloutEnded tells whether a watch stops at ro: completed (exit 0),
// aborted or halted (exit 1, with why).
func rolloutEnded(ro *v1alpha2.TopologyRollout) (bool, error) {
	switch {
	case !fleet.Ended(ro):
		return false, nil
	case ro.Status.Phase == v1alpha2.RolloutCompleted:
		return true, nil
	}
	return true, fmt.Errorf("TopologyRollout %s is %s: %s", ro.Name, ro.Status.Phase, ro.Status.Message)
}

// Controls of a whole rollout.
const (
	controlPause  = "pause"
	controlResume = "resume"
	controlAbort  = "abort"
)

// RolloutControlOptions are the inputs of `rollout pause|resume|abort`.
type RolloutControlOptions struct {
	liveFlags
	genericiooptions.IOStreams
	Name, Action string
	Yes          bool
}

// NewRolloutPauseOptions returns the inputs of `rollout pause`.
func NewRolloutPauseOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *RolloutControlOptions {
	return &RolloutControlOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams, Action: controlPause}
}

// NewRolloutResumeOptions returns the inputs of `rollout resume`.
func NewRolloutResumeOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *RolloutControlOptions {
	return &RolloutControlOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams, Action: controlResume}
}

// NewRolloutAbortOptions returns the inputs of `rollout abort`.
func NewRolloutAbortOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *RolloutControlOptions {
	return &RolloutControlOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams, Action: controlAbort}
}

// NewCmdRolloutPause returns `rollout pause`.
func NewCmdRolloutPause(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewRolloutPauseOptions(flags, streams)
	return &cobra.Command{Use: "pause NAME", Short: "Pause a fleet rollout: clusters in flight finish, none starts", Args: cobra.ExactArgs(1), RunE: runE(o)}
}

// NewCmdRolloutResume returns `rollout resume`.
func NewCmdRolloutResume(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewRolloutResumeOptions(flags, streams)
	return &cobra.Command{Use: "resume NAME", Short: "Resume a paused fleet rollout", Args: cobra.ExactArgs(1), RunE: runE(o)}
}

// NewCmdRolloutAbort returns `rollout abort`.
func NewCmdRolloutAbort(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewRolloutAbortOptions(flags, streams)
	cmd := &cobra.Command{Use: "abort NAME", Short: "Abort a fleet rollout for good: no cluster starts again, each stays as it is", Args: cobra.ExactArgs(1), RunE: runE(o)}
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation")
	return cmd
}

// Complete takes the rollout's name.
func (o *RolloutControlOptions) Complete(args []string) error {
	o.Name = args[0]
	return nil
}

// Validate has nothing to check.
func (o *RolloutControlOptions) Validate() error { return nil }

// Run sets spec.paused or spec.aborted, guarded by the version read.
func (o *RolloutControlOptions) Run(ctx context.Context) error {
	asked := false
	return updateRollout(ctx, &o.liveFlags, o.Name, func(ro *v1alpha2.TopologyRollout) (string, error) {
		switch o.Action {
		case controlPause:
			if ro.Spec.Paused {
				return fmt.Sprintf("TopologyRollout %s is paused already.", ro.Name), nil
			}
			ro.Spec.Paused = true
			return fmt.Sprintf("TopologyRollout %s paused: the %d cluster(s) in flight finish, none starts until `kubectl topology rollout resume %s`.", ro.Name, ro.Status.InFlight, ro.Name), nil
		case controlResume:
			if ro.Spec.Aborted {
				return "", fmt.Errorf("TopologyRollout %s was aborted and cannot be resumed: create another", ro.Name)
			}
			msg := fmt.Sprintf("TopologyRollout %s resumed.", ro.Name)
			if !ro.Spec.Paused {
				msg = fmt.Sprintf("TopologyRollout %s is not paused.", ro.Name)
			}
			if fleet.Halted(ro, &ro.Status) {
				msg += fmt.Sprintf(" It is halted: %d cluster(s) failed, more than its failure budget; retry or skip them (`kubectl topology rollout status %s` names them).", ro.Status.Failed, ro.Name)
			}
			ro.Spec.Paused = false
			return msg, nil
		default:
			if ro.Spec.Aborted {
				return fmt.Sprintf("TopologyRollout %s is aborted already.", ro.Name), nil
			}
			// Asked once: a conflict reads the rollout again, the answer stands.
			if !o.Yes && !asked && !confirm(o.In, o.Out, fmt.Sprintf("Abort TopologyRollout %s for good (%d succeeded, %d in flight are left as they are)?", ro.Name, ro.Status.Succeeded, ro.Status.InFlight)) {
				return "", errNotConfirmed
			}
			asked = true
			ro.Spec.Aborted = true
			return fmt.Sprintf("TopologyRollout %s aborted: no cluster starts again; each is left as it is.", ro.Name), nil
		}
	}, o.Out)
}

var errNotConfirmed = errors.New("not confirmed; nothing was changed")

// RolloutClusterOptions are the inputs of `rollout retry|skip NAME CLUSTER`.
type RolloutClusterOptions struct {
	liveFlags
	genericiooptions.IOStreams
	Name, Cluster string
	Retry         bool
}

// NewRolloutRetryOptions returns the inputs of `rollout retry`.
func NewRolloutRetryOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *RolloutClusterOptions {
	return &RolloutClusterOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams, Retry: true}
}

// NewRolloutSkipOptions returns the inputs of `rollout skip`.
func NewRolloutSkipOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *RolloutClusterOptions {
	return &RolloutClusterOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams}
}

// NewCmdRolloutRetry returns `rollout retry`.
func NewCmdRolloutRetry(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use: "retry NAME CLUSTER", Short: "Start a failed cluster of a fleet rollout again", Args: cobra.ExactArgs(2),
		RunE:    runE(NewRolloutRetryOptions(flags, streams)),
		Example: "  kubectl topology rollout retry to-1-35 topology/prod-7 -n team-a\n  kubectl topology rollout retry to-1-35 team-a/prod-7",
	}
}

// NewCmdRolloutSkip returns `rollout skip`.
func NewCmdRolloutSkip(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use: "skip NAME CLUSTER", Short: "Leave one cluster out of a fleet rollout (a changed cluster stays changed)", Args: cobra.ExactArgs(2),
		RunE:    runE(NewRolloutSkipOptions(flags, streams)),
		Example: "  kubectl topology rollout skip to-1-35 topology/prod-7 -n team-a\n  kubectl topology rollout skip to-1-35 team-a/prod-7",
	}
}

// Complete takes the rollout and the cluster.
func (o *RolloutClusterOptions) Complete(args []string) error {
	o.Name, o.Cluster = args[0], args[1]
	return nil
}

// Validate checks the cluster reference's form.
func (o *RolloutClusterOptions) Validate() error {
	if strings.Count(o.Cluster, "/") > 2 {
		return fmt.Errorf("%q: give CLUSTER as NAME, NAMESPACE/NAME, topology/NAME or cluster/NAME", o.Cluster)
	}
	return nil
}

// Run adds the cluster to spec.retry or spec.skip.
func (o *RolloutClusterOptions) Run(ctx context.Context) error {
	return updateRollout(ctx, &o.liveFlags, o.Name, func(ro *v1alpha2.TopologyRollout) (string, error) {
		c, err := findRolloutCluster(ro, o.Cluster, o.access.Namespace, o.configFlags.Namespace != nil && *o.configFlags.Namespace != "")
		if err != nil {
			return "", err
		}
		if !o.Retry {
			if c.Phase == v1alpha2.ClusterSucceeded || c.Phase == v1alpha2.ClusterSkipped {
				return "", fmt.Errorf("%s is %s in TopologyRollout %s: nothing to skip", c.Key(), c.Phase, ro.Name)
			}
			ro.Spec.Skip = append(ro.Spec.Skip, c.RolloutClusterRef)
			return fmt.Sprintf("%s is skipped by TopologyRollout %s.", c.Key(), ro.Name), nil
		}
		if c.Phase != v1alpha2.ClusterFailed {
			return "", fmt.Errorf("%s is %s in TopologyRollout %s: only a Failed cluster can be retried", c.Key(), c.Phase, ro.Name)
		}
		attempt := c.Attempt + 1
		ro.Spec.Retry = append(ro.Spec.Retry, v1alpha2.RolloutRetry{RolloutClusterRef: c.RolloutClusterRef, Attempt: attempt})
		msg := fmt.Sprintf("%s will be tried again (attempt %d) by TopologyRollout %s.", c.Key(), attempt, ro.Name)
		if ro.Spec.Paused {
			msg += fmt.Sprintf(" The rollout is paused: `kubectl topology rollout resume %s` starts it.", ro.Name)
		}
		return msg, nil
	}, o.Out)
}

// findRolloutCluster finds ref among the rollout's clusters: NAME,
// NAMESPACE/NAME, topology/NAME or cluster/NAME, the namespace from -n when
// not given. A bare NAME without -n may match in any namespace, once.
func findRolloutCluster(ro *v1alpha2.TopologyRollout, ref, namespace string, namespaceGiven bool) (v1alpha2.RolloutClusterStatus, error) {
	kind, ns, name := "", "", ref
	if before, after, ok := strings.Cut(ref, "/"); ok {
		if known, isKind := live.KindOf(before); isKind {
			kind, name = known, after
		} else {
			ns, name = before, after
		}
	}
	if ns == "" && namespaceGiven {
		ns = namespace
	}
	var found []v1alpha2.RolloutClusterStatus
	for _, c := range ro.Status.Clusters {
		if c.Name == name && (ns == "" || c.Namespace == ns) && (kind == "" || c.Kind == kind) {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return v1alpha2.RolloutClusterStatus{}, fmt.Errorf("TopologyRollout %s has no cluster %q; `kubectl topology rollout status %s` lists them", ro.Name, ref, ro.Name)
	case 1:
		return found[0], nil
	}
	var keys []string
	for _, c := range found {
		keys = append(keys, c.Key())
	}
	return v1alpha2.RolloutClusterStatus{}, fmt.Errorf("%q names %d clusters of TopologyRollout %s (%s): give NAMESPACE/NAME or KIND/NAME with -n", ref, len(found), ro.Name, strings.Join(keys, ", "))
}

// updateRollout edits the rollout name as EditRollout does and prints what
// edit says.
func updateRollout(ctx context.Context, l *liveFlags, name string, edit func(*v1alpha2.TopologyRollout) (string, error), out io.Writer) error {
	if err := l.connectOnce(); err != nil {
		return err
	}
	msg := ""
	if err := l.access.EditRollout(ctx, name, func(ro *v1alpha2.TopologyRollout) error {
		var err error
		msg, err = edit(ro)
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintln(out, msg)
	return nil
}
