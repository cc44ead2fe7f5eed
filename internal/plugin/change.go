package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/draft"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/printer"
	"github.com/kubectl-topology/kubectl-topology/internal/transient"
	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// changeOptions are what scale, set variable and upgrade share: a Topology
// to change, a preview of what the change rolls out, a confirmation, and a
// write guarded by the resourceVersion it was read at.
type changeOptions struct {
	liveFlags
	genericiooptions.IOStreams
	name   string
	dryRun bool
	yes    bool
	// force applies a change that warns without asking, even with --yes.
	force bool
}

func (o *changeOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "Validate and preview only; change nothing")
	cmd.Flags().BoolVarP(&o.yes, "yes", "y", false, "Do not ask for confirmation")
}

// change is one edit of a live Topology, and what a command adds to the
// shared flow.
type change struct {
	// mutate edits a copy of the Topology. After a conflict it is applied
	// again, to the server's newer version.
	mutate func(*v1alpha2.Topology) error
	// preflight, when set, refuses the edit before anything is sent.
	preflight func(ctx context.Context, orig, edited *v1alpha2.Topology) error
	// preview, when set, prints more than the objects that change.
	preview func(ctx context.Context, orig, edited *v1alpha2.Topology)
	// question is what the confirmation asks.
	question func(orig, edited *v1alpha2.Topology) string
	// warnings, when set, names what makes the change dangerous: the user is
	// asked even with --yes, unless --force.
	warnings func(orig, edited *v1alpha2.Topology) []string
}

// maxAttempts bounds how often a change is laid on a newer version of the
// Topology after a conflict before the command gives up.
const maxAttempts = 3

// apply reads the Topology, edits it, checks the edit with a server-side dry
// run, previews what the agent would change, asks, and writes it guarded by
// the resourceVersion it read. When the Topology changed on the server
// meanwhile, it says what changed and starts again from the newer version;
// it stops if the server changed a setting this change also changes. It
// returns the Topology written, or nil when nothing was.
func (o *changeOptions) apply(ctx context.Context, c change) (*v1alpha2.Topology, error) {
	t, err := o.readTopology(ctx, o.name)
	if err != nil {
		return nil, err
	}
	ca := o.access
	for attempt := 1; ; attempt++ {
		edited := t.DeepCopy()
		if err := c.mutate(edited); err != nil {
			return nil, err
		}
		what := draft.Changes(t, edited)
		if len(what) == 0 {
			fmt.Fprintf(o.Out, "%s %s/%s already is that way; nothing to do.\n", contract.KindOf(t), t.Namespace, t.Name)
			return nil, nil
		}
		if c.preflight != nil {
			if err := c.preflight(ctx, t, edited); err != nil {
				return nil, err
			}
		}
		if err := draft.DryRun(ctx, ca.Store(t), t, edited); err != nil {
			if apierrors.IsConflict(err) && attempt < maxAttempts {
				// Written on the server since it was read (the agent marks a
				// Topology whose Cluster it made): again, from the newer version.
				if t, err = o.readTopology(ctx, o.name); err != nil {
					return nil, err
				}
				continue
			}
			return nil, fmt.Errorf("the change is refused; nothing was changed: %w", live.Explain(err, ca))
		}
		fmt.Fprintf(o.Out, "%s %s/%s:\n", contract.KindOf(t), t.Namespace, t.Name)
		for _, w := range what {
			fmt.Fprintf(o.Out, "  %s\n", w)
		}
		if err := o.printPlan(ctx, edited); err != nil {
			return nil, refusedChange(err)
		}
		if c.preview != nil {
			c.preview(ctx, t, edited)
		}
		var warnings []string
		if c.warnings != nil {
			warnings = c.warnings(t, edited)
		}
		for _, w := range warnings {
			fmt.Fprintf(o.Out, "WARNING: %s\n", w)
		}
		if o.dryRun {
			fmt.Fprintln(o.Out, "Dry run: nothing was changed.")
			return nil, nil
		}
		question := fmt.Sprintf("Apply to %s %s/%s?", contract.KindOf(t), t.Namespace, t.Name)
		if c.question != nil {
			question = c.question(t, edited)
		}
		switch {
		case len(warnings) > 0 && !o.force:
			if !confirm(o.In, o.Out, question+" (see the warning above)") {
				return nil, fmt.Errorf("not confirmed; nothing was changed (this change warns, so it is asked even with --yes; pass --force to apply it without asking)")
			}
		case !o.yes && !o.force && !confirm(o.In, o.Out, question):
			return nil, fmt.Errorf("not confirmed; nothing was changed (pass --yes to skip the question)")
		}
		written, err := draft.Write(ctx, ca.Store(t), t, edited)
		var conflict *draft.ConflictError
		switch {
		case errors.As(err, &conflict) && len(conflict.Both) == 0 && attempt < maxAttempts:
			fmt.Fprintf(o.ErrOut, "%s.\n", conflict.Error())
			t = conflict.Latest
			if upstream.IsCluster(t) {
				// Its rollout summary is read again, for the preflight.
				if t, err = o.readTopology(ctx, o.name); err != nil {
					return nil, err
				}
			}
			continue
		case errors.As(err, &conflict):
			return nil, fmt.Errorf("%w; run the command again once you have looked at it (kubectl topology status %s -n %s)", conflict, upstream.Ref(t), t.Namespace)
		case err != nil:
			return nil, live.Explain(err, ca)
		}
		return written, nil
	}
}

