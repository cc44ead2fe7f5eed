package plugin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/loader"
	"github.com/kubectl-topology/kubectl-topology/internal/printer"
	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
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
	// Force upgrades a control plane that is not healthy.
	Force bool

	now clock
	// class is the Topology's class as the preflight read it; nil when it
	// does not exist.
	class *v1alpha2.TopologyClass
	// hooks are the lifecycle handlers the agent would call, per hook.
	hooks map[string][]string
}

// NewUpgradeOptions returns the inputs of `upgrade`, with their defaults.
func NewUpgradeOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *UpgradeOptions {
	return &UpgradeOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams, Interval: 2 * time.Second}
}

// NewCmdUpgrade returns `upgrade`.
func NewCmdUpgrade(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewUpgradeOptions(flags, streams)
	cmd := &cobra.Command{
		Use:               "upgrade NAME --version V [--dry-run] [--yes] [--wait [--timeout D]]",
		ValidArgsFunction: completeTopologyNames(flags),
		Short:             "Upgrade a Topology's Kubernetes version: preflight, preview, confirm, apply, follow",
		Long: `Upgrade checks the version change with the same rules the agent's webhook
applies (no downgrade, no skipped minor, no change while a rollout is in
flight), checks the live state (the agent is caught up and the control plane is Ready:
every machine ready, etcd and its components healthy; --force overrides this
one check) and sends the change as a server-side dry run, so the webhooks answer
before anything changes. It then previews the rollout — the control plane
first, then MachineDeployments as many at a time as the upgrade-concurrency
annotation allows — and asks before applying.`,
		Example: `  kubectl topology upgrade dev --version v1.34.0
  kubectl topology upgrade dev --version v1.34.0 --dry-run
  kubectl topology upgrade dev --version v1.34.0 --yes --wait --timeout 1h
  kubectl topology upgrade cluster/dev --version v1.34.0   # an upstream Cluster with spec.topology`,
		Args: cobra.ExactArgs(1),
		RunE: runE(o),
	}
	cmd.Flags().StringVar(&o.Version, "version", "", "Kubernetes version to upgrade to, e.g. v1.34.0 (required)")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "Check and preview only; change nothing")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation")
	_ = cmd.RegisterFlagCompletionFunc("version", completeVersions(flags))
	cmd.Flags().BoolVar(&o.Force, "force", false, "Upgrade even when the control plane is not healthy (its machines not all ready, etcd or components failing); the version rules still apply")
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
	if _, err := upgrade.ParseVersion(o.Version); err != nil {
		return fmt.Errorf("--version %q is not a Kubernetes version such as v1.34.0", o.Version)
	}
	return validateFollowTimeout(o.Timeout, o.Wait, "--wait")
}

// Run does the preflight, preview, confirmation, apply and optional follow,
// through the flow scale and set variable share.
func (o *UpgradeOptions) Run(ctx context.Context) error {
	co := &changeOptions{liveFlags: o.liveFlags, IOStreams: o.IOStreams, name: o.Name, dryRun: o.DryRun, yes: o.Yes}
	var from string
	written, err := co.apply(ctx, change{
		mutate: func(t *v1alpha2.Topology) error {
			from = t.Spec.Version
			t.Spec.Version = o.Version
			return nil
		},
		preflight: func(ctx context.Context, orig, edited *v1alpha2.Topology) error {
			return o.preflight(ctx, co.access, orig)
		},
		preview: func(_ context.Context, orig, _ *v1alpha2.Topology) {
			health := "the control plane is Ready"
			if o.Force {
				health = "the control plane's health is not checked (--force)"
			}
			fmt.Fprintf(o.Out, "Preflight passed: %s → %s is allowed, %s, and the webhooks accept the change.\n", orig.Spec.Version, o.Version, health)
			printer.UpgradePreview(o.Out, orig, o.class, o.Version, o.hooks)
		},
		question: func(orig, _ *v1alpha2.Topology) string {
			return fmt.Sprintf("Upgrade %s %s/%s from %s to %s?", contract.KindOf(orig), orig.Namespace, orig.Name, orig.Spec.Version, o.Version)
		},
	})
	if err != nil || written == nil {
		return err
	}
	fmt.Fprintf(o.Out, "%s %s/%s: version %s → %s. %s starts with the control plane.\n", contract.KindOf(written), written.Namespace, written.Name, from, o.Version, capitalize(contract.Reconciler(written)))
	if !o.Wait {
		fmt.Fprintf(o.Out, "Follow it with: kubectl topology status %s -n %s --watch\n", upstream.Ref(written), written.Namespace)
		return nil
	}
	s := &StatusOptions{liveFlags: co.liveFlags, IOStreams: o.IOStreams, Name: o.Name, Watch: true, Interval: o.Interval, Timeout: o.Timeout}
	return s.Run(ctx)
}

// preflight checks the change with the engine's rules and the live state;
// the shared flow then lets the webhooks judge it in a server-side dry run.
func (o *UpgradeOptions) preflight(ctx context.Context, ca *live.Cluster, orig *v1alpha2.Topology) error {
	var problems []string
	// The class's kubernetesVersions decide whether the upgrade may be
	// chained over several minors; without the class, it may not.
	core, err := ca.CoreVersion()
	if err != nil && upstream.IsCluster(orig) {
		return err
	}
	var missing *loader.NotFoundError
	o.class, err = (&loader.Loader{Reader: ca.Client, CoreVersion: core}).Class(ctx, orig)
	if errors.As(err, &missing) {
		o.class, err = nil, nil
	}
	if err != nil {
		return live.Explain(err, ca)
	}
	if !upstream.IsCluster(orig) {
		if o.hooks, err = ca.LifecycleHandlers(ctx, orig); err != nil {
			return err
		}
	}
	errs, unhealthy := rules.UpgradePreflight(orig, o.class, o.Version, o.now.now())
	for _, e := range errs {
		problems = append(problems, e.Detail)
	}
	if len(unhealthy) > 0 && o.Force {
		fmt.Fprintf(o.ErrOut, "Warning: upgrading an unhealthy control plane (--force):\n  %s\n", strings.Join(unhealthy, "\n    "))
		unhealthy = nil
	}
	if len(problems) > 0 || len(unhealthy) > 0 {
		msg := fmt.Sprintf("preflight failed for %s %s/%s; nothing was changed:", contract.KindOf(orig), orig.Namespace, orig.Name)
		for _, p := range problems {
			msg += "\n  - " + p
		}
		if len(unhealthy) > 0 {
			msg += "\n  - " + strings.Join(unhealthy, "\n    ") + "\n    Wait until `kubectl topology status " + upstream.Ref(orig) + "` shows the control plane Ready, or add --force to upgrade it as it is."
		}
		return errors.New(msg)
	}
	return nil
}

// confirm asks a yes/no question on the streams; anything but y/yes is no.
func confirm(in io.Reader, out io.Writer, question string) bool {
	fmt.Fprintf(out, "%s [y/N]: ", question)
	line, _ := bufio.NewReader(in).ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes"
}
