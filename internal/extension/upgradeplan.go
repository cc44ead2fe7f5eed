package extension

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/core"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// UpgradePlanCacheTTL is how long an extension's upgrade plan is reused for
// the same cluster and versions, as upstream caches it: every reconcile
// during an upgrade needs the plan, and the answer does not change.
const UpgradePlanCacheTTL = 10 * time.Minute

// UpgradePlanner calls GenerateUpgradePlan handlers for the engine, and
// remembers their answers for UpgradePlanCacheTTL.
type UpgradePlanner struct {
	client *Client
	// now is the clock the cache reads; time.Now unless a test sets it.
	now func() time.Time

	mu      sync.Mutex
	answers map[upgradePlanKey]upgradePlanAnswer
}

type upgradePlanKey struct {
	extension, namespace, cluster, controlPlane, workers, desired string
}

type upgradePlanAnswer struct {
	controlPlane, workers []string
	at                    time.Time
}

var _ upgrade.UpgradePlanner = (*UpgradePlanner)(nil)

// NewUpgradePlanner returns a planner calling through client; now may be
// nil for the wall clock.
func NewUpgradePlanner(client *Client, now func() time.Time) *UpgradePlanner {
	if now == nil {
		now = time.Now
	}
	return &UpgradePlanner{client: client, now: now, answers: map[upgradePlanKey]upgradePlanAnswer{}}
}

// GenerateUpgradePlan asks extension (HANDLER.EXTENSION) for the versions
// the control plane and workers go through, or reuses its recent answer.
func (p *UpgradePlanner) GenerateUpgradePlan(ctx context.Context, extension string, req upgrade.UpgradePlanRequest) ([]string, []string, error) {
	key := upgradePlanKey{extension: extension, controlPlane: req.ControlPlane, workers: req.MinWorkers, desired: req.Desired}
	if req.Cluster != nil {
		key.namespace, key.cluster = req.Cluster.GetNamespace(), req.Cluster.GetName()
	}
	if cp, w, ok := p.cached(key); ok {
		return cp, w, nil
	}
	cluster, err := requestCluster(req.Cluster, req.Topology)
	if err != nil {
		return nil, nil, err
	}
	wire := &runtimehooksv1.GenerateUpgradePlanRequest{
		Cluster:                           cluster,
		FromControlPlaneKubernetesVersion: req.ControlPlane,
		FromWorkersKubernetesVersion:      req.MinWorkers,
		ToKubernetesVersion:               req.Desired,
	}
	resp := &runtimehooksv1.GenerateUpgradePlanResponse{}
	if err := p.client.Call(ctx, HookGenerateUpgradePlan, extension, wire, resp); err != nil {
		return nil, nil, err
	}
	answer := upgradePlanAnswer{at: p.now()}
	for _, s := range resp.ControlPlaneUpgrades {
		answer.controlPlane = append(answer.controlPlane, s.Version)
	}
	for _, s := range resp.WorkersUpgrades {
		answer.workers = append(answer.workers, s.Version)
	}
	// A plan the engine refuses is not remembered: the extension is asked
	// again, so a fixed extension takes effect at once.
	if _, err := upgrade.CheckUpgradePlan(req, answer.controlPlane, answer.workers); err != nil {
		return answer.controlPlane, answer.workers, nil
	}
	p.mu.Lock()
	p.answers[key] = answer
	p.mu.Unlock()
	return slices.Clone(answer.controlPlane), slices.Clone(answer.workers), nil
}

// cached is a recent answer for key, dropping those past the TTL.
func (p *UpgradePlanner) cached(key upgradePlanKey) ([]string, []string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for k, a := range p.answers {
		if now.Sub(a.at) >= UpgradePlanCacheTTL {
			delete(p.answers, k)
		}
	}
	a, ok := p.answers[key]
	if !ok {
		return nil, nil, false
	}
	return slices.Clone(a.controlPlane), slices.Clone(a.workers), true
}

// requestCluster is the Cluster as upstream sends it to hooks: a v1beta2
// Cluster without status, managedFields or last-applied configuration. The
// agent's Cluster has no spec.topology, so the class and version are put
// where an extension written for upstream reads them. A v1beta1 Cluster
// (an older management cluster) goes through upstream's conversion.
func requestCluster(cluster *unstructured.Unstructured, t *v1alpha2.Topology) (clusterv1.Cluster, error) {
	out := clusterv1.Cluster{}
	if cluster != nil {
		// The decoded Cluster is a copy: what is left out is cleared on it,
		// never on the caller's object.
		decoded, err := core.Cluster(cluster)
		if err != nil {
			return out, fmt.Errorf("the extension's request: %w", err)
		}
		out = *decoded
		out.ManagedFields, out.Status = nil, clusterv1.ClusterStatus{}
		delete(out.Annotations, corev1.LastAppliedConfigAnnotation)
	} else if t != nil {
		out.Namespace, out.Name = t.Namespace, t.Name
	}
	if t != nil {
		key := t.GetClassKey()
		out.Spec.Topology = clusterv1.Topology{ClassRef: clusterv1.ClusterClassRef{Name: key.Name, Namespace: key.Namespace}, Version: t.Spec.Version}
	}
	out.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("Cluster"))
	return out, nil
}
