// Package controller holds the agent's reconcilers: Topology (makes a topology
// real as ordinary Cluster API objects) and TopologyClass (status, and fanning
// class changes out to its topologies). Every decision comes from internal/engine;
// this package reads, writes and reports.
package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/apply"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/names"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/patches"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/internal/extension"
	"github.com/kubectl-topology/kubectl-topology/internal/loader"
	"github.com/kubectl-topology/kubectl-topology/internal/shard"
	"github.com/kubectl-topology/kubectl-topology/internal/templateprobe"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// FieldManager is the server-side apply field manager of everything the agent writes.
const FieldManager = apply.FieldManager

// TopologyFinalizer keeps a Topology until the CAPI Cluster it owns and every
// object it generated are gone.
const TopologyFinalizer = "topology.kubectl-topology.io/cluster"

// Condition type and reasons on Topology.status, upstream's where upstream has one.
const (
	ReconciledCondition              = v1alpha2.TopologyReconciledCondition
	ReasonSucceeded                  = "ReconcileSucceeded"
	ReasonFailed                     = "ReconcileFailed"
	ReasonClassNotReconciled         = "ClusterClassNotReconciled"
	ReasonPaused                     = "Paused"
	ReasonClusterPaused              = upgrade.HoldClusterPaused
	ReasonClusterMissing             = upgrade.HoldClusterMissing
	ReasonClusterUpgrading           = "ClusterUpgrading"
	ReasonMachineDeploymentsDeferred = "MachineDeploymentsUpgradeDeferred"
	ReasonMachinePoolsDeferred       = "MachinePoolsUpgradeDeferred"
	ReasonDeleting                   = "Deleting"
	deletionPollInterval             = 2 * time.Second
	clusterKind                      = "Cluster"
	machineSetKind                   = "MachineSet"
	machineKind                      = "Machine"
)

// TopologyReconciler makes each Topology real as Cluster API objects.
type TopologyReconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads templates the cache does not hold: those of a class in
	// another namespace when the agent watches one namespace.
	APIReader client.Reader
	// Shard is what this agent reconciles: Topologies it does not own are
	// another agent's, and only its namespaces are in the cache.
	Shard shard.Shard
	// Recorder emits an event for each object created, rotated or deleted.
	Recorder record.EventRecorder
	// NewNames returns the name generator for one reconcile; inject a seeded
	// one for reproducible names in tests. nil: random suffixes.
	NewNames func() *names.Generator
	// Classes caches compiled classes across reconciles.
	Classes *rules.ClassCache
	// Watches adds watches on provider kinds as the agent meets them.
	Watches *DynamicWatches
	// Extensions calls the Runtime SDK extensions of external patches; nil
	// leaves classes with external patches unreconciled, with the reason.
	Extensions *extension.Client
	// UpgradePlans asks classes' upgrade-plan extensions for the chain of
	// versions, caching the answers; nil leaves such classes to their
	// kubernetesVersions.
	UpgradePlans *extension.UpgradePlanner
	// Clock stamps state transition times; nil: the real clock.
	Clock clock.PassiveClock
	// ByCluster indexes the cache by cluster; nil lists by label.
	ByCluster *ClusterIndex
	// CoreVersion is the Cluster API core version the management cluster
	// stores, read from discovery: the agent reads and writes it.
	CoreVersion contract.CoreVersion
	// Hooks calls the Runtime SDK lifecycle hooks; nil calls none.
	Hooks *extension.Lifecycle

	// failing holds the UIDs of the Topologies whose last pass here ended
	// in an error: their status may not say so yet when the retry reads it.
	failing sync.Map
}

// scope carries one reconcile of one Topology from step to step.
type scope struct {
	topo      *v1alpha2.Topology
	class     *rules.CompiledClass
	templates *clusterstate.TemplateIndex
	contracts contract.Contracts
	current   *clusterstate.State
	live      []*unstructured.Unstructured // the Cluster and the objects labelled for it
	observed  *upgrade.Observed
	result    *desiredstate.Result
	desired   []*unstructured.Unstructured // what the engine says to write now
	// condition to report; the reconcile error, if any, overrides it.
	reason, message string
	// requeueAfter asks for another look, e.g. while a deletion completes.
	requeueAfter time.Duration
	// answers are the lifecycle hooks called this pass and what they said;
	// evented the hooks an Event was recorded for.
	answers lifecycle.Answers
	evented map[string]bool
	// cacheBehind ends the pass without a status write (waitForCache).
	cacheBehind bool
	// created and updated name ("Kind name") the objects this pass wrote,
	// for its Events.
	created, updated []string
}

