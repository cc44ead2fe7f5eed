// Package lifecycle decides, without a client, when the Runtime SDK's
// lifecycle hooks are due and what their answers hold back, as Cluster API
// v1.14's topology controller does with its RuntimeSDK gate on: the hooks of
// creation (BeforeClusterCreate, AfterControlPlaneInitialized), of each
// upgrade and each step of a chained one, and of deletion
// (BeforeClusterDelete). A Caller (internal/extension) makes the calls; the
// agent keeps the hooks still owed in the pending-hooks annotation.
package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// The lifecycle hooks, named as upstream's hook catalog names them.
var (
	BeforeClusterCreate          = runtimecatalog.HookName(runtimehooksv1.BeforeClusterCreate)
	AfterControlPlaneInitialized = runtimecatalog.HookName(runtimehooksv1.AfterControlPlaneInitialized)
	BeforeClusterUpgrade         = runtimecatalog.HookName(runtimehooksv1.BeforeClusterUpgrade)
	BeforeControlPlaneUpgrade    = runtimecatalog.HookName(runtimehooksv1.BeforeControlPlaneUpgrade)
	AfterControlPlaneUpgrade     = runtimecatalog.HookName(runtimehooksv1.AfterControlPlaneUpgrade)
	BeforeWorkersUpgrade         = runtimecatalog.HookName(runtimehooksv1.BeforeWorkersUpgrade)
	AfterWorkersUpgrade          = runtimecatalog.HookName(runtimehooksv1.AfterWorkersUpgrade)
	AfterClusterUpgrade          = runtimecatalog.HookName(runtimehooksv1.AfterClusterUpgrade)
	BeforeClusterDelete          = runtimecatalog.HookName(runtimehooksv1.BeforeClusterDelete)
)

// Hooks are the nine lifecycle hooks in the order a cluster's life meets them.
var Hooks = []string{
	BeforeClusterCreate, AfterControlPlaneInitialized,
	BeforeClusterUpgrade, BeforeControlPlaneUpgrade, AfterControlPlaneUpgrade,
	BeforeWorkersUpgrade, AfterWorkersUpgrade, AfterClusterUpgrade,
	BeforeClusterDelete,
}

// The bookkeeping uses upstream's annotations (runtime/v1beta2's pending-hooks
// and ok-to-delete, core/v1beta2's before-upgrade hook prefix) with their
// formats; the agent keeps them on the Topology, the object the user owns,
// where upstream keeps them on its Cluster.

// Pending is the set of hooks owed, as the pending-hooks annotation lists
// them, comma separated and sorted: a restarted agent calls each once.
type Pending []string

// PendingOf reads the annotation from annotations.
func PendingOf(annotations map[string]string) Pending {
	var p Pending
	for _, h := range strings.Split(annotations[runtimev1.PendingHooksAnnotation], ",") {
		if h = strings.TrimSpace(h); h != "" && !slices.Contains(p, h) {
			p = append(p, h)
		}
	}
	slices.Sort(p)
	return p
}

// Has reports whether hook is owed.
func (p Pending) Has(hook string) bool { return slices.Contains(p, hook) }

