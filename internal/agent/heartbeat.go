package agent

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/shard"
)

// heartbeatWrites counts the heartbeat Lease's writes: they are the agent's
// only writes while nothing changes, and `make bench-scale` leaves them out
// of a no-op resync's writes.
var heartbeatWrites = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "kubectl_topology_heartbeat_writes_total",
	Help: "Writes of the agent's heartbeat Lease (creates and renewals).",
})

func init() {
	ctrlmetrics.Registry.MustRegister(heartbeatWrites)
}

// heartbeat renews the agent's heartbeat Lease while this replica reconciles
// (the leader, with leader election): a status whose agent stopped renewing
// it is stale, and `status` says so instead of showing old news as current.
type heartbeat struct {
	client    client.Client
	namespace string
	// holder is the replica's identity, written as the Lease's holder.
	holder string
	// shard is recorded on the Lease, so that status and install know what
	// this agent watches.
	shard    shard.Shard
	interval time.Duration
	now      func() time.Time
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the
// replica that reconciles vouches for status.
func (*heartbeat) NeedLeaderElection() bool { return true }

// Start renews the Lease until ctx ends; a failed renewal is logged and
// retried on the next beat, as the Lease going old is the signal.
func (h *heartbeat) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("heartbeat")
	tick := time.NewTicker(h.interval)
	defer tick.Stop()
	for {
		if err := h.beat(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "renewing the heartbeat Lease", "namespace", h.namespace, "name", components.HeartbeatLease)
		}
		select {
		case <-ctx.Done():
			h.stopped(log)
			return nil
		case <-tick.C:
		}
	}
}

// stopped marks the Lease of an agent stopped on purpose, so that status and
// install take it as gone at once rather than after three missed beats. A
// standby that already took over holds the Lease, and it is left alone.
func (h *heartbeat) stopped(log logr.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	lease := &coordinationv1.Lease{}
	if err := h.client.Get(ctx, client.ObjectKey{Namespace: h.namespace, Name: components.HeartbeatLease}, lease); err != nil {
		return
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != h.holder {
		return
	}
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[components.HeartbeatStoppedAnnotation] = h.now().UTC().Format(time.RFC3339)
	if err := h.client.Update(ctx, lease); err != nil {
		log.Error(err, "marking the heartbeat Lease stopped", "namespace", h.namespace, "name", components.HeartbeatLease)
	}
}

func (h *heartbeat) beat(ctx context.Context) error {
	lease := &coordinationv1.Lease{}
	err := h.client.Get(ctx, client.ObjectKey{Namespace: h.namespace, Name: components.HeartbeatLease}, lease)
	switch {
	case apierrors.IsNotFound(err):
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: h.namespace, Name: components.HeartbeatLease}}
	case err != nil:
		return err
	}
	components.BeatHeartbeat(lease, h.shard, h.holder, h.now(), 3*h.interval)
	heartbeatWrites.Inc()
	if lease.ResourceVersion == "" {
		return h.client.Create(ctx, lease)
	}
	return h.client.Update(ctx, lease)
}