// refusedChange says that a change whose plan the API server refuses in
// its dry run changed nothing; other errors are returned as they are.
func refusedChange(err error) error {
	var refused *live.RefusedError
	if errors.As(err, &refused) && !transient.Is(err) {
		return fmt.Errorf("the change is refused; nothing was changed: %w", err)
	}
	return err
}

// printPlan prints what the agent would change for edited, as plan NAME does.
func (o *changeOptions) printPlan(ctx context.Context, edited *v1alpha2.Topology) error {
	p, warnings, err := o.access.Plan(ctx, edited)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(o.ErrOut, "Warning: "+w)
	}
	who := contract.Reconciler(edited)
	if edited.Spec.Paused {
		fmt.Fprintf(o.Out, "Paused: nothing will be applied while the %s is paused.\n", contract.KindOf(edited))
		if len(p.Changes) > 0 {
			fmt.Fprintf(o.Out, "Once resumed, %s would change:\n", who)
		}
	}
	if len(p.Changes) == 0 {
		fmt.Fprintf(o.Out, "%s would change no object.\n", capitalize(who))
		return nil
	}
	if !edited.Spec.Paused {
		fmt.Fprintf(o.Out, "%s would then change:\n", capitalize(who))
	}
	return printer.Changes(o.Out, p.Changes)
}

// applied says what to do next once a change is written.
// run applies c and, once something is written, says how to follow it.
func (o *changeOptions) run(ctx context.Context, c change) error {
	written, err := o.apply(ctx, c)
	if written != nil {
		o.applied(written)
	}
	return err
}

func (o *changeOptions) applied(t *v1alpha2.Topology) {
	fmt.Fprintf(o.Out, "Applied. Follow it with: kubectl topology status %s -n %s --watch\n", upstream.Ref(t), t.Namespace)
}

// ScaleOptions are the inputs of `scale`.
type ScaleOptions struct {
	changeOptions
	// ControlPlane is the new control plane replica count; -1 leaves it.
	ControlPlane int
	// Workers maps pool names to replica counts.
	Workers map[string]string
}

// NewScaleOptions returns the inputs of `scale`, with their defaults.
func NewScaleOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *ScaleOptions {
	return &ScaleOptions{changeOptions: changeOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams}, ControlPlane: -1}
}

// NewCmdScale returns `scale`.
func NewCmdScale(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewScaleOptions(flags, streams)
	cmd := &cobra.Command{
		Use:               "scale NAME [--control-plane N] [--worker POOL=N]...",
		ValidArgsFunction: completeTopologyNames(flags),
		Short:             "Change replicas of the control plane or of pools, with a preview",
		Example: `  kubectl topology scale dev --control-plane 5
  kubectl topology scale dev --worker md-a=4 --worker mp-0=2 --dry-run
  kubectl topology scale cluster/dev --control-plane 3   # an upstream Cluster with spec.topology`,
		Args: cobra.ExactArgs(1),
		RunE: runE(o),
	}
	cmd.Flags().IntVar(&o.ControlPlane, "control-plane", -1, "Control plane replicas")
	cmd.Flags().StringToStringVar(&o.Workers, "worker", nil, "POOL=N: replicas of a MachineDeployment or MachinePool (repeatable)")
	cmd.Flags().BoolVar(&o.force, "force", false, "Apply a change that warns (control plane at 0, no worker left) without asking")
	o.addFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("worker", completePools(flags))
	return cmd
}

// PauseOptions are the inputs of `pause` and `resume`.
type PauseOptions struct {
	changeOptions
	// Paused is what spec.paused becomes.
	Paused bool
}

// NewPauseOptions returns the inputs of `pause`, with their defaults.
func NewPauseOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *PauseOptions {
	return &PauseOptions{changeOptions: changeOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams}, Paused: true}
}

