package live

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/apply"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/names"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/internal/extension"
	"github.com/kubectl-topology/kubectl-topology/internal/loader"
	"github.com/kubectl-topology/kubectl-topology/internal/plan"
	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Load reads, through the loader the agent uses too, what the engine needs
// for t from the cluster.
func (ca *Cluster) Load(ctx context.Context, t *v1alpha2.Topology) (*loader.Loaded, error) {
	return ca.LoadWith(ctx, t, nil)
}

// LoadWith is load with the class given, when it is not read from the
// cluster (a class adopt will create).
func (ca *Cluster) LoadWith(ctx context.Context, t *v1alpha2.Topology, class *v1alpha2.TopologyClass) (*loader.Loaded, error) {
	core, err := ca.CoreVersion()
	if err != nil {
		return nil, err
	}
	l, err := (&loader.Loader{Reader: ca.Client, CoreVersion: core, Mapper: ca.Client.RESTMapper(), GivenClass: class}).Load(ctx, t)
	if err != nil {
		return nil, Explain(err, ca)
	}
	return l, nil
}

// Plan computes what the agent would change now for t: the desired state
// from the live class, templates and objects, each object the agent would
// write sent as a server-side-apply dry run so defaulting, webhooks and field
// ownership are accounted for, compared with what exists. Pools whose
// creation waits are listed as pending, with why.
// The warnings name external patches that could not be run from here.
func (ca *Cluster) Plan(ctx context.Context, t *v1alpha2.Topology) (*plan.Plan, []string, error) {
	p, _, warnings, err := ca.PlanWith(ctx, t, nil)
	return p, warnings, err
}

// PlanWith is livePlan with the class given (see loadWith); it returns
// the desired state too.
func (ca *Cluster) PlanWith(ctx context.Context, t *v1alpha2.Topology, class *v1alpha2.TopologyClass) (*plan.Plan, *clusterstate.State, []string, error) {
	l, err := ca.LoadWith(ctx, t, class)
	if err != nil {
		return nil, nil, nil, err
	}
	cat, err := rules.CompileClass(ctx, l.Class)
	if err != nil {
		return nil, nil, nil, err
	}
	external, err := ca.ExternalPatches(ctx, l.Class)
	if err != nil {
		return nil, nil, nil, err
	}
	// An upstream Cluster's objects are written as upstream's controller
	// writes them: owned by the Cluster, by its field manager.
	dialect, manager := contract.DialectOf(t), apply.FieldManager
	if dialect == contract.DialectUpstream {
		manager = upstream.FieldManager
	}
	in := desiredstate.Input{
		Topology: t, Class: l.Class, Templates: l.Templates, Current: l.Current, Observed: l.Observed,
		Names: names.NewGenerator(nil), Dialect: dialect, Catalog: cat,
		CoreVersion: l.CoreVersion, Contracts: l.Contracts,
	}
	if external != nil {
		in.External = external
	}
	res, err := desiredstate.Compute(ctx, in)
	if err != nil {
		return nil, nil, nil, err
	}
	var warnings []string
	// spec.paused has its own word in plan and the previews.
	if _, hold := upgrade.Hold(t, l.Current.Cluster); hold != "" && !t.Spec.Paused {
		warnings = append(warnings, hold+"; what follows is what would change then")
	}
	if external != nil {
		for _, s := range external.Skipped() {
			warnings = append(warnings, s.String())
		}
	}
	for _, obj := range res.ToApply() {
		if ownedByUncreated(obj) {
			continue // the owner is not created yet (adopt): compared as computed
		}
		dry := obj.DeepCopy()
		// Upstream's Cluster is desired as stored, with what the server
		// manages: the dry run must neither carry managed fields nor be
		// guarded by a version its controllers have moved on from.
		dry.SetManagedFields(nil)
		dry.SetResourceVersion("")
		if err := ca.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(dry), client.FieldOwner(manager), client.ForceOwnership, client.DryRunAll); err != nil {
			return nil, nil, nil, &RefusedError{Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Err: Explain(err, ca)}
		}
		desiredstate.StripServerFields(dry)
		*obj = *dry
	}
	current := make([]*unstructured.Unstructured, 0, len(l.Objects))
	for _, o := range l.Objects {
		o = o.DeepCopy()
		desiredstate.StripServerFields(o)
		current = append(current, o)
	}
	// The core version the load found; asking ca again would be a discovery call.
	machineSets := func() ([]*unstructured.Unstructured, error) {
		return (&loader.Loader{Reader: ca.Client, CoreVersion: l.CoreVersion}).Labelled(ctx, t, l.CoreVersion.GroupVersion().WithKind("MachineSet"))
	}
	p, err := plan.Compute(plan.Input{Desired: res.Desired, Current: current, Cluster: t.Name, Class: l.Class, Namespace: t.Namespace, Pending: res.Pending(), MachineSets: machineSets})
	return p, res.Desired, warnings, err
}

