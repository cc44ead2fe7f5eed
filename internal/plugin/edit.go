package plugin

import (
	"context"
	"errors"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-topology/kubectl-topology/internal/draft"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/transient"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/editor"
	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// EditOptions are the inputs of `edit`.
type EditOptions struct {
	liveFlags
	genericiooptions.IOStreams
	// Name is the Topology.
	Name string
	// ReadOnly browses without applying.
	ReadOnly bool
}

// NewEditOptions returns the inputs of `edit`, with their defaults.
func NewEditOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *EditOptions {
	return &EditOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams}
}

// NewCmdEdit returns `edit`.
func NewCmdEdit(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewEditOptions(flags, streams)
	cmd := &cobra.Command{
		Use:               "edit NAME [--read-only]",
		ValidArgsFunction: completeTopologyNames(flags),
		Short:             "Edit a Topology in the terminal, with live validation and a preview of what rolls out",
		Long: `Edit opens a full-screen editor of a live Topology: its version, replicas and
variables. Every keystroke re-runs the agent's own checks (the webhook's field
errors, version rules) and previews the objects that change and the order of
the rollout. Apply asks first and writes guarded by the resourceVersion; if
the Topology changed on the server meanwhile, your edits are kept on top of
the new version for you to check and apply again. cluster/NAME edits an
upstream Cluster with spec.topology the same way.`,
		Args: cobra.ExactArgs(1),
		RunE: runE(o),
	}
	cmd.Flags().BoolVar(&o.ReadOnly, "read-only", false, "Browse and preview only; never apply")
	return cmd
}

// Complete takes the topology's name from the arguments.
func (o *EditOptions) Complete(args []string) error {
	o.Name = args[0]
	return nil
}

// Validate refuses to run without a terminal.
func (o *EditOptions) Validate() error {
	in, inOK := o.In.(interface{ Fd() uintptr })
	out, outOK := o.Out.(interface{ Fd() uintptr })
	if !inOK || !outOK || !term.IsTerminal(int(in.Fd())) || !term.IsTerminal(int(out.Fd())) {
		return fmt.Errorf("edit needs a terminal; without one, use `kubectl topology scale`, `set variable` or `upgrade`, which validate and preview the same way")
	}
	return nil
}

// Run opens the editor.
func (o *EditOptions) Run(ctx context.Context) error {
	t, err := o.readTopology(ctx, o.Name)
	if err != nil {
		return err
	}
	ca := o.access
	loaded, err := ca.Load(ctx, t)
	if err != nil {
		return err
	}
	apply := func(ctx context.Context, orig, edited *v1alpha2.Topology) (*v1alpha2.Topology, error) {
		// Every object the agent would write is dry run first, as upgrade,
		// scale and set do: a refusal changes nothing.
		var refused *live.RefusedError
		if _, _, err := ca.Plan(ctx, edited); errors.As(err, &refused) && !transient.Is(err) {
			return nil, refusedChange(err)
		}
		written, err := draft.Write(ctx, ca.Store(orig), orig, edited)
		var conflict *draft.ConflictError
		switch {
		case errors.As(err, &conflict) && upstream.IsCluster(conflict.Latest):
			// The store reads a Cluster without its rollout summary, which
			// the editor's checks read: summarise the version it rebased on.
			if serr := ca.Summarize(ctx, conflict.Latest); serr != nil {
				return nil, serr
			}
			conflict.Rebased.Status = conflict.Latest.Status
		case err != nil && conflict == nil:
			return nil, live.Explain(err, ca)
		}
		return written, err
	}
	external, err := ca.ExternalPatches(ctx, loaded.Class)
	if err != nil {
		return err
	}
	var hooks map[string][]string
	if !upstream.IsCluster(t) {
		if hooks, err = ca.LifecycleHandlers(ctx, t); err != nil {
			return err
		}
	}
	m, err := editor.New(ctx, editor.Inputs{Topology: t, Loaded: loaded, External: external, Hooks: hooks}, apply, o.ReadOnly)
	if err != nil {
		return err
	}
	final, err := tea.NewProgram(m, tea.WithAltScreen(), tea.WithMouseCellMotion(), tea.WithInput(o.In), tea.WithOutput(o.Out), tea.WithContext(ctx)).Run()
	if err != nil {
		return err
	}
	if em, ok := final.(*editor.Model); ok && em.Applied {
		fmt.Fprintf(o.Out, "%s %s/%s updated. Follow it with: kubectl topology status %s -n %s --watch\n", contract.KindOf(t), t.Namespace, t.Name, o.Name, t.Namespace)
	}
	return nil
}