// Reconcile runs the steps of one Topology reconcile and reports the outcome
// on its status.
func (r *TopologyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	topo := &v1alpha2.Topology{}
	if err := r.Client.Get(ctx, req.NamespacedName, topo); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.Shard.Owns(topo) {
		// Another shard's (a class or template watch maps to every user).
		return ctrl.Result{}, nil
	}
	if !topo.DeletionTimestamp.IsZero() {
		r.failing.Delete(topo.UID) // no more passes that create
		return r.reconcileDelete(ctx, topo)
	}
	if !controllerutil.ContainsFinalizer(topo, TopologyFinalizer) {
		patch := client.MergeFrom(topo.DeepCopy())
		controllerutil.AddFinalizer(topo, TopologyFinalizer)
		if err := r.Client.Patch(ctx, topo, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer to Topology %s: %w", req, err)
		}
	}
	s := &scope{topo: topo}
	before := topo.Status.DeepCopy()
	err := r.reconcileSteps(ctx, s)
	// A pass on a view older than the server's (the cache behind it, or
	// the Topology changed since it was read) writes no status of that view.
	if (s.cacheBehind && err == nil) || errors.Is(err, errTopologyChanged) {
		return ctrl.Result{RequeueAfter: cacheBehindRetry}, nil
	}
	if err != nil {
		r.failing.Store(topo.UID, true)
	} else {
		r.failing.Delete(topo.UID)
	}
	if statusErr := r.writeStatus(ctx, s, before, err); statusErr != nil {
		err = errors.Join(err, statusErr)
	}
	var invalid *rules.InvalidError
	var missing *loader.NotFoundError
	if errors.As(err, &invalid) || errors.As(err, &missing) {
		// Bad input waits for the user; the watches bring it back when it changes.
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: s.requeueAfter}, err
}

func (r *TopologyReconciler) reconcileSteps(ctx context.Context, s *scope) error {
	if s.topo.Spec.Paused {
		s.reason, s.message = ReasonPaused, "spec.paused is true: nothing is changed until it is cleared"
		return nil
	}
	steps := []func(context.Context, *scope) (bool, error){
		r.getClass,
		r.getTemplates,
		r.getCurrentState,
		r.waitForCache,
		r.holdForCluster,
		r.callBeforeClusterCreate,
		r.observeRollout,
		r.computeDesired,
		r.writeOwedHooks,
		r.applyDesired,
		r.deleteUnused,
		r.callAfterHooks,
	}
	for _, step := range steps {
		cont, err := step(ctx, s)
		if err != nil || !cont {
			return err
		}
	}
	pendingUpgrade := lifecycle.PendingOf(s.topo.Annotations).Has(lifecycle.AfterClusterUpgrade)
	s.reason, s.message = rolloutReason(s.result.Sequence, s.result.Desired.ControlPlane.Object.GetKind(), &s.answers, pendingUpgrade)
	if after := s.answers.RetryAfter(); after > 0 && (s.requeueAfter == 0 || after < s.requeueAfter) {
		s.requeueAfter = after
	}
	return nil
}

// loader reads what the engine needs through the cache; a class's templates
// outside the namespaces the agent watches are read uncached, so a change
// to one of them waits for the next reconcile.
func (r *TopologyReconciler) loader() *loader.Loader {
	l := &loader.Loader{Reader: r.Client, CoreVersion: r.CoreVersion, Mapper: r.Client.RESTMapper(), TemplateReader: func(namespace string) client.Reader {
		if !r.Shard.Watches(namespace) && r.APIReader != nil {
			return r.APIReader
		}
		return r.Client
	}}
	if r.ByCluster != nil {
		l.ByCluster = r.ByCluster.Field
	}
	return l
}

