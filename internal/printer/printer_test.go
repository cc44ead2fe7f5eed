package printer

import (
	"bytes"
	"flag"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	statusv1 "github.com/kubectl-topology/kubectl-topology/pkg/api/status/v1"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/golden/NAME, rewriting it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	fixture.Golden(t, "./internal/printer", name, got, *update)
}

// status writes t's report as status does with no agent to report on.
func status(w *bytes.Buffer, t *v1alpha2.Topology) error {
	return Status(w, t, statusv1.AgentReport{}, live.TopologyReport(t, statusv1.AgentReport{}, nil), fixture.StatusNow)
}

func TestStatusTree(t *testing.T) {
	var buf bytes.Buffer
	if err := status(&buf, fixture.MidUpgrade()); err != nil {
		t.Fatal(err)
	}
	golden(t, "status-mid-upgrade.txt", buf.String())
	if health.Settled(fixture.MidUpgrade()) {
		t.Error("a Topology mid-upgrade counts as settled")
	}
}

// TestStatusHeldBeforeCreation: a Topology the BeforeClusterCreate hook
// holds has no parts, and status says the hook holds it, not that the agent
// has not reconciled it.
func TestStatusHeldBeforeCreation(t *testing.T) {
	topo := fixture.MidUpgrade()
	topo.Status = v1alpha2.TopologyStatus{Hooks: &v1alpha2.HooksStatus{Holding: []v1alpha2.HookHold{{
		Hook: "BeforeClusterCreate", Handlers: []string{"gate.approvals"}, Holds: "the cluster's creation", Message: "waiting for approval",
	}}}}
	var buf bytes.Buffer
	if err := status(&buf, topo); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"HELD: hook BeforeClusterCreate (gate.approvals) holds the cluster's creation — waiting for approval",
		"no parts yet: hook BeforeClusterCreate holds the cluster before they are created (HELD above)",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, buf.String())
		}
	}
	if strings.Contains(buf.String(), "has not reconciled") {
		t.Errorf("status says the agent has not reconciled a Topology it holds:\n%s", buf.String())
	}
}

// TestStatusDegraded: versions that match do not hide machines that are not
// ready; the problems, since when, the agent's silence and recent warnings
// are all said.
func TestStatusDegraded(t *testing.T) {
	topo := fixture.Degraded()
	agent := statusv1.AgentReport{LastHeartbeat: fixture.At(11, 55), Problem: "the agent last reported 5m0s ago: it is not running or cannot reach the API server, so this status may be stale; `kubectl topology version` tells"}
	events := []statusv1.EventReport{{Time: *fixture.At(11, 58), Object: "Machine/prod-md-a-xyz12", Reason: "MachineHealthCheckFailed", Message: "Node not ready for 5m", Count: 3}}
	var buf bytes.Buffer
	if err := Status(&buf, topo, agent, live.TopologyReport(topo, agent, events), fixture.StatusNow); err != nil {
		t.Fatal(err)
	}
	golden(t, "status-degraded.txt", buf.String())
	if health.Settled(topo) {
		t.Error("a degraded Topology counts as settled")
	}
}

// TestStatusFleetReport: the fleet view and its JSON put the degraded and the
// deleting first, and the JSON is the documented, versioned schema.
func TestStatusFleetReport(t *testing.T) {
	deleting := fixture.MidUpgrade()
	deleting.Name, deleting.DeletionTimestamp = "old", fixture.At(11, 59)
	paused := fixture.MidUpgrade()
	paused.Name, paused.Namespace, paused.Spec.Paused = "frozen", "team-b", true
	items := []v1alpha2.Topology{*fixture.MidUpgrade(), *fixture.Degraded(), *deleting, *paused}
	agent := statusv1.AgentReport{LastHeartbeat: fixture.At(11, 59), Leader: "topology-controller-manager-7c9f8-x2k4q"}
	report := statusv1.StatusReport{Agent: agent}
	for i := range items {
		report.Items = append(report.Items, live.TopologyReport(&items[i], agent, nil))
	}
	live.SortReports(report.Items)
	var table, js bytes.Buffer
	if err := StatusList(&table, report, items, fixture.StatusNow); err != nil {
		t.Fatal(err)
	}
	golden(t, "status-fleet.txt", table.String())
	if err := StatusReport(&js, "json", report); err != nil {
		t.Fatal(err)
	}
	golden(t, "status-fleet.json", js.String())
	var order []string
	for _, r := range report.Items {
		order = append(order, r.Name+":"+string(r.State))
	}
	if got, want := strings.Join(order, " "), "old:Deleting frozen:Paused prod:Degraded dev:RollingOut"; got != want {
		t.Errorf("fleet order %s, want %s", got, want)
	}
}

func TestGetTable(t *testing.T) {
	var buf bytes.Buffer
	other := fixture.MidUpgrade()
	other.Name, other.Namespace = "prod", "team-a"
	other.Spec.Workers.MachineDeployments[2].Replicas = nil
	if err := (TopologyTable{Namespace: true, Wide: true}).Print(&buf, []v1alpha2.Topology{*fixture.MidUpgrade(), *other, *fixture.Degraded()}, fixture.StatusNow); err != nil {
		t.Fatal(err)
	}
	golden(t, "get-wide.txt", buf.String())
}

