package plugin

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/bundle"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/plan"
	"github.com/kubectl-topology/kubectl-topology/internal/printer"
	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// AdoptOptions are the inputs of `adopt`.
type AdoptOptions struct {
	liveFlags
	genericiooptions.IOStreams

	// Name is the Cluster to adopt: NAME or cluster/NAME.
	Name string
	// DryRun checks and shows what would change, and changes nothing.
	DryRun bool
	// Yes skips the confirmation.
	Yes bool
	// Timeout bounds each wait: the agent reading the class, Cluster API
	// pausing and removing the Cluster, and the agent settling it again.
	Timeout time.Duration
	// Interval is how often a wait reads again.
	Interval time.Duration

	now clock
}

// NewAdoptOptions returns the inputs of `adopt`, with their defaults.
func NewAdoptOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *AdoptOptions {
	return &AdoptOptions{liveFlags: liveFlags{configFlags: flags}, IOStreams: streams, Timeout: 5 * time.Minute, Interval: 2 * time.Second}
}

// NewCmdAdopt returns `adopt`.
func NewCmdAdopt(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewAdoptOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "adopt CLUSTER [--dry-run] [--yes]",
		Short: "Hand a ClusterClass Cluster over from Cluster API's topology controller to the agent, replacing no Machine",
		Long: `Adopt turns an upstream ClusterClass and a Cluster with spec.topology into a
TopologyClass and a Topology of the same names, which the agent then
reconciles, for a team leaving the ClusterTopology gate. Every object
upstream made is kept with its name, labels and Machines.

It is refused, with the reason, where it cannot be done safely: a Cluster
that is not settled (a rollout or provisioning in progress), a class with
external patches, no agent reporting, a Topology of that name already, a
TopologyClass of that name with another spec, finalizers other than Cluster
API's, or a class whose objects, as the agent computes them, differ from the
live ones in a way that would replace Machines (a control plane spec other
than replicas, a pool's machine template, a template to rotate).

Upstream's webhook forbids removing spec.topology, so the Cluster object is
replaced, as clusterctl move replaces it: paused, deleted with its dependents
orphaned (Cluster API's finalizer removed so that nothing it owns is
deleted), and made again by the agent, which finds what upstream made. The
Cluster's UID changes; its Machines' do not. It needs the garbage collector
(kube-controller-manager), as every orphaning delete does.`,
		Example: `  kubectl topology adopt dev --dry-run
  kubectl topology adopt cluster/dev --yes`,
		Args: cobra.ExactArgs(1),
		RunE: runE(o),
	}
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "Check and show what adopting changes; change nothing")
	cmd.Flags().BoolVarP(&o.Yes, "yes", "y", false, "Do not ask for confirmation")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "How long each step may wait for a controller")
	cmd.Flags().DurationVar(&o.Interval, "interval", o.Interval, "How often a wait reads again")
	return cmd
}

// adoption is what adopt found: what it creates, and why it would refuse.
type adoption struct {
	cluster     *unstructured.Unstructured
	class       *v1alpha2.TopologyClass
	createClass bool
	topology    *v1alpha2.Topology
	paused      bool
	refusals    []string
	plan        *plan.Plan
	machines    map[types.UID]string
}

// Complete takes the Cluster's name from the arguments.
func (o *AdoptOptions) Complete(args []string) error {
	o.Name = args[0]
	return nil
}

// Validate checks the flags.
func (o *AdoptOptions) Validate() error {
	if o.Timeout <= 0 || o.Interval <= 0 {
		return fmt.Errorf("--timeout and --interval must be positive")
	}
	return nil
}