// RefusedError is the API server refusing, in a dry run, one object a plan
// would write: admission (a webhook, a policy) or validation, or an answer
// it could not give now (transient.Is tells which).
type RefusedError struct {
	Kind, Namespace, Name string
	Err                   error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the API server refused %s %s/%s in a dry run: %v", e.Kind, e.Namespace, e.Name, e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// ownedByUncreated tells whether an owner of obj has no UID yet, which the
// API server would refuse even in a dry run.
func ownedByUncreated(obj *unstructured.Unstructured) bool {
	for _, r := range obj.GetOwnerReferences() {
		if r.UID == "" {
			return true
		}
	}
	return false
}

// discovered is a best-effort extension client with the handlers the
// agent discovered (the TopologyExtensions' status), read once per Cluster:
// the editor wants them for both external patches and lifecycle hooks. A
// user who may not list TopologyExtensions gets none.
func (ca *Cluster) discovered(ctx context.Context) (*extension.Client, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if ca.extensions != nil {
		return ca.extensions, nil
	}
	c := &extension.Client{Registry: extension.NewRegistry(), BestEffort: true}
	list := &v1alpha2.TopologyExtensionList{}
	if err := ca.Client.List(ctx, list); err != nil && !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("reading the TopologyExtensions: %w", Explain(err, ca))
	}
	for i := range list.Items {
		_ = c.Registry.FromStatus(&list.Items[i]) // one that cannot be used is skipped by name when called
	}
	c.Registry.MarkReady()
	ca.extensions = c
	return c, nil
}

// LifecycleHandlers names, per lifecycle hook, the handlers the agent would
// call for t: those the TopologyExtensions' status lists, whose namespace
// selector matches t's namespace.
func (ca *Cluster) LifecycleHandlers(ctx context.Context, t *v1alpha2.Topology) (map[string][]string, error) {
	c, err := ca.discovered(ctx)
	if err != nil {
		return nil, err
	}
	calls := extension.NewLifecycle(c, extension.NamespaceLabelsFrom(ca.Client), nil)
	out := map[string][]string{}
	for _, hook := range lifecycle.Hooks {
		handlers, err := calls.Handlers(ctx, hook, t)
		if err != nil {
			return nil, err
		}
		if len(handlers) > 0 {
			out[hook] = handlers
		}
	}
	return out, nil
}

// ExternalPatches runs the class's external patches from here, with the
// handlers the agent discovered (TopologyExtension status). Handlers this
// machine cannot reach, typically behind a Service, are skipped and named.
// It is nil for a class without external patches.
func (ca *Cluster) ExternalPatches(ctx context.Context, class *v1alpha2.TopologyClass) (*extension.Patcher, error) {
	if !contract.HasExternalPatches(class) {
		return nil, nil
	}
	c, err := ca.discovered(ctx)
	if err != nil {
		return nil, fmt.Errorf("TopologyClass %s's external patches: %w", class.Name, err)
	}
	return extension.NewPatcher(c, class), nil
}
