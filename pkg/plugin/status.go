package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine"
	"github.com/kubectl-topology/kubectl-topology/pkg/tui"
)

// StatusOptions are the inputs of `status`.
type StatusOptions struct {
	liveFlags
	genericiooptions.IOStreams

	// Name is the Topology.
	Name string
	// Watch follows the rollout until it settles.
	Watch bool
	// Interval between reads while watching.
	Interval time.Duration
	// Timeout ends a watch that has not settled with an error; 0 waits on.
	Timeout time.Duration

	terminal bool
}

// NewStatusCommand returns `status`.
func NewStatusCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &StatusOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams, Interval: 2 * time.Second}
	cmd := &cobra.Command{
		Use:               "status NAME [--watch [--timeout D]]",
		ValidArgsFunction: completeTopologyNames(flags),
		Short:             "Show a Topology's rollout: the control plane, then each pool, and why a part waits",
		Example: `  kubectl topology status dev
  kubectl topology status dev --watch
  kubectl topology status dev --watch --timeout 30m   # exit 1 if not settled by then`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "Follow the rollout until it settles: a live view in a terminal, a line per change when piped")
	cmd.Flags().DurationVar(&o.Interval, "interval", o.Interval, "How often to read the Topology while watching")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "With --watch: give up and exit 1 if the rollout has not settled by then (0: wait on); the rollout itself goes on")
	return cmd
}

// Complete reads the arguments.
func (o *StatusOptions) Complete(args []string) error {
	o.Name = args[0]
	if f, ok := o.Out.(interface{ Fd() uintptr }); ok {
		o.terminal = term.IsTerminal(int(f.Fd()))
	}
	return nil
}

// Validate checks the flags.
func (o *StatusOptions) Validate() error {
	if o.Interval <= 0 {
		return fmt.Errorf("--interval must be positive, got %s", o.Interval)
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

// Run prints the rollout once, or follows it with --watch.
func (o *StatusOptions) Run(ctx context.Context) error {
	t, err := o.readTopology(ctx, o.Name)
	if err != nil {
		return err
	}
	if !o.Watch {
		return renderStatus(o.Out, t)
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	if o.terminal {
		// In a terminal: the editor's components, redrawn in place.
		fetch := func(ctx context.Context) (*v1alpha1.Topology, error) {
			return o.readTopology(ctx, o.Name)
		}
		m := tui.NewStatusModel(fetch, o.Interval)
		_, err := tea.NewProgram(m, tea.WithInput(o.In), tea.WithOutput(o.Out), tea.WithContext(ctx)).Run()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			if last := m.Topology(); last != nil {
				t = last
			}
			return o.unsettled(t)
		}
		if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
			return nil // interrupted: the rollout goes on without us
		}
		return err
	}
	last := ""
	for {
		var buf bytes.Buffer
		if err := renderStatus(&buf, t); err != nil {
			return err
		}
		if buf.String() != last {
			if last != "" {
				fmt.Fprintln(o.Out)
			}
			_, _ = o.Out.Write(buf.Bytes())
			last = buf.String()
		}
		if engine.RolloutSettled(t) {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return o.unsettled(t)
			}
			return nil
		case <-time.After(o.Interval):
		}
		next, err := o.readTopology(ctx, o.Name)
		if err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return o.unsettled(t)
			}
			return err
		}
		t = next
	}
}

// unsettled is the error of a watch that timed out: where the rollout stands
// and why, and that it goes on.
func (o *StatusOptions) unsettled(t *v1alpha1.Topology) error {
	msg := fmt.Sprintf("Topology %s/%s did not settle within %s: phase %s", t.Namespace, t.Name, o.Timeout, orDash(string(t.Status.Phase)))
	for _, hold := range append(engine.RolloutHolds(t), engine.PartsNotReady(t)...) {
		msg += "\n  " + hold
	}
	return fmt.Errorf("%s\nThe rollout goes on; follow it with `kubectl topology status %s -n %s --watch`", msg, t.Name, t.Namespace)
}

// renderStatus writes the status tree as plain text.
func renderStatus(w io.Writer, t *v1alpha1.Topology) error {
	fmt.Fprintf(w, "Topology %s/%s (class %s)\n", t.Namespace, t.Name, t.Spec.Class)
	fmt.Fprintf(w, "  version %s · phase %s · infrastructure %s\n", t.Spec.Version, orDash(string(t.Status.Phase)), orDash(string(t.Status.Infrastructure)))
	for _, hold := range engine.RolloutHolds(t) {
		fmt.Fprintf(w, "  %s\n", hold)
	}
	parts := t.Status.Parts()
	if len(parts) == 0 {
		fmt.Fprintln(w, "  no rollout reported yet: is the agent running? (`kubectl topology version` tells)")
		return nil
	}
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "PART\tOBJECT\tVERSION\tREPLICAS\tPHASE\tWHY")
	for i, p := range parts {
		branch := "├─"
		if i == len(parts)-1 {
			branch = "└─"
		}
		name := p.Name
		if p.Class != "" {
			name += " (" + p.Class + ")"
		}
		version := orDash(p.Version)
		if p.Version != p.DesiredVersion && p.DesiredVersion != "" {
			version = orDash(p.Version) + " → " + p.DesiredVersion
		}
		replicas := fmt.Sprintf("%d/%s ready", p.ReadyReplicas, desiredReplicas(p))
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\t%s\t%s\n", branch, name, orDash(p.ObjectName), version, replicas, orDash(string(p.Phase)), p.Message)
	}
	return tw.Flush()
}

func desiredReplicas(p v1alpha1.PartStatus) string {
	if p.DesiredReplicas == nil {
		return "-"
	}
	return fmt.Sprint(*p.DesiredReplicas)
}
