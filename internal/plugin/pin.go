package plugin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-topology/kubectl-topology/internal/draft"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// SetVersionOptions are the inputs of `set version`: pools to pin or move,
// and pools to unpin.
type SetVersionOptions struct {
	changeOptions
	// Pins maps pool names to the versions they are pinned to.
	Pins map[string]string
	// Unpin names pools that go back to following the Topology's version.
	Unpin []string
}

// NewSetVersionOptions returns the inputs of `set version`, with their defaults.
func NewSetVersionOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *SetVersionOptions {
	return &SetVersionOptions{changeOptions: changeOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams}}
}

// NewCmdSetVersion returns `set version`.
func NewCmdSetVersion(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewSetVersionOptions(flags, streams)
	cmd := &cobra.Command{
		Use:               "version NAME POOL=VERSION... [--unpin POOL]...",
		ValidArgsFunction: completeTopologyNames(flags),
		Short:             "Pin pools to a Kubernetes version of their own, move a pin, or unpin",
		Long: `Pin a MachineDeployment or MachinePool to a version: it then stays there
while the Topology upgrades, and moves only when its pin does, once the
control plane runs that version. Pin a pool at the version it runs, then
move the pin; a pin may not be newer than the Topology's version, nor more
than three minors behind it. --unpin lets a pool follow the Topology's
version again, which rolls it to that version.`,
		Example: `  kubectl topology set version dev md-gpu=v1.33.1             # pin md-gpu where it is
  kubectl topology set version dev md-gpu=v1.34.0 --dry-run   # move it: only md-gpu rolls
  kubectl topology set version dev --unpin md-gpu             # follow the Topology again`,
		Args: cobra.MinimumNArgs(1),
		RunE: runE(o),
	}
	cmd.Flags().StringSliceVar(&o.Unpin, "unpin", nil, "POOL: let a pool follow the Topology's version again (repeatable)")
	o.addFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("unpin", completePools(flags))
	return cmd
}

// Complete takes the topology's name and the POOL=VERSION pairs from the arguments.
func (o *SetVersionOptions) Complete(args []string) error {
	o.name = args[0]
	o.Pins = map[string]string{}
	for _, kv := range args[1:] {
		pool, version, ok := strings.Cut(kv, "=")
		if !ok || pool == "" {
			return fmt.Errorf("%q: give POOL=VERSION, e.g. md-gpu=v1.33.1", kv)
		}
		if _, twice := o.Pins[pool]; twice {
			return fmt.Errorf("%s is given twice; give each pool one version", pool)
		}
		o.Pins[pool] = version
	}
	return nil
}

// Validate refuses an empty change, a version that is none, and a pool
// both pinned and unpinned, before the cluster is asked anything.
func (o *SetVersionOptions) Validate() error {
	if len(o.Pins) == 0 && len(o.Unpin) == 0 {
		return fmt.Errorf("nothing to set: give POOL=VERSION or --unpin POOL")
	}
	for _, pool := range slices.Sorted(maps.Keys(o.Pins)) {
		if _, err := upgrade.ParseVersion(o.Pins[pool]); err != nil {
			return fmt.Errorf("%s=%s: %w", pool, o.Pins[pool], err)
		}
		if slices.Contains(o.Unpin, pool) {
			return fmt.Errorf("%s is both pinned and unpinned; give one of %s=%s and --unpin %s", pool, pool, o.Pins[pool], pool)
		}
	}
	return nil
}

// Run previews the pins, asks, and applies them.
func (o *SetVersionOptions) Run(ctx context.Context) error {
	return o.run(ctx, change{mutate: o.mutate, preflight: o.preflight, preview: o.preview})
}

func (o *SetVersionOptions) mutate(t *v1alpha2.Topology) error {
	set := func(pool, version string, flag string) error {
		for _, kind := range []string{draft.MachineDeployment, draft.MachinePool} {
			if p := draft.Pin(t, draft.Scope{Kind: kind, Name: pool}); p != nil {
				*p = version
				return nil
			}
		}
		has := strings.Join(poolNames(t), ", ")
		if has == "" {
			has = "none"
		}
		return fmt.Errorf("%s: the Topology has no pool of that name; it has %s", flag, has)
	}
	for _, pool := range slices.Sorted(maps.Keys(o.Pins)) {
		if err := set(pool, o.Pins[pool], pool+"="+o.Pins[pool]); err != nil {
			return err
		}
	}
	for _, pool := range o.Unpin {
		if err := set(pool, "", "--unpin "+pool); err != nil {
			return err
		}
	}
	return nil
}

// preflight refuses, in the engine's words, a pin the agent's webhook
// would refuse, before the dry run, so the message names the pool and
// the way forward rather than the field path alone.
func (o *SetVersionOptions) preflight(_ context.Context, orig, edited *v1alpha2.Topology) error {
	errs := rules.ValidatePins(edited, orig, field.NewPath("spec"))
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		msgs = append(msgs, e.Detail)
	}
	return fmt.Errorf("the change is refused; nothing was changed:\n  %s", strings.Join(msgs, "\n  "))
}

// preview says which pools stay where they are through the Topology's upgrades.
func (o *SetVersionOptions) preview(_ context.Context, _, edited *v1alpha2.Topology) {
	for _, p := range upgrade.PinnedPools(edited) {
		fmt.Fprintf(o.Out, "%s stays at %s through the Topology's upgrades until its pin moves.\n", p.Name, p.Version)
	}
}