// Run checks, shows, asks, hands over and follows until the agent settles it.
func (o *AdoptOptions) Run(ctx context.Context) error {
	t, err := o.readTopology(ctx, o.Name)
	if err != nil {
		return err
	}
	if !upstream.IsCluster(t) {
		return fmt.Errorf("%s is already a Topology, which the agent reconciles: adopt takes a Cluster with spec.topology (cluster/NAME)", o.Name)
	}
	a, err := o.check(ctx, t)
	if err != nil {
		return err
	}
	o.show(a)
	if len(a.refusals) > 0 {
		return fmt.Errorf("Cluster %s/%s cannot be adopted safely; nothing was changed:\n  - %s", t.Namespace, t.Name, strings.Join(a.refusals, "\n  - "))
	}
	if o.DryRun {
		fmt.Fprintln(o.Out, "Dry run: nothing was changed.")
		return nil
	}
	if !o.Yes && !confirm(o.In, o.Out, fmt.Sprintf("Adopt Cluster %s/%s?", t.Namespace, t.Name)) {
		return fmt.Errorf("not confirmed; nothing was changed (pass --yes to skip the question)")
	}
	h := &upstream.Handover{
		Client: o.access.Client, Cluster: a.cluster, Topology: a.topology, Paused: a.paused,
		Interval: o.Interval, Timeout: o.Timeout,
		Progress: func(s string) { fmt.Fprintf(o.Out, "  %s\n", s) },
	}
	if a.createClass {
		h.Class = a.class
	}
	if err := h.Run(ctx); err != nil {
		return err
	}
	if a.paused {
		return nil
	}
	return o.follow(ctx, a)
}

// check reads what adopting needs and collects every reason to refuse.
func (o *AdoptOptions) check(ctx context.Context, t *v1alpha2.Topology) (*adoption, error) {
	ca := o.access
	if ca.Core != contract.CoreV1Beta2 {
		return nil, fmt.Errorf("adopt needs Cluster API v1.11 or later (cluster.x-k8s.io/v1beta2); this server serves %s", ca.Core)
	}
	cluster, err := ca.RawCluster(ctx, t)
	if err != nil {
		return nil, err
	}
	a := &adoption{cluster: cluster}
	refuse := func(format string, args ...any) { a.refusals = append(a.refusals, fmt.Sprintf(format, args...)) }

	raw, err := ca.UpstreamClass(ctx, t)
	if err != nil {
		return nil, err
	}
	if a.class, _, err = bundle.ClassFromUpstream(raw); err != nil {
		return nil, fmt.Errorf("converting ClusterClass %s: %w", t.GetClassKey(), err)
	}
	a.class.UID = ""
	a.class.Annotations = withoutLastApplied(a.class.Annotations)
	topo, _, err := bundle.TopologyFromCluster(cluster.DeepCopy())
	if err != nil {
		return nil, fmt.Errorf("converting Cluster %s/%s: %w", t.Namespace, t.Name, err)
	}
	topo.UID = ""
	topo.Annotations = withoutLastApplied(topo.Annotations)
	a.paused = topo.Spec.Paused
	a.topology = topo

	// The agent must be there to take it, with nothing of that name yet.
	switch exists, err := ca.TopologyExists(ctx, client.ObjectKeyFromObject(t)); {
	case err != nil:
		return nil, err
	case exists:
		refuse("Topology %s/%s exists already", t.Namespace, t.Name)
	}
	if agent := live.AgentReport(ctx, ca.Client, o.now.now()); agent.Problem != "" {
		refuse("the agent must be running to take the Cluster over: %s", agent.Problem)
	}
	existing, err := ca.ExistingClass(ctx, a.class.Namespace, a.class.Name)
	switch {
	case err != nil:
		return nil, err
	case existing == nil:
		a.createClass = true
	case !equality.Semantic.DeepEqual(existing.Spec, a.class.Spec):
		refuse("TopologyClass %s/%s exists with a spec other than ClusterClass %s's: delete or rename it", existing.Namespace, existing.Name, raw.GetName())
	default:
		a.class = existing
	}

	// What upstream does to it must be over.
	if !t.DeletionTimestamp.IsZero() {
		refuse("the Cluster is being deleted")
	}
	if !health.Settled(t) {
		why := append(health.Holds(t), health.PartsNotReady(t, time.Time{})...)
		refuse("the Cluster is not settled (%s%s): adopt it once `kubectl topology status cluster/%s -n %s` shows it Ready", cmp.Or(string(health.TopologyState(t)), "-"), reasons(why), t.Name, t.Namespace)
	}
	if contract.HasExternalPatches(a.class) {
		refuse("ClusterClass %s has external patches: their Runtime SDK extension must be registered as a TopologyExtension first, which adopt does not do", raw.GetName())
	}
	if f := upstream.ForeignFinalizers(cluster); len(f) > 0 {
		refuse("the Cluster has finalizers other than Cluster API's (%s): whoever set them would hold its replacement", strings.Join(f, ", "))
	}

	// What the agent would make of it must be what is there.
	asOurs := topo.DeepCopy()
	p, desired, _, err := ca.PlanWith(ctx, asOurs, a.class)
	if err != nil {
		refuse("the agent's view of it cannot be computed: %v", err)
		return a, nil
	}
	a.plan = p
	a.refusals = append(a.refusals, machineReplacements(p, desired)...)
	if a.machines, err = ca.MachineUIDs(ctx, t); err != nil {
		return nil, err
	}
	return a, nil
}

