package parity

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RolloutResult is a fleet rollout's outcome on both sides.
type RolloutResult struct {
	Name string
	// Order is each side's upgrade order (part@version as first created).
	Order map[string][]string
	// Phase is the rollout's phase at the end, Status a line per cluster.
	Phase  string
	Status []string
	// WaveOrder says whether the second wave (upstream's Cluster) started
	// only after the first (our Topology, the canary) succeeded.
	WaveOrder bool
}

// Problems says where the rollout falls short on either side, or nothing.
func (r RolloutResult) Problems() []string {
	var out []string
	if r.Phase != "Completed" {
		out = append(out, "the rollout ended "+r.Phase+": "+strings.Join(r.Status, "; "))
	}
	if u, o := strings.Join(r.Order["upstream"], " → "), strings.Join(r.Order["ours"], " → "); u != o {
		out = append(out, fmt.Sprintf("the rollout upgraded the parts in another order: ours %s, upstream %s", o, u))
	}
	if !r.WaveOrder {
		out = append(out, "the second wave started before the canary succeeded")
	}
	return out
}

// CompareRollout runs the case in dir as one fleet of two clusters — our
// Topology and upstream's Cluster with spec.topology, labelled alike — and
// moves both to the next minor with one TopologyRollout of `kubectl
// topology rollout create` (waves 1 and the rest, one in flight). The agent
// changes its Topology, then upstream's Cluster, whose topology controller
// carries it out: the parts must roll in the same order on both sides.
// The rollout orders clusters by namespace, and loadCase's put ours before
// upstream's, so our Topology is the canary.
func CompareRollout(ctx context.Context, env Env, dir, name string) (RolloutResult, error) {
	k8s, timeout, out := env.K8s, env.Timeout, env.Out
	res := RolloutResult{Name: name, Order: map[string][]string{}}
	c, err := loadCase(ctx, env, dir, name)
	if err != nil {
		return res, err
	}
	label := "parity-rollout"
	for _, o := range append(append([]*unstructured.Unstructured{}, c.upObjs...), c.ourObjs...) {
		if k := o.GetKind(); k == "Cluster" || k == "Topology" {
			o.SetLabels(map[string]string{label: name})
		}
	}
	if err := createNamespaces(ctx, k8s, c.up, c.ours); err != nil {
		return res, err
	}
	defer func() {
		for _, s := range []side{c.up, c.ours} {
			_ = deleteSide(context.Background(), k8s, s)
		}
	}()
	if err := create(ctx, k8s, c.up.namespace, c.upObjs); err != nil {
		return res, err
	}
	if err := create(ctx, k8s, c.ours.namespace, c.ourObjs); err != nil {
		return res, err
	}
	sides := []side{c.up, c.ours}
	for _, s := range sides {
		if err := waitMachines(ctx, k8s, out, s, c.want, c.version, timeout, nil); err != nil {
			return res, fmt.Errorf("%s never provisioned: %w", s.label, err)
		}
		// Machines at the version can still be coming up; the rollout's
		// preflight refuses a control plane that is not Ready, so wait
		// until status says the cluster has settled.
		ref := s.cluster
		if s.upstream {
			ref = "cluster/" + s.cluster
		}
		if _, err := RunPlugin(env.Plugin, env.Kubeconfig, "status", ref, "-n", s.namespace, "--watch", "--interval", "2s", "--timeout", timeout.String()); err != nil {
			return res, fmt.Errorf("%s never settled: %w", s.label, err)
		}
	}
	rollout := "parity-" + name
	created, err := RunPlugin(env.Plugin, env.Kubeconfig, "rollout", "create", rollout, "-l", label+"="+name,
		"--version", c.target, "--waves", "1,100%", "--max-in-flight", "1", "--yes")
	fmt.Fprint(out, created)
	if err != nil {
		return res, err
	}
	defer func() { _, _ = RunPlugin(env.Plugin, env.Kubeconfig, "rollout", "abort", rollout, "--yes") }()
	seen := []*history{{}, {}}
	waited := make([]error, len(sides))
	var wg sync.WaitGroup
	for i, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Both sides wait the whole rollout: upstream's is the second wave.
			waited[i] = waitMachines(ctx, k8s, out, s, c.want, c.target, 2*timeout, seen[i])
		}()
	}
	wg.Wait()
	for i, s := range sides {
		if waited[i] != nil {
			return res, fmt.Errorf("%s did not reach %s: %w", s.label, c.target, waited[i])
		}
		res.Order[s.label] = seen[i].order(c.version)
	}
	ro := &unstructured.Unstructured{}
	ro.SetAPIVersion("topology.kubectl-topology.io/v1alpha2")
	ro.SetKind("TopologyRollout")
	ro.SetName(rollout)
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Name: rollout}, ro); err != nil {
			return false, nil //nolint:nilerr // asked again until the timeout
		}
		res.Phase, _, _ = unstructured.NestedString(ro.Object, "status", "phase")
		return res.Phase == "Completed", nil
	})
	clusters, _, _ := unstructured.NestedSlice(ro.Object, "status", "clusters")
	for _, cl := range clusters {
		m := cl.(map[string]any)
		res.Status = append(res.Status, fmt.Sprintf("%s/%s/%s %s %s", m["kind"], m["namespace"], m["name"], m["phase"], m["message"]))
	}
	waves, _, _ := unstructured.NestedSlice(ro.Object, "status", "waves")
	if len(waves) == 2 {
		first, second := waves[0].(map[string]any), waves[1].(map[string]any)
		done, _ := first["completedAt"].(string)
		began, _ := second["startedAt"].(string)
		res.WaveOrder = done != "" && began != "" && done <= began
	}
	fmt.Fprintf(out, "rollout %s: %s\n  %s\n", rollout, res.Phase, strings.Join(res.Status, "\n  "))
	if err != nil && res.Phase == "" {
		return res, fmt.Errorf("reading TopologyRollout %s: %w", rollout, err)
	}
	return res, nil
}