func (r *TopologyReconciler) getClass(ctx context.Context, s *scope) (bool, error) {
	class, err := r.loader().Class(ctx, s.topo)
	if err != nil {
		return false, err
	}
	if class.Status.ObservedGeneration != class.Generation {
		s.reason = ReasonClassNotReconciled
		s.message = fmt.Sprintf("TopologyClass %s generation %d is not reconciled yet", s.topo.GetClassKey(), class.Generation)
		return false, nil
	}
	compiled, err := r.Classes.Get(ctx, class)
	if err != nil {
		return false, err
	}
	s.class = compiled
	return true, nil
}

func (r *TopologyReconciler) getTemplates(ctx context.Context, s *scope) (bool, error) {
	ix, err := r.loader().Templates(ctx, s.class.Class)
	if err != nil {
		return false, err
	}
	s.templates = ix
	s.contracts, err = r.loader().Contracts(ctx, s.class.Class)
	return err == nil, err
}

// getCurrentState reads what exists: the Cluster, and every object of the
// class's kinds labelled for this cluster, adopting what was made before the
// Cluster existed.
func (r *TopologyReconciler) getCurrentState(ctx context.Context, s *scope) (bool, error) {
	objs, err := r.loader().Objects(ctx, s.topo, s.class.Class)
	if err != nil {
		return false, err
	}
	s.live = objs
	s.current = loader.State(s.topo, s.class.Class, objs)
	return true, nil
}

// cacheBehindRetry is how soon a pass on a stale view (the cache behind, or
// the Topology changed since it was read) looks again, should the watch
// event of what it lacked not come first.
const cacheBehindRetry = 200 * time.Millisecond

// waitForCache ends the pass, without a status write, when the cache lists
// the Cluster, its control plane or a pool but not an object one of them
// refers to, and the API server has that object as one this Topology
// generated. Informers catch up kind by kind, so a pass right after one that
// wrote a pool and its new clones can see the pool without them; computed
// on that view, the desired state would make the clones again under new
// names and point the pool at them, rolling its machines for nothing.
// The Cluster and the pools the view lacks are checked the same way
// (waitForCluster, waitForPools), before the lifecycle hooks are called and
// the desired state computed.
func (r *TopologyReconciler) waitForCache(ctx context.Context, s *scope) (bool, error) {
	if r.APIReader == nil {
		return true, nil
	}
	poolKinds := contract.MachinePoolKinds(s.class.Class)
	for _, ref := range desiredstate.Unresolved(s.current) {
		key := clusterstate.KeyOfReference(ref, s.topo.Namespace)
		mapping, err := r.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: key.Group, Kind: key.Kind})
		if err != nil {
			continue // not a kind this API server serves: no cache can hold it
		}
		now := &unstructured.Unstructured{}
		now.SetGroupVersionKind(mapping.GroupVersionKind)
		found, err := r.serverHas(ctx, types.NamespacedName{Namespace: key.Namespace, Name: key.Name}, now, key.String())
		if err != nil {
			return false, err
		}
		if found && contract.Generated(now, s.topo.Name, poolKinds) {
			return s.behind(ctx, key.String())
		}
	}
	if cont, err := r.waitForCluster(ctx, s); !cont || err != nil {
		return cont, err
	}
	return r.waitForPools(ctx, s)
}

// waitForCluster is waitForCache for the Cluster itself, when the view lacks
// it. On that view the pass would call BeforeClusterCreate again and apply
// the Cluster anew, pointing it at a new infrastructure cluster and control
// plane beside the ones it owns, which no pass then deletes (a chaos run
// left both twice; the Cluster-made mark stops it only once the view of the
// Topology has it too). One metadata read, on the passes before the Cluster
// is made.
func (r *TopologyReconciler) waitForCluster(ctx context.Context, s *scope) (bool, error) {
	if s.current.Cluster != nil {
		return true, nil
	}
	cluster := &metav1.PartialObjectMetadata{}
	cluster.SetGroupVersionKind(r.capiGVK(clusterKind))
	what := fmt.Sprintf("Cluster %s/%s", s.topo.Namespace, s.topo.Name)
	found, err := r.serverHas(ctx, client.ObjectKeyFromObject(s.topo), cluster, what)
	if !found || err != nil {
		return err == nil, err
	}
	return s.behind(ctx, what)
}

// serverHas reads into obj, from the API server itself, what the view
// lacks: whether the server has it (a kind it does not serve, none).
func (r *TopologyReconciler) serverHas(ctx context.Context, key types.NamespacedName, obj client.Object, what string) (bool, error) {
	switch err := r.APIReader.Get(ctx, key, obj); {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return false, nil
	default:
		return false, fmt.Errorf("reading %s, which the cache does not hold yet: %w", what, err)
	}
}

