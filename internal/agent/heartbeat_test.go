package agent

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/shard"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestHeartbeatCarriesTheShardAndItsStop: the heartbeat Lease is labelled
// for finding across namespaces and says what the agent watches; an agent
// stopped on purpose marks it, unless a standby already holds it, and the
// next beat clears the mark.
func TestHeartbeatCarriesTheShardAndItsStop(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(Scheme()).Build()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	h := &heartbeat{client: c, namespace: "agents-a", holder: "a-0", shard: shard.New([]string{"team-a", "team-b"}, "blue"), interval: 10 * time.Second, now: func() time.Time { return now }}
	read := func() *coordinationv1.Lease {
		t.Helper()
		l := &coordinationv1.Lease{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "agents-a", Name: components.HeartbeatLease}, l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	if err := h.beat(ctx); err != nil {
		t.Fatal(err)
	}
	l := read()
	if _, ok := l.Labels[components.HeartbeatLabel]; !ok {
		t.Errorf("the heartbeat lacks label %s: %v", components.HeartbeatLabel, l.Labels)
	}
	if got := shard.FromAnnotations(l.Annotations).String(); got != "namespaces team-a, team-b, label cluster.x-k8s.io/watch-filter=blue" {
		t.Errorf("the heartbeat says the agent watches %q", got)
	}
	h.stopped(logr.Discard())
	if _, ok := read().Annotations[components.HeartbeatStoppedAnnotation]; !ok {
		t.Error("a stopped agent did not mark its heartbeat")
	}
	if err := h.beat(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := read().Annotations[components.HeartbeatStoppedAnnotation]; ok {
		t.Error("a beat left the stopped mark")
	}
	standby := &heartbeat{client: c, namespace: "agents-a", holder: "a-1", shard: h.shard, interval: h.interval, now: h.now}
	if err := standby.beat(ctx); err != nil {
		t.Fatal(err)
	}
	h.stopped(logr.Discard())
	if _, ok := read().Annotations[components.HeartbeatStoppedAnnotation]; ok {
		t.Error("the old leader marked stopped a heartbeat the standby holds")
	}
}

// TestShardClientReadsOutsideItsNamespacesUncached: the admitting agent's
// reads of a namespace outside its cache go to the API server; Topologies
// and classes, cached everywhere, never do.
func TestShardClientReadsOutsideItsNamespacesUncached(t *testing.T) {
	cached := fake.NewClientBuilder().WithScheme(Scheme()).Build()
	uncached := &countingReader{Reader: fake.NewClientBuilder().WithScheme(Scheme()).Build()}
	sc := &shardClient{Client: cached, uncached: uncached, shard: shard.New([]string{"team-a"}, "")}
	ctx := context.Background()
	_ = sc.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "x"}, &coordinationv1.Lease{})
	_ = sc.List(ctx, &coordinationv1.LeaseList{}, client.InNamespace("team-a"))
	_ = sc.Get(ctx, client.ObjectKey{Namespace: "team-b", Name: "dev"}, &v1alpha2.Topology{})
	_ = sc.List(ctx, &v1alpha2.TopologyList{}, client.InNamespace("team-b"))
	if uncached.reads != 0 {
		t.Fatalf("%d reads of the shard's own namespace or of Topologies went uncached", uncached.reads)
	}
	_ = sc.Get(ctx, client.ObjectKey{Namespace: "team-b", Name: "x"}, &coordinationv1.Lease{})
	_ = sc.List(ctx, &coordinationv1.LeaseList{}, client.InNamespace("team-b"))
	if uncached.reads != 2 {
		t.Errorf("%d of 2 reads outside the shard went to the API server", uncached.reads)
	}
}

type countingReader struct {
	client.Reader
	reads int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.reads++
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.reads++
	return r.Reader.List(ctx, list, opts...)
}