// NewResumeOptions returns the inputs of `resume`, with their defaults.
func NewResumeOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *PauseOptions {
	return &PauseOptions{changeOptions: changeOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams}}
}

// NewCmdPause returns `pause`.
func NewCmdPause(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return pauseCommand(NewPauseOptions(flags, streams), &cobra.Command{
		Use:     "pause NAME",
		Short:   "Pause a Topology: the agent applies nothing to its cluster until it is resumed",
		Example: "  kubectl topology pause dev\n  kubectl topology pause dev --yes\n  kubectl topology pause cluster/dev   # an upstream Cluster with spec.topology",
	})
}

// NewCmdResume returns `resume`.
func NewCmdResume(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return pauseCommand(NewResumeOptions(flags, streams), &cobra.Command{
		Use:     "resume NAME",
		Short:   "Resume a paused Topology: the agent applies what it asks for again, previewed here",
		Example: "  kubectl topology resume dev --dry-run\n  kubectl topology resume dev --yes\n  kubectl topology resume cluster/dev   # an upstream Cluster with spec.topology",
	})
}

// pauseCommand completes cmd, `pause` or `resume`, with what they share.
func pauseCommand(o *PauseOptions, cmd *cobra.Command) *cobra.Command {
	cmd.ValidArgsFunction = completeTopologyNames(o.configFlags)
	cmd.Args = cobra.ExactArgs(1)
	cmd.RunE = runE(o)
	o.addFlags(cmd)
	return cmd
}

// Complete takes the topology's name from the arguments.
func (o *ScaleOptions) Complete(args []string) error {
	o.name = args[0]
	return nil
}

// Validate checks the flags.
func (o *ScaleOptions) Validate() error {
	if o.ControlPlane < 0 && len(o.Workers) == 0 {
		return fmt.Errorf("nothing to scale: give --control-plane N and/or --worker POOL=N")
	}
	for pool, n := range o.Workers {
		if v, err := strconv.Atoi(n); err != nil || v < 0 {
			return fmt.Errorf("--worker %s=%s: replicas must be a whole number, 0 or more", pool, n)
		}
	}
	return nil
}

// Run previews the new replicas, asks, and applies them.
func (o *ScaleOptions) Run(ctx context.Context) error {
	return o.run(ctx, change{mutate: o.mutate, warnings: rules.ChangeWarnings})
}

func (o *ScaleOptions) mutate(t *v1alpha2.Topology) error {
	set := func(s draft.Scope, n int) {
		v := int32(n)
		*draft.Replicas(t, s) = &v
	}
	if o.ControlPlane >= 0 {
		set(draft.Scope{Kind: draft.ControlPlane}, o.ControlPlane)
	}
	for _, pool := range slices.Sorted(maps.Keys(o.Workers)) {
		n, _ := strconv.Atoi(o.Workers[pool])
		switch {
		case t.MachineDeployment(pool) != nil:
			set(draft.Scope{Kind: draft.MachineDeployment, Name: pool}, n)
		case t.MachinePool(pool) != nil:
			set(draft.Scope{Kind: draft.MachinePool, Name: pool}, n)
		default:
			has := strings.Join(poolNames(t), ", ")
			if has == "" {
				has = "none"
			}
			return fmt.Errorf("--worker %s: the Topology has no pool of that name; it has %s", pool, has)
		}
	}
	return nil
}

// poolNames lists the Topology's MachineDeployments and MachinePools by name.
func poolNames(t *v1alpha2.Topology) []string {
	var names []string
	if w := t.Spec.Workers; w != nil {
		for _, md := range w.MachineDeployments {
			names = append(names, md.Name)
		}
		for _, mp := range w.MachinePools {
			names = append(names, mp.Name)
		}
	}
	return names
}

// SetVariableOptions are the inputs of `set variable`.
type SetVariableOptions struct {
	changeOptions
	// Values are KEY=VALUE pairs; a VALUE that parses as JSON is used as such.
	Values []string
	// FromFiles are KEY=PATH pairs whose files hold YAML or JSON values.
	FromFiles map[string]string
}

// NewSetVariableOptions returns the inputs of `set variable`, with their defaults.
func NewSetVariableOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *SetVariableOptions {
	return &SetVariableOptions{changeOptions: changeOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams}}
}

