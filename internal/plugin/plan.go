package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/bundle"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/names"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/internal/extension"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/loader"
	"github.com/kubectl-topology/kubectl-topology/internal/plan"
	"github.com/kubectl-topology/kubectl-topology/internal/printer"
	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// PlanOptions are the inputs of `plan`.
type PlanOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	// Filenames are the files, directories or "-" to read.
	Filenames []string
	// Cluster picks one topology when the input has several.
	Cluster string
	// OutputDirectory receives upstream's created/ and modified/ layout.
	OutputDirectory string
	// Output is table, yaml or json.
	Output string
	// Seed makes generated names reproducible; 0 means random.
	Seed uint64
	// Name plans a live Topology; with Filenames, those hold a proposed
	// version of it.
	Name string
	// CoreVersion is the Cluster API core version an offline plan writes
	// objects in; live plans use what the cluster serves.
	CoreVersion string
	// Strict refuses input fields our types lack instead of dropping them.
	Strict bool

	namespace string
	bundle    *bundle.Bundle
}

// NewPlanOptions returns the inputs of `plan`, with their defaults.
func NewPlanOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *PlanOptions {
	return &PlanOptions{configFlags: flags, IOStreams: streams}
}

// NewCmdPlan returns `plan`.
func NewCmdPlan(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewPlanOptions(flags, streams)
	cmd := &cobra.Command{
		Use:               "plan [NAME] [-f FILE...] [--topology NAME] [--output-directory DIR]",
		ValidArgsFunction: completeTopologyNames(flags),
		Short:             "Show which objects a topology creates, changes and deletes",
		Long: `Plan computes the objects a topology consists of — exactly as the agent (and
Cluster API's topology controller) would — and compares them with the objects
in the input. It runs offline: no cluster is needed.

The input may be ours (TopologyClass, Topology) or upstream Cluster API's
(ClusterClass, Cluster with spec.topology, in v1beta2 or v1beta1), with the
provider templates the class references and any objects that exist already.

Objects are written as Cluster API v1.14 writes them (v1beta2), or with
--cluster-api-version v1beta1 as v1.10 did, the output of clusterctl v1.10's
'alpha topology plan'. An upstream Cluster is planned in the version it is
written in. Providers are taken to follow the same contract.`,
		Example: `  # What the quick-start class creates for a cluster
  kubectl topology plan -f clusterclass.yaml -f cluster.yaml

  # What the agent would change now on the live cluster, and for a proposed change
  kubectl topology plan dev
  kubectl topology plan dev -f dev-with-more-workers.yaml

  # Write upstream's 'clusterctl alpha topology plan' layout
  kubectl topology plan -f class.yaml -f cluster.yaml --output-directory out/

  # For a management cluster still on Cluster API v1.10
  kubectl topology plan -f class.yaml -f topology.yaml --cluster-api-version v1beta1`,
		Args: cobra.MaximumNArgs(1),
		RunE: runE(o),
	}
	cmd.Flags().StringSliceVarP(&o.Filenames, "filename", "f", nil, "Files or directories with the class, templates, topologies and existing objects; - reads standard input")
	// Not --cluster: that is kubectl's global flag (the kubeconfig cluster).
	cmd.Flags().StringVar(&o.Cluster, "topology", "", "Name of the topology (or Cluster) to plan when the input has several")
	cmd.Flags().StringVar(&o.OutputDirectory, "output-directory", "", "Write created/ and modified/ files here, like clusterctl alpha topology plan did")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "table", "Output format: table, yaml or json")
	cmd.Flags().StringVar(&o.CoreVersion, "cluster-api-version", string(contract.CoreV1Beta2), "Cluster API core version of an offline plan's objects: v1beta2 (Cluster API v1.11 and later) or v1beta1 (v1.10)")
	cmd.Flags().BoolVar(&o.Strict, "strict", false, "Refuse input fields the types do not have, as kubectl's --validate=strict does, instead of dropping them with a warning")
	cmd.Flags().Uint64Var(&o.Seed, "random-seed", 0, "Seed for generated name suffixes, for reproducible output")
	_ = cmd.Flags().MarkHidden("random-seed")
	return cmd
}

