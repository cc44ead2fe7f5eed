package agent

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
)

// heartbeat renews the agent's heartbeat Lease while this replica reconciles
// (the leader, with leader election): a status whose agent stopped renewing
// it is stale, and `status` says so instead of showing old news as current.
type heartbeat struct {
	client    client.Client
	namespace string
	// holder is the replica's identity, written as the Lease's holder.
	holder   string
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
			return nil
		case <-tick.C:
		}
	}
}

func (h *heartbeat) beat(ctx context.Context) error {
	now := metav1.NewMicroTime(h.now())
	seconds := int32(3 * h.interval / time.Second)
	lease := &coordinationv1.Lease{}
	err := h.client.Get(ctx, client.ObjectKey{Namespace: h.namespace, Name: components.HeartbeatLease}, lease)
	switch {
	case apierrors.IsNotFound(err):
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: h.namespace, Name: components.HeartbeatLease},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &h.holder, LeaseDurationSeconds: &seconds, RenewTime: &now},
		}
		return h.client.Create(ctx, lease)
	case err != nil:
		return err
	}
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &h.holder, &seconds, &now
	return h.client.Update(ctx, lease)
}
