package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
)

// changeOptions are what scale and set share: a Topology to change, a preview
// of what the change rolls out, a confirmation, and a guarded write.
type changeOptions struct {
	liveFlags
	genericiooptions.IOStreams
	name   string
	dryRun bool
	yes    bool
}

func (o *changeOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "Validate and preview only; change nothing")
	cmd.Flags().BoolVarP(&o.yes, "yes", "y", false, "Do not ask for confirmation")
}

// apply reads the Topology, changes it with mutate, validates the result with
// a server-side dry run, previews what the agent would change, asks, and
// writes it guarded by the resourceVersion it read.
func (o *changeOptions) apply(ctx context.Context, mutate func(*v1alpha1.Topology) ([]string, error)) error {
	t, err := o.readTopology(ctx, o.name)
	if err != nil {
		return err
	}
	ca := o.access
	changed := t.DeepCopy()
	what, err := mutate(changed)
	if err != nil {
		return err
	}
	if len(what) == 0 {
		fmt.Fprintf(o.Out, "Topology %s/%s already is that way; nothing to do.\n", t.Namespace, t.Name)
		return nil
	}
	if err := ca.client.Update(ctx, changed.DeepCopy(), client.DryRunAll); err != nil {
		return fmt.Errorf("the change is refused; nothing was changed: %w", explain(err, ca))
	}
	fmt.Fprintf(o.Out, "Topology %s/%s:\n  %s\n", t.Namespace, t.Name, strings.Join(what, "\n  "))
	p, warnings, err := ca.livePlan(ctx, changed)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(o.ErrOut, "Warning: "+w)
	}
	if len(p.Changes) == 0 {
		fmt.Fprintln(o.Out, "The agent would change no object.")
	} else {
		fmt.Fprintln(o.Out, "The agent would then change:")
		w := printers.GetNewTabWriter(o.Out)
		for _, c := range p.Changes {
			fmt.Fprintf(w, "  %s\t%s\t%s\n", c.Action, c.Object.GetKind(), c.Object.GetName())
		}
		_ = w.Flush()
	}
	if o.dryRun {
		fmt.Fprintln(o.Out, "Dry run: nothing was changed.")
		return nil
	}
	if !o.yes && !confirm(o.In, o.Out, fmt.Sprintf("Apply to Topology %s/%s?", t.Namespace, t.Name)) {
		return fmt.Errorf("not confirmed; nothing was changed (pass --yes to skip the question)")
	}
	if err := ca.client.Update(ctx, changed); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("Topology %s/%s changed on the server after it was read; nothing was changed — look at it (kubectl topology status %s) and run again", t.Namespace, t.Name, t.Name)
		}
		return explain(err, ca)
	}
	fmt.Fprintf(o.Out, "Applied. Follow it with: kubectl topology status %s -n %s --watch\n", t.Name, t.Namespace)
	return nil
}

// ScaleOptions are the inputs of `scale`.
type ScaleOptions struct {
	changeOptions
	// ControlPlane is the new control plane replica count; -1 leaves it.
	ControlPlane int
	// Workers maps pool names to replica counts.
	Workers map[string]string
}

