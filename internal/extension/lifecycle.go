package extension

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// NamespaceLabels reads the labels of a namespace, for extensions' namespace
// selectors.
type NamespaceLabels func(ctx context.Context, namespace string) (map[string]string, error)

// NamespaceLabelsFrom reads a namespace's labels through reader, as the
// agent and the plugin both do.
func NamespaceLabelsFrom(reader client.Reader) NamespaceLabels {
	return func(ctx context.Context, namespace string) (map[string]string, error) {
		ns := &corev1.Namespace{}
		if err := reader.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
			return nil, err
		}
		return ns.Labels, nil
	}
}

// Lifecycle calls the lifecycle hooks of the registered extensions for the
// engine (lifecycle.Caller). It remembers a blocking answer until its
// retryAfterSeconds pass, as upstream's hook cache does, so a reconcile in
// between does not ask again.
type Lifecycle struct {
	client *Client
	// namespaceLabels reads a namespace's labels; nil treats every
	// namespace as unlabelled.
	namespaceLabels NamespaceLabels
	now             func() time.Time

	mu   sync.Mutex
	held map[heldKey]lifecycle.Answer
}

type heldKey struct{ namespace, name, hook string }

var _ lifecycle.Caller = (*Lifecycle)(nil)

// NewLifecycle returns a caller of lifecycle hooks through client; now may
// be nil for the wall clock.
func NewLifecycle(client *Client, namespaceLabels NamespaceLabels, now func() time.Time) *Lifecycle {
	if now == nil {
		now = time.Now
	}
	return &Lifecycle{client: client, namespaceLabels: namespaceLabels, now: now, held: map[heldKey]lifecycle.Answer{}}
}

// ErrNotWarmedUp is the error of a hook asked for before the agent has
// discovered the extensions it started with.
var ErrNotWarmedUp = errors.New("the agent has not yet discovered the TopologyExtensions it started with; lifecycle hooks are called once it has")

// Handlers names the handlers serving hook for t's namespace, sorted by
// extension then handler, as HANDLER.EXTENSION.
func (l *Lifecycle) Handlers(ctx context.Context, hook string, t *v1alpha2.Topology) ([]string, error) {
	r := l.client.Registry
	if !r.Ready() {
		return nil, ErrNotWarmedUp
	}
	type candidate struct {
		name       string
		namespaces labels.Selector
	}
	var candidates []candidate
	r.mu.RLock()
	for ext, s := range r.extensions {
		for _, h := range s.handlers {
			if h.RequestHook.Hook == hook {
				candidates = append(candidates, candidate{FullName(h.Name, ext), s.namespaces})
			}
		}
	}
	r.mu.RUnlock()
	var out []string
	var nsLabels map[string]string
	for _, c := range candidates {
		if c.namespaces != nil && !c.namespaces.Empty() {
			if nsLabels == nil {
				var err error
				if nsLabels, err = l.labelsOf(ctx, t.Namespace); err != nil {
					return nil, err
				}
			}
			if !c.namespaces.Matches(labels.Set(nsLabels)) {
				continue
			}
		}
		out = append(out, c.name)
	}
	slices.SortFunc(out, func(a, b string) int {
		ha, ea, _ := SplitName(a)
		hb, eb, _ := SplitName(b)
		if c := strings.Compare(ea, eb); c != 0 {
			return c
		}
		return strings.Compare(ha, hb)
	})
	return out, nil
}

func (l *Lifecycle) labelsOf(ctx context.Context, namespace string) (map[string]string, error) {
	if l.namespaceLabels == nil {
		return map[string]string{}, nil
	}
	m, err := l.namespaceLabels(ctx, namespace)
	if err != nil {
		return nil, fmt.Errorf("reading the labels of namespace %s for the extensions' namespace selectors: %w", namespace, err)
	}
	if m == nil {
		m = map[string]string{}
	}
	return m, nil
}

