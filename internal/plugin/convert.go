package plugin

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/discovery"

	"github.com/kubectl-topology/kubectl-topology/internal/bundle"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/templateprobe"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// ConvertOptions are the inputs of `convert`.
type ConvertOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	printFlags *genericclioptions.PrintFlags

	// Filenames to convert.
	Filenames []string
	// Strict refuses input fields our types lack instead of dropping them.
	Strict bool
	// Inline says which referenced templates are written into the classes:
	// refused (those the cluster refuses to store), all, or none.
	Inline string

	printer printers.ResourcePrinter
	bundle  *bundle.Bundle
	// refuses says whether the cluster refuses to store a template, for --inline=refused.
	refuses func(t *unstructured.Unstructured) (bool, error)
}

// Values of --inline.
const (
	inlineRefused = "refused"
	inlineAll     = "all"
	inlineNone    = "none"
)

// NewConvertOptions returns the inputs of `convert`, with their defaults.
func NewConvertOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *ConvertOptions {
	return &ConvertOptions{configFlags: flags, IOStreams: streams, printFlags: genericclioptions.NewPrintFlags("").WithDefaultOutput("yaml")}
}

// NewCmdConvert returns `convert`.
func NewCmdConvert(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewConvertOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "convert -f FILE...",
		Short: "Convert upstream ClusterClass and Cluster YAML to TopologyClass and Topology",
		Long: `Convert rewrites Cluster API ClusterClasses (v1beta2 or v1beta1) as
TopologyClasses and Clusters with spec.topology as Topologies. Provider
templates and other objects pass through unchanged, so the output can be
applied as it is.

A stock management cluster (Cluster API's ClusterTopology gate off, as
clusterctl init installs it) refuses to store the template kinds only a
ClusterClass uses: KubeadmControlPlaneTemplate, the Docker provider's cluster
templates. --inline=refused (the default) asks the cluster, with a server-side
dry-run create of each referenced template, and writes those it refuses into
the class (spec...template) instead; --inline=all and --inline=none decide
without a cluster.`,
		Example: `  # For the cluster in the current context: templates it refuses go into the class
  kubectl topology convert -f clusterclass.yaml -f cluster.yaml > topology.yaml

  # Offline: every template into the class, or none
  kubectl topology convert --inline=all -f clusterclass.yaml > class.yaml`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	cmd.Flags().StringSliceVarP(&o.Filenames, "filename", "f", nil, "Files or directories to convert; - reads standard input")
	cmd.Flags().StringVar(&o.Inline, "inline", inlineRefused, "Which referenced templates to write into the class: refused (those the cluster refuses to store, asked with a server-side dry run), all, or none (these two need no cluster)")
	cmd.Flags().BoolVar(&o.Strict, "strict", false, "Refuse input fields the types do not have, as kubectl's --validate=strict does, instead of dropping them with a warning")
	o.printFlags.AddFlags(cmd)
	return cmd
}

// Complete reads the input and builds the printer.
func (o *ConvertOptions) Complete([]string) error {
	p, err := o.printFlags.ToPrinter()
	if err != nil {
		return err
	}
	o.printer = p
	if len(o.Filenames) == 0 {
		return fmt.Errorf("convert needs input: give upstream ClusterClass and Cluster files with -f")
	}
	ns := inputNamespace(o.configFlags)
	b, err := readBundle(o.Filenames, o.In, o.ErrOut, ns, o.Strict)
	o.bundle = b
	if err != nil || o.Inline != inlineRefused || len(b.Classes) == 0 {
		return err
	}
	ca, err := connect(o.configFlags)
	if err == nil {
		err = reachable(ca)
	}
	if err != nil {
		return fmt.Errorf("--inline=refused asks the cluster which templates it refuses: %w; offline, give --inline=all or --inline=none", err)
	}
	o.refuses = func(t *unstructured.Unstructured) (bool, error) {
		return templateRefused(context.Background(), ca, t, o.ErrOut)
	}
	return nil
}