// runLive plans a live Topology, or a proposed version of it from -f.
func (o *PlanOptions) runLive(ctx context.Context) error {
	live := &liveFlags{configFlags: o.configFlags}
	t, err := live.readTopology(ctx, o.Name)
	if err != nil {
		return err
	}
	ca := live.access
	liveVersion := t.Spec.Version
	if len(o.Filenames) > 0 {
		b, err := readBundle(o.Filenames, o.In, o.ErrOut, ca.Namespace, o.Strict)
		if err != nil {
			return err
		}
		proposed, err := pickNamed(b.Topologies, t.Name)
		if err != nil {
			return err
		}
		proposed.ResourceVersion, proposed.UID, proposed.Generation = t.ResourceVersion, t.UID, t.Generation
		proposed.TypeMeta = t.TypeMeta // the proposal is for what was read: a Topology, or an upstream Cluster
		t = proposed.Topology
	}
	p, warnings, err := ca.Plan(ctx, t)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(o.ErrOut, "Warning: "+w)
	}
	if t.Spec.Paused {
		fmt.Fprintf(o.ErrOut, "%s %s/%s is paused: nothing will be applied until `kubectl topology resume %s`; this is what %s would change then.\n", contract.KindOf(t), t.Namespace, t.Name, upstream.Ref(t), contract.Reconciler(t))
	}
	var files map[string][]byte
	if o.OutputDirectory != "" {
		if files, err = planFiles(p); err != nil {
			return err
		}
	}
	if err := o.print(&bundle.Topology{Topology: t}, p); err != nil {
		return err
	}
	if err := o.printHooks(ctx, ca, t, liveVersion); err != nil {
		return err
	}
	if files != nil {
		return writeFiles(o.OutputDirectory, files)
	}
	return nil
}

// printHooks lists the lifecycle hooks the agent calls for a proposed
// version change of t from the live version, in order: under the table, or
// on standard error beside YAML and JSON, which must stay parseable.
func (o *PlanOptions) printHooks(ctx context.Context, ca *live.Cluster, t *v1alpha2.Topology, liveVersion string) error {
	if t.Spec.Version == liveVersion || upstream.IsCluster(t) {
		return nil
	}
	hooks, err := ca.LifecycleHandlers(ctx, t)
	if err != nil {
		return err
	}
	if len(hooks) == 0 {
		return nil
	}
	core, err := ca.CoreVersion()
	if err != nil {
		return err
	}
	// The class's kubernetesVersions decide the chain, and so the steps.
	var missing *loader.NotFoundError
	class, err := (&loader.Loader{Reader: ca.Client, CoreVersion: core}).Class(ctx, t)
	if errors.As(err, &missing) {
		class, err = nil, nil // without it, the preview takes the one step asked for
	}
	if err != nil {
		return live.Explain(err, ca)
	}
	from := t.DeepCopy()
	from.Spec.Version = liveVersion
	lines := lifecycle.PreviewLines(upgrade.PlanUpgrade(from, class, t.Spec.Version), hooks)
	w := o.Out
	if o.Output == "yaml" || o.Output == "json" {
		w = o.ErrOut
	}
	for _, line := range lines {
		fmt.Fprintln(w, line)
	}
	return nil
}

func pickNamed(ts []*bundle.Topology, name string) (*bundle.Topology, error) {
	for _, t := range ts {
		if t.Name == name && t.Upstream == nil {
			return t, nil
		}
	}
	return nil, fmt.Errorf("-f: the files hold no Topology named %s; give the proposed version of it", name)
}

// Complete takes a live Topology's name from the arguments, or reads the
// input files of an offline plan; a live plan reads its files once it knows
// the Topology's namespace.
func (o *PlanOptions) Complete(args []string) error {
	if len(args) == 1 {
		o.Name = args[0]
		return nil
	}
	o.namespace = inputNamespace(o.configFlags)
	if len(o.Filenames) == 0 {
		return fmt.Errorf("plan needs input: give the class, its templates and the topology with -f")
	}
	b, err := readBundle(o.Filenames, o.In, o.ErrOut, o.namespace, o.Strict)
	if err != nil {
		return err
	}
	o.bundle = b
	return nil
}

// Validate checks the flags.
func (o *PlanOptions) Validate() error {
	switch o.Output {
	case "table", "yaml", "json":
	default:
		return fmt.Errorf("--output %q is not supported; use table, yaml or json", o.Output)
	}
	if _, ok := contract.ParseCoreVersion(o.CoreVersion); !ok {
		return fmt.Errorf("--cluster-api-version %q is not supported; use v1beta2 (Cluster API v1.11 and later) or v1beta1 (v1.10)", o.CoreVersion)
	}
	if o.OutputDirectory != "" {
		if info, err := os.Stat(o.OutputDirectory); err == nil && !info.IsDir() {
			return fmt.Errorf("--output-directory %s is a file; give a directory", o.OutputDirectory)
		}
	}
	return nil
}

// Run plans the chosen topology, live or offline, and prints or writes the
// result. Nothing is written unless the whole plan succeeded.
func (o *PlanOptions) Run(ctx context.Context) error {
	if o.Name != "" {
		return o.runLive(ctx)
	}
	return o.runOffline(ctx)
}

