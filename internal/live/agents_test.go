package live

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/shard"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func heartbeatOf(namespace, holder string, s shard.Shard, renewed time.Time, extra map[string]string) *coordinationv1.Lease {
	ann := map[string]string{}
	s.Annotate(ann)
	for k, v := range extra {
		ann[k] = v
	}
	at := metav1.NewMicroTime(renewed)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: components.HeartbeatLease, Labels: map[string]string{components.HeartbeatLabel: ""}, Annotations: ann},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &at},
	}
}

// TestAgentsFindEachTopologysShard: with two shards, a Topology gets the
// report of the agent whose shard owns it; one in a namespace nobody
// watches is unwatched, with the install line that adds a shard for it.
func TestAgentsFindEachTopologysShard(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(
		heartbeatOf("agents-a", "a-0", shard.New([]string{"team-a"}, ""), now.Add(-5*time.Second), nil),
		heartbeatOf("agents-b", "b-0", shard.New([]string{"team-b"}, ""), now.Add(-5*time.Minute), nil),
	).Build()
	agents := ReadAgents(context.Background(), c, now)
	if !agents.Sharded() || len(agents.Shards) != 2 || agents.Shards[0].Namespace != "agents-a" {
		t.Fatalf("read %+v, want the two agents by namespace", agents.Shards)
	}
	topo := func(ns string) *v1alpha2.Topology {
		return &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev"}}
	}
	if r := agents.For(topo("team-a")); r.Leader != "a-0" || r.Problem != "" || r.Unwatched {
		t.Errorf("team-a's agent report %+v, want a-0 leading, current", r)
	}
	if r := agents.For(topo("team-b")); r.Leader != "b-0" || !strings.Contains(r.Problem, "last reported 5m ago") {
		t.Errorf("team-b's agent report %+v, want b-0, stale", r)
	}
	r := agents.For(topo("team-c"))
	for _, want := range []string{"no agent watches this namespace (team-c)", "namespace team-a (agent in agents-a)", "--watch-namespace team-c"} {
		if !r.Unwatched || !strings.Contains(r.Problem, want) {
			t.Errorf("team-c's report %+v does not say %q", r, want)
		}
	}
	// A stale agent is taken as gone: it neither blocks a shard nor serves webhooks.
	if got := agents.Overlapping("agents-new", shard.New([]string{"team-b"}, "")); len(got) != 0 {
		t.Errorf("a shard over the stale agent's namespace overlaps %+v", got)
	}
	if got := agents.Overlapping("agents-new", shard.New(nil, "")); len(got) != 1 || got[0].Namespace != "agents-a" {
		t.Errorf("a shard of every namespace overlaps %+v, want the live agent in agents-a", got)
	}
	if got := agents.Overlapping("agents-a", shard.New(nil, "")); len(got) != 0 {
		t.Errorf("an agent installed again overlaps itself: %+v", got)
	}
	if !agents.Live("agents-a") || agents.Live("agents-b") || agents.Live("nowhere") {
		t.Error("Live does not follow the heartbeats")
	}
}

// TestAnAgentStoppedOnPurposeIsGoneAtOnce: the stopped mark makes status
// stale and install take the agent as gone, before three beats are missed.
func TestAnAgentStoppedOnPurposeIsGoneAtOnce(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	stopped := map[string]string{components.HeartbeatStoppedAnnotation: now.Add(-2 * time.Second).Format(time.RFC3339)}
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(
		heartbeatOf(components.Namespace, "pod-0", shard.New(nil, ""), now.Add(-3*time.Second), stopped),
	).Build()
	agents := ReadAgents(context.Background(), c, now)
	if r := agents.For(&v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: "any"}}); !strings.Contains(r.Problem, "the agent was stopped 2s ago") || !strings.Contains(r.Problem, "not running") {
		t.Errorf("a stopped agent's report %+v", r)
	}
	if agents.Live(components.Namespace) {
		t.Error("a stopped agent counts as live")
	}
}

// TestOneAgentOfSomeNamespacesSpeaksForTheFleet: a single agent started
// with --watch-namespace is the fleet's agent above the list, not a
// Topology-less lookup that finds no owner (which hid every item's Stale).
func TestOneAgentOfSomeNamespacesSpeaksForTheFleet(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(
		heartbeatOf(components.Namespace, "pod-0", shard.New([]string{"team-a"}, ""), now.Add(-5*time.Second), nil),
	).Build()
	agents := ReadAgents(context.Background(), c, now)
	if r := agents.Report(); agents.Sharded() || r.Leader != "pod-0" || r.Problem != "" || r.Unwatched {
		t.Errorf("the one agent's fleet report is %+v (sharded %v), want pod-0 leading, current", r, agents.Sharded())
	}
}
