package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/localagent"
	"github.com/kubectl-topology/kubectl-topology/internal/shard"
	statusv1 "github.com/kubectl-topology/kubectl-topology/pkg/api/status/v1"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestShardsDivideTheManagementCluster installs two agents with the plugin,
// as a platform team shares a management cluster between two teams: each
// reconciles only its own namespace, the first admits for both, an agent
// that would overlap is refused, and a Topology in a third namespace is
// reported as watched by nobody.
func TestShardsDivideTheManagementCluster(t *testing.T) {
	ctx := context.Background()
	forgetStoppedAgents(t)
	// The namespaces first, the classes once an agent admits them: an
	// earlier test's agent left its webhook registration behind.
	suffix := strconv.FormatInt(time.Now().UnixNano()%1e6, 36)
	var a, b, c fixture.Example
	for _, ex := range []*fixture.Example{&a, &b, &c} {
		*ex = exampleIn(t, "shard")
	}
	agentA, agentB := "agents-a-"+suffix, "agents-b-"+suffix
	stateA, stateB := t.TempDir(), t.TempDir()
	t.Cleanup(func() {
		stopLocalAgent(stateB)
		stopLocalAgent(stateA)
		forgetStoppedAgents(t)
	})

	out := mustPlugin(t, "install", "--local", "--state-dir", stateA, "--target-namespace", agentA, "--watch-namespace", a.Topology.Namespace)
	if !strings.Contains(out, "The agent is ready; its webhooks are registered.") || strings.Contains(out, "reconciles only") {
		t.Fatalf("the first shard's install:\n%s", out)
	}
	out = mustPlugin(t, "install", "--local", "--state-dir", stateB, "--target-namespace", agentB, "--watch-namespace", b.Topology.Namespace)
	if want := fmt.Sprintf("The agent in %s serves the admission webhooks for every shard; this one reconciles only.", agentA); !strings.Contains(out, want) {
		t.Fatalf("the second shard's install does not say %q:\n%s", want, out)
	}

	for _, ex := range []fixture.Example{a, b, c} {
		if err := ex.CreateClass(ctx, k8s); err != nil {
			t.Fatal(err)
		}
	}

	// The heartbeats say what each agent watches (install reads them).
	for ns, watches := range map[string]string{agentA: a.Topology.Namespace, agentB: b.Topology.Namespace} {
		fixture.Eventually(t, time.Minute, "the heartbeat of "+ns+" names its namespace", func(ctx context.Context) (bool, error) {
			lease := &coordinationv1.Lease{}
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: components.HeartbeatLease}, lease)
			return err == nil && lease.Annotations[shard.NamespacesAnnotation] == watches, fmt.Errorf("%v: %v", err, lease.Annotations)
		})
	}

	// An agent that would share a namespace with B is refused, and nothing
	// of it is left.
	stateX := t.TempDir()
	_, errOut, err := plugin(t, "", "install", "--local", "--state-dir", stateX, "--target-namespace", "agents-overlap", "--watch-namespace", b.Topology.Namespace+","+c.Topology.Namespace)
	if want := fmt.Sprintf("the agent in %s watches namespace %s", agentB, b.Topology.Namespace); err == nil || !strings.Contains(errOut, want) || !strings.Contains(errOut, "refusing to install") {
		t.Errorf("an overlapping shard was not refused saying %q (%v):\n%s", want, err, errOut)
	}
	if entries, _ := os.ReadDir(stateX); len(entries) > 0 {
		t.Errorf("the refused install left %v in its state directory", entries)
	}

	createTopology(t, a)
	createTopology(t, b)
	unwatched := c.Topology.DeepCopy()
	if err := k8s.Create(ctx, unwatched); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), unwatched) })
	for _, ex := range []fixture.Example{a, b} {
		waitFor(t, "the cluster in "+ex.Topology.Namespace+" is built", func(ctx context.Context) (bool, error) {
			objs, err := fixture.Live(ctx, k8s, ex.Topology.Namespace, ex.Topology.Name)
			return len(objs) > 10, err
		})
	}

	// With B's agent stopped, A admits a change in B's namespace but does
	// not carry it out; a change in A's namespace made after it is carried
	// out, so A has seen both.
	stopLocalAgent(stateB)
	scaleMD(t, b, 4)
	scaleMD(t, a, 4)
	waitFor(t, "A scales md-a in its own namespace", func(ctx context.Context) (bool, error) {
		return mdReplicas(ctx, t, a) == 4, nil
	})
	if got := mdReplicas(ctx, t, b); got == 4 {
		t.Fatalf("the agent watching %s scaled md-a in %s", a.Topology.Namespace, b.Topology.Namespace)
	}
	mustPlugin(t, "install", "--local", "--state-dir", stateB, "--target-namespace", agentB, "--watch-namespace", b.Topology.Namespace)
	waitFor(t, "B, back, scales md-a in its namespace", func(ctx context.Context) (bool, error) {
		return mdReplicas(ctx, t, b) == 4, nil
	})
	stored := &v1alpha2.Topology{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(unwatched), stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.Finalizers) > 0 || stored.Status.ObservedGeneration != 0 {
		t.Errorf("the Topology in %s, which no agent watches, was reconciled: finalizers %v, observed generation %d", c.Topology.Namespace, stored.Finalizers, stored.Status.ObservedGeneration)
	}
	if objs, err := fixture.Live(ctx, k8s, c.Topology.Namespace, c.Topology.Name); err != nil || len(objs) > 0 {
		t.Errorf("%d objects were made for the unwatched Topology (%v)", len(objs), err)
	}

	// status -A names the namespace nobody watches and how to fix it.
	out = mustPlugin(t, "status", "-A")
	for _, want := range []string{
		fmt.Sprintf("shard namespace %s (agent in %s): ", a.Topology.Namespace, agentA),
		fmt.Sprintf("shard namespace %s (agent in %s): ", b.Topology.Namespace, agentB),
		fmt.Sprintf("UNWATCHED: no agent watches this namespace (%s)", c.Topology.Namespace),
		"--watch-namespace " + c.Topology.Namespace,
		"Unwatched",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status -A does not say %q:\n%s", want, out)
		}
	}
	// version names each shard's agent and the one that admits for all.
	out = mustPlugin(t, "version")
	for _, want := range []string{
		fmt.Sprintf("shard namespace %s (agent in %s): ", a.Topology.Namespace, agentA),
		fmt.Sprintf("shard namespace %s (agent in %s): ", b.Topology.Namespace, agentB),
		fmt.Sprintf("admission: the agent in %s serves the webhooks for every shard", agentA),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("version does not say %q:\n%s", want, out)
		}
	}
	if out, _, _ := plugin(t, "", "status", c.Topology.Name, "-n", c.Topology.Namespace); !strings.Contains(out, fmt.Sprintf("UNWATCHED: no agent watches this namespace (%s)", c.Topology.Namespace)) {
		t.Errorf("status of the unwatched Topology does not say so:\n%s", out)
	}
	var report statusv1.StatusReport
	if err := json.Unmarshal([]byte(mustPlugin(t, "status", "-A", "-o", "json")), &report); err != nil {
		t.Fatal(err)
	}
	for _, item := range report.Items {
		for ns, want := range map[string]bool{a.Topology.Namespace: false, b.Topology.Namespace: false, c.Topology.Namespace: true} {
			if item.Namespace == ns && item.Unwatched != want {
				t.Errorf("status -o json says %s/%s unwatched=%v, want %v", item.Namespace, item.Name, item.Unwatched, want)
			}
		}
	}
	if len(report.Shards) < 2 {
		t.Errorf("status -o json lists %d shards, want both agents: %+v", len(report.Shards), report.Shards)
	}

	// The agent that admits for every shard is not uninstalled from under
	// the other.
	_, errOut, err = plugin(t, "", "uninstall", "--state-dir", stateA, "--target-namespace", agentA)
	if err == nil || !strings.Contains(errOut, "serves the admission webhooks for every shard") {
		t.Errorf("uninstalling the admitting agent beside another was not refused (%v):\n%s", err, errOut)
	}
	if _, ok := localagent.Find(stateA); !ok {
		t.Error("the refused uninstall stopped the admitting agent")
	}
}

// forgetStoppedAgents deletes the heartbeat Leases earlier tests' agents
// left: out of cluster their namespaces stay, and a fresh one would speak
// for an agent that no longer runs.
func forgetStoppedAgents(t *testing.T) {
	t.Helper()
	list := &coordinationv1.LeaseList{}
	if err := k8s.List(context.Background(), list, client.HasLabels{components.HeartbeatLabel}); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if err := k8s.Delete(context.Background(), &list.Items[i]); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
}
