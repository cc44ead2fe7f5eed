// Package upstream is Cluster API's own ClusterClass clusters — a Cluster
// with spec.topology, reconciled by upstream's topology controller where the
// ClusterTopology gate is on — seen as Topologies, so that every live command
// works on them as on ours: read and converted, written back to
// spec.topology by a guarded merge patch, and summarised from upstream's own
// signals and the objects its controller made.
package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/bundle"
	"github.com/kubectl-topology/kubectl-topology/internal/draft"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/core"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/names"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/internal/loader"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// FieldManager is the field manager upstream's topology controller writes
// the objects of a Cluster with.
const FieldManager = "capi-topology"

// conditionTypes are the Cluster's v1beta2 conditions a status view shows:
// those that are true when all is well. RollingOut, ScalingUp and the like
// are true while something happens, which the parts' states already tell.
var conditionTypes = []string{
	v1alpha2.TopologyReconciledCondition, "Available", "InfrastructureReady", "ControlPlaneInitialized",
	"ControlPlaneAvailable", "WorkersAvailable", "RemoteConnectionProbe", "MachinesReady",
}

// NewCluster is an empty Cluster of the core version, to read into.
func NewCluster(core contract.CoreVersion) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(core.APIVersion())
	u.SetKind(contract.UpstreamClusterKind)
	return u
}

// HasTopology tells whether a Cluster is managed through a ClusterClass.
func HasTopology(u *unstructured.Unstructured) bool {
	topo, ok, _ := unstructured.NestedMap(u.Object, "spec", "topology")
	return ok && len(topo) > 0
}

// IsCluster tells whether t was read from an upstream Cluster.
func IsCluster(t *v1alpha2.Topology) bool { return contract.DialectOf(t) == contract.DialectUpstream }

// FromCluster is the Cluster as a Topology: its spec.topology, network and
// paused as the spec; its generation, resourceVersion and v1beta2 conditions
// and upgrade plan carried, so that status and guarded writes work on it.
func FromCluster(u *unstructured.Unstructured) (*v1alpha2.Topology, error) {
	if !HasTopology(u) {
		return nil, fmt.Errorf("Cluster %s/%s has no spec.topology: it is not made from a ClusterClass", u.GetNamespace(), u.GetName())
	}
	t, _, err := bundle.TopologyFromCluster(u.DeepCopy())
	if err != nil {
		return nil, fmt.Errorf("reading Cluster %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	t.TypeMeta = metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: contract.UpstreamClusterKind}
	t.ResourceVersion = u.GetResourceVersion()
	t.Generation = u.GetGeneration()
	t.CreationTimestamp = u.GetCreationTimestamp()
	t.DeletionTimestamp = u.GetDeletionTimestamp()
	t.Finalizers = u.GetFinalizers()
	t.OwnerReferences = u.GetOwnerReferences()
	t.Status.ClusterName = u.GetName()
	c, err := core.Cluster(u)
	if err != nil {
		return nil, err
	}
	t.Status.ObservedGeneration = c.Status.ObservedGeneration
	t.Status.Conditions = shownConditions(core.Conditions(c))
	var cp, workers []string
	if c.Status.ControlPlane != nil {
		cp = planVersions(c.Status.ControlPlane.UpgradePlan)
	}
	if c.Status.Workers != nil {
		workers = planVersions(c.Status.Workers.UpgradePlan)
	}
	if len(cp) > 0 || len(workers) > 0 {
		t.Status.UpgradePlan = &v1alpha2.UpgradePlanStatus{ControlPlane: cp, Workers: workers}
	}
	return t, nil
}

// shownConditions are the Cluster's conditions a status view shows, in a
// fixed order.
func shownConditions(all []metav1.Condition) []metav1.Condition {
	var out []metav1.Condition
	for _, typ := range conditionTypes {
		if c := meta.FindStatusCondition(all, typ); c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// planVersions are the versions of an upgrade plan in status: those
// upstream's controller has still to apply.
func planVersions(plan []clusterv1.StatusUpgradePlanVersion) []string {
	var out []string
	for _, v := range plan {
		out = append(out, v.Version)
	}
	return out
}

// StoreFor is where an edit of t is written: the Topology, or an upstream
// Cluster's spec.topology.
func StoreFor(c client.Client, core contract.CoreVersion, t *v1alpha2.Topology) draft.Store {
	if IsCluster(t) {
		return Store{Client: c, CoreVersion: core}
	}
	return draft.TopologyStore{Client: c}
}

// Store writes edits of Clusters with spec.topology. Clusters are read in
// CoreVersion; edits are written only to v1beta2 Clusters, whose topology
// has the shape of a Topology's spec.
type Store struct {
	Client      client.Client
	CoreVersion contract.CoreVersion
}

// Get reads the Cluster as a Topology.
func (s Store) Get(ctx context.Context, key types.NamespacedName) (*v1alpha2.Topology, error) {
	u := NewCluster(s.CoreVersion)
	if err := s.Client.Get(ctx, key, u); err != nil {
		return nil, err
	}
	return FromCluster(u)
}

// Update sends what edited changes in orig as a merge patch of the Cluster,
// with orig's resourceVersion as its precondition: upstream's admission
// checks it as for any write of the Cluster.
func (s Store) Update(ctx context.Context, orig, edited *v1alpha2.Topology, dryRun bool) (*v1alpha2.Topology, error) {
	if s.CoreVersion != contract.CoreV1Beta2 {
		return nil, fmt.Errorf("Cluster %s/%s: writing an upstream Cluster's topology needs Cluster API v1.11 or later (cluster.x-k8s.io/v1beta2); this server serves %s", orig.Namespace, orig.Name, s.CoreVersion)
	}
	patch, err := Patch(orig, edited)
	if err != nil {
		return nil, err
	}
	if dryRun {
		// Upstream's controllers write the Cluster's status all along: a dry
		// run asks admission only, and the write itself is guarded.
		if patch, err = withoutResourceVersion(patch); err != nil {
			return nil, err
		}
	}
	u := NewCluster(s.CoreVersion)
	u.SetNamespace(orig.Namespace)
	u.SetName(orig.Name)
	// Strict: a field this Cluster API's Cluster does not have (a pool's
	// version before v1.15) is refused by the API server rather than
	// pruned without a word. The dry run comes first, so nothing is written.
	opts := []client.PatchOption{client.FieldValidation(metav1.FieldValidationStrict)}
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := s.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch), opts...); err != nil {
		return nil, undeclared(orig, edited, err)
	}
	return FromCluster(u)
}

// undeclared explains the API server's refusal of a field the Cluster's
// schema does not declare; other errors are returned as they are.
func undeclared(orig, edited *v1alpha2.Topology, err error) error {
	if msg := err.Error(); !strings.Contains(msg, "unknown field") && !strings.Contains(msg, "field not declared in schema") {
		return err
	}
	what := "a field of a newer Cluster API needs that release"
	if len(upgrade.PinnedPools(edited)) > 0 {
		what = "per-pool versions on an upstream Cluster need Cluster API v1.15 or later with its ClusterTopologyWorkerVersionPinning gate on; a Topology has them on any Cluster API"
	}
	return fmt.Errorf("Cluster %s/%s: this Cluster API's Cluster has no such field (%w): %s", orig.Namespace, orig.Name, err, what)
}

// Patch is the merge patch of a Cluster that makes orig's topology edited's:
// spec.topology, spec.clusterNetwork, spec.paused, labels and annotations
// where they changed, and orig's resourceVersion as the precondition.
func Patch(orig, edited *v1alpha2.Topology) ([]byte, error) {
	before, err := clusterFields(orig)
	if err != nil {
		return nil, err
	}
	after, err := clusterFields(edited)
	if err != nil {
		return nil, err
	}
	diff, err := jsonpatch.CreateMergePatch(before, after)
	if err != nil {
		return nil, fmt.Errorf("Cluster %s/%s: computing the patch of spec.topology: %w", orig.Namespace, orig.Name, err)
	}
	patch := map[string]any{}
	if err := json.Unmarshal(diff, &patch); err != nil {
		return nil, err
	}
	md, _ := patch["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
	}
	md["resourceVersion"] = orig.ResourceVersion
	patch["metadata"] = md
	return json.Marshal(patch)
}

// withoutResourceVersion drops the precondition from a patch.
func withoutResourceVersion(patch []byte) ([]byte, error) {
	m := map[string]any{}
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, err
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "resourceVersion")
		if len(md) == 0 {
			delete(m, "metadata")
		}
	}
	return json.Marshal(m)
}