func (o *PlanOptions) runOffline(ctx context.Context) error {
	t, err := o.pickTopology()
	if err != nil {
		return err
	}
	class, err := o.bundle.ClassFor(t)
	if err != nil {
		return err
	}
	gen := names.NewGenerator(nil)
	if o.Seed != 0 {
		gen = names.NewSeeded(o.Seed)
	}
	// With external patches, the class's variables include what their
	// extensions discover, so the class is compiled after asking them.
	blueprint, external, err := o.externalPatches(ctx, class.TopologyClass)
	if err != nil {
		return err
	}
	cat, err := rules.CompileClass(ctx, blueprint)
	if err != nil {
		return err
	}
	if err := t.Default(cat); err != nil {
		return err
	}
	existing := o.bundle.Objects
	if t.Upstream != nil {
		existing = append([]*unstructured.Unstructured{t.Upstream}, existing...)
	}
	current := desiredstate.StateFromObjects(t.Name, t.Namespace, existing)
	if t.Upstream != nil {
		current.Cluster = t.Upstream
	}
	in := desiredstate.Input{
		Topology:    t.Topology,
		Class:       blueprint,
		Templates:   o.bundle.Templates(),
		Current:     current,
		Names:       gen,
		Dialect:     t.Dialect(),
		Catalog:     cat,
		CoreVersion: contract.CoreVersion(o.CoreVersion),
		Contracts:   contract.ContractsFromCRDs(o.bundle.Objects, blueprint),
	}
	if external != nil {
		in.External = external
	}
	res, err := desiredstate.Compute(ctx, in)
	if err != nil {
		return err
	}
	// MachineSets among the files keep the templates they use, as on a server.
	machineSets := func() ([]*unstructured.Unstructured, error) {
		var out []*unstructured.Unstructured
		for _, o := range existing {
			if o.GetKind() == "MachineSet" && o.GroupVersionKind().Group == clusterv1.GroupVersion.Group && o.GetNamespace() == t.Namespace && o.GetLabels()[clusterv1.ClusterNameLabel] == t.Name {
				out = append(out, o)
			}
		}
		return out, nil
	}
	p, err := plan.Compute(plan.Input{Desired: res.Desired, Current: existing, Cluster: t.Name, Class: class.TopologyClass, Namespace: t.Namespace, MachineSets: machineSets})
	if err != nil {
		return err
	}
	var files map[string][]byte
	if o.OutputDirectory != "" {
		if files, err = planFiles(p); err != nil {
			return err
		}
	}
	if err := o.print(t, p); err != nil {
		return err
	}
	if files != nil {
		return writeFiles(o.OutputDirectory, files)
	}
	return nil
}

// externalPatches prepares a class's external patches for an offline plan,
// with the extensions given among the inputs: each one the class names is
// asked for its handlers, and the patches that discover variables for them.
// Unlike a live preview nothing is skipped: a plan lacking an extension's
// changes would be wrong. It returns the class with its discovered variables
// in status, as the agent would have it, and nil for a class without
// external patches.
func (o *PlanOptions) externalPatches(ctx context.Context, class *v1alpha2.TopologyClass) (*v1alpha2.TopologyClass, *extension.Patcher, error) {
	if !contract.HasExternalPatches(class) {
		return class, nil, nil
	}
	given := map[string]*v1alpha2.TopologyExtension{}
	for _, e := range o.bundle.Extensions {
		given[e.Name] = e
	}
	c := &extension.Client{Registry: extension.NewRegistry()}
	for _, u := range extension.UsedBy(class) {
		e, ok := given[u.Extension]
		if !ok {
			return nil, nil, fmt.Errorf("TopologyClass %s/%s spec.patches[%d] (%s): extension %s is not in the input; add its TopologyExtension or ExtensionConfig with -f (its server must be reachable from here by url), or plan against the cluster with `kubectl topology plan NAME`",
				class.Namespace, class.Name, u.PatchIndex, u.Patch, u.Extension)
		}
		if e.Spec.ClientConfig.URL == nil {
			return nil, nil, fmt.Errorf("TopologyExtension %s: spec.clientConfig names a Service, which an offline plan cannot reach; give a url instead (the extension run locally, or port-forwarded), or plan against the cluster with `kubectl topology plan NAME`", e.Name)
		}
		handlers, err := c.Discover(ctx, e.Name, e.Spec.ClientConfig)
		if err != nil {
			return nil, nil, fmt.Errorf("%w; is the extension running at %s?", err, *e.Spec.ClientConfig.URL)
		}
		if err := c.Registry.Set(e.Name, e.Spec, handlers); err != nil {
			return nil, nil, fmt.Errorf("TopologyExtension %s: %w", e.Name, err)
		}
	}
	class = class.DeepCopy()
	vars := c.DiscoverVariables(ctx, class)
	for _, d := range vars {
		if d.Err != nil {
			return nil, nil, fmt.Errorf("TopologyClass %s/%s patch %s: discovering its variables: %w", class.Namespace, class.Name, d.Patch, d.Err)
		}
	}
	class.Status.Variables = rules.StatusVariables(class, vars)
	if conflicts := rules.ConflictingVariables(class.Status.Variables); len(conflicts) > 0 {
		return nil, nil, fmt.Errorf("TopologyClass %s/%s: variables %s are defined differently by the class and its extensions; make the definitions agree", class.Namespace, class.Name, strings.Join(conflicts, ", "))
	}
	return class, extension.NewPatcher(c, class), nil
}