func TestUpgradePreview(t *testing.T) {
	topo := fixture.MidUpgrade()
	topo.Spec.Version = "v1.33.1"
	topo.Annotations = map[string]string{clusterv1.ClusterTopologyUpgradeConcurrencyAnnotation: "2"}
	var buf bytes.Buffer
	UpgradePreview(&buf, topo, nil, "v1.34.0", nil)
	golden(t, "upgrade-preview.txt", buf.String())
}

// TestRolloutStatusText is `rollout status` as printed: the rollout, its
// waves and each cluster with its phase, attempts, age and reason.
func TestRolloutStatusText(t *testing.T) {
	now := metav1.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }
	ro := fixture.VersionRollout()
	ro.Spec.Strategy.MaxInFlight, ro.Spec.Strategy.Soak = 2, metav1.Duration{Duration: 10 * time.Minute}
	ref := func(name string) v1alpha2.RolloutClusterRef {
		return v1alpha2.RolloutClusterRef{Kind: v1alpha2.RolloutKindTopology, Namespace: "prod", Name: name}
	}
	ro.Status = v1alpha2.TopologyRolloutStatus{
		Phase: v1alpha2.RolloutHalted, Message: "1 cluster(s) failed, more than the failure budget of 0: retry or skip them to go on (Topology/prod/b)",
		Wave: 2, Total: 3, Succeeded: 1, Failed: 1, StartedAt: ago(40 * time.Minute),
		Waves: []v1alpha2.RolloutWaveStatus{
			{Number: 1, Clusters: 1, StartedAt: ago(40 * time.Minute), CompletedAt: ago(25 * time.Minute)},
			{Number: 2, Clusters: 1, StartedAt: ago(24 * time.Minute), CompletedAt: ago(24 * time.Minute)},
			{Number: 3, Clusters: 1},
		},
		Clusters: []v1alpha2.RolloutClusterStatus{
			{RolloutClusterRef: ref("a"), Wave: 1, Phase: v1alpha2.ClusterSucceeded, Attempt: 1, StartedAt: ago(40 * time.Minute), CompletedAt: ago(25 * time.Minute)},
			{RolloutClusterRef: ref("b"), Wave: 2, Phase: v1alpha2.ClusterFailed, Attempt: 1, Reason: "Preflight", Message: "preflight failed; nothing was changed: change freeze on b", CompletedAt: ago(24 * time.Minute)},
			{RolloutClusterRef: ref("c"), Wave: 3, Phase: v1alpha2.ClusterPending},
		},
	}
	var out strings.Builder
	if err := Rollout(&out, ro, now.Time); err != nil {
		t.Fatal(err)
	}
	golden(t, "rollout-status.txt", out.String())
}

// TestRolloutListText is `rollout list` as printed: a line per rollout with
// its change, outcome, times and failures by reason.
func TestRolloutListText(t *testing.T) {
	now := metav1.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }
	ref := func(name string) v1alpha2.RolloutClusterRef {
		return v1alpha2.RolloutClusterRef{Kind: v1alpha2.RolloutKindTopology, Namespace: "prod", Name: name}
	}
	done := fixture.VersionRollout()
	done.Status = v1alpha2.TopologyRolloutStatus{Phase: v1alpha2.RolloutCompleted, Wave: 3, Total: 3, Succeeded: 3, StartedAt: ago(3 * time.Hour), CompletedAt: ago(2 * time.Hour),
		Waves: []v1alpha2.RolloutWaveStatus{{Number: 1}, {Number: 2}, {Number: 3}}}
	halted := fixture.VersionRollout()
	halted.Name, halted.Spec.Change = "log-debug", v1alpha2.RolloutChange{Variables: []v1alpha2.ClusterVariable{{Name: "logLevel", Value: apiextensionsv1.JSON{Raw: []byte(`"debug"`)}}}}
	halted.Status = v1alpha2.TopologyRolloutStatus{Phase: v1alpha2.RolloutHalted, Wave: 2, Total: 4, Succeeded: 1, Failed: 3, StartedAt: ago(time.Hour),
		Waves: []v1alpha2.RolloutWaveStatus{{Number: 1}, {Number: 2}, {Number: 3}},
		Clusters: []v1alpha2.RolloutClusterStatus{
			{RolloutClusterRef: ref("a"), Phase: v1alpha2.ClusterSucceeded},
			{RolloutClusterRef: ref("b"), Phase: v1alpha2.ClusterFailed, Reason: "Refused"},
			{RolloutClusterRef: ref("c"), Phase: v1alpha2.ClusterFailed, Reason: "Refused"},
			{RolloutClusterRef: ref("d"), Phase: v1alpha2.ClusterFailed, Reason: "Preflight"},
		}}
	undo := fixture.VersionRollout()
	undo.Name, undo.Spec.Change, undo.Spec.Undo = "log-debug-undo", v1alpha2.RolloutChange{}, "log-debug"
	var out strings.Builder
	if err := RolloutList(&out, []v1alpha2.TopologyRollout{*done, *halted, *undo}, now.Time); err != nil {
		t.Fatal(err)
	}
	golden(t, "rollout-list.txt", out.String())
}

