package plugin

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine"
)

// UpgradeOptions are the inputs of `upgrade`.
type UpgradeOptions struct {
	liveFlags
	genericiooptions.IOStreams

	// Name is the Topology; Version the Kubernetes version to move to.
	Name, Version string
	// DryRun stops after the preflight and preview.
	DryRun bool
	// Yes skips the confirmation.
	Yes bool
	// Wait follows the rollout until it settles.
	Wait bool
	// Interval between reads while waiting.
	Interval time.Duration
	// Timeout ends a wait that has not settled with an error; 0 waits on.
	Timeout time.Duration
}

// NewUpgradeCommand returns `upgrade`.
func NewUpgradeCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &UpgradeOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams, Interval: 2 * time.Second}
	cmd := &cobra.Command{
		Use:               "upgrade NAME --version V [--dry-run] [--yes] [--wait [--timeout D]]",
		ValidArgsFunction: completeTopologyNames(flags),
		Short:             "Upgrade a Topology's Kubernetes version: preflight, preview, confirm, apply, follow",
		Long: `Upgrade checks the version change with the same rules the agent's webhook
applies (no downgrade, no skipped minor, no change while a rollout is in
flight), checks the live state (the agent is caught up and the control plane is
stable) and sends the change as a server-side dry run, so the webhooks answer
before anything changes. It then previews the rollout — the control plane
first, then MachineDeployments as many at a time as the upgrade-concurrency
annotation allows — and asks before applying.`,
		Example: `  kubectl topology upgrade dev --version v1.34.0
  kubectl topology upgrade dev --version v1.34.0 --dry-run
  kubectl topology upgrade dev --version v1.34.0 --yes --wait --timeout 1h`,
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
	cmd.Flags().StringVar(&o.Version, "version", "", "Kubernetes version to upgrade to, e.g. v1.34.0 (required)")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "Check and preview only; change nothing")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation")
	cmd.Flags().BoolVar(&o.Wait, "wait", false, "Follow the rollout until it settles, like status --watch")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "With --wait: give up and exit 1 if the rollout has not settled by then (0: wait on); the rollout itself goes on")
	return cmd
}

// Complete reads the arguments.
func (o *UpgradeOptions) Complete(args []string) error {
	o.Name = args[0]
	return nil
}

// Validate checks the flags.
func (o *UpgradeOptions) Validate() error {
	if o.Version == "" {
		return fmt.Errorf("--version is required, e.g. --version v1.34.0")
	}
	if _, err := engine.ParseVersion(o.Version); err != nil {
		return fmt.Errorf("--version %q is not a Kubernetes version such as v1.34.0", o.Version)
	}
	return validateFollowTimeout(o.Timeout, o.Wait, "--wait")
}

// Run does the preflight, preview, confirmation, apply and optional follow.
func (o *UpgradeOptions) Run(ctx context.Context) error {
	t, err := o.readTopology(ctx, o.Name)
	if err != nil {
		return err
	}
	if t.Spec.Version == o.Version {
		fmt.Fprintf(o.Out, "Topology %s/%s is at %s already; nothing to do.\n", t.Namespace, t.Name, o.Version)
		return nil
	}
	if err := o.preflight(ctx, t); err != nil {
		return err
	}
	printUpgradePreview(o.Out, t, o.Version)
	if o.DryRun {
		fmt.Fprintln(o.Out, "Dry run: nothing was changed.")
		return nil
	}
	if !o.Yes && !confirm(o.In, o.Out, fmt.Sprintf("Upgrade Topology %s/%s from %s to %s?", t.Namespace, t.Name, t.Spec.Version, o.Version)) {
		return fmt.Errorf("not confirmed; nothing was changed (pass --yes to skip the question)")
	}
	read := t.Spec.Version
	changed := t.DeepCopy()
	changed.Spec.Version = o.Version
	// The resourceVersion from the read guards the write: a concurrent change
	// makes it fail instead of being overwritten.
	if err := o.access.client.Update(ctx, changed); err != nil {
		if apierrors.IsConflict(err) {
			return o.explainConflict(ctx, t, read)
		}
		return explain(err, o.access)
	}
	fmt.Fprintf(o.Out, "Topology %s/%s: version %s → %s. The agent starts with the control plane.\n", t.Namespace, t.Name, read, o.Version)
	if !o.Wait {
		fmt.Fprintf(o.Out, "Follow it with: kubectl topology status %s -n %s --watch\n", t.Name, t.Namespace)
		return nil
	}
	s := &StatusOptions{liveFlags: o.liveFlags, IOStreams: o.IOStreams, Name: o.Name, Watch: true, Interval: o.Interval, Timeout: o.Timeout}
	return s.Run(ctx)
}

// preflight checks the change with the engine's rules and the live state, and
// lets the webhooks judge it in a server-side dry run.
func (o *UpgradeOptions) preflight(ctx context.Context, t *v1alpha1.Topology) error {
	var problems []string
	for _, e := range engine.UpgradePreflight(t, o.Version) {
		problems = append(problems, e.Detail)
	}
	if len(problems) > 0 {
		return fmt.Errorf("preflight failed for Topology %s/%s; nothing was changed:\n  - %s", t.Namespace, t.Name, strings.Join(problems, "\n  - "))
	}
	dry := t.DeepCopy()
	dry.Spec.Version = o.Version
	if err := o.access.client.Update(ctx, dry, client.DryRunAll); err != nil {
		return fmt.Errorf("preflight: the API server's dry run refused the change; nothing was changed: %w", explain(err, o.access))
	}
	fmt.Fprintf(o.Out, "Preflight passed: %s → %s is allowed, the control plane is stable, and the webhooks accept the change.\n", t.Spec.Version, o.Version)
	return nil
}

func (o *UpgradeOptions) explainConflict(ctx context.Context, read *v1alpha1.Topology, readVersion string) error {
	now, err := o.access.topology(ctx, read.Namespace, read.Name)
	if err != nil {
		return err
	}
	return fmt.Errorf("Topology %s/%s changed on the server after it was read (version %s, now %s; generation %d, now %d); nothing was changed — look at it and run upgrade again",
		read.Namespace, read.Name, readVersion, now.Spec.Version, read.Generation, now.Generation)
}

// printUpgradePreview lists the rollout in order, as the engine plans it.
func printUpgradePreview(w io.Writer, t *v1alpha1.Topology, version string) {
	fmt.Fprintf(w, "Rollout of Topology %s/%s to %s:\n", t.Namespace, t.Name, version)
	for _, line := range engine.PlanUpgrade(t, version).Lines() {
		fmt.Fprintf(w, "  %s\n", line)
	}
}

// confirm asks a yes/no question on the streams; anything but y/yes is no.
func confirm(in io.Reader, out io.Writer, question string) bool {
	fmt.Fprintf(out, "%s [y/N]: ", question)
	line, _ := bufio.NewReader(in).ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes"
}
