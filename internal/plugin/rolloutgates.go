package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/internal/printer"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// RolloutApproveOptions are the inputs of `rollout approve`.
type RolloutApproveOptions struct {
	liveFlags
	genericiooptions.IOStreams
	Name string
	// Wave to approve; 0: the wave the rollout waits on, or else the first
	// that needs an approval and has none.
	Wave int32

	now clock
}

// NewRolloutApproveOptions returns the inputs of `rollout approve`.
func NewRolloutApproveOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *RolloutApproveOptions {
	return &RolloutApproveOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams}
}

// NewCmdRolloutApprove returns `rollout approve`.
func NewCmdRolloutApprove(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewRolloutApproveOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "approve NAME [--wave N]",
		Short: "Let a wave of a fleet rollout that needs an approval start, in your name",
		Long: `Approve records, in the rollout's spec.approvals, that you let a wave start
that was created needing an approval (rollout create --approval 2,3). The
agent's webhook admits an approval only in the name of the user who sends
it, as the API server authenticated them; the agent records an Event of who
approved and when as the wave starts. An approval cannot be taken back:
pause or abort the rollout instead.`,
		Example: `  kubectl topology rollout approve to-1-35            # the wave it waits on
  kubectl topology rollout approve to-1-35 --wave 3   # a later wave, ahead of time`,
		Args: cobra.ExactArgs(1),
		RunE: runE(o),
	}
	cmd.Flags().Int32Var(&o.Wave, "wave", 0, "The wave to approve (default: the one the rollout waits on)")
	return cmd
}

// Complete takes the rollout's name.
func (o *RolloutApproveOptions) Complete(args []string) error {
	o.Name = args[0]
	return nil
}

// Validate checks the wave's form.
func (o *RolloutApproveOptions) Validate() error {
	if o.Wave < 0 {
		return fmt.Errorf("--wave %d: waves count from 1", o.Wave)
	}
	return nil
}

// Run asks the API server who the user is, and adds the approval in that
// name, guarded by the version read.
func (o *RolloutApproveOptions) Run(ctx context.Context) error {
	if err := o.connectOnce(); err != nil {
		return err
	}
	who, err := o.access.WhoAmI(ctx)
	if err != nil {
		return err
	}
	return updateRollout(ctx, &o.liveFlags, o.Name, func(ro *v1alpha2.TopologyRollout) (string, error) {
		wave, err := waveToApprove(ro, o.Wave)
		if err != nil {
			return "", err
		}
		if a := fleet.Approval(ro, wave); a != nil {
			return fmt.Sprintf("Wave %d of TopologyRollout %s was approved already, by %s at %s.", wave, ro.Name, a.By, a.At.UTC().Format(time.RFC3339)), nil
		}
		ro.Spec.Approvals = append(ro.Spec.Approvals, v1alpha2.RolloutApproval{Wave: wave, By: who, At: metav1.NewTime(o.now.now().Truncate(time.Second))})
		msg := fmt.Sprintf("Wave %d of TopologyRollout %s approved by %s: it starts when the waves before it have finished.", wave, ro.Name, who)
		if ro.Spec.Paused {
			msg += fmt.Sprintf(" The rollout is paused: `kubectl topology rollout resume %s` starts it.", ro.Name)
		}
		return msg, nil
	}, o.Out)
}

// waveToApprove is wave, checked, or when 0 the wave ro waits on for an
// approval, else its first wave that needs one and has none.
func waveToApprove(ro *v1alpha2.TopologyRollout, wave int32) (int32, error) {
	waves := fleet.Waves(ro.Spec.Strategy)
	if wave == 0 {
		if ro.Status.Phase == v1alpha2.RolloutWaitingForApproval {
			return ro.Status.Wave, nil
		}
		for i, w := range waves {
			if w.Approval && fleet.Approval(ro, int32(i+1)) == nil {
				return int32(i + 1), nil
			}
		}
		return 0, fmt.Errorf("TopologyRollout %s has no wave that waits for an approval (waves that need one are set at creation: rollout create --approval 2,3)", ro.Name)
	}
	if int(wave) > len(waves) {
		return 0, fmt.Errorf("TopologyRollout %s has %d wave(s), no wave %d", ro.Name, len(waves), wave)
	}
	if !waves[wave-1].Approval {
		return 0, fmt.Errorf("wave %d of TopologyRollout %s needs no approval: it starts when the wave before it has finished", wave, ro.Name)
	}
	return wave, nil
}

// RolloutUndoOptions are the inputs of `rollout undo`.
type RolloutUndoOptions struct {
	liveFlags
	genericiooptions.IOStreams
	// Name of the rollout undone; UndoName of the rollout that undoes it.
	Name, UndoName     string
	DryRun, Yes, Quiet bool
}

// NewRolloutUndoOptions returns the inputs of `rollout undo`.
func NewRolloutUndoOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *RolloutUndoOptions {
	return &RolloutUndoOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams}
}

