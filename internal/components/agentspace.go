package components

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/shard"
)

// ErrNamespaceTerminating is what EnsureNamespace returns when the namespace
// was still being deleted when it stopped waiting.
var ErrNamespaceTerminating = errors.New("is still being deleted")

// EnsureNamespace makes the agent's namespace, once a deletion of it (an
// uninstall just before) is over, waiting at most timeout for that: objects
// created in a terminating namespace are refused. The agent and install
// both come here first, whichever runs first.
func EnsureNamespace(ctx context.Context, c client.Client, name string, timeout time.Duration) error {
	// Read first: an agent's every start comes here, and a create the API
	// server refuses is still a write asked for.
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		switch err := c.Get(ctx, client.ObjectKeyFromObject(ns), ns); {
		case err == nil:
			return ns.DeletionTimestamp.IsZero(), nil
		case !apierrors.IsNotFound(err):
			return true, err
		}
		err := c.Create(ctx, ns)
		if apierrors.IsAlreadyExists(err) {
			return false, nil // made since, or still going: read it again
		}
		return true, err
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("namespace %s %w after %s; look at its remaining objects and finalizers", name, ErrNamespaceTerminating, timeout)
	}
	return err
}

// BeatHeartbeat fills lease as the heartbeat of the agent of s held by
// holder: renewed at renew, current for duration. The agent writes it at
// every beat, and install writes it once to claim a shard before its agent
// runs; either way `status -A`, `version` and install's overlap check read
// the same fields.
func BeatHeartbeat(lease *coordinationv1.Lease, s shard.Shard, holder string, renew time.Time, duration time.Duration) {
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Labels[HeartbeatLabel] = ""
	delete(lease.Annotations, HeartbeatStoppedAnnotation)
	s.Annotate(lease.Annotations)
	seconds := int32(duration / time.Second)
	at := metav1.NewMicroTime(renew)
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &holder, &seconds, &at
}