// With is p and hooks.
func (p Pending) With(hooks ...string) Pending {
	out := slices.Clone(p)
	for _, h := range hooks {
		if !out.Has(h) {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return out
}

// Without is p less hooks.
func (p Pending) Without(hooks ...string) Pending {
	var out Pending
	for _, h := range p {
		if !slices.Contains(hooks, h) {
			out = append(out, h)
		}
	}
	return out
}

// String is the annotation's value; empty when nothing is owed.
func (p Pending) String() string { return strings.Join(p, ",") }

// Equal reports whether p and o owe the same hooks.
func (p Pending) Equal(o Pending) bool { return p.String() == o.String() }

// Request is one hook call: which hook, and the versions and steps the
// hook's request carries (upstream's field names in comments).
type Request struct {
	// Hook is the hook called.
	Hook string
	// Topology is the cluster's Topology; Cluster its Cluster API Cluster,
	// nil before it exists.
	Topology *v1alpha2.Topology
	Cluster  *unstructured.Unstructured
	// From and To are fromKubernetesVersion and toKubernetesVersion
	// (BeforeClusterUpgrade, BeforeControlPlaneUpgrade, BeforeWorkersUpgrade).
	From, To string
	// Version is kubernetesVersion (the After… upgrade hooks).
	Version string
	// ControlPlaneSteps and WorkersSteps are controlPlaneUpgrades and
	// workersUpgrades: the versions still ahead of each.
	ControlPlaneSteps, WorkersSteps []string
}

// Answer is what the extensions serving a hook said, aggregated as upstream
// aggregates them: the lowest non-zero retryAfterSeconds, the messages joined.
type Answer struct {
	// Hook is the hook that was called.
	Hook string
	// Handlers are those called, as HANDLER.EXTENSION.
	Handlers []string
	// RetryAfter is zero when the hook lets the operation go on; otherwise
	// it holds the operation, and the hook is asked again after it.
	RetryAfter time.Duration
	// Message is what the handlers said, joined.
	Message string
	// NextCall is when a held hook is asked again; zero when not held.
	NextCall time.Time
	// Remembered is true when the answer is a blocking one given earlier
	// whose retryAfterSeconds has not passed: the hook was not asked again.
	Remembered bool
}

// Blocking reports whether the answer holds the operation.
func (a Answer) Blocking() bool { return a.RetryAfter > 0 }

// Caller calls the extensions serving a hook. The agent's calls the
// TopologyExtensions whose namespace selector matches the Topology's
// namespace, each handler in turn, as upstream's runtime client does.
type Caller interface {
	// Call calls the handlers serving req.Hook for req.Topology, in order;
	// with none, it returns an answer naming no handler. It fails while the
	// agent has not yet discovered the extensions it was started with
	// ("none" would skip a hook one of them serves), and where a handler
	// answers Failure or cannot be reached under failure policy Fail.
	Call(ctx context.Context, req Request) (Answer, error)
}

// Answers are the answers a reconcile got, by hook, as upstream's hook
// response tracker keeps them, for conditions, status and the requeue.
type Answers struct {
	byHook map[string]Answer
}

// Add records a.
func (s *Answers) Add(a Answer) {
	if s.byHook == nil {
		s.byHook = map[string]Answer{}
	}
	s.byHook[a.Hook] = a
}

// Blocking reports whether hook answered with a hold.
func (s *Answers) Blocking(hook string) bool {
	return s != nil && s.byHook[hook].Blocking()
}

// AnyBlocking reports whether any hook answered with a hold.
func (s *Answers) AnyBlocking() bool { return s.RetryAfter() > 0 }

// RetryAfter is the soonest a holding hook wants to be asked again; zero
// when none holds.
func (s *Answers) RetryAfter() time.Duration {
	var out time.Duration
	for _, a := range s.List() {
		if a.Blocking() && (out == 0 || a.RetryAfter < out) {
			out = a.RetryAfter
		}
	}
	return out
}

// List is every answer, in the order of Hooks.
func (s *Answers) List() []Answer {
	if s == nil {
		return nil
	}
	var out []Answer
	for _, h := range Hooks {
		if a, ok := s.byHook[h]; ok {
			out = append(out, a)
		}
	}
	return out
}

// Holding is every answer that holds, in the order of Hooks.
func (s *Answers) Holding() []Answer {
	var out []Answer
	for _, a := range s.List() {
		if a.Blocking() {
			out = append(out, a)
		}
	}
	return out
}

// Message says which hooks hold action, in upstream's words ("Following
// hooks are blocking upgrade: BeforeClusterUpgrade: …"), in the order of
// Hooks rather than upstream's map order; empty when none holds.
func (s *Answers) Message(action string) string {
	var parts []string
	for _, a := range s.Holding() {
		if a.Message == "" {
			parts = append(parts, a.Hook)
			continue
		}
		parts = append(parts, a.Hook+": "+a.Message)
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("Following hooks are blocking %s: %s", action, strings.Join(parts, "; "))
}

// BeforeUpgradeAnnotations lists, sorted, the annotations of t that hold
// its upgrades as a blocking BeforeClusterUpgrade would.
func BeforeUpgradeAnnotations(annotations map[string]string) []string {
	var out []string
	for k := range annotations {
		if strings.HasPrefix(k, clusterv1.BeforeClusterUpgradeHookAnnotationPrefix+"/") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// annotationHold is the answer upstream records for upgrades held by
// annotations: twice the default sync period, since the annotation's removal
// brings the cluster back anyway.
func annotationHold(keys []string) Answer {
	msg := fmt.Sprintf("annotations %s are set", strings.Join(keys, ", "))
	if len(keys) == 1 {
		msg = fmt.Sprintf("annotation %s is set", keys[0])
	}
	return Answer{Hook: BeforeClusterUpgrade, RetryAfter: 20 * time.Minute, Message: msg}
}
