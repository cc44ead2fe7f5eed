// Package membership reads the clusters a TopologyRollout selects —
// Topologies and upstream Clusters with spec.topology, each seen as a
// Topology — and what the fleet engine needs of each: what it has now, what
// holds it, whether its rollout has settled, and whether the change would be
// accepted. The agent's rollout controller, its webhook and the plugin's dry
// run read through it, so all three see the same fleet.
package membership

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
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/draft"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/loader"
	"github.com/kubectl-topology/kubectl-topology/internal/transient"
	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Reader reads a fleet's clusters.
type Reader struct {
	// Client reads (the agent's cache or the plugin's direct client) and,
	// for Preflight and Write, writes.
	Client client.Client
	// CoreVersion is Cluster API's stored version; "" when Cluster API is
	// not installed: then there are no upstream Clusters.
	CoreVersion contract.CoreVersion
}

// RefOf is how a rollout names t.
func RefOf(t *v1alpha2.Topology) v1alpha2.RolloutClusterRef {
	kind := v1alpha2.RolloutKindTopology
	if upstream.IsCluster(t) {
		kind = v1alpha2.RolloutKindCluster
	}
	return v1alpha2.RolloutClusterRef{Kind: kind, Namespace: t.Namespace, Name: t.Name}
}

// wants tells whether targets include kind.
func wants(targets v1alpha2.RolloutTargets, kind string) bool {
	return len(targets.Kinds) == 0 || slices.Contains(targets.Kinds, kind)
}

// List reads the clusters targets select, ordered by namespace and name. A
// cluster being deleted is not selected.
func (r Reader) List(ctx context.Context, targets v1alpha2.RolloutTargets) ([]*v1alpha2.Topology, error) {
	sel, err := metav1.LabelSelectorAsSelector(&targets.Selector)
	if err != nil {
		return nil, fmt.Errorf("spec.targets.selector: %w", err)
	}
	var out []*v1alpha2.Topology
	keep := func(t *v1alpha2.Topology) {
		if t.DeletionTimestamp.IsZero() && (targets.Class == "" || t.Spec.ClassRef.Name == targets.Class) &&
			(len(targets.Namespaces) == 0 || slices.Contains(targets.Namespaces, t.Namespace)) {
			out = append(out, t)
		}
	}
	if wants(targets, v1alpha2.RolloutKindTopology) {
		list := &v1alpha2.TopologyList{}
		if err := r.Client.List(ctx, list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return nil, fmt.Errorf("listing Topologies: %w", err)
		}
		for i := range list.Items {
			keep(&list.Items[i])
		}
	}
	if wants(targets, v1alpha2.RolloutKindCluster) && r.CoreVersion != "" {
		clusters, err := r.clusters(ctx, sel)
		if err != nil {
			return nil, err
		}
		for _, t := range clusters {
			keep(t)
		}
	}
	slices.SortFunc(out, func(a, b *v1alpha2.Topology) int { return fleet.CompareRefs(RefOf(a), RefOf(b)) })
	return out, nil
}

