package scale

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// rolloutRequestsMetric is the agent's count of the rollout controller's own
// API requests.
const rolloutRequestsMetric = "kubectl_topology_rollout_api_requests_total"

// measureRollout rolls every Topology of the namespace to opts.RolloutVersion
// with one TopologyRollout (one wave, RolloutInFlight at once, no soak) and
// records how long it took and the API requests it cost: the agent's in
// all (its Topology controller carries the upgrades out) and the rollout
// controller's own, per cluster.
func measureRollout(ctx context.Context, opts Options, t *target, m *Measurement) error {
	before, err := Scrape(ctx, t.measured.metrics)
	if err != nil {
		return err
	}
	ro := &v1alpha2.TopologyRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-" + t.ns},
		Spec: v1alpha2.TopologyRolloutSpec{
			Change:  v1alpha2.RolloutChange{Version: opts.RolloutVersion},
			Targets: v1alpha2.RolloutTargets{Kinds: []string{v1alpha2.RolloutKindTopology}, Namespaces: []string{t.ns}},
			Strategy: v1alpha2.RolloutStrategy{
				Waves:       []v1alpha2.RolloutWave{{Clusters: intstr.FromString("100%")}},
				MaxInFlight: int32(max(opts.RolloutInFlight, 1)),
			},
		},
	}
	logf(opts.Log, "%s, N=%d: rolling all to %s, %d in flight", Ours, opts.N, opts.RolloutVersion, ro.Spec.Strategy.MaxInFlight)
	start := time.Now()
	if err := t.k8s.Create(ctx, ro); err != nil {
		return fmt.Errorf("creating TopologyRollout %s: %w", ro.Name, err)
	}
	last := ""
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, opts.Timeout, true, func(ctx context.Context) (bool, error) {
		if err := t.k8s.Get(ctx, client.ObjectKeyFromObject(ro), ro); err != nil {
			return false, nil //nolint:nilerr // the API server is busy; ask again
		}
		last = fmt.Sprintf("%s: %s", ro.Status.Phase, ro.Status.Message)
		switch ro.Status.Phase {
		case v1alpha2.RolloutCompleted:
			return true, nil
		case v1alpha2.RolloutHalted:
			return false, fmt.Errorf("the rollout halted: %s", ro.Status.Message)
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("TopologyRollout %s did not complete within %s (%s): %w", ro.Name, opts.Timeout, last, err)
	}
	m.RolloutTime = time.Since(start)
	after, _, err := idle(ctx, *t.measured, opts.Timeout)
	if err != nil {
		return err
	}
	m.RolloutRequests = after.Sum("rest_client_requests_total") - before.Sum("rest_client_requests_total")
	m.RolloutControllerRequests = after.Sum(rolloutRequestsMetric) - before.Sum(rolloutRequestsMetric)
	logf(opts.Log, "%s, N=%d: rollout completed after %s; the agent's requests %.1f per cluster, the rollout controller's own %.1f per cluster (%s)",
		Ours, opts.N, m.RolloutTime.Round(time.Second), m.RolloutRequests/float64(opts.N), m.RolloutControllerRequests/float64(opts.N), byPurpose(after, before))
	return nil
}

// measureDryRun times the plugin's `rollout create --dry-run` of
// opts.RolloutDryRun (NAME=VALUE) over every cluster of t's namespace, as a
// user runs it: admission's checks, the preview, and each cluster's
// preflight with its whole-change server-side dry run.
func measureDryRun(ctx context.Context, opts Options, t *target, m *Measurement) error {
	args := []string{"--kubeconfig", t.kubeconfig, "rollout", "create", "bench-dry-" + t.ns, "-l", "!topology.kubectl-topology.io/none",
		"--target-namespaces", t.ns, "--kinds", v1alpha2.RolloutKindTopology, "--set", opts.RolloutDryRun, "--waves", "1,100%", "--dry-run", "-q"}
	logf(opts.Log, "%s, N=%d: rollout create --dry-run --set %s over all", Ours, opts.N, opts.RolloutDryRun)
	start := time.Now()
	out, err := exec.CommandContext(ctx, filepath.Join(opts.BinDir, "kubectl-topology"), args...).CombinedOutput()
	m.DryRunTime = time.Since(start)
	if err != nil {
		return fmt.Errorf("rollout create --dry-run: %w\n%s", err, out)
	}
	if _, err := fmt.Sscanf(refusedLine(string(out)), "Preflight: %d cluster(s) would be refused", &m.DryRunRefused); err != nil {
		m.DryRunRefused = 0
	}
	logf(opts.Log, "%s, N=%d: the dry run took %s, %d cluster(s) refused at preflight", Ours, opts.N, m.DryRunTime.Round(100*time.Millisecond), m.DryRunRefused)
	return nil
}

// refusedLine is the dry run's line that counts the refused clusters.
func refusedLine(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "Preflight: ") {
			return line
		}
	}
	return ""
}

// byPurpose is the rollout controller's requests by purpose between two scrapes.
func byPurpose(after, before Metrics) string {
	out := ""
	for _, p := range []string{"status", "change", "preflight", "dryrun"} {
		f := `purpose="` + p + `"`
		out += fmt.Sprintf("%s %.0f ", p, after.Sum(rolloutRequestsMetric, f)-before.Sum(rolloutRequestsMetric, f))
	}
	return out[:len(out)-1]
}