// machineReplacements names each change of the agent's plan that would
// replace Machines, or that adopting must not make.
func machineReplacements(p *plan.Plan, desired *clusterstate.State) []string {
	var out []string
	isControlPlane := func(o *unstructured.Unstructured) bool {
		return desired.ControlPlane.Object != nil && clusterstate.KeyOf(desired.ControlPlane.Object) == clusterstate.KeyOf(o)
	}
	for _, c := range p.Changes {
		kind, name := c.Object.GetKind(), c.Object.GetName()
		if kind == "Cluster" {
			continue // made again by the agent
		}
		switch c.Action {
		case plan.Created:
			out = append(out, fmt.Sprintf("the agent would create %s %s: the class or the Cluster does not match what upstream made", kind, name))
		case plan.Deleted:
			out = append(out, fmt.Sprintf("the agent would delete %s %s", kind, name))
		case plan.Pending:
			out = append(out, fmt.Sprintf("%s %s would wait to be created (%s)", kind, name, c.Reason))
		case plan.Modified:
			var patch map[string]any
			_ = json.Unmarshal(c.MergePatch, &patch)
			spec, _ := patch["spec"].(map[string]any)
			switch {
			case isControlPlane(c.Object):
				if fields := slices.Sorted(maps.Keys(spec)); len(fields) > 0 && !slices.Equal(fields, []string{"replicas"}) {
					out = append(out, fmt.Sprintf("the agent would change %s %s (spec %s), which replaces its Machines", kind, name, strings.Join(fields, ", ")))
				}
			case kind == "MachineDeployment" || kind == "MachinePool":
				if _, ok := spec["template"]; ok {
					out = append(out, fmt.Sprintf("the agent would change %s %s's machine template, which replaces its Machines", kind, name))
				}
			}
		}
	}
	return out
}

// show prints what adopting does, what the agent would change, and why not.
func (o *AdoptOptions) show(a *adoption) {
	ns, name := a.cluster.GetNamespace(), a.cluster.GetName()
	fmt.Fprintf(o.Out, "Adopt Cluster %s/%s (ClusterClass %s) into Topology %s/%s:\n", ns, name, a.class.Name, ns, name)
	if a.createClass {
		fmt.Fprintf(o.Out, "  1. create TopologyClass %s/%s from ClusterClass %s\n", a.class.Namespace, a.class.Name, a.class.Name)
	} else {
		fmt.Fprintf(o.Out, "  1. use TopologyClass %s/%s, the same as ClusterClass %s\n", a.class.Namespace, a.class.Name, a.class.Name)
	}
	fmt.Fprintf(o.Out, "  2. pause Cluster %s/%s, then delete it with what it owns orphaned (Cluster API's finalizer removed)\n", ns, name)
	fmt.Fprintf(o.Out, "  3. create Topology %s/%s, paused, and hand it the InfrastructureCluster and control plane\n", ns, name)
	if a.paused {
		fmt.Fprintln(o.Out, "  4. leave the Topology paused, as the Cluster is")
	} else {
		fmt.Fprintln(o.Out, "  4. resume the Topology: the agent makes the Cluster again and owns what upstream made")
	}
	if a.machines != nil {
		fmt.Fprintf(o.Out, "Machines kept: %d\n", len(a.machines))
	}
	if a.plan == nil {
		return
	}
	var changes []plan.Change
	for _, c := range a.plan.Changes {
		if c.Object.GetKind() != "Cluster" {
			changes = append(changes, c)
		}
	}
	if len(changes) == 0 {
		fmt.Fprintln(o.Out, "The agent would then change no object upstream made.")
		return
	}
	fmt.Fprintln(o.Out, "The agent would then change:")
	_ = printer.ChangePatches(o.Out, changes)
}