// clusterFields is what of a Cluster a Topology's spec and metadata stand for.
func clusterFields(t *v1alpha2.Topology) ([]byte, error) {
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&t.Spec)
	if err != nil {
		return nil, fmt.Errorf("Cluster %s/%s: encoding spec.topology: %w", t.Namespace, t.Name, err)
	}
	cluster := map[string]any{}
	for _, k := range []string{"clusterNetwork", "paused"} {
		if v, ok := spec[k]; ok {
			cluster[k] = v
			delete(spec, k)
		}
	}
	cluster["topology"] = spec
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"labels": t.Labels, "annotations": t.Annotations},
		"spec":     cluster,
	})
}

// IgnoreMissing turns a missing Cluster or a missing Cluster API into
// "none": a lookup by name tries both kinds.
func IgnoreMissing(err error) error {
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil
	}
	return err
}

// Summarize fills t's rollout summary from what upstream's controller made,
// as the agent fills a Topology's: each part's versions, replicas, phase,
// state and problems, the infrastructure's phase and the whole's state. The
// phases are the rollout the engine decides for the Cluster, which is
// upstream's (the parity tests hold the two together). Upstream's own
// upgrade plan, when it reports one, is kept over the engine's.
func Summarize(ctx context.Context, t *v1alpha2.Topology, l *loader.Loaded) error {
	cat, err := rules.CompileClass(ctx, l.Class)
	if err != nil {
		return err
	}
	res, err := desiredstate.Compute(ctx, desiredstate.Input{
		Topology: t, Class: l.Class, Templates: l.Templates, Current: l.Current, Observed: l.Observed,
		Names: names.NewGenerator(nil), Dialect: contract.DialectUpstream, Catalog: cat,
		CoreVersion: l.CoreVersion, Contracts: l.Contracts,
	})
	if err != nil {
		return err
	}
	plan := t.Status.UpgradePlan
	health.Summarize(t, res.Sequence, l.Observed, &t.Status)
	if plan != nil {
		t.Status.UpgradePlan = plan
	}
	t.Status.Infrastructure = health.InfrastructurePhase(l.Current)
	t.Status.State = health.TopologyStateOf(&t.Status)
	if t.Spec.Paused {
		t.Status.State = v1alpha2.StatePaused
	}
	return nil
}

// Ref is how a command names t: NAME for a Topology, cluster/NAME for an
// upstream Cluster, so that a Topology of the same name is never meant instead.
func Ref(t *v1alpha2.Topology) string {
	if IsCluster(t) {
		return "cluster/" + t.Name
	}
	return t.Name
}

// ManagedBy names the controller that reconciles t.
func ManagedBy(t *v1alpha2.Topology) string {
	if IsCluster(t) {
		return "cluster-api"
	}
	return "kubectl-topology"
}