// NewCmdRolloutUndo returns `rollout undo`.
func NewCmdRolloutUndo(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewRolloutUndoOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "undo NAME [--name UNDO] [--dry-run]",
		Short: "Roll a class rebase or variable change back, cluster by cluster, with the same waves and gates",
		Long: `Undo creates the reverse rollout of a completed or aborted one: each cluster
it changed goes back to the value it had before (the rollout recorded it
when it started the cluster), in the same waves, with the same soak,
budget, windows and approvals. A variable a cluster did not set before is
unset again, so the class's default applies. A version change cannot be
undone, because Kubernetes has no downgrade: undo refuses it and says so.
The preview shows, per cluster, what goes back and whether it passes
preflight now; --dry-run stops there.`,
		Example: `  kubectl topology rollout undo log-debug --dry-run
  kubectl topology rollout undo log-debug --yes`,
		Args: cobra.ExactArgs(1),
		RunE: runE(o),
	}
	cmd.Flags().StringVar(&o.UndoName, "name", "", "Name of the rollout that undoes it (default NAME-undo)")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "Check and preview only; create nothing")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation")
	cmd.Flags().BoolVarP(&o.Quiet, "quiet", "q", false, "Print the waves and the fleet's total, not a line per cluster")
	return cmd
}

// Complete takes the rollout's name and names the undo.
func (o *RolloutUndoOptions) Complete(args []string) error {
	o.Name = args[0]
	if o.UndoName == "" {
		o.UndoName = o.Name + "-undo"
	}
	return nil
}

// Validate has nothing more to check: the rollout undone is checked live.
func (o *RolloutUndoOptions) Validate() error { return nil }

// Run reads the rollout undone, checks its undo as the webhook does,
// previews it, asks, and creates it.
func (o *RolloutUndoOptions) Run(ctx context.Context) error {
	if err := o.connectOnce(); err != nil {
		return err
	}
	orig, err := o.access.Rollout(ctx, o.Name)
	if err != nil {
		return err
	}
	ro := &v1alpha2.TopologyRollout{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: v1alpha2.TopologyRolloutKind},
		ObjectMeta: metav1.ObjectMeta{Name: o.UndoName},
		Spec: v1alpha2.TopologyRolloutSpec{
			Undo:     o.Name,
			Targets:  *orig.Spec.Targets.DeepCopy(),
			Strategy: *orig.Spec.Strategy.DeepCopy(),
		},
	}
	ro.Spec.Targets.JoinLate = false
	return createRollout(ctx, o.access, o.IOStreams, ro, o.DryRun, o.Yes, o.Quiet)
}

// RolloutListOptions are the inputs of `rollout list`.
type RolloutListOptions struct {
	liveFlags
	genericiooptions.IOStreams
	Output string

	now clock
}

// NewRolloutListOptions returns the inputs of `rollout list`.
func NewRolloutListOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *RolloutListOptions {
	return &RolloutListOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams}
}

// NewCmdRolloutList returns `rollout list`.
func NewCmdRolloutList(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewRolloutListOptions(flags, streams)
	cmd := &cobra.Command{
		Use:     "list [-o json|yaml]",
		Aliases: []string{"ls", "history"},
		Short:   "List every fleet rollout: its change, outcome, start and end, and its failures by reason",
		Args:    cobra.NoArgs,
		RunE:    runE(o),
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "json or yaml: the TopologyRolloutList as stored, for automation")
	return cmd
}

// Complete has nothing to take.
func (o *RolloutListOptions) Complete([]string) error { return nil }

// Validate checks the output format.
func (o *RolloutListOptions) Validate() error {
	if o.Output != "" && o.Output != "json" && o.Output != "yaml" {
		return fmt.Errorf("--output %q: give json or yaml", o.Output)
	}
	return nil
}

// Run lists the rollouts, oldest first.
func (o *RolloutListOptions) Run(ctx context.Context) error {
	if err := o.connectOnce(); err != nil {
		return err
	}
	items, err := o.access.Rollouts(ctx)
	if err != nil {
		return err
	}
	list := &v1alpha2.TopologyRolloutList{Items: items}
	list.SetGroupVersionKind(v1alpha2.GroupVersion.WithKind("TopologyRolloutList"))
	for i := range list.Items {
		list.Items[i].SetGroupVersionKind(v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyRolloutKind))
	}
	switch o.Output {
	case "json":
		return (&printers.JSONPrinter{}).PrintObj(list, o.Out)
	case "yaml":
		return (&printers.YAMLPrinter{}).PrintObj(list, o.Out)
	}
	if len(list.Items) == 0 {
		fmt.Fprintln(o.ErrOut, "No TopologyRollouts found.")
		return nil
	}
	return printer.RolloutList(o.Out, list.Items, o.now.now())
}
