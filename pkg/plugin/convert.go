package plugin

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine/bundle"
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

	printer printers.ResourcePrinter
	bundle  *bundle.Bundle
}

// NewConvertCommand returns `convert`.
func NewConvertCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ConvertOptions{configFlags: flags, IOStreams: streams, printFlags: genericclioptions.NewPrintFlags("").WithDefaultOutput("yaml")}
	cmd := &cobra.Command{
		Use:   "convert -f FILE...",
		Short: "Convert upstream ClusterClass and Cluster YAML to TopologyClass and Topology",
		Long: `Convert rewrites Cluster API v1beta1 ClusterClasses as TopologyClasses and
Clusters with spec.topology as Topologies. Provider templates and other objects
pass through unchanged, so the output can be applied as it is.`,
		Example: `  kubectl topology convert -f clusterclass.yaml -f cluster.yaml > topology.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	cmd.Flags().StringSliceVarP(&o.Filenames, "filename", "f", nil, "Files or directories to convert; - reads standard input")
	cmd.Flags().BoolVar(&o.Strict, "strict", false, "Refuse input fields the types do not have, as kubectl's --validate=strict does, instead of dropping them with a warning")
	o.printFlags.AddFlags(cmd)
	return cmd
}

// Complete reads the input and builds the printer.
func (o *ConvertOptions) Complete() error {
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
	return err
}

// Validate checks there is something to convert.
func (o *ConvertOptions) Validate() error {
	if len(o.bundle.Classes) == 0 && len(o.bundle.Topologies) == 0 && len(o.bundle.Objects) == 0 && len(o.bundle.Extensions) == 0 {
		return fmt.Errorf("the input has no objects")
	}
	return nil
}

// Run prints extensions, classes, then templates and other objects, then
// topologies.
func (o *ConvertOptions) Run() error {
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
