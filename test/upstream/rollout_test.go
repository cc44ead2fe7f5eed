package upstream

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestFleetRolloutOverTopologiesAndAnUpstreamCluster moves six Topologies
// and one upstream Cluster (spec.topology, reconciled by Cluster API's own
// topology controller) of one class to the next minor with one
// TopologyRollout: waves of 1, 2 and the rest, at most two in flight, a
// soak. The Machines' creation times show the canary finished before wave
// 2 started and never more than two clusters rolling at once; the upstream
// Cluster is changed through spec.topology like the Topologies.
func TestFleetRolloutOverTopologiesAndAnUpstreamCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	names := []string{"t1", "t2", "t3", "t4", "t5", "t6"}
	ns, _ := suite.InMemoryFleet(t, "fleet", names...)
	upNS := upstreamCluster(t, "fleet-upstream", func(topo map[string]any) {
		topo["controlPlane"] = map[string]any{"replicas": int64(1)}
		workers := topo["workers"].(map[string]any)
		md := workers["machineDeployments"].([]any)[0].(map[string]any)
		md["replicas"] = int64(1)
		workers["machineDeployments"] = []any{md}
	})
	cluster := onlyCluster(t, upNS)
	patch := fmt.Sprintf(`{"metadata":{"labels":{"fleet":%q}}}`, ns)
	if err := suite.K8s.Patch(ctx, cluster, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		suite.Settle(t, ns, n, 6*time.Minute)
	}
	suite.MustTopology(t, "status", "cluster/dev", "-n", upNS, "--watch", "--interval", "1s", "--timeout", "6m")

	name := "fleet-" + ns
	preview := suite.MustTopology(t, "rollout", "create", name, "-l", "fleet="+ns, "--version", "v1.34.0",
		"--waves", "1,2,100%", "--max-in-flight", "2", "--soak", "10s", "--dry-run")
	for _, want := range []string{"over 7 cluster(s)", "Wave 3: 4 cluster(s)", "cluster/" + upNS + "/dev: version is v1.33.1 (the rollout sets v1.34.0)"} {
		if !strings.Contains(preview, want) {
			t.Errorf("the dry run lacks %q:\n%s", want, preview)
		}
	}
	suite.MustTopology(t, "rollout", "create", name, "-l", "fleet="+ns, "--version", "v1.34.0",
		"--waves", "1,2,100%", "--max-in-flight", "2", "--soak", "10s", "--yes")
	t.Cleanup(func() {
		_ = suite.K8s.Delete(context.Background(), &v1alpha2.TopologyRollout{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	out := suite.MustTopology(t, "rollout", "status", name, "--watch", "--interval", "2s", "--timeout", "15m")
	if !strings.Contains(out, "Phase: Completed") {
		t.Errorf("the watch ended short of Completed:\n%s", out)
	}
	ro := &v1alpha2.TopologyRollout{}
	if err := suite.K8s.Get(ctx, client.ObjectKey{Name: name}, ro); err != nil {
		t.Fatal(err)
	}
	if ro.Status.Succeeded != 7 {
		t.Errorf("%d of 7 clusters succeeded: %+v", ro.Status.Succeeded, ro.Status.Clusters)
	}
	if v := upstreamVersion(t, upNS); v != "v1.34.0" {
		t.Errorf("the upstream Cluster's spec.topology.version is %s, want v1.34.0", v)
	}

	// Creation times of the new Machines, per cluster, against the waves.
	windows := map[string]fixture.Window{}
	for _, n := range []string{ns, upNS} {
		ms, err := suite.Machines(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		for cluster, w := range fixture.RollingWindows(ms, "v1.34.0") {
			windows[n+"/"+cluster] = w
		}
	}
	if len(windows) != 7 {
		t.Fatalf("new machines in %d clusters, want 7: %v", len(windows), windows)
	}
	canary := ns + "/t1"
	for key, w := range windows {
		if key != canary && !windows[canary].End.Before(w.Start) {
			t.Errorf("%s began creating machines at %s, before the canary's last at %s", key, w.Start, windows[canary].End)
		}
	}
	if most := fixture.MostAtOnce(windows); most > 2 {
		t.Errorf("%d clusters were rolling at once; at most 2 in flight: %v", most, windows)
	}
	t.Logf("rolling windows: %v", windows)
}

// upstreamVersion is the spec.topology.version of the Cluster in ns.
func upstreamVersion(t *testing.T, ns string) string {
	t.Helper()
	c := onlyCluster(t, ns)
	v, _, _ := unstructured.NestedString(c.Object, "spec", "topology", "version")
	return v
}