// NewScaleCommand returns `scale`.
func NewScaleCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ScaleOptions{changeOptions: changeOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams}, ControlPlane: -1}
	cmd := &cobra.Command{
		Use:               "scale NAME [--control-plane N] [--worker POOL=N]...",
		ValidArgsFunction: completeTopologyNames(flags),
		Short:             "Change replicas of the control plane or of pools, with a preview",
		Example: `  kubectl topology scale dev --control-plane 5
  kubectl topology scale dev --worker md-a=4 --worker mp-0=2 --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			return o.apply(cmd.Context(), o.mutate)
		},
	}
	cmd.Flags().IntVar(&o.ControlPlane, "control-plane", -1, "Control plane replicas")
	cmd.Flags().StringToStringVar(&o.Workers, "worker", nil, "POOL=N: replicas of a MachineDeployment or MachinePool (repeatable)")
	o.addFlags(cmd)
	return cmd
}

// Validate checks the flags.
func (o *ScaleOptions) Validate() error {
	if o.ControlPlane < 0 && len(o.Workers) == 0 {
		return fmt.Errorf("nothing to scale: give --control-plane N and/or --worker POOL=N")
	}
	for pool, n := range o.Workers {
		if v, err := strconv.Atoi(n); err != nil || v < 0 {
			return fmt.Errorf("--worker %s=%s: replicas must be a whole number, 0 or more", pool, n)
		}
	}
	return nil
}

func (o *ScaleOptions) mutate(t *v1alpha1.Topology) ([]string, error) {
	var what []string
	set := func(label string, cur **int32, n int) {
		old := "unset"
		if *cur != nil {
			if int(**cur) == n {
				return
			}
			old = strconv.Itoa(int(**cur))
		}
		v := int32(n)
		*cur = &v
		what = append(what, fmt.Sprintf("%s replicas %s → %d", label, old, n))
	}
	if o.ControlPlane >= 0 {
		set("control plane", &t.Spec.ControlPlane.Replicas, o.ControlPlane)
	}
	pools := make([]string, 0, len(o.Workers))
	for p := range o.Workers {
		pools = append(pools, p)
	}
	sort.Strings(pools)
	for _, pool := range pools {
		n, _ := strconv.Atoi(o.Workers[pool])
		md, mp := t.MachineDeployment(pool), t.MachinePool(pool)
		if md != nil {
			set("MachineDeployment "+pool, &md.Replicas, n)
		}
		if mp != nil {
			set("MachinePool "+pool, &mp.Replicas, n)
		}
		if md == nil && mp == nil {
			return nil, fmt.Errorf("--worker %s: the Topology has no pool of that name; it has %s", pool, strings.Join(poolNames(t), ", "))
		}
	}
	return what, nil
}

func poolNames(t *v1alpha1.Topology) []string {
	var names []string
	if w := t.Spec.Workers; w != nil {
		for _, md := range w.MachineDeployments {
			names = append(names, md.Name)
		}
		for _, mp := range w.MachinePools {
			names = append(names, mp.Name)
		}
	}
	if len(names) == 0 {
		return []string{"none"}
	}
	return names
}

// SetVariableOptions are the inputs of `set variable`.
type SetVariableOptions struct {
	changeOptions
	// Values are KEY=VALUE pairs; a VALUE that parses as JSON is used as such.
	Values []string
	// FromFiles are KEY=PATH pairs whose files hold YAML or JSON values.
	FromFiles map[string]string
}

// NewSetCommand returns `set` with its `variable` subcommand.
func NewSetCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	set := &cobra.Command{Use: "set", Short: "Change a Topology's settings, with a preview"}
	o := &SetVariableOptions{changeOptions: changeOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams}}
	cmd := &cobra.Command{
		Use:               "variable NAME KEY=VALUE... [--from-file KEY=PATH]",
		ValidArgsFunction: completeTopologyNames(flags),
		Short:             "Set topology variables; values are checked against the class's schemas",
		Example: `  kubectl topology set variable dev imageRepository=registry.example.com
  kubectl topology set variable dev auditPolicy='{"enabled":true,"level":"Request"}'
  kubectl topology set variable dev --from-file workerLabels=labels.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name, o.Values = args[0], args[1:]
			if len(o.Values) == 0 && len(o.FromFiles) == 0 {
				return fmt.Errorf("nothing to set: give KEY=VALUE or --from-file KEY=PATH")
			}
			return o.apply(cmd.Context(), o.mutate)
		},
	}
	cmd.Flags().StringToStringVar(&o.FromFiles, "from-file", nil, "KEY=PATH: read the value of KEY from a YAML or JSON file")
	o.addFlags(cmd)
	set.AddCommand(cmd)
	return set
}

func (o *SetVariableOptions) mutate(t *v1alpha1.Topology) ([]string, error) {
	values := map[string][]byte{}
	for _, kv := range o.Values {
		k, raw, err := parseVariable(kv)
		if err != nil {
			return nil, err
		}
		values[k] = raw
	}
	for k, path := range o.FromFiles {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--from-file %s: %w", k, err)
		}
		raw, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("--from-file %s=%s: not YAML or JSON: %w", k, path, err)
		}
		values[k] = raw
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var what []string
	for _, k := range keys {
		old := "unset"
		found := false
		for i := range t.Spec.Variables {
			if t.Spec.Variables[i].Name == k {
				if string(t.Spec.Variables[i].Value.Raw) == string(values[k]) {
					found = true
					break
				}
				old = string(t.Spec.Variables[i].Value.Raw)
				t.Spec.Variables[i].Value = apiextensionsv1.JSON{Raw: values[k]}
				found = true
				what = append(what, fmt.Sprintf("variable %s: %s → %s", k, old, values[k]))
			}
		}
		if !found {
			t.Spec.Variables = append(t.Spec.Variables, v1alpha1.ClusterVariable{Name: k, Value: apiextensionsv1.JSON{Raw: values[k]}})
			what = append(what, fmt.Sprintf("variable %s: %s → %s", k, old, values[k]))
		}
	}
	return what, nil
}

// parseVariable reads NAME=VALUE for a topology variable: a VALUE that is
// valid JSON is taken as JSON (numbers, booleans, objects), anything else as
// a string, so `replicas=3` and `registry=example.com` both do what is meant.
func parseVariable(kv string) (string, []byte, error) {
	name, value, ok := strings.Cut(kv, "=")
	if !ok || name == "" {
		return "", nil, fmt.Errorf("%q: give NAME=VALUE", kv)
	}
	if json.Valid([]byte(value)) {
		return name, []byte(value), nil
	}
	raw, err := json.Marshal(value)
	return name, raw, err
}