// behind ends a pass whose view lacks missing, which the API server has:
// no status of that view is written, and the pass looks again.
func (s *scope) behind(ctx context.Context, missing string) (bool, error) {
	ctrl.LoggerFrom(ctx).V(1).Info("the cache lags the API server: looking again", "missing", missing)
	s.cacheBehind = true
	return false, nil
}

// waitForPools is waitForCache for the pools the topology names but the view
// lacks while it lists the Cluster: on that view the pass would make a second
// MachineDeployment beside the one the server has, or report its creation as
// deferred. Upstream's topology controller makes the same live check before
// it creates a pool. Only the pools' metadata is listed, and only then: a
// brand-new cluster's first pass has nothing that could lag.
func (r *TopologyReconciler) waitForPools(ctx context.Context, s *scope) (bool, error) {
	if s.current.Cluster == nil || s.topo.Spec.Workers == nil {
		return true, nil
	}
	var mds, mps []string
	for _, md := range s.topo.Spec.Workers.MachineDeployments {
		mds = append(mds, md.Name)
	}
	for _, mp := range s.topo.Spec.Workers.MachinePools {
		mps = append(mps, mp.Name)
	}
	for _, set := range []struct {
		kind, label string
		named       []string
		current     map[string]*clusterstate.Worker
	}{
		{"MachineDeployment", clusterv1.ClusterTopologyMachineDeploymentNameLabel, mds, s.current.MachineDeployments},
		{"MachinePool", clusterv1.ClusterTopologyMachinePoolNameLabel, mps, s.current.MachinePools},
	} {
		absent := slices.DeleteFunc(set.named, func(name string) bool { return set.current[name] != nil })
		if len(absent) == 0 {
			continue
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(r.capiGVK(set.kind + "List"))
		err := r.APIReader.List(ctx, list, client.InNamespace(s.topo.Namespace),
			client.MatchingLabels{clusterv1.ClusterNameLabel: s.topo.Name}, client.HasLabels{clusterv1.ClusterTopologyOwnedLabel})
		if meta.IsNoMatchError(err) {
			continue // the kind is not installed: none can exist
		}
		if err != nil {
			return false, fmt.Errorf("listing the %ss of Cluster %s/%s, to confirm that %s are new: %w", set.kind, s.topo.Namespace, s.topo.Name, strings.Join(absent, ", "), err)
		}
		for _, o := range list.Items {
			if pool := o.Labels[set.label]; slices.Contains(absent, pool) {
				return s.behind(ctx, fmt.Sprintf("%s %s (pool %s)", set.kind, o.Name, pool))
			}
		}
	}
	return true, nil
}

// holdForCluster stops where upgrade.Hold says to. It first marks a
// Topology whose Cluster exists, so that the mark travels with it in a move.
func (r *TopologyReconciler) holdForCluster(ctx context.Context, s *scope) (bool, error) {
	cluster := s.current.Cluster
	if _, moving := s.topo.Annotations[contract.DeleteForMoveAnnotation]; cluster != nil && !moving {
		if err := r.markClusterMade(ctx, s.topo, cluster.GetName()); err != nil {
			return false, err
		}
	}
	s.reason, s.message = upgrade.Hold(s.topo, cluster)
	return s.reason == "", nil
}

// markClusterMade annotates the Topology with the name of its Cluster, once.
func (r *TopologyReconciler) markClusterMade(ctx context.Context, topo *v1alpha2.Topology, cluster string) error {
	if topo.Annotations[v1alpha2.ClusterMadeAnnotation] == cluster {
		return nil
	}
	orig := topo.DeepCopy()
	metav1.SetMetaDataAnnotation(&topo.ObjectMeta, v1alpha2.ClusterMadeAnnotation, cluster)
	if err := r.patchAsRead(ctx, topo, orig); err != nil {
		return fmt.Errorf("marking Topology %s/%s as having made Cluster %s: %w", topo.Namespace, topo.Name, cluster, err)
	}
	return nil
}

// errTopologyChanged says the Topology changed on the server after this pass
// read it: the pass ends without a status write, as what it computed is of
// the old spec, and the change's own event brings the Topology back.
var errTopologyChanged = errors.New("the Topology changed after this pass read it")

// patchAsRead writes t's metadata as changed from orig, on the condition
// that the server's Topology is still the one this pass read. Written
// without it, the server's newer spec would come back into t midway, beside
// a desired state computed from the old one. On failure t is orig again.
func (r *TopologyReconciler) patchAsRead(ctx context.Context, t, orig *v1alpha2.Topology) error {
	err := r.Client.Patch(ctx, t, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if err == nil {
		return nil
	}
	orig.DeepCopyInto(t)
	if apierrors.IsConflict(err) {
		return fmt.Errorf("%w (resourceVersion %s): %w", errTopologyChanged, orig.ResourceVersion, err)
	}
	return err
}

// observeRollout reads the rollout state per the contracts, refined by Machines.
func (r *TopologyReconciler) observeRollout(ctx context.Context, s *scope) (bool, error) {
	obs, err := r.loader().Observe(ctx, s.topo, s.current)
	s.observed = obs
	return err == nil, err
}

// external is the runner of the class's external patches, or nil when it
// has none or the agent has no extension client.
func (r *TopologyReconciler) external(ctx context.Context, class *v1alpha2.TopologyClass) patches.External {
	if r.Extensions == nil || !contract.HasExternalPatches(class) {
		return nil
	}
	return extension.NewPatcher(r.Extensions, class)
}

// upgradePlanner is UpgradePlans as the engine takes it: a nil interface,
// not a nil pointer, when there is none.
func (r *TopologyReconciler) upgradePlanner() upgrade.UpgradePlanner {
	if r.UpgradePlans == nil {
		return nil
	}
	return r.UpgradePlans
}

func (r *TopologyReconciler) names() *names.Generator {
	if r.NewNames == nil {
		return names.NewGenerator(nil)
	}
	return r.NewNames()
}

func (r *TopologyReconciler) computeDesired(ctx context.Context, s *scope) (bool, error) {
	res, err := desiredstate.Compute(ctx, desiredstate.Input{
		Topology:       s.topo,
		Class:          s.class.Class,
		Templates:      s.templates,
		Current:        s.current,
		Observed:       s.observed,
		Names:          r.names(),
		Dialect:        contract.DialectTopology,
		Catalog:        s.class.Catalog,
		External:       r.external(ctx, s.class.Class),
		UpgradePlanner: r.upgradePlanner(),
		Hooks:          r.hookCaller(),
		CoreVersion:    r.CoreVersion,
		Contracts:      s.contracts,
	})
	var hookErr *lifecycle.CallError
	if errors.As(err, &hookErr) {
		r.hookEvents(s, err)
	}
	if err != nil {
		return false, err
	}
	for _, a := range res.Hooks.Answers.List() {
		s.answers.Add(a)
	}
	r.hookEvents(s, nil)
	s.result = res
	s.desired = res.ToApply()
	return true, nil
}

// applyDesired writes, in dependency order, every desired object that differs
// from what exists. A new CAPI Cluster comes first, as upstream's topology
// controller finds it made by the user: the objects after it are then made
// with it as their owner, and Cluster API's controllers wait for what its
// references name. Made the other way round, every object made before the
// Cluster had to be written again to hand it over: three writes of each new
// cluster, each through its provider's webhooks.
//
// Clones (templates made for one control plane or pool) this pass created
// are deleted again if their referrer's write, or a later one before it,
// fails; clones whose referrer was written stay. After a failed pass, a
// clone is only created once a server-side dry run shows that the object
// referring to it can be written too: a Topology the API server keeps
// refusing then makes no new template on each attempt. The first attempt
// asks no dry run, as most passes succeed and each dry run is another round
// through the referrer's admission webhooks: three for each new cluster of
// a class with two pools.
func (r *TopologyReconciler) applyDesired(ctx context.Context, s *scope) (bool, error) {
	defer r.changeEvents(s)
	current := indexByKey(s.current.Objects(), s.live)
	clones := s.result.Desired.ClonesOf()
	_, failing := r.failing.Load(s.topo.UID)
	probe := failing || lastPassFailed(s.topo)
	checked := map[clusterstate.Key]bool{}
	var created []*unstructured.Unstructured
	fail := func(err error) (bool, error) {
		r.deleteClones(ctx, s, created)
		return false, err
	}
	objs := clusterFirst(s.desired, current)
	for _, obj := range objs {
		key := clusterstate.KeyOf(obj)
		existed := current[key] != nil
		if referrer := clones[key]; probe && !existed && referrer != nil && !checked[clusterstate.KeyOf(referrer)] {
			checked[clusterstate.KeyOf(referrer)] = true
			if err := r.dryRun(ctx, referrer); err != nil {
				return fail(fmt.Errorf("not creating %s %s: %w", obj.GetKind(), obj.GetName(), err))
			}
		}
		applied, err := r.applyOne(ctx, s, current[key], obj)
		if err != nil {
			return fail(err)
		}
		// Written, obj refers to its new clones: deleting them after a later
		// failure would leave it pointing at nothing, and the next pass would
		// roll its machines onto clones made again.
		created = slices.DeleteFunc(created, func(c *unstructured.Unstructured) bool {
			return clusterstate.KeyOf(clones[clusterstate.KeyOf(c)]) == key
		})
		if key == clusterstate.KeyOf(s.result.Desired.ControlPlane.Object) {
			if err := r.oweAfterControlPlane(ctx, s); err != nil {
				return fail(err)
			}
		}
		if applied != nil {
			current[key] = applied
			if !existed && clones[key] != nil {
				created = append(created, applied)
			}
			s.observed.Changed(s.current, applied)
		}
		if applied == nil || obj.GetKind() != clusterKind || existed {
			continue
		}
		if err := r.markClusterMade(ctx, s.topo, applied.GetName()); err != nil {
			return fail(err)
		}
		// What exists already (made before the Cluster by an earlier
		// version, or adopted) is handed over when its turn comes below.
		owner := metav1.OwnerReference{APIVersion: r.CoreVersion.APIVersion(), Kind: clusterKind, Name: applied.GetName(), UID: applied.GetUID()}
		for _, o := range objs {
			handOver(o, s.topo.UID, owner)
		}
	}
	return true, nil
}

// lastPassFailed tells whether t's last reconcile, as its status records it,
// ended in an error: what an agent that restarted, or took over, knows.
func lastPassFailed(t *v1alpha2.Topology) bool {
	c := meta.FindStatusCondition(t.Status.Conditions, ReconciledCondition)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == ReasonFailed
}

// clusterFirst returns objs with a Cluster that current does not hold moved
// to the front, the rest in their order.
func clusterFirst(objs []*unstructured.Unstructured, current map[clusterstate.Key]*unstructured.Unstructured) []*unstructured.Unstructured {
	i := slices.IndexFunc(objs, func(o *unstructured.Unstructured) bool {
		return o.GetKind() == clusterKind && current[clusterstate.KeyOf(o)] == nil
	})
	if i <= 0 {
		return objs
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	out = append(out, objs[i])
	out = append(out, objs[:i]...)
	return append(out, objs[i+1:]...)
}

// dryRun asks the API server, its admission webhooks included, whether obj
// would be accepted, without writing it.
func (r *TopologyReconciler) dryRun(ctx context.Context, obj *unstructured.Unstructured) error {
	probe := obj.DeepCopy()
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(probe), client.FieldOwner(FieldManager), client.ForceOwnership, client.DryRunAll); err != nil {
		return fmt.Errorf("the API server would refuse %s %s/%s that refers to it: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), templateprobe.ExplainGate(ctx, r.Client, obj, err))
	}
	return nil
}

// deleteClones removes, best effort, the clones a failed pass created; the
// next attempt makes them anew once their referrer can be written.
func (r *TopologyReconciler) deleteClones(ctx context.Context, s *scope, created []*unstructured.Unstructured) {
	for _, o := range created {
		err := r.Client.Delete(ctx, o, client.Preconditions{UID: ptr(o.GetUID())})
		if err != nil && !apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).Error(err, "deleting a template made by a failed reconcile; it is deleted as unused once the Topology reconciles", "kind", o.GetKind(), "name", o.GetName())
			continue
		}
		r.Recorder.Eventf(s.topo, "Normal", "Deleted", "Deleted %s %s: the object referring to it could not be written", o.GetKind(), o.GetName())
	}
}

// applyOne server-side applies obj unless cur already matches it, and returns
// the object as stored, or nil when nothing was written.
func (r *TopologyReconciler) applyOne(ctx context.Context, s *scope, cur, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if err := r.Watches.Ensure(ctx, obj.GroupVersionKind()); err != nil {
		return nil, err
	}
	var applied *unstructured.Unstructured
	if cur != nil && obj.GetKind() == clusterKind && r.CoreVersion.IsV1Beta2() {
		patched, err := r.patchCluster(ctx, cur, obj)
		if patched == nil || err != nil {
			return nil, err
		}
		applied = patched
	} else {
		if !apply.NeedsApply(cur, obj, FieldManager) {
			return nil, nil
		}
		applied = obj.DeepCopy() // Apply fills its argument with the response
		if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("applying %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), templateprobe.ExplainGate(ctx, r.Client, obj, err))
		}
		if err := r.dropStaleOwners(ctx, applied, obj); err != nil {
			return nil, err
		}
	}
	switch {
	case cur == nil && s.result.Rotated[clusterstate.KeyOf(obj)] != "":
		r.Recorder.Eventf(s.topo, "Normal", "TemplateRotated", "Created %s %s to replace %s", obj.GetKind(), obj.GetName(), s.result.Rotated[clusterstate.KeyOf(obj)])
	case cur == nil:
		s.created = append(s.created, obj.GetKind()+" "+obj.GetName())
	default:
		s.updated = append(s.updated, obj.GetKind()+" "+obj.GetName())
	}
	return applied, nil
}

// changeEvents records one Event for what the pass created and one for
// what it updated, each naming every object in the order written. An Event
// per object, as upstream's controller records on the Cluster, came to ten
// writes of each new cluster at a thousand (a third of the agent's), and
// past ten in a row the recorder folds them into one that names only the
// last anyway.
func (r *TopologyReconciler) changeEvents(s *scope) {
	if len(s.created) > 0 {
		r.Recorder.Eventf(s.topo, "Normal", "Created", "Created %s", strings.Join(s.created, ", "))
	}
	if len(s.updated) > 0 {
		r.Recorder.Eventf(s.topo, "Normal", "Updated", "Updated %s", strings.Join(s.updated, ", "))
	}
	s.created, s.updated = nil, nil
}

// dropStaleOwners removes from applied, as stored, a Topology owner that
// obj no longer names and the apply left because Cluster API co-owns it,
// with a merge patch of the owner list that fails if applied changed since.
func (r *TopologyReconciler) dropStaleOwners(ctx context.Context, applied, obj *unstructured.Unstructured) error {
	kept := apply.WithoutStaleTopologyOwners(applied, obj)
	if len(kept) == len(applied.GetOwnerReferences()) {
		return nil
	}
	before := applied.DeepCopy()
	applied.SetOwnerReferences(kept)
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	if err := r.Client.Patch(ctx, applied, patch, client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("removing the Topology as owner of %s %s/%s, which its Cluster owns: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// patchCluster writes an existing v1beta2 Cluster as upstream v1.14 does,
// with a merge patch of what changed, and returns it as stored, or nil when
// nothing changed.
func (r *TopologyReconciler) patchCluster(ctx context.Context, cur, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	patch, err := apply.ClusterMergePatch(cur, obj, FieldManager)
	if patch == nil || err != nil {
		return nil, err
	}
	patched := cur.DeepCopy() // Patch fills its argument with the response
	if err := r.Client.Patch(ctx, patched, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager)); err != nil {
		return nil, fmt.Errorf("patching Cluster %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return patched, nil
}

// handOver replaces the Topology as owner of o with the new CAPI Cluster.
func handOver(o *unstructured.Unstructured, topology types.UID, cluster metav1.OwnerReference) {
	refs := o.GetOwnerReferences()
	for i := range refs {
		if refs[i].UID == topology && (refs[i].Controller == nil || !*refs[i].Controller) {
			refs[i] = cluster
		}
	}
	o.SetOwnerReferences(refs)
}

func indexByKey(lists ...[]*unstructured.Unstructured) map[clusterstate.Key]*unstructured.Unstructured {
	out := map[clusterstate.Key]*unstructured.Unstructured{}
	for _, l := range lists {
		for _, o := range l {
			out[clusterstate.KeyOf(o)] = o
		}
	}
	return out
}
