package plugin

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/membership"
	"github.com/kubectl-topology/kubectl-topology/internal/printer"
	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// GetOptions are the inputs of `get`.
type GetOptions struct {
	liveFlags
	printFlags *genericclioptions.PrintFlags
	genericiooptions.IOStreams

	// Name limits the listing to one Topology.
	Name string
	// AllNamespaces lists across namespaces.
	AllNamespaces bool
	// Watch prints a row for each change after the listing, as kubectl get -w.
	Watch bool

	now     clock
	printer printers.ResourcePrinter
}

// NewGetOptions returns the inputs of `get`, with their defaults.
func NewGetOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *GetOptions {
	return &GetOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams, printFlags: genericclioptions.NewPrintFlags("")}
}

// NewCmdGet returns `get`.
func NewCmdGet(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewGetOptions(flags, streams)
	cmd := &cobra.Command{
		Use:               "get [NAME] [-A]",
		ValidArgsFunction: completeTopologyNames(flags),
		Short:             "List Topologies with their version, replicas, state and problems",
		Long: `Get lists Topologies: CONTROL PLANE and WORKERS read ready/asked for ("-" when
an autoscaler sets the replicas; "5+" is 5 plus pools an autoscaler sizes),
STATE is the state ` + "`kubectl topology status --help`" + ` explains, and PROBLEMS
names what needs a human: Reconciled=False with its reason, Paused, Deleting,
and each Degraded part.`,
		Example: `  kubectl topology get
  kubectl topology get dev -o yaml
  kubectl topology get -A -o wide
  kubectl topology get -A -w     # a row per change`,
		Args: cobra.MaximumNArgs(1),
		RunE: runE(o),
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List Topologies in every namespace")
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "After the listing, print a row for each change until interrupted")
	o.printFlags.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format: wide, yaml, json, name (default: a table)"
	return cmd
}

// Complete reads the arguments.
func (o *GetOptions) Complete(args []string) error {
	if len(args) == 1 {
		o.Name = args[0]
	}
	// The scheme is built here, not with the command tree: every other
	// command would pay for it at start-up.
	o.printFlags = o.printFlags.WithTypeSetter(live.Scheme())
	return nil
}

// Validate checks the output format and the flag combination.
func (o *GetOptions) Validate() error {
	if o.Name != "" && o.AllNamespaces {
		return fmt.Errorf("a NAME and --all-namespaces cannot be combined: a name is looked up in one namespace")
	}
	if o.Watch && *o.printFlags.OutputFormat != "" && *o.printFlags.OutputFormat != "wide" {
		return fmt.Errorf("--watch prints table rows; it cannot be combined with --output %s", *o.printFlags.OutputFormat)
	}
	switch f := *o.printFlags.OutputFormat; f {
	case "", "wide":
	default:
		p, err := o.printFlags.ToPrinter()
		if err != nil {
			return fmt.Errorf("--output %q is not supported; use wide, yaml, json or name", f)
		}
		o.printer = p
	}
	return nil
}

// Run lists and prints.
func (o *GetOptions) Run(ctx context.Context) error {
	if err := o.connectOnce(); err != nil {
		return err
	}
	var items []v1alpha2.Topology
	if o.Name != "" {
		t, err := o.readTopology(ctx, o.Name)
		if err != nil {
			return err
		}
		items = []v1alpha2.Topology{*t}
	} else {
		var err error
		if items, err = o.access.ListAll(ctx, o.AllNamespaces, o.ErrOut); err != nil {
			return err
		}
	}
	if o.printer != nil {
		return o.print(ctx, items)
	}
	wide := *o.printFlags.OutputFormat == "wide"
	if len(items) == 0 && !o.Watch {
		o.access.NoTopologies(o.ErrOut, o.AllNamespaces)
		return nil
	}
	// Which controller reconciles each is worth a column once upstream's
	// Clusters are among them.
	withController := slices.ContainsFunc(items, func(t v1alpha2.Topology) bool { return upstream.IsCluster(&t) })
	// The fleet rollout each is in is worth a column while one is.
	inRollout := o.rolloutsOf(ctx, items)
	var extraCols []string
	if len(inRollout) > 0 {
		extraCols = []string{"ROLLOUT"}
	}
	table := printer.TopologyTable{Namespace: o.AllNamespaces, Wide: wide, Controller: withController, Extra: extraCols}
	// A watched row has the listed rows' columns.
	extra := func(t *v1alpha2.Topology) []string {
		if len(inRollout) == 0 {
			return nil
		}
		return []string{cmp.Or(inRollout[membership.RefOf(t).Key()], "-")}
	}
	rows := table.Rows(o.Out)
	rows.Header()
	for i := range items {
		rows.Add(&items[i], o.now.now(), extra(&items[i])...)
	}
	if err := rows.Flush(); err != nil || !o.Watch {
		return err
	}
	return o.watch(ctx, rows, extra)
}

// print writes items with the -o printer: Topologies as they are stored, and
// upstream Clusters as Clusters, in a List when they are several.
func (o *GetOptions) print(ctx context.Context, items []v1alpha2.Topology) error {
	objs := make([]runtime.Object, 0, len(items))
	for i := range items {
		if !upstream.IsCluster(&items[i]) {
			items[i].SetGroupVersionKind(v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyKind))
			objs = append(objs, &items[i])
			continue
		}
		u, err := o.access.RawCluster(ctx, &items[i])
		if err != nil {
			return err
		}
		objs = append(objs, u)
	}
	if o.Name != "" || *o.printFlags.OutputFormat == "name" {
		for _, obj := range objs {
			if err := o.printer.PrintObj(obj, o.Out); err != nil {
				return err
			}
		}
		return nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("v1")
	list.SetKind("List")
	for _, obj := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		list.Items = append(list.Items, unstructured.Unstructured{Object: m})
	}
	return o.printer.PrintObj(list, o.Out)
}

// watch prints a row per change of the listed Topologies until ctx ends,
// starting again from where it was when the server ends a watch.
func (o *GetOptions) watch(ctx context.Context, rows *printer.TopologyRows, extra func(*v1alpha2.Topology) []string) error {
	wc, err := client.NewWithWatch(o.access.Config, client.Options{Scheme: live.Scheme()})
	if err != nil {
		return live.Explain(err, o.access)
	}
	opts := o.access.ListScope(o.AllNamespaces)
	if o.Name != "" {
		opts = append(opts, client.MatchingFields{"metadata.name": o.Name})
	}
	for ctx.Err() == nil {
		w, err := wc.Watch(ctx, &v1alpha2.TopologyList{}, opts...)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return live.Explain(err, o.access)
		}
		for ev := range w.ResultChan() {
			t, ok := ev.Object.(*v1alpha2.Topology)
			if !ok {
				continue
			}
			rows.Add(t, o.now.now(), extra(t)...)
			if err := rows.Flush(); err != nil {
				w.Stop()
				return err
			}
		}
		w.Stop()
	}
	return nil
}

// rolloutsOf names, per listed cluster (RolloutClusterRef.Key), the active
// fleet rollout that holds it and its phase there; none when rollouts
// cannot be read.
func (o *GetOptions) rolloutsOf(ctx context.Context, items []v1alpha2.Topology) map[string]string {
	rollouts, err := o.access.Rollouts(ctx)
	if err != nil || len(rollouts) == 0 {
		return nil
	}
	held := fleet.Holding(rollouts)
	out := map[string]string{}
	for i := range items {
		key := membership.RefOf(&items[i]).Key()
		if h, ok := held[key]; ok {
			out[key] = h.Rollout + ":" + string(h.Phase)
		}
	}
	return out
}