// TestGetTableWithUpstreamClustersAndARollout: once an upstream Cluster is
// listed, MANAGED BY says who reconciles each row, and a ROLLOUT column
// follows; a row added later, as a watch does, has the same columns.
func TestGetTableWithUpstreamClustersAndARollout(t *testing.T) {
	cluster := fixture.MidUpgrade()
	cluster.Name = "legacy"
	cluster.Kind = contract.UpstreamClusterKind
	table := TopologyTable{Controller: true, Extra: []string{"ROLLOUT"}}
	var buf bytes.Buffer
	rows := table.Rows(&buf)
	rows.Header()
	rows.Add(fixture.MidUpgrade(), fixture.StatusNow, "to-134:InProgress")
	rows.Add(cluster, fixture.StatusNow, "-")
	if err := rows.Flush(); err != nil {
		t.Fatal(err)
	}
	rows.Add(fixture.Degraded(), fixture.StatusNow, "-")
	if err := rows.Flush(); err != nil {
		t.Fatal(err)
	}
	golden(t, "get-managed-by.txt", buf.String())
}

// TestStatusListRefusesAReportOfAnotherFleet: a report line whose Topology
// was not given is an error, not a row with nothing in it.
func TestStatusListRefusesAReportOfAnotherFleet(t *testing.T) {
	topo := fixture.MidUpgrade()
	report := statusv1.StatusReport{Items: []statusv1.TopologyReport{live.TopologyReport(topo, statusv1.AgentReport{}, nil)}}
	var buf bytes.Buffer
	err := StatusList(&buf, report, nil, fixture.StatusNow)
	if err == nil || !strings.Contains(err.Error(), "default/dev") {
		t.Errorf("got %v, want an error naming default/dev", err)
	}
}

// TestStatusReportFormats: json and yaml carry the versioned kind; any
// other format is refused with the two that work.
func TestStatusReportFormats(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		var buf bytes.Buffer
		if err := StatusReport(&buf, format, statusv1.StatusReport{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), statusv1.APIVersion) || !strings.Contains(buf.String(), statusv1.Kind) {
			t.Errorf("%s report lacks its apiVersion and kind:\n%s", format, buf.String())
		}
	}
	var buf bytes.Buffer
	if err := StatusReport(&buf, "wide", statusv1.StatusReport{}); err == nil || !strings.Contains(err.Error(), "json or yaml") || buf.Len() != 0 {
		t.Errorf("format wide: got %v and %q, want an error naming json or yaml and nothing written", err, buf.String())
	}
}

// TestStatusFleetOfShards: with several agents, the fleet view names each
// shard's leader, and a Topology no shard takes is marked Unwatched with
// what to do, once per namespace.
func TestStatusFleetOfShards(t *testing.T) {
	watched := fixture.MidUpgrade()
	unwatched := fixture.MidUpgrade()
	unwatched.Name, unwatched.Namespace = "orphan", "team-c"
	items := []v1alpha2.Topology{*watched, *unwatched}
	shardA := statusv1.AgentReport{LastHeartbeat: fixture.At(11, 59), Leader: "topology-controller-manager-7c9f8-x2k4q", Namespace: "topology-team-a", Watches: "namespace " + watched.Namespace}
	shardB := statusv1.AgentReport{LastHeartbeat: fixture.At(11, 50), Leader: "topology-controller-manager-5d2b1-p8r7w", Namespace: "topology-team-b", Watches: "namespace team-b",
		Problem: "the agent last reported 10m ago: it is not running or cannot reach the API server, so this status may be stale; `kubectl topology version` tells"}
	none := statusv1.AgentReport{Unwatched: true, Problem: "no agent watches this namespace (team-c): nothing reconciles it. The agents watch namespace " + watched.Namespace + " (agent in topology-team-a); namespace team-b (agent in topology-team-b); `kubectl topology install --target-namespace NEW --watch-namespace team-c` adds a shard that does"}
	report := statusv1.StatusReport{Shards: []statusv1.AgentReport{shardA, shardB}}
	report.Items = append(report.Items, live.TopologyReport(&items[0], shardA, nil), live.TopologyReport(&items[1], none, nil))
	live.SortReports(report.Items)
	var table bytes.Buffer
	if err := StatusList(&table, report, items, fixture.StatusNow); err != nil {
		t.Fatal(err)
	}
	golden(t, "status-fleet-shards.txt", table.String())
	if !strings.Contains(table.String(), "Unwatched") || strings.Count(table.String(), "UNWATCHED:") != 1 {
		t.Errorf("the unwatched Topology is not marked once:\n%s", table.String())
	}
}
