package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// GenerateOptions are the inputs of `generate`.
type GenerateOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	// Name of the Topology to write.
	Name string
	// Class is the TopologyClass; read from Filenames when given, else from the cluster.
	Class     string
	Filenames []string
	// Strict refuses input fields our types lack instead of dropping them.
	Strict bool
	// Version is the Kubernetes version.
	Version string
	// ControlPlane replicas; -1 leaves them to the class.
	ControlPlane int
	// Workers are POOL=N or POOL:CLASS=N.
	Workers []string
	// Sets are VAR=VALUE; a VALUE that parses as JSON is used as such.
	Sets []string
	// Output is yaml or json.
	Output string
}

// NewGenerateOptions returns the inputs of `generate`, with their defaults.
func NewGenerateOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *GenerateOptions {
	return &GenerateOptions{configFlags: flags, IOStreams: streams, ControlPlane: -1}
}

// NewCmdGenerate returns `generate`.
func NewCmdGenerate(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewGenerateOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "generate NAME --class C --kubernetes-version V [--control-plane N] [--worker POOL[:CLASS]=N]... [--set VAR=VALUE]...",
		Short: "Write a valid Topology for a class, with variable defaults filled in",
		Example: `  kubectl topology generate dev --class docker-kubeadm --kubernetes-version v1.33.1 \
      --control-plane 3 --worker md-a:general=2 --set imageRepository=registry.example.com > dev.yaml
  kubectl topology generate dev --class docker-kubeadm --kubernetes-version v1.33.1 -f examples/docker/class.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: runE(o),
	}
	cmd.Flags().StringVar(&o.Class, "class", "", "TopologyClass to stamp from (required)")
	cmd.Flags().StringSliceVarP(&o.Filenames, "filename", "f", nil, "Read the class from these files instead of the cluster")
	cmd.Flags().StringVar(&o.Version, "kubernetes-version", "", "Kubernetes version, e.g. v1.33.1 (required)")
	cmd.Flags().IntVar(&o.ControlPlane, "control-plane", -1, "Control plane replicas")
	cmd.Flags().StringArrayVar(&o.Workers, "worker", nil, "POOL=N or POOL:CLASS=N: a MachineDeployment (or MachinePool) and its replicas; CLASS defaults to POOL")
	cmd.Flags().StringArrayVar(&o.Sets, "set", nil, "VAR=VALUE: a topology variable; JSON values are taken as JSON")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "yaml", "yaml or json")
	cmd.Flags().BoolVar(&o.Strict, "strict", false, "Refuse input fields the types do not have, as kubectl's --validate=strict does, instead of dropping them with a warning")
	return cmd
}

// Complete takes the topology's name from the arguments.
func (o *GenerateOptions) Complete(args []string) error {
	o.Name = args[0]
	return nil
}

// Validate checks the flags.
func (o *GenerateOptions) Validate() error {
	if o.Class == "" {
		return fmt.Errorf("--class is required")
	}
	if o.Version == "" {
		return fmt.Errorf("--kubernetes-version is required, e.g. --kubernetes-version v1.33.1")
	}
	if _, err := upgrade.ParseVersion(o.Version); err != nil {
		return fmt.Errorf("--kubernetes-version %q is not a Kubernetes version such as v1.33.1", o.Version)
	}
	if o.Output != "yaml" && o.Output != "json" {
		return fmt.Errorf("--output %q is not supported; use yaml or json", o.Output)
	}
	return nil
}

// Run builds, defaults, validates and prints the Topology.
func (o *GenerateOptions) Run(ctx context.Context) error {
	class, ns, err := o.readClass(ctx)
	if err != nil {
		return err
	}
	t := &v1alpha2.Topology{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: v1alpha2.TopologyKind},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: ns},
		Spec:       v1alpha2.TopologySpec{ClassRef: v1alpha2.ClassRef{Name: o.Class}, Version: o.Version},
	}
	if class.Namespace != ns {
		t.Spec.ClassRef.Namespace = class.Namespace
	}
	if o.ControlPlane >= 0 {
		n := int32(o.ControlPlane)
		t.Spec.ControlPlane.Replicas = &n
	}
	if err := o.addWorkers(t, class); err != nil {
		return err
	}
	for _, kv := range o.Sets {
		k, raw, err := parseVariable(kv)
		if err != nil {
			return fmt.Errorf("--set: %w", err)
		}
		t.Spec.Variables = append(t.Spec.Variables, v1alpha2.ClusterVariable{Name: k, Value: apiextensionsv1.JSON{Raw: raw}})
	}
	cat, err := rules.CompileClass(ctx, class)
	if err != nil {
		return err
	}
	spec := desiredstate.SpecPath(contract.DialectTopology)
	errs := rules.DefaultTopology(t, cat, spec)
	errs = append(errs, rules.ValidateTopology(ctx, t, nil, class, cat, spec)...)
	if len(errs) > 0 {
		return (&rules.InvalidError{Kind: "Topology", Object: "Topology " + ns + "/" + o.Name, Errors: errs})
	}
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	if o.Output == "json" {
		data, err = json.MarshalIndent(m, "", "  ")
		data = append(data, '\n')
	} else {
		data, err = yaml.Marshal(m)
	}
	if err != nil {
		return err
	}
	_, err = o.Out.Write(data)
	return err
}

func (o *GenerateOptions) readClass(ctx context.Context) (*v1alpha2.TopologyClass, string, error) {
	ns := inputNamespace(o.configFlags)
	if len(o.Filenames) > 0 {
		b, err := readBundle(o.Filenames, o.In, o.ErrOut, ns, o.Strict)
		if err != nil {
			return nil, "", err
		}
		if c, ok := b.Classes[ns+"/"+o.Class]; ok {
			return c.TopologyClass, ns, nil
		}
		for _, c := range b.Classes {
			if c.Name == o.Class {
				return c.TopologyClass, ns, nil
			}
		}
		return nil, "", fmt.Errorf("--class %s: no such class in %v", o.Class, o.Filenames)
	}
	ca, err := connect(o.configFlags)
	if err != nil {
		return nil, "", err
	}
	c, err := ca.Class(ctx, ca.Namespace, o.Class)
	if err != nil {
		return nil, "", fmt.Errorf("--class %s: %w", o.Class, err)
	}
	return c, ca.Namespace, nil
}

// addWorkers turns --worker flags into pools of the class's MachineDeployment
// or MachinePool classes.
func (o *GenerateOptions) addWorkers(t *v1alpha2.Topology, class *v1alpha2.TopologyClass) error {
	mdClasses, mpClasses := map[string]bool{}, map[string]bool{}
	var known []string
	for _, md := range class.Spec.Workers.MachineDeployments {
		mdClasses[md.Class] = true
		known = append(known, md.Class)
	}
	for _, mp := range class.Spec.Workers.MachinePools {
		mpClasses[mp.Class] = true
		known = append(known, mp.Class)
	}
	sort.Strings(known)
	for _, w := range o.Workers {
		spec, count, ok := strings.Cut(w, "=")
		n, err := strconv.Atoi(count)
		if !ok || err != nil || n < 0 {
			return fmt.Errorf("--worker %q: give POOL=N or POOL:CLASS=N with N a whole number", w)
		}
		pool, cls, found := strings.Cut(spec, ":")
		if !found {
			cls = pool
		}
		replicas := int32(n)
		if t.Spec.Workers == nil {
			t.Spec.Workers = &v1alpha2.WorkersTopology{}
		}
		switch {
		case mdClasses[cls]:
			t.Spec.Workers.MachineDeployments = append(t.Spec.Workers.MachineDeployments, v1alpha2.MachineDeploymentTopology{Name: pool, Class: cls, Replicas: &replicas})
		case mpClasses[cls]:
			t.Spec.Workers.MachinePools = append(t.Spec.Workers.MachinePools, v1alpha2.MachinePoolTopology{Name: pool, Class: cls, Replicas: &replicas})
		default:
			return fmt.Errorf("--worker %s: class %s has no worker class %q; it has %s", w, class.Name, cls, strings.Join(known, ", "))
		}
	}
	return nil
}