// Validate checks there is something to convert and --inline is known.
func (o *ConvertOptions) Validate() error {
	switch o.Inline {
	case inlineRefused, inlineAll, inlineNone:
	default:
		return fmt.Errorf("--inline %q is not supported: use refused, all or none", o.Inline)
	}
	if len(o.bundle.Classes) == 0 && len(o.bundle.Topologies) == 0 && len(o.bundle.Objects) == 0 && len(o.bundle.Extensions) == 0 {
		return fmt.Errorf("the input has no objects")
	}
	return nil
}

// inlineTemplates writes into the classes the templates --inline chooses and
// says on ErrOut which.
func (o *ConvertOptions) inlineTemplates() error {
	var choose func(t *unstructured.Unstructured) (bool, error)
	switch o.Inline {
	case inlineNone:
		return nil
	case inlineAll:
		choose = func(*unstructured.Unstructured) (bool, error) { return true, nil }
	default:
		choose = o.refuses
	}
	lines, err := o.bundle.InlineTemplates(choose)
	if err != nil {
		return err
	}
	for _, l := range lines {
		fmt.Fprintf(o.ErrOut, "Inlined: %s\n", l)
	}
	return nil
}

// templateRefused asks the cluster whether it refuses to store template t
// because a feature gate is off. A kind the cluster does not serve, or a
// template it refuses for another reason (inlining would not make it valid),
// stays referenced, with a warning on errOut naming it and why: the
// conversion itself is still right.
func templateRefused(ctx context.Context, ca *live.Cluster, t *unstructured.Unstructured, errOut io.Writer) (bool, error) {
	refusal, err := templateprobe.Probe(ctx, ca.Client, t)
	switch {
	case meta.IsNoMatchError(err):
		fmt.Fprintf(errOut, "Warning: the cluster serves no %s %s, so %s/%s stays referenced: install its provider before the class\n", t.GetAPIVersion(), t.GetKind(), t.GetNamespace(), t.GetName())
		return false, nil
	case err != nil:
		fmt.Fprintf(errOut, "Warning: the cluster would refuse %s %s/%s, not for a feature gate, so it stays referenced; fix it before applying: %v\n", t.GetKind(), t.GetNamespace(), t.GetName(), live.Explain(err, ca))
		return false, nil
	}
	return refusal != nil, nil
}

// reachable asks the API server its version, so that an unreachable cluster
// is said once, not as a refusal of each template.
func reachable(ca *live.Cluster) error {
	dc, err := discovery.NewDiscoveryClientForConfig(ca.Config)
	if err == nil {
		_, err = dc.ServerVersion()
	}
	if err != nil {
		return live.Explain(err, ca)
	}
	return nil
}

// Run writes the templates --inline chooses into the classes, then prints
// extensions, classes, templates and other objects, and topologies.
func (o *ConvertOptions) Run(context.Context) error {
	if err := o.inlineTemplates(); err != nil {
		return err
	}
	keys := make([]string, 0, len(o.bundle.Classes))
	for k := range o.bundle.Classes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var objs []runtime.Object
	for _, e := range o.bundle.Extensions {
		e = e.DeepCopy()
		e.SetGroupVersionKind(v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyExtensionKind))
		objs = append(objs, e)
	}
	for _, k := range keys {
		c := o.bundle.Classes[k].DeepCopy()
		c.SetGroupVersionKind(v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyClassKind))
		objs = append(objs, c)
	}
	for _, obj := range o.bundle.Objects {
		objs = append(objs, obj)
	}
	for _, t := range o.bundle.Topologies {
		tt := t.DeepCopy()
		tt.SetGroupVersionKind(v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyKind))
		objs = append(objs, tt)
	}
	for _, obj := range objs {
		u, err := toUnstructured(obj)
		if err != nil {
			return err
		}
		if err := o.printer.PrintObj(u, o.Out); err != nil {
			return err
		}
	}
	return nil
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	return u, nil
}
