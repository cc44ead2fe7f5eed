package installer

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/shard"
)

// TestAClaimedShardHoldsUntilItsAgentBeats: an install's claim makes its
// shard an agent for every other install's overlap check, for as long as it
// holds and no longer than that; a second claim of a current Lease writes
// nothing; the agent's first beat takes the claim over, and a release then
// leaves it alone.
func TestAClaimedShardHoldsUntilItsAgentBeats(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	c := fake.NewClientBuilder().WithScheme(live.Scheme()).Build()
	in := Installer{Cluster: &live.Cluster{Client: c}}
	teamA := shard.New([]string{"team-a"}, "")

	claimed, err := in.ClaimShard(ctx, "agents-a", teamA, "install-1", now, 6*time.Minute)
	if err != nil || !claimed {
		t.Fatalf("the first claim: %v, %v", claimed, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "agents-a"}, &corev1.Namespace{}); err != nil {
		t.Errorf("the claim's namespace: %v", err)
	}
	// Two minutes on, past three missed beats of an agent, the claim holds.
	later := now.Add(2 * time.Minute)
	over := live.ReadAgents(ctx, c, later).Overlapping("agents-b", shard.New([]string{"team-a", "team-b"}, ""))
	if len(over) != 1 || over[0].Namespace != "agents-a" || over[0].Report.Leader != "install-1" {
		t.Fatalf("an overlapping shard beside the claim finds %+v, want the claim in agents-a", over)
	}
	if got := live.ReadAgents(ctx, c, later).Overlapping("agents-b", shard.New([]string{"team-b"}, "")); len(got) != 0 {
		t.Errorf("a disjoint shard is blocked by %+v", got)
	}
	if again, err := in.ClaimShard(ctx, "agents-a", teamA, "install-2", later, 6*time.Minute); err != nil || again {
		t.Errorf("a second claim of a held shard: %v, %v; want nothing written", again, err)
	}
	if got := live.ReadAgents(ctx, c, now.Add(7*time.Minute)).Overlapping("agents-b", teamA); len(got) != 0 {
		t.Errorf("a claim past its hold still blocks: %+v", got)
	}

	// The agent beats: its holder and duration replace the claim's.
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "agents-a", Name: components.HeartbeatLease}, lease); err != nil {
		t.Fatal(err)
	}
	agent, beats := "agent-0", int32(3*components.HeartbeatInterval/time.Second)
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds = &agent, &beats
	if err := c.Update(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if err := in.ReleaseShard(ctx, "agents-a", "install-1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(lease), lease); err != nil {
		t.Errorf("releasing a claim the agent took over deleted its heartbeat: %v", err)
	}

	// A claim whose install stopped short is released.
	if claimed, err := in.ClaimShard(ctx, "agents-c", shard.New([]string{"team-c"}, ""), "install-3", now, time.Minute); err != nil || !claimed {
		t.Fatalf("claiming agents-c: %v, %v", claimed, err)
	}
	if err := in.ReleaseShard(ctx, "agents-c", "install-3"); err != nil {
		t.Fatal(err)
	}
	if got := live.ReadAgents(ctx, c, now).Overlapping("agents-d", shard.New([]string{"team-c"}, "")); len(got) != 0 {
		t.Errorf("a released claim still blocks: %+v", got)
	}
}

// TestAClaimWaitsForItsNamespaceToBeDeleted: an install right after an
// uninstall finds the agent's namespace still being deleted; the claim
// waits until it is gone and makes it anew, rather than failing on it.
func TestAClaimWaitsForItsNamespaceToBeDeleted(t *testing.T) {
	ctx := context.Background()
	gets := 0
	base := fake.NewClientBuilder().WithScheme(live.Scheme()).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if ns, ok := obj.(*corev1.Namespace); ok && !ns.DeletionTimestamp.IsZero() {
				if gets++; gets == 2 { // the namespace's finalizers finish
					ns.Finalizers = nil
					return c.Update(ctx, ns)
				}
			}
			return nil
		},
	}).Build()
	old := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agents-a", Finalizers: []string{"example.com/hold"}}}
	if err := base.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := base.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	in := Installer{Cluster: &live.Cluster{Client: base}}
	claimed, err := in.ClaimShard(ctx, "agents-a", shard.New(nil, ""), "install-1", time.Now(), time.Minute)
	if err != nil || !claimed {
		t.Fatalf("claiming a shard whose namespace was being deleted: %v, %v", claimed, err)
	}
	ns := &corev1.Namespace{}
	if err := base.Get(ctx, client.ObjectKey{Name: "agents-a"}, ns); err != nil || !ns.DeletionTimestamp.IsZero() {
		t.Errorf("the namespace after the claim: %v, deleting %v", err, ns.DeletionTimestamp)
	}
	if gets < 2 {
		t.Errorf("the claim did not wait for the deletion (%d reads of the terminating namespace)", gets)
	}
}