func (r Reader) clusters(ctx context.Context, sel labels.Selector) ([]*v1alpha2.Topology, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(r.CoreVersion.APIVersion())
	list.SetKind("ClusterList")
	if err := r.Client.List(ctx, list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing Clusters: %w", err)
	}
	var out []*v1alpha2.Topology
	for i := range list.Items {
		u := &list.Items[i]
		// A Topology's own Cluster is the Topology's: the agent changes it.
		if !upstream.HasTopology(u) || ownedByTopology(u) {
			continue
		}
		t, err := upstream.FromCluster(u)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func ownedByTopology(u *unstructured.Unstructured) bool {
	return slices.ContainsFunc(u.GetOwnerReferences(), func(o metav1.OwnerReference) bool {
		return o.Kind == v1alpha2.TopologyKind && strings.HasPrefix(o.APIVersion, v1alpha2.GroupVersion.Group+"/")
	})
}

// Get reads the cluster ref names; nil when it is gone.
func (r Reader) Get(ctx context.Context, ref v1alpha2.RolloutClusterRef) (*v1alpha2.Topology, error) {
	key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	if ref.Kind == v1alpha2.RolloutKindTopology {
		t := &v1alpha2.Topology{}
		if err := r.Client.Get(ctx, key, t); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		return t, nil
	}
	if r.CoreVersion == "" {
		return nil, nil
	}
	u := upstream.NewCluster(r.CoreVersion)
	if err := r.Client.Get(ctx, key, u); err != nil {
		return nil, upstream.IgnoreMissing(err)
	}
	if !upstream.HasTopology(u) {
		return nil, nil
	}
	return upstream.FromCluster(u)
}

// Summarize fills an upstream Cluster's rollout summary from the objects
// upstream's controller made, as `status` does; a Topology's the agent
// wrote already.
func (r Reader) Summarize(ctx context.Context, t *v1alpha2.Topology) error {
	if !upstream.IsCluster(t) {
		return nil
	}
	l, err := r.loader().Load(ctx, t)
	if err != nil {
		return fmt.Errorf("reading the rollout of Cluster %s/%s: %w", t.Namespace, t.Name, err)
	}
	return upstream.Summarize(ctx, t, l)
}

func (r Reader) loader() *loader.Loader {
	return &loader.Loader{Reader: r.Client, CoreVersion: r.CoreVersion, Mapper: r.Client.RESTMapper()}
}

// Hold says why t must not start now: it is being deleted, paused, its
// Cluster paused (as clusterctl move pauses it), or held by the
// rollout-hold annotation; "" when nothing holds it.
func Hold(t *v1alpha2.Topology) string {
	ref := RefOf(t)
	what := ref.Kind + " " + t.Namespace + "/" + t.Name
	switch {
	case !t.DeletionTimestamp.IsZero():
		return what + " is being deleted"
	case t.Spec.Paused:
		return what + " is paused (spec.paused): it starts when it is resumed, or skip it"
	case upstream.IsCluster(t) && hasKey(t.Annotations, clusterv1.PausedAnnotation):
		return what + " is paused (annotation " + clusterv1.PausedAnnotation + ")"
	case clusterHeld(t) != "":
		return what + " waits: " + clusterHeld(t)
	case hasKey(t.Annotations, v1alpha2.RolloutHoldAnnotation):
		why := t.Annotations[v1alpha2.RolloutHoldAnnotation]
		if why == "" {
			why = "no reason given"
		}
		return fmt.Sprintf("%s is held by annotation %s (%s): it starts when the annotation is removed, or skip it", what, v1alpha2.RolloutHoldAnnotation, why)
	}
	return ""
}

// clusterHeld is why the agent changes nothing of a Topology's Cluster now
// (upgrade.Hold: paused by clusterctl move, or gone after a move), as its
// TopologyReconciled condition says it; "" when nothing holds it.
func clusterHeld(t *v1alpha2.Topology) string {
	if upstream.IsCluster(t) {
		return ""
	}
	c := meta.FindStatusCondition(t.Status.Conditions, v1alpha2.TopologyReconciledCondition)
	if c == nil || (c.Reason != upgrade.HoldClusterPaused && c.Reason != upgrade.HoldClusterMissing) {
		return ""
	}
	return c.Message
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// Observe is what the fleet engine needs of t now, its rollout summarised.
func (r Reader) Observe(ctx context.Context, change v1alpha2.RolloutChange, t *v1alpha2.Topology, now time.Time) fleet.Observation {
	if t == nil {
		return fleet.Observation{Found: false}
	}
	o := fleet.Observation{Found: true, Hold: Hold(t), Has: fleet.Has(change, t)}
	if err := r.Summarize(ctx, t); err != nil {
		o.Problems = []string{err.Error()}
		return o
	}
	o.Progress = fleet.ProgressMark(t)
	o.Settled = health.Settled(t)
	if !o.Settled {
		o.Holding = append(health.Holds(t), health.PartsHolding(t)...)
	}
	if !o.Settled {
		o.Problems = append(health.Holds(t), health.PartsNotReady(t, time.Time{})...)
		for _, p := range health.TopologyProblems(t) {
			if !slices.Contains(o.Problems, p) {
				o.Problems = append(o.Problems, p)
			}
		}
	}
	return o
}

// PreflightError is every reason a cluster may not start, for its status.
type PreflightError struct{ Problems []string }

func (e *PreflightError) Error() string { return strings.Join(e.Problems, "; ") }

// Preflight checks, before a cluster is touched, what `upgrade` checks
// (rules.UpgradePreflight: the version rules the webhook enforces with the
// class's versions, the agent having seen the latest change, the control
// plane Ready), for a rebase that the class exists and is compatible, and
// then the change as a server-side dry run of the Topology and of every
// object written for it, so every webhook and admission policy answers. t
// must be summarised.
func (r Reader) Preflight(ctx context.Context, classes *Classes, change v1alpha2.RolloutChange, t *v1alpha2.Topology, now time.Time) error {
	edited := t.DeepCopy()
	fleet.Apply(change, edited)
	if err := r.preflightTopology(ctx, classes, change, t, edited, now); err != nil {
		return err
	}
	if err := r.DryRunObjects(ctx, edited); err != nil {
		if refused := Refusal(err); refused != nil {
			return refused
		}
		return fmt.Errorf("dry run of what %s writes: %w", RefOf(t).Key(), err)
	}
	return nil
}

// PreflightTopology is Preflight without the dry run of the objects written
// for t: for a caller whose live plan of the change has just sent them
// (`rollout create --dry-run` of a class or variable change).
func (r Reader) PreflightTopology(ctx context.Context, classes *Classes, change v1alpha2.RolloutChange, t *v1alpha2.Topology, now time.Time) error {
	edited := t.DeepCopy()
	fleet.Apply(change, edited)
	return r.preflightTopology(ctx, classes, change, t, edited, now)
}

// preflightTopology is PreflightTopology with t's change already applied to
// edited, which Preflight sends on to the objects' dry run.
func (r Reader) preflightTopology(ctx context.Context, classes *Classes, change v1alpha2.RolloutChange, t, edited *v1alpha2.Topology, now time.Time) error {
	target, found := rebaseProblems(ctx, classes, change, t)
	var problems []string
	for _, p := range found {
		problems = append(problems, p.message)
	}
	if target != nil && change.Version != "" && change.Version != t.Spec.Version {
		errs, unhealthy := rules.UpgradePreflight(t, target, change.Version, now)
		for _, e := range errs {
			problems = append(problems, e.Detail)
		}
		problems = append(problems, unhealthy...)
	}
	if len(problems) > 0 {
		return &PreflightError{Problems: problems}
	}
	if err := draft.DryRun(ctx, upstream.StoreFor(r.Client, r.CoreVersion, t), t, edited); err != nil {
		if transient.Is(err) {
			return fmt.Errorf("dry run of %s: %w", RefOf(t).Key(), err)
		}
		return &PreflightError{Problems: []string{"the API server refuses the change: " + health.OneLine(err.Error())}}
	}
	return nil
}

// Refusal is err as a preflight's refusal, word for word; nil when the API
// server could not answer now (transient.Is), which asking again may mend.
func Refusal(err error) *PreflightError {
	if err == nil || transient.Is(err) {
		return nil
	}
	return &PreflightError{Problems: []string{refusalText(err)}}
}

// maxRefusal bounds a refusal kept in a rollout's status: long enough for
// an admission webhook's or policy's whole message.
const maxRefusal = 1024

// refusalText is err on one line, as the API server said it.
func refusalText(err error) string {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if len(msg) > maxRefusal {
		msg = msg[:maxRefusal] + "…"
	}
	return msg
}

// DryRunObjects sends every object the agent (or, for an upstream Cluster,
// upstream's controller) would write for t now as a server-side dry run:
// the live plan's, so each webhook and admission policy of those kinds
// answers, not only the Topology's. t need not be stored: a preflight
// passes the cluster with its change.
func (r Reader) DryRunObjects(ctx context.Context, t *v1alpha2.Topology) error {
	if r.CoreVersion == "" {
		return nil // no Cluster API: the agent writes none of its objects
	}
	_, _, err := (&live.Cluster{Client: r.Client, Core: r.CoreVersion}).Plan(ctx, t)
	return err
}

// ReconcileFailed tells whether t's last reconcile failed, as its
// TopologyReconciled condition says: the agent's ReconcileFailed, upstream's
// ReconcileFailed or TopologyReconcileFailed.
func ReconcileFailed(t *v1alpha2.Topology) bool {
	c := meta.FindStatusCondition(t.Status.Conditions, v1alpha2.TopologyReconciledCondition)
	return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Reason, "Failed")
}

// Refused says why the API server refuses what is written for t now, word
// for word, when t's last reconcile failed and the refusal will not pass by
// itself; "" when its last reconcile did not fail, the dry run passes, or
// the API server could not answer now (a conflict, a timeout, 429 or 5xx).
func (r Reader) Refused(ctx context.Context, t *v1alpha2.Topology) string {
	if !ReconcileFailed(t) {
		return ""
	}
	err := r.DryRunObjects(ctx, t)
	if refused := Refusal(err); refused != nil && !apierrors.IsConflict(err) {
		return refused.Error()
	}
	return ""
}

// problem is one reason a change is refused, with the field it is about.
type problem struct{ field, message string }

// rebaseProblems reads t's class and, for a rebase, the class the change
// lands it on, and says what refuses the rebase: that class missing, or not
// compatible. It returns the class t lands on, nil where it cannot be read.
func rebaseProblems(ctx context.Context, classes *Classes, change v1alpha2.RolloutChange, t *v1alpha2.Topology) (*v1alpha2.TopologyClass, []problem) {
	class, err := classes.Of(ctx, t)
	if err != nil {
		return nil, []problem{{"spec.targets", "its class cannot be read: " + err.Error()}}
	}
	if change.Class == "" || change.Class == t.Spec.ClassRef.Name {
		return class, nil
	}
	edited := t.DeepCopy()
	fleet.Apply(change, edited)
	desired, err := classes.Of(ctx, edited)
	var missing *loader.NotFoundError
	switch {
	case errors.As(err, &missing):
		return nil, []problem{{"spec.change.class", fmt.Sprintf("class %s does not exist in namespace %s", change.Class, t.GetClassKey().Namespace)}}
	case err != nil:
		return nil, []problem{{"spec.change.class", fmt.Sprintf("reading class %s: %v", change.Class, err)}}
	}
	var out []problem
	for _, e := range rules.ClassesCompatible(class, desired) {
		out = append(out, problem{"spec.change.class", fmt.Sprintf("rebasing onto %s: %s: %s", change.Class, e.Field, e.Detail)})
	}
	return desired, out
}

// Classes reads the classes of a fleet's clusters, each once: a fleet
// shares a few classes. It may be used from several goroutines (the
// plugin's preflights run side by side).
type Classes struct {
	loader *loader.Loader
	mu     sync.Mutex
	read   map[string]classRead
}

type classRead struct {
	class *v1alpha2.TopologyClass
	err   error
}

// Classes returns an empty memo of the classes r reads.
func (r Reader) Classes() *Classes {
	return &Classes{loader: r.loader(), read: map[string]classRead{}}
}

// Of is t's class: its TopologyClass, or an upstream Cluster's ClusterClass
// as one. The class is shared: callers do not change it.
func (c *Classes) Of(ctx context.Context, t *v1alpha2.Topology) (*v1alpha2.TopologyClass, error) {
	key := RefOf(t).Kind + "/" + t.GetClassKey().String()
	c.mu.Lock()
	defer c.mu.Unlock()
	if got, ok := c.read[key]; ok {
		return got.class, got.err
	}
	class, err := c.loader.Class(ctx, t)
	c.read[key] = classRead{class, err}
	return class, err
}

// Write sets change on t, guarded by the resourceVersion t was read at.
func (r Reader) Write(ctx context.Context, change v1alpha2.RolloutChange, t *v1alpha2.Topology) error {
	edited := t.DeepCopy()
	fleet.Apply(change, edited)
	_, err := upstream.StoreFor(r.Client, r.CoreVersion, t).Update(ctx, t, edited, false)
	return err
}