// follow waits until the agent has settled the Topology, then checks that
// every Machine is the one there was before.
func (o *AdoptOptions) follow(ctx context.Context, a *adoption) error {
	ns, name := a.cluster.GetNamespace(), a.cluster.GetName()
	var t *v1alpha2.Topology
	err := wait.PollUntilContextTimeout(ctx, o.Interval, o.Timeout, true, func(ctx context.Context) (bool, error) {
		read, err := o.access.Resolve(ctx, ns, "topology/"+name)
		if err != nil {
			return false, nil //nolint:nilerr // read again
		}
		t = read
		return health.Settled(t), nil
	})
	if err != nil {
		state := "not read"
		if t != nil {
			state = cmp.Or(string(health.TopologyState(t)), "-") + reasons(append(health.Holds(t), health.PartsNotReady(t, time.Time{})...))
		}
		return fmt.Errorf("Topology %s/%s is created, but the agent has not settled it within %s (%s); follow it with `kubectl topology status %s -n %s --watch`", ns, name, o.Timeout, state, name, ns)
	}
	after, err := o.access.MachineUIDs(ctx, t)
	if err != nil {
		return err
	}
	var gone []string
	for uid, m := range a.machines {
		if _, ok := after[uid]; !ok {
			gone = append(gone, m)
		}
	}
	slices.Sort(gone)
	if len(gone) > 0 || len(after) != len(a.machines) {
		return fmt.Errorf("Topology %s/%s is settled, but Machines changed: %d before, %d now, replaced: %s", ns, name, len(a.machines), len(after), cmp.Or(strings.Join(gone, ", "), "-"))
	}
	if err := o.sameReferences(ctx, a, t); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "Adopted: Topology %s/%s is Ready, and all %d Machines are the ones there were. Follow it with: kubectl topology status %s -n %s\n", ns, name, len(after), name, ns)
	return nil
}

// sameReferences checks that the Cluster the agent made refers to the
// InfrastructureCluster and control plane upstream's did: a settled Topology
// with all its Machines could still have made either anew beside the old.
func (o *AdoptOptions) sameReferences(ctx context.Context, a *adoption, t *v1alpha2.Topology) error {
	made, err := o.access.RawCluster(ctx, t)
	if err != nil {
		return fmt.Errorf("reading the Cluster the agent made for Topology %s/%s: %w", t.Namespace, t.Name, err)
	}
	for _, field := range []string{"infrastructureRef", "controlPlaneRef"} {
		was, _, _ := unstructured.NestedMap(a.cluster.Object, "spec", field)
		now, _, _ := unstructured.NestedMap(made.Object, "spec", field)
		if was["kind"] != now["kind"] || was["name"] != now["name"] {
			return fmt.Errorf("Topology %s/%s is settled, but its Cluster's spec.%s names %v %v where upstream's named %v %v: the agent made it anew; the one upstream made is kept, owned by the Topology (see `kubectl topology status %s -n %s`)",
				t.Namespace, t.Name, field, now["kind"], now["name"], was["kind"], was["name"], t.Name, t.Namespace)
		}
	}
	return nil
}

// reasons renders why-lines after a state.
func reasons(why []string) string {
	if len(why) == 0 {
		return ""
	}
	return ": " + strings.Join(why, "; ")
}

// withoutLastApplied drops kubectl's record of the last apply, which
// describes the upstream object, not the one adopt creates.
func withoutLastApplied(a map[string]string) map[string]string {
	if _, ok := a["kubectl.kubernetes.io/last-applied-configuration"]; !ok {
		return a
	}
	out := maps.Clone(a)
	delete(out, "kubectl.kubernetes.io/last-applied-configuration")
	if len(out) == 0 {
		return nil
	}
	return out
}