// Call calls every handler serving req.Hook in turn, stopping at the first
// that fails, and aggregates their answers. A blocking answer is remembered
// until its retryAfterSeconds pass; asked again before, Call returns it
// without a call.
func (l *Lifecycle) Call(ctx context.Context, req lifecycle.Request) (lifecycle.Answer, error) {
	key := heldKey{namespace: req.Topology.Namespace, name: req.Topology.Name, hook: req.Hook}
	if a, ok := l.remembered(key); ok {
		return a, nil
	}
	handlers, err := l.Handlers(ctx, req.Hook, req.Topology)
	if err != nil || len(handlers) == 0 {
		return lifecycle.Answer{Hook: req.Hook}, err
	}
	cluster, err := requestCluster(req.Cluster, req.Topology)
	if err != nil {
		return lifecycle.Answer{Hook: req.Hook}, err
	}
	answer := lifecycle.Answer{Hook: req.Hook, Handlers: handlers}
	var messages []string
	for _, h := range handlers {
		_, ext, _ := SplitName(h)
		wire, resp, err := lifecycleMessages(req, cluster)
		if err != nil {
			return answer, err
		}
		wire.SetSettings(l.settingsOf(ext))
		if err := l.client.Call(ctx, req.Hook, h, wire, resp); err != nil {
			return answer, err
		}
		if retry, ok := resp.(runtimehooksv1.RetryResponseObject); ok && retry.GetRetryAfterSeconds() > 0 {
			after := time.Duration(retry.GetRetryAfterSeconds()) * time.Second
			if answer.RetryAfter == 0 || after < answer.RetryAfter {
				answer.RetryAfter = after
			}
		}
		if m := resp.GetMessage(); m != "" {
			messages = append(messages, m)
		}
	}
	answer.Message = strings.Join(messages, ", ")
	if answer.Blocking() {
		answer.NextCall = l.now().Add(answer.RetryAfter)
		l.mu.Lock()
		l.held[key] = answer
		l.mu.Unlock()
	}
	return answer, nil
}

// remembered is a blocking answer for key whose retry time has not come.
func (l *Lifecycle) remembered(key heldKey) (lifecycle.Answer, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.held[key]
	if !ok {
		return a, false
	}
	left := a.NextCall.Sub(l.now())
	if left <= 0 {
		delete(l.held, key)
		return a, false
	}
	a.RetryAfter, a.Remembered = left, true
	return a, true
}

// Forget drops what is remembered of t's hooks, e.g. once it is gone.
func (l *Lifecycle) Forget(namespace, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.held {
		if k.namespace == namespace && k.name == name {
			delete(l.held, k)
		}
	}
}

func (l *Lifecycle) settingsOf(ext string) map[string]string {
	r := l.client.Registry
	r.mu.RLock()
	defer r.mu.RUnlock()
	if s, ok := r.extensions[ext]; ok {
		return s.settings
	}
	return nil
}

// lifecycleMessages makes the request of req.Hook with what upstream's
// request of that hook carries, and its response.
func lifecycleMessages(req lifecycle.Request, cluster clusterv1.Cluster) (runtimehooksv1.RequestObject, runtimehooksv1.ResponseObject, error) {
	wire, resp, err := newMessages(req.Hook)
	if err != nil {
		return nil, nil, err
	}
	cp, workers := steps(req.ControlPlaneSteps), steps(req.WorkersSteps)
	switch r := wire.(type) {
	case *runtimehooksv1.BeforeClusterCreateRequest:
		r.Cluster = cluster
	case *runtimehooksv1.AfterControlPlaneInitializedRequest:
		r.Cluster = cluster
	case *runtimehooksv1.BeforeClusterUpgradeRequest:
		r.Cluster, r.FromKubernetesVersion, r.ToKubernetesVersion, r.ControlPlaneUpgrades, r.WorkersUpgrades = cluster, req.From, req.To, cp, workers
	case *runtimehooksv1.BeforeControlPlaneUpgradeRequest:
		r.Cluster, r.FromKubernetesVersion, r.ToKubernetesVersion, r.ControlPlaneUpgrades, r.WorkersUpgrades = cluster, req.From, req.To, cp, workers
	case *runtimehooksv1.AfterControlPlaneUpgradeRequest:
		r.Cluster, r.KubernetesVersion, r.ControlPlaneUpgrades, r.WorkersUpgrades = cluster, req.Version, cp, workers
	case *runtimehooksv1.BeforeWorkersUpgradeRequest:
		r.Cluster, r.FromKubernetesVersion, r.ToKubernetesVersion, r.ControlPlaneUpgrades, r.WorkersUpgrades = cluster, req.From, req.To, cp, workers
	case *runtimehooksv1.AfterWorkersUpgradeRequest:
		r.Cluster, r.KubernetesVersion, r.ControlPlaneUpgrades, r.WorkersUpgrades = cluster, req.Version, cp, workers
	case *runtimehooksv1.AfterClusterUpgradeRequest:
		r.Cluster, r.KubernetesVersion = cluster, req.Version
	case *runtimehooksv1.BeforeClusterDeleteRequest:
		r.Cluster = cluster
	default:
		return nil, nil, fmt.Errorf("%s is not a lifecycle hook", req.Hook)
	}
	return wire, resp, nil
}

func steps(versions []string) []runtimehooksv1.UpgradeStepInfo {
	var out []runtimehooksv1.UpgradeStepInfo
	for _, v := range versions {
		out = append(out, runtimehooksv1.UpgradeStepInfo{Version: v})
	}
	return out
}