// NewCmdSet returns `set` with its `variable` and `version` subcommands.
func NewCmdSet(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	set := &cobra.Command{Use: "set", Short: "Change a Topology's settings, with a preview"}
	o := NewSetVariableOptions(flags, streams)
	cmd := &cobra.Command{
		Use:               "variable NAME KEY=VALUE... [--from-file KEY=PATH]",
		ValidArgsFunction: completeVariables(flags),
		Short:             "Set topology variables; values are checked against the class's schemas",
		Example: `  kubectl topology set variable dev imageRepository=registry.example.com
  kubectl topology set variable dev auditPolicy='{"enabled":true,"level":"Request"}'
  kubectl topology set variable dev --from-file workerLabels=labels.yaml
  kubectl topology set variable cluster/dev imageRepository=registry.example.com   # an upstream Cluster with spec.topology`,
		Args: cobra.MinimumNArgs(1),
		RunE: runE(o),
	}
	cmd.Flags().StringToStringVar(&o.FromFiles, "from-file", nil, "KEY=PATH: read the value of KEY from a YAML or JSON file")
	o.addFlags(cmd)
	set.AddCommand(cmd, NewCmdSetVersion(flags, streams))
	return set
}

// Complete takes the topology's name and the KEY=VALUE pairs from the arguments.
func (o *SetVariableOptions) Complete(args []string) error {
	o.name, o.Values = args[0], args[1:]
	return nil
}

// Validate refuses an empty change and bad values before the cluster is
// asked anything.
func (o *SetVariableOptions) Validate() error {
	if len(o.Values) == 0 && len(o.FromFiles) == 0 {
		return fmt.Errorf("nothing to set: give KEY=VALUE or --from-file KEY=PATH")
	}
	for _, kv := range o.Values {
		if _, _, err := parseVariable(kv); err != nil {
			return err
		}
	}
	return nil
}

// Run previews the new values, asks, and applies them.
func (o *SetVariableOptions) Run(ctx context.Context) error {
	return o.run(ctx, change{mutate: o.mutate})
}

func (o *SetVariableOptions) mutate(t *v1alpha2.Topology) error {
	values := map[string][]byte{}
	for _, kv := range o.Values {
		k, raw, err := parseVariable(kv)
		if err != nil {
			return err
		}
		values[k] = raw
	}
	for k, path := range o.FromFiles {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("--from-file %s: %w", k, err)
		}
		raw, err := yaml.YAMLToJSON(data)
		if err != nil {
			return fmt.Errorf("--from-file %s=%s: not YAML or JSON: %w", k, path, err)
		}
		values[k] = raw
	}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		v, ok := draft.DecodeJSON(values[k])
		if !ok {
			return fmt.Errorf("variable %s: %s is not a JSON value", k, values[k])
		}
		if err := draft.SetVariable(t, draft.Scope{}, k, nil, v, true); err != nil {
			return err
		}
	}
	return nil
}

// parseVariable reads NAME=VALUE for a topology variable: a VALUE that is
// valid JSON is taken as JSON (numbers, booleans, objects), anything else as
// a string, so `replicas=3` and `registry=example.com` both do what is meant.
// A VALUE that starts like a JSON object, list or string but does not parse
// is refused: taking `{"level": Request}` as a string hides the typo.
func parseVariable(kv string) (string, []byte, error) {
	name, value, ok := strings.Cut(kv, "=")
	if !ok || name == "" {
		return "", nil, fmt.Errorf("%q: give NAME=VALUE", kv)
	}
	if json.Valid([]byte(value)) {
		return name, []byte(value), nil
	}
	if trimmed := strings.TrimSpace(value); trimmed != "" && strings.ContainsRune(`{["`, rune(trimmed[0])) {
		var v any
		err := json.Unmarshal([]byte(value), &v)
		return "", nil, fmt.Errorf("variable %s: %s is not valid JSON (%v); quote a string that starts with %c as JSON, e.g. %s='%q'", name, value, err, trimmed[0], name, value)
	}
	raw, err := json.Marshal(value)
	return name, raw, err
}

// Complete takes the topology's name from the arguments.
func (o *PauseOptions) Complete(args []string) error {
	o.name = args[0]
	return nil
}

// Validate has nothing to check: pause and resume take no flag of their own.
func (o *PauseOptions) Validate() error { return nil }

// Run previews, asks, and sets spec.paused.
func (o *PauseOptions) Run(ctx context.Context) error {
	written, err := o.apply(ctx, change{mutate: func(t *v1alpha2.Topology) error {
		t.Spec.Paused = o.Paused
		return nil
	}})
	if written == nil {
		return err
	}
	if o.Paused {
		fmt.Fprintf(o.Out, "Paused: %s changes nothing of %s %s/%s until `kubectl topology resume %s -n %s`.\n", contract.Reconciler(written), contract.KindOf(written), written.Namespace, written.Name, upstream.Ref(written), written.Namespace)
	} else {
		o.applied(written)
	}
	return err
}