// pickTopology chooses the topology to plan: the one named by --topology, or
// the only one given.
func (o *PlanOptions) pickTopology() (*bundle.Topology, error) {
	ts := o.bundle.Topologies
	if len(ts) == 0 {
		return nil, fmt.Errorf("the input has no Topology and no Cluster with spec.topology; add the file that defines one with -f")
	}
	if o.Cluster != "" {
		for _, t := range ts {
			if t.Name == o.Cluster {
				return t, nil
			}
		}
		return nil, fmt.Errorf("--topology %s: no such topology in the input; it has: %s", o.Cluster, topologyList(ts))
	}
	if len(ts) > 1 {
		return nil, fmt.Errorf("the input has %d topologies: %s; pick one with --topology NAME", len(ts), topologyList(ts))
	}
	return ts[0], nil
}

func topologyList(ts []*bundle.Topology) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.Namespace+"/"+t.Name)
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

func (o *PlanOptions) print(t *bundle.Topology, p *plan.Plan) error {
	switch o.Output {
	case "json", "yaml":
		raw, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return err
		}
		if o.Output == "yaml" {
			if raw, err = yaml.JSONToYAML(raw); err != nil {
				return err
			}
		}
		_, err = o.Out.Write(append(raw, '\n'))
		return err
	}
	if len(p.Changes) == 0 {
		fmt.Fprintf(o.Out, "No changes for %s/%s.\n", t.Namespace, t.Name)
		return nil
	}
	return printer.PlanTable(o.Out, p.Changes)
}

// planFiles renders upstream's output layout: created/<Kind>_<ns>_<name>.yaml and
// modified/<Kind>_<ns>_<name>.{original.yaml,modified.yaml,jsonpatch,diff}.
func planFiles(p *plan.Plan) (map[string][]byte, error) {
	// Objects are rendered as YAML side by side: on the quick-start this is
	// a good part of a whole `plan --output-directory` process.
	type rendered struct{ before, after []byte }
	out := make([]rendered, len(p.Changes))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, c := range p.Changes {
		if c.Action != plan.Created && c.Action != plan.Modified {
			continue
		}
		g.Go(func() error {
			after, err := plan.ObjectYAML(c.Object.Object)
			if err != nil {
				return fmt.Errorf("%s: %w", plan.FileBase(c.Object), err)
			}
			out[i].after = after
			if c.Action == plan.Modified {
				if out[i].before, err = plan.ObjectYAML(c.Before.Object); err != nil {
					return fmt.Errorf("%s: %w", plan.FileBase(c.Object), err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for i, c := range p.Changes {
		base := plan.FileBase(c.Object)
		switch c.Action {
		case plan.Created:
			files[filepath.Join("created", base+".yaml")] = out[i].after
		case plan.Modified:
			files[filepath.Join("modified", base+".original.yaml")] = out[i].before
			files[filepath.Join("modified", base+".modified.yaml")] = out[i].after
			files[filepath.Join("modified", base+".jsonpatch")] = c.MergePatch
			files[filepath.Join("modified", base+".diff")] = []byte(c.Diff)
		}
	}
	return files, nil
}

// writeFiles writes every file at once; each is a few syscalls, which
// overlap.
func writeFiles(dir string, files map[string][]byte) error {
	for _, sub := range []string{"created", "modified"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", filepath.Join(dir, sub), err)
		}
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var g errgroup.Group
	g.SetLimit(8)
	for _, p := range paths {
		g.Go(func() error {
			if err := os.WriteFile(filepath.Join(dir, p), files[p], 0o644); err != nil {
				return fmt.Errorf("writing %s: %w", filepath.Join(dir, p), err)
			}
			return nil
		})
	}
	return g.Wait()
}
