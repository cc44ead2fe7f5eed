package plugin

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/shard"
)

// TestInstallBacksOffAShardClaimedWhileItChecked: another install claims an
// overlapping shard between this one's check and its own claim (the
// interceptor writes it right after the first read of the agents). The
// check after the claim finds it: this install is refused, names the other,
// and takes its own claim back, so the other goes on alone.
func TestInstallBacksOffAShardClaimedWhileItChecked(t *testing.T) {
	ctx := context.Background()
	reads := 0
	c := fake.NewClientBuilder().WithScheme(live.Scheme()).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := cl.List(ctx, list, opts...); err != nil {
				return err
			}
			if _, leases := list.(*coordinationv1.LeaseList); leases {
				if reads++; reads == 1 {
					other := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "agents-other", Name: components.HeartbeatLease,
						Labels: map[string]string{components.HeartbeatLabel: ""}, Annotations: map[string]string{}}}
					shard.New([]string{"team-a"}, "").Annotate(other.Annotations)
					holder, hold, renewed := "the other install", int32(360), metav1.NewMicroTime(time.Now())
					other.Spec.HolderIdentity, other.Spec.LeaseDurationSeconds, other.Spec.RenewTime = &holder, &hold, &renewed
					return cl.Create(ctx, other)
				}
			}
			return nil
		},
	}).Build()
	out := &bytes.Buffer{}
	o := &InstallOptions{IOStreams: genericiooptions.IOStreams{Out: out, ErrOut: out}, TargetNamespace: "agents-a",
		WatchNamespaces: []string{"team-a", "team-b"}, Replicas: 1, Timeout: time.Minute, claimHolder: "this install",
		access: &live.Cluster{Client: c}}
	err := o.placeShard(ctx)
	if err == nil || !strings.Contains(err.Error(), "the agent in agents-other watches namespace team-a (placed while this install was checking)") {
		t.Fatalf("placing a shard while another claimed an overlapping one: %v", err)
	}
	if reads != 2 {
		t.Errorf("the agents were read %d times, want twice: before and after the claim", reads)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "agents-a", Name: components.HeartbeatLease}, &coordinationv1.Lease{}); err == nil {
		t.Error("the refused install left its claim on agents-a")
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "agents-other", Name: components.HeartbeatLease}, &coordinationv1.Lease{}); err != nil {
		t.Errorf("the other install's claim: %v", err)
	}
}
