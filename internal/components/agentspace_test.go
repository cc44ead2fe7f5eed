package components_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/shard"
)

// TestEnsureNamespace: a missing namespace is made, an existing one is
// kept without a write asked for, and one that stays terminating is reported as such, by name, once
// the wait is over. (The wait's end, a deletion finishing, is tested
// against a real API server in internal/agent and internal/installer.)
func TestEnsureNamespace(t *testing.T) {
	ctx := context.Background()
	now := metav1.Now()
	terminating := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "going", DeletionTimestamp: &now, Finalizers: []string{"example.com/hold"}}}
	kept := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept", Labels: map[string]string{"team": "a"}}}
	creates := 0
	c := fake.NewClientBuilder().WithObjects(terminating, kept).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			creates++
			return c.Create(ctx, obj, opts...)
		},
	}).Build()

	if err := components.EnsureNamespace(ctx, c, "new", time.Second); err != nil {
		t.Fatalf("a missing namespace: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "new"}, &corev1.Namespace{}); err != nil {
		t.Errorf("the missing namespace was not made: %v", err)
	}
	if err := components.EnsureNamespace(ctx, c, "kept", time.Second); err != nil {
		t.Fatalf("an existing namespace: %v", err)
	}
	if creates != 1 {
		t.Errorf("%d creates asked for, want 1: an agent's every start comes here, and an existing namespace needs none", creates)
	}
	got := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: "kept"}, got); err != nil || got.Labels["team"] != "a" {
		t.Errorf("the existing namespace is %v (%v), want it as it was", got.Labels, err)
	}
	err := components.EnsureNamespace(ctx, c, "going", time.Second)
	if !errors.Is(err, components.ErrNamespaceTerminating) || !strings.Contains(err.Error(), "namespace going is still being deleted after 1s") {
		t.Errorf("a namespace that stays terminating: %v, want it named as still being deleted", err)
	}
}

// TestBeatHeartbeat: a beat marks the Lease as a heartbeat, records the
// shard, the holder, the time and the duration, clears a stop an earlier
// agent recorded, and keeps annotations that are not the heartbeat's.
func TestBeatHeartbeat(t *testing.T) {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		components.HeartbeatStoppedAnnotation: "2026-11-30T01:00:00Z",
		"example.com/note":                    "kept",
	}}}
	renew := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	s := shard.New([]string{"team-b,team-a"}, "team=b")
	components.BeatHeartbeat(lease, s, "agent-0", renew, 30*time.Second)

	if _, ok := lease.Labels[components.HeartbeatLabel]; !ok {
		t.Errorf("labels %v, want the heartbeat label", lease.Labels)
	}
	if _, stopped := lease.Annotations[components.HeartbeatStoppedAnnotation]; stopped {
		t.Errorf("annotations %v still say the agent stopped", lease.Annotations)
	}
	if lease.Annotations["example.com/note"] != "kept" {
		t.Errorf("annotations %v lost one that is not the heartbeat's", lease.Annotations)
	}
	if got := shard.FromAnnotations(lease.Annotations); got.String() != s.String() {
		t.Errorf("the Lease records shard %s, want %s", got, s)
	}
	if *lease.Spec.HolderIdentity != "agent-0" || *lease.Spec.LeaseDurationSeconds != 30 || !lease.Spec.RenewTime.Time.Equal(renew) {
		t.Errorf("spec %+v, want agent-0 renewed at %s for 30s", lease.Spec, renew)
	}
}
