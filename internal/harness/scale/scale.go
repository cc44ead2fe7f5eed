// Package scale measures the agent side by side with upstream's topology
// controller: the same N clusters of one class — a case of testdata/parity,
// upstream's ClusterClass, templates and Cluster — created as Topologies for
// the agent and as Cluster.spec.topology for Cluster API v1.14.2's core
// manager with ClusterTopology on, each on a fresh local control plane with
// Cluster API's managers beside it, one after the other. Each side reports
// the time until every cluster is reconciled, the latency of each create as
// the client sees it (admission included), the API requests, peak RSS and
// CPU time of the controller, and the writes and time of a no-op resync
// after the controller restarts. `make bench-scale` prints the table.
package scale

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topologycontroller "github.com/kubectl-topology/kubectl-topology/internal/controller"
	"github.com/kubectl-topology/kubectl-topology/internal/freeport"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/localcluster"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/parity"
	"github.com/kubectl-topology/kubectl-topology/internal/transient"
	topologywebhook "github.com/kubectl-topology/kubectl-topology/internal/webhook"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Sides of the comparison.
const (
	Ours     = "ours"
	Upstream = "upstream"
)

// Options say what to measure and where.
type Options struct {
	// BinDir holds the control plane's, Cluster API's and kubectl-topology's
	// binaries (agent, kubectl-topology).
	BinDir string
	// Dir is where each side's control plane keeps its data and logs.
	Dir string
	// CRDDir holds kubectl-topology's own CRDs.
	CRDDir string
	// Case is a directory of upstream YAML: ClusterClass, templates and one
	// Cluster, stamped N times.
	Case string
	// N is how many clusters each side gets.
	N int
	// Replicas, unless negative, replaces the replicas of the control plane
	// and of every pool in the case's cluster, to keep machines per cluster down.
	Replicas int
	// Timeout bounds each wait: all reconciled, idle, resynced.
	Timeout time.Duration
	// IdleProviders keeps the bootstrap, control plane and infrastructure
	// providers off the measured clusters: they serve their webhooks and
	// conversions but reconcile only a namespace nothing is created in. The
	// topology controllers' own cost then shows at N where machines would
	// take hours (the Docker class without containers, say).
	IdleProviders bool
	// AgentFlags are added to the agent's command line (e.g. --concurrency 40).
	AgentFlags []string
	// Profile saves Go profiles into each side's directory: 30 s of CPU of
	// the API server and of the agent from the moment the last create
	// returns, the agent's heap once it is idle, and 30 s of the agent's CPU
	// from its readiness after the restart.
	Profile bool
	// RolloutVersion, when set, ends our side with a TopologyRollout of
	// every cluster to this version, RolloutInFlight at once (providers
	// must run: a cluster counts once its machines run the version).
	RolloutVersion  string
	RolloutInFlight int
	// RolloutDryRun, when set (NAME=VALUE), ends our side with `rollout
	// create --dry-run` of that variable over all N, timed: the live dry
	// run, each cluster's preflight with its whole-change dry run included.
	RolloutDryRun string
	// Log receives progress.
	Log io.Writer
}

// Measurement is one side's figures at one N.
type Measurement struct {
	// Side is Ours or Upstream; Controller names the measured process.
	Side, Controller string
	N                int
	// Created is the time to create all N; Reconciled the time from the
	// first create until every cluster reports TopologyReconciled.
	Created, Reconciled time.Duration
	// CreateP50 and CreateP99 are the latencies of one create, admission
	// included, as the client sees it, retries included.
	CreateP50, CreateP99 time.Duration
	// CreateRetries counts the creates tried again after the API server
	// failed them for a while (a webhook's timeout, say).
	CreateRetries int
	// AdmissionP99 is the p99 of the measured process's own admission
	// webhooks for the created kind, the slower of defaulting and
	// validation, from its latency histogram: the part of a create that is
	// the controller's doing.
	AdmissionP99 time.Duration
	// Requests is the API requests the controller made from its start until
	// it was idle after reconciling all N.
	Requests float64
	// Usage of the controller over the same span.
	Usage Usage
	// Core is the usage of Cluster API's core manager on this side: the
	// measured controller upstream, the one beside the agent (gate off) on ours.
	Core Usage
	// CoreRequests are the core manager's API requests, likewise.
	CoreRequests float64
	// APIServer is the API server's usage since it started, read with the
	// others: on two cores it and the core manager, not the topology
	// controller, do most of the work a cluster costs.
	APIServer Usage
	// ResyncWrites and Resync are the writes (the agent's heartbeat Lease
	// aside) and the time until idle after the controller restarted with
	// nothing to change.
	ResyncWrites float64
	Resync       time.Duration
	// Processes is true where the controllers ran here and their requests,
	// usage and resync were measured.
	Processes bool
	// ResyncChanged is how many Cluster API objects the topology controller's
	// field manager changed during that resync; unlike ResyncWrites it leaves
	// out the core manager's other controllers upstream.
	ResyncChanged int
	// RolloutTime is how long a TopologyRollout of all N took (ours only,
	// with RolloutVersion); RolloutRequests the agent's API requests during
	// it, RolloutControllerRequests the rollout controller's own.
	RolloutTime                                time.Duration
	RolloutRequests, RolloutControllerRequests float64
	// DryRunTime is how long `rollout create --dry-run` over all N took
	// (with RolloutDryRun); DryRunRefused how many clusters it said would
	// be refused at preflight.
	DryRunTime    time.Duration
	DryRunRefused int
}

// Field managers of the two topology controllers.
const (
	oursFieldManager     = "kubectl-topology"
	upstreamFieldManager = "capi-topology"
)

// admissionPaths are the webhook paths of the created kind in each side's
// measured process: the agent's for Topology, the core manager's for Cluster.
var admissionPaths = map[string][]string{
	Ours:     {topologywebhook.TopologyDefaultPath, topologywebhook.TopologyValidatePath},
	Upstream: {"/mutate-cluster-x-k8s-io-v1beta2-cluster", "/validate-cluster-x-k8s-io-v1beta2-cluster"},
}

// controller is the process under measurement on one side.
type controller struct {
	name string
	// queue is its topology controller's name in controller-runtime's metrics.
	queue string
	// metrics is its Prometheus endpoint.
	metrics string
	// pprof is the base URL of its Go profiles, where it serves them.
	pprof   string
	pid     func() (int, error)
	restart func(context.Context) error
	stop    func()
}

// target is where one side runs: a client, and the processes to measure
// where they run here (nil against a control plane a user points at).
type target struct {
	k8s        client.WithWatch
	cfg        *rest.Config
	kubeconfig string
	ns         string
	// measured is the topology controller; core is Cluster API's core
	// manager (the same process upstream).
	measured, core *controller
	// apiServer is the API server's process id, where it runs here.
	apiServer func() (int, error)
}

// Run measures side at opts.N on a fresh local control plane, which it
// stops afterwards.
func Run(ctx context.Context, opts Options, side string) (Measurement, error) {
	m := Measurement{Side: side, N: opts.N}
	dir := filepath.Join(opts.Dir, side)
	if err := localcluster.StopDir(dir); err != nil {
		return m, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return m, err
	}
	logf(opts.Log, "%s, N=%d: starting a control plane with Cluster API %s (ClusterTopology %s) in %s", side, opts.N, localcluster.ProvidersVersion,
		map[bool]string{true: "on", false: "off"}[side == Upstream], dir)
	cp, err := localcluster.Start(ctx, localcluster.Options{Dir: dir, BinDir: opts.BinDir, CRDDirs: []string{opts.CRDDir},
		Providers: providers(side, opts.IdleProviders)})
	if err != nil {
		return m, err
	}
	defer func() { _ = cp.Stop() }()
	t, err := newTarget(cp.Kubeconfig, "scale")
	if err != nil {
		return m, err
	}
	core, ok := cp.Provider(localcluster.CoreProviderName)
	if !ok {
		return m, fmt.Errorf("the control plane runs no %s", localcluster.CoreProviderName)
	}
	t.core = &controller{name: localcluster.CoreProviderName, queue: "topology/cluster",
		metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", core.DiagnosticsPort),
		pid:     func() (int, error) { return cp.PID(localcluster.CoreProviderName) },
		restart: func(ctx context.Context) error { return cp.RestartProvider(ctx, localcluster.CoreProviderName) },
		stop:    func() {},
	}
	t.measured = t.core
	t.apiServer = func() (int, error) { return cp.PID(localcluster.APIServer) }
	if side == Ours {
		agent, err := startAgent(ctx, filepath.Join(opts.BinDir, "agent"), cp.Kubeconfig, filepath.Join(dir, "agent"), opts.AgentFlags)
		if err != nil {
			return m, err
		}
		defer agent.stop()
		t.measured = &agent
	}
	if err := t.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.ns}}); err != nil {
		return m, err
	}
	return measure(ctx, opts, side, t)
}

// idleNamespace is the namespace idle providers reconcile; nothing is ever
// created in it.
const idleNamespace = "scale-idle-providers"

// providers are Cluster API's managers for side. Idle, all but the core
// manager (upstream's topology controller, and on both sides the Cluster
// controller) reconcile only idleNamespace.
func providers(side string, idle bool) []localcluster.Provider {
	ps := localcluster.ClusterAPIProviders(side == Upstream)
	if !idle {
		return ps
	}
	for i := range ps {
		if ps[i].Name != localcluster.CoreProviderName {
			ps[i].Args = append(slices.Clone(ps[i].Args), "--namespace="+idleNamespace)
		}
	}
	return ps
}

// RunAgainst measures side on the control plane of kubeconfig, where the
// agent (ours) or Cluster API's core manager with ClusterTopology on
// (upstream) already runs, in a namespace of its own that it deletes
// afterwards. Only what a client sees is measured there: the time to all
// reconciled and the create latencies.
func RunAgainst(ctx context.Context, opts Options, side, kubeconfig string) (Measurement, error) {
	m := Measurement{Side: side, N: opts.N}
	t, err := newTarget(kubeconfig, "")
	if err != nil {
		return m, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "topology-scale-" + side + "-"}}
	if err := t.k8s.Create(ctx, ns); err != nil {
		return m, fmt.Errorf("creating a namespace to measure in: %w", err)
	}
	defer func() {
		logf(opts.Log, "%s: deleting namespace %s", side, ns.Name)
		_ = t.k8s.Delete(context.Background(), ns)
	}()
	t.ns = ns.Name
	return measure(ctx, opts, side, t)
}

func newTarget(kubeconfig, ns string) (*target, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	// The creates are the load: as fast as the API server takes them.
	cfg.QPS, cfg.Burst = 1000, 1000
	// client-go's kinds and ours: a rollout is created typed.
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha2.AddToScheme(scheme); err != nil {
		return nil, err
	}
	k8s, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &target{k8s: k8s, cfg: cfg, kubeconfig: kubeconfig, ns: ns}, nil
}

// measure creates the case's class and N clusters in t and measures them.
func measure(ctx context.Context, opts Options, side string, t *target) (Measurement, error) {
	m := Measurement{Side: side, N: opts.N, Controller: "Cluster API core manager, ClusterTopology on"}
	if side == Ours {
		m.Controller = "kubectl-topology agent"
	}
	k8s, ns := t.k8s, t.ns
	class, cluster, err := load(opts, side, t.kubeconfig, ns)
	if err != nil {
		return m, err
	}
	for _, o := range class {
		if err := k8s.Create(ctx, o); err != nil {
			return m, fmt.Errorf("creating %s %s/%s: %w", o.GetKind(), ns, o.GetName(), err)
		}
	}

	logf(opts.Log, "%s, N=%d: creating %d of %s", side, opts.N, opts.N, cluster.GetKind())
	start := time.Now()
	latencies := make([]time.Duration, 0, opts.N)
	for i := range opts.N {
		o := cluster.DeepCopy()
		o.SetName(fmt.Sprintf("c-%04d", i))
		began := time.Now()
		retries, err := createRetrying(ctx, k8s, o, maxCreateAttempts, time.Second)
		m.CreateRetries += retries
		if err != nil {
			return m, fmt.Errorf("creating %s %s/%s: %w", o.GetKind(), ns, o.GetName(), err)
		}
		latencies = append(latencies, time.Since(began))
	}
	m.Created = time.Since(start)
	prof := profiler{dir: filepath.Join(opts.Dir, side), n: opts.N, log: opts.Log}
	var profiled []func()
	if opts.Profile {
		profiled = append(profiled, prof.apiServerCPU(ctx, t.cfg))
		if t.measured != nil && t.measured.pprof != "" {
			profiled = append(profiled, prof.processCPU(ctx, t.measured.pprof, t.measured.name))
		}
	}
	defer func() {
		for _, wait := range profiled {
			wait()
		}
	}()
	slices.Sort(latencies)
	m.CreateP50, m.CreateP99 = latencies[len(latencies)/2], latencies[len(latencies)*99/100]
	if err := allReconciled(ctx, k8s, cluster, ns, opts.N, opts.IdleProviders, opts.Timeout, opts.Log, t.memory); err != nil {
		return m, fmt.Errorf("%s: %w", side, err)
	}
	m.Reconciled = time.Since(start)
	logf(opts.Log, "%s, N=%d: all reconciled after %s", side, opts.N, m.Reconciled.Round(time.Millisecond))
	if t.measured == nil {
		return m, nil
	}
	m.Processes = true
	metrics, _, err := idle(ctx, *t.measured, opts.Timeout)
	if err != nil {
		return m, err
	}
	m.Requests = metrics.Sum("rest_client_requests_total")
	logf(opts.Log, "%s, N=%d: the %s's requests until idle: %s", side, opts.N, t.measured.name, countList(metrics.RequestsByMethod()))
	if side == Ours {
		logf(opts.Log, "%s, N=%d: the %s's writes until idle: %s", side, opts.N, t.measured.name, countList(metrics.WritesByResource()))
	}
	if opts.Profile && t.measured.pprof != "" {
		prof.heap(ctx, t.measured.pprof, t.measured.name)
	}
	for _, path := range admissionPaths[side] {
		_, p99, _ := metrics.WebhookLatency(path)
		m.AdmissionP99 = max(m.AdmissionP99, p99)
	}
	if m.Usage, err = usage(*t.measured); err != nil {
		return m, err
	}
	coreMetrics, err := Scrape(ctx, t.core.metrics)
	if err != nil {
		return m, err
	}
	m.CoreRequests = coreMetrics.Sum("rest_client_requests_total")
	if m.Core, err = usage(*t.core); err != nil {
		return m, err
	}
	if t.apiServer != nil {
		pid, err := t.apiServer()
		if err != nil {
			return m, fmt.Errorf("finding the API server's process: %w", err)
		}
		if m.APIServer, err = ReadUsage(pid); err != nil {
			return m, err
		}
		logf(opts.Log, "%s, N=%d: the API server's writes until idle, all clients: %s", side, opts.N, t.serverWrites(ctx))
	}

	// What else keeps the API server busy decides how fast a restart's lists
	// are served: the log says what the core manager and the API server did
	// just before the restart and during the resync.
	others := t.othersBusy()
	if err := pause(ctx, 5*time.Second); err != nil {
		return m, err
	}
	logf(opts.Log, "%s, N=%d: in the 5 s before the restart, %s", side, opts.N, others())
	others = t.othersBusy()
	logf(opts.Log, "%s, N=%d: restarting the %s for a no-op resync", side, opts.N, t.measured.name)
	restarted := time.Now()
	if err := t.measured.restart(ctx); err != nil {
		return m, err
	}
	logf(opts.Log, "%s, N=%d: the %s is ready %s after the restart began", side, opts.N, t.measured.name, time.Since(restarted).Round(time.Millisecond))
	if opts.Profile && t.measured.pprof != "" {
		// From readiness on: the resync's reconciles, not the start-up.
		defer prof.processCPU(ctx, t.measured.pprof, t.measured.name+"-resync")()
	}
	resynced, quiet, err := resync(ctx, *t.measured, opts.N, opts.Timeout, func() {
		logf(opts.Log, "%s, N=%d: %d reconciles %s after the restart began", side, opts.N, opts.N, time.Since(restarted).Round(time.Millisecond))
	})
	if err != nil {
		return m, err
	}
	m.Resync = quiet.Sub(restarted)
	logf(opts.Log, "%s, N=%d: idle %s after the restart began (three quiet scrapes confirmed it %s later)", side, opts.N, m.Resync.Round(time.Millisecond), time.Since(quiet).Round(time.Millisecond))
	logf(opts.Log, "%s, N=%d: during the resync, %s", side, opts.N, others())
	if u, err := usage(*t.measured); err == nil {
		// The table's peak is the first process's, creation to idle; a
		// restart reads everything at once and may peak higher.
		logf(opts.Log, "%s, N=%d: the restarted %s's peak RSS was %d MiB, its CPU %s", side, opts.N, t.measured.name, u.PeakRSS>>20, u.CPU.Round(10*time.Millisecond))
	}
	// The heartbeat Lease is renewed every few seconds whatever the
	// reconciles do: its writes are liveness, not the resync's.
	heartbeats := resynced.Sum("kubectl_topology_heartbeat_writes_total")
	m.ResyncWrites = resynced.Writes() - heartbeats
	logf(opts.Log, "%s, N=%d: the resync's writes: %.0f, and %.0f of the heartbeat Lease", side, opts.N, m.ResyncWrites, heartbeats)
	logf(opts.Log, "%s, N=%d: the resync took %.0f reconciles", side, opts.N, resynced.Sum("controller_runtime_reconcile_total", `controller="`+t.measured.queue+`"`))
	logf(opts.Log, "%s, N=%d: the resync's requests: %s", side, opts.N, countList(resynced.RequestsByMethod()))
	if side == Ours {
		logf(opts.Log, "%s, N=%d: the resync's writes: %s", side, opts.N, countList(resynced.WritesByResource()))
	}
	manager := upstreamFieldManager
	if side == Ours {
		manager = oursFieldManager
	}
	if m.ResyncChanged, err = changedSince(ctx, k8s, t.cfg, ns, manager, restarted); err != nil {
		return m, err
	}
	if opts.RolloutDryRun != "" && side == Ours {
		if err := measureDryRun(ctx, opts, t, &m); err != nil {
			return m, err
		}
	}
	if opts.RolloutVersion != "" && side == Ours && !opts.IdleProviders {
		if err := measureRollout(ctx, opts, t, &m); err != nil {
			return m, err
		}
	}
	return m, nil
}

// maxCreateAttempts bounds the tries of one create. On two cores at 1,000
// Cluster API's own validating webhook once took longer than its 10 s
// timeout; a benchmark should report that, not end on it.
const maxCreateAttempts = 5

// createRetrying creates o, trying again up to attempts times in all while
// the API server fails it in a way that passes (a webhook call that timed
// out or failed, a timeout, throttling), the wait doubling from backoff, and
// returns the retries. An object found existing on a retry was stored by the
// try that seemed to fail.
func createRetrying(ctx context.Context, k8s client.Client, o *unstructured.Unstructured, attempts int, backoff time.Duration) (int, error) {
	tries := 0
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: backoff, Factor: 2, Steps: attempts}, func(ctx context.Context) (bool, error) {
		tries++
		last = k8s.Create(ctx, o.DeepCopy())
		switch {
		case last == nil, tries > 1 && apierrors.IsAlreadyExists(last):
			return true, nil
		case transient.Is(last):
			return false, nil
		}
		return false, last
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		err = last // out of attempts: the API server's own error says why
	}
	return tries - 1, err
}

// changedSince counts the objects of Cluster API's groups in ns that
// manager has written since t, by the times in their managed fields (to the
// second, as the API server keeps them).
func changedSince(ctx context.Context, k8s client.Client, cfg *rest.Config, ns, manager string, t time.Time) (int, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return 0, err
	}
	lists, err := dc.ServerPreferredNamespacedResources()
	if err != nil {
		return 0, fmt.Errorf("discovering the resources to count writes in: %w", err)
	}
	since := t.Truncate(time.Second)
	n := 0
	for _, rl := range lists {
		gv, err := schema.ParseGroupVersion(rl.GroupVersion)
		if err != nil || !strings.HasSuffix(gv.Group, "cluster.x-k8s.io") {
			continue
		}
		for _, r := range rl.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gv.WithKind(r.Kind + "List"))
			if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
				return 0, fmt.Errorf("listing %s: %w", r.Name, err)
			}
			for _, o := range list.Items {
				for _, mf := range o.GetManagedFields() {
					if mf.Manager == manager && mf.Time != nil && !mf.Time.Time.Before(since) {
						n++
						break
					}
				}
			}
		}
	}
	return n, nil
}

// load reads the case: upstream's objects as they are, or converted to ours
// by `kubectl topology convert`; class is everything but the cluster, which
// is returned alone to be stamped N times.
func load(opts Options, side, kubeconfig, ns string) (class []*unstructured.Unstructured, cluster *unstructured.Unstructured, err error) {
	files, err := filepath.Glob(filepath.Join(opts.Case, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, nil, fmt.Errorf("no YAML files in case %s", opts.Case)
	}
	var docs []byte
	if side == Upstream {
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, nil, err
			}
			docs = append(append(docs, data...), "\n---\n"...)
		}
	} else {
		args := []string{"convert", "-n", ns}
		for _, f := range files {
			args = append(args, "-f", f)
		}
		out, err := parity.RunPlugin(filepath.Join(opts.BinDir, "kubectl-topology"), kubeconfig, args...)
		if err != nil {
			return nil, nil, err
		}
		docs = []byte(out)
	}
	objs, err := parity.Decode(docs)
	if err != nil {
		return nil, nil, fmt.Errorf("case %s: %w", opts.Case, err)
	}
	for _, o := range objs {
		o.SetNamespace(ns)
		if o.GetKind() == "Cluster" || o.GetKind() == "Topology" {
			cluster = o
			continue
		}
		class = append(class, o)
	}
	if cluster == nil {
		return nil, nil, fmt.Errorf("case %s holds no Cluster", opts.Case)
	}
	if opts.Replicas >= 0 {
		if err := setReplicas(cluster, int64(opts.Replicas)); err != nil {
			return nil, nil, fmt.Errorf("case %s: %w", opts.Case, err)
		}
	}
	return class, cluster, nil
}

// setReplicas sets the replicas of the control plane and every pool of a
// Topology or of a Cluster's spec.topology.
func setReplicas(o *unstructured.Unstructured, n int64) error {
	root := []string{"spec"}
	if o.GetKind() == "Cluster" {
		root = append(root, "topology")
	}
	if err := unstructured.SetNestedField(o.Object, n, append(slices.Clone(root), "controlPlane", "replicas")...); err != nil {
		return err
	}
	for _, pools := range []string{"machineDeployments", "machinePools"} {
		path := append(slices.Clone(root), "workers", pools)
		list, _, _ := unstructured.NestedSlice(o.Object, path...)
		for i := range list {
			list[i].(map[string]any)["replicas"] = n
		}
		if len(list) > 0 {
			if err := unstructured.SetNestedSlice(o.Object, list, path...); err != nil {
				return err
			}
		}
	}
	return nil
}

// allReconciled waits until n objects of cluster's kind in ns report
// TopologyReconciled True for their latest generation or, with idle
// providers, as far as a topology controller can go without them. It lists
// once and then watches, relisting only when the watch ends: a list of
// every cluster each second was an eighth of the API server's CPU at 1,000
// (its profile), load the benchmark put on what it measures.
func allReconciled(ctx context.Context, k8s client.WithWatch, cluster *unstructured.Unstructured, ns string, n int, idleProviders bool, timeout time.Duration, log io.Writer, memory func() string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	gv := cluster.GroupVersionKind().GroupVersion()
	if cluster.GetKind() == "Cluster" {
		// Conditions with observedGeneration are v1beta2's, whatever
		// version the case was written in.
		gv.Version = "v1beta2"
	}
	listGVK := gv.WithKind(cluster.GetKind() + "List")
	reconciled := reconciledSet{}
	progress := time.NewTicker(30 * time.Second)
	defer progress.Stop()
	var last error
	for reconciled.done() < n {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(listGVK)
		if last = k8s.List(ctx, list, client.InNamespace(ns)); last != nil {
			if err := pause(ctx, time.Second); err != nil {
				break
			}
			continue // the API server is busy; ask again
		}
		clear(reconciled)
		for i := range list.Items {
			reconciled[list.Items[i].GetName()] = reconciledNow(&list.Items[i], idleProviders)
		}
		if reconciled.done() == n {
			return nil
		}
		watchList := &unstructured.UnstructuredList{}
		watchList.SetGroupVersionKind(listGVK)
		w, err := k8s.Watch(ctx, watchList, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
		if last = err; err != nil {
			if err := pause(ctx, time.Second); err != nil {
				break
			}
			continue
		}
		last = watchUntil(ctx, w, reconciled, n, idleProviders, progress.C, func() {
			logf(log, "  %d of %d reconciled (%d seen)%s", reconciled.done(), n, len(reconciled), memory())
		})
		w.Stop()
		if ctx.Err() != nil {
			break
		}
	}
	if done := reconciled.done(); done < n {
		return fmt.Errorf("%d of %d reconciled after %s (last error: %v)", done, n, timeout, last)
	}
	return nil
}

// reconciledSet tells, by cluster name, whether each cluster seen is reconciled.
type reconciledSet map[string]bool

// done is how many of the clusters seen are reconciled.
func (s reconciledSet) done() int {
	n := 0
	for _, ok := range s {
		if ok {
			n++
		}
	}
	return n
}

// watchUntil records each event's object in reconciled until n are
// reconciled, the watch ends (the caller lists again) or ctx is done; it
// reports progress at each tick.
func watchUntil(ctx context.Context, w watch.Interface, reconciled reconciledSet, n int, idleProviders bool, tick <-chan time.Time, report func()) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			report()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			o, isObject := ev.Object.(*unstructured.Unstructured)
			switch {
			case ev.Type == watch.Error || !isObject:
				return fmt.Errorf("watch ended: %v", apierrors.FromObject(ev.Object))
			case ev.Type == watch.Deleted:
				delete(reconciled, o.GetName())
			default:
				reconciled[o.GetName()] = reconciledNow(o, idleProviders)
			}
			if reconciled.done() == n {
				return nil
			}
		}
	}
}

// pause waits d, or less when ctx ends first.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// reconciledNow tells whether o's TopologyReconciled condition is True for
// its current generation. Both sides give it upstream's reasons and words,
// which the agent's controller names. With idle providers no control plane
// is ever provisioned. The pools of a new cluster are still created (both
// sides did so for the Docker class at 1,000), but where a topology
// controller defers their creation, as upstream v1.14 does while the control
// plane upgrades, it can never go further: reconciled is then also False
// for that reason alone, every line after the first saying a creation waits.
func reconciledNow(o *unstructured.Unstructured, idleProviders bool) bool {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm["type"] != "TopologyReconciled" {
			continue
		}
		if gen, _ := cm["observedGeneration"].(int64); gen != o.GetGeneration() {
			return false
		}
		if cm["status"] == "True" {
			return true
		}
		msg, _ := cm["message"].(string)
		return idleProviders && cm["reason"] == topologycontroller.ReasonClusterUpgrading && onlyCreationsDeferred(msg)
	}
	return false
}

// onlyCreationsDeferred tells whether a TopologyReconciled message lists
// nothing but pools whose creation waits for the control plane.
func onlyCreationsDeferred(msg string) bool {
	lines := strings.Split(msg, "\n")
	if len(lines) < 2 {
		return false
	}
	for _, l := range lines[1:] {
		if !strings.HasSuffix(l, " "+topologycontroller.CreationDeferredMessage) {
			return false
		}
	}
	return true
}

// idle waits until the controller's topology queue has been empty, with no
// worker busy, over three scrapes in a row, and returns the last scrape and
// the time of the first of the three: when it went idle, not when three
// scrapes had confirmed it.
func idle(ctx context.Context, c controller, timeout time.Duration) (Metrics, time.Time, error) {
	var last Metrics
	var since time.Time
	quiet := 0
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		asked := time.Now()
		m, err := Scrape(ctx, c.metrics)
		if err != nil {
			return false, nil //nolint:nilerr // starting or busy; ask again
		}
		last = m
		if m.Sum("workqueue_depth", `name="`+c.queue+`"`) == 0 && m.Sum("controller_runtime_active_workers", `controller="`+c.queue+`"`) == 0 {
			if quiet == 0 {
				since = asked
			}
			quiet++
		} else {
			quiet = 0
		}
		return quiet >= 3, nil
	})
	if err != nil {
		return last, since, fmt.Errorf("the %s did not become idle within %s", c.name, timeout)
	}
	return last, since, nil
}

// resync waits until a restarted controller has reconciled n clusters and
// is idle, and returns its metrics then and when it went idle. reconciled
// is called once the n reconciles are done, so a log can split the time.
func resync(ctx context.Context, c controller, n int, timeout time.Duration, reconciled func()) (Metrics, time.Time, error) {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		m, err := Scrape(ctx, c.metrics)
		if err != nil {
			return false, nil //nolint:nilerr // still starting
		}
		return m.Sum("controller_runtime_reconcile_total", `controller="`+c.queue+`"`) >= float64(n), nil
	})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("the restarted %s did not reconcile %d clusters within %s", c.name, n, timeout)
	}
	reconciled()
	return idle(ctx, c, timeout)
}

// memory says, for the progress lines, the measured process's resident set
// now, the part of it mapped from files, and its peak so far, so that a run
// shows when the peak was reached and how much of it the heap could change;
// it is empty without a measured process.
func (t *target) memory() string {
	if t.measured == nil {
		return ""
	}
	u, err := usage(*t.measured)
	if err != nil {
		return fmt.Sprintf("; the %s's memory could not be read: %v", t.measured.name, err)
	}
	return fmt.Sprintf("; the %s's RSS %d MiB (%d MiB of it files), peak %d MiB", t.measured.name, u.RSS>>20, u.FileRSS>>20, u.PeakRSS>>20)
}

// serverWrites is the largest counts of the API server's writes so far, by
// resource, or why they could not be read.
func (t *target) serverWrites(ctx context.Context) string {
	hc, err := rest.HTTPClientFor(t.cfg)
	if err != nil {
		return fmt.Sprintf("not read: %v", err)
	}
	m, err := ScrapeWith(ctx, hc, t.cfg.Host+"/metrics")
	if err != nil {
		return fmt.Sprintf("not read: %v", err)
	}
	return largest(m.ServerWritesByResource(), 12)
}

// othersBusy starts counting the CPU time of the core manager (when it is
// not the measured process) and of the API server, and returns what says
// how much each has used since.
func (t *target) othersBusy() func() string {
	type counted struct {
		name   string
		pid    func() (int, error)
		before time.Duration
	}
	var procs []*counted
	if t.core != nil && t.core != t.measured {
		procs = append(procs, &counted{name: "the core manager", pid: t.core.pid})
	}
	if t.apiServer != nil {
		procs = append(procs, &counted{name: "the API server", pid: t.apiServer})
	}
	cpu := func(p *counted) (time.Duration, bool) {
		pid, err := p.pid()
		if err != nil {
			return 0, false
		}
		u, err := ReadUsage(pid)
		return u.CPU, err == nil
	}
	for _, p := range procs {
		p.before, _ = cpu(p)
	}
	began := time.Now()
	return func() string {
		elapsed := time.Since(began)
		var parts []string
		for _, p := range procs {
			after, ok := cpu(p)
			if !ok {
				parts = append(parts, p.name+" could not be read")
				continue
			}
			parts = append(parts, fmt.Sprintf("%s used %s of CPU (%.0f%% of a core)", p.name, (after-p.before).Round(10*time.Millisecond),
				100*float64(after-p.before)/float64(elapsed)))
		}
		return strings.Join(parts, ", ")
	}
}

// countList reads "GET 41, PATCH 3", sorted by key.
func countList(counts map[string]float64) string {
	var parts []string
	for _, method := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %.0f", method, counts[method]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func usage(c controller) (Usage, error) {
	pid, err := c.pid()
	if err != nil {
		return Usage{}, err
	}
	return ReadUsage(pid)
}

// startAgent runs the agent binary against kubeconfig with its metrics on
// plain HTTP, as the e2e tests do, and waits until it is ready.
func startAgent(ctx context.Context, bin, kubeconfig, dir string, flags []string) (controller, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return controller{}, err
	}
	ports, err := freePorts(4)
	if err != nil {
		return controller{}, err
	}
	probe, metrics, webhook, pprof := ports[0], ports[1], ports[2], ports[3]
	var cmd *exec.Cmd
	start := func(ctx context.Context) error {
		log, err := os.OpenFile(filepath.Join(dir, "agent.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer log.Close()
		args := append([]string{"--local", "--kubeconfig", kubeconfig,
			"--webhook-port", strconv.Itoa(webhook), "--webhook-cert-dir", filepath.Join(dir, "certs"),
			"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(probe),
			"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(metrics), "--metrics-secure=false",
			"--pprof-bind-address", "127.0.0.1:" + strconv.Itoa(pprof)}, flags...)
		cmd = exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting %s: %w", bin, err)
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", probe))
			if err != nil {
				return false, nil //nolint:nilerr // not listening yet
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, nil
		})
		if err != nil {
			return fmt.Errorf("the agent did not become ready; its log is %s", filepath.Join(dir, "agent.log"))
		}
		return nil
	}
	stop := func() {
		if cmd != nil && cmd.Process != nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_, _ = cmd.Process.Wait()
		}
	}
	if err := start(ctx); err != nil {
		stop()
		return controller{}, err
	}
	return controller{name: "agent", queue: "topology", metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics),
		pprof:   fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", pprof),
		pid:     func() (int, error) { return cmd.Process.Pid, nil },
		restart: func(ctx context.Context) error { stop(); return start(ctx) },
		stop:    stop,
	}, nil
}

// freePorts are n loopback ports free now, below the ephemeral range.
func freePorts(n int) ([]int, error) {
	return freeport.New().Ports(n)
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// Table prints ours and upstream side by side, with the ratio of each pair.
// A side not measured (zero Side) or a figure not known there (processes
// not running here) shows as "-".
func Table(w io.Writer, class string, ours, upstream Measurement) {
	n := ours.N
	if n == 0 {
		n = upstream.N
	}
	fmt.Fprintf(w, "\nN=%d, class %s\n", n, class)
	fmt.Fprintf(w, "  %-54s %14s %14s %8s\n", "", "ours", "upstream", "ratio")
	fmt.Fprintf(w, "  %-54s %14s %14s\n", "(measured process)", "agent", "core manager")
	secs := func(v float64) string {
		return (time.Duration(v * float64(time.Second))).Round(10 * time.Millisecond).String()
	}
	ms := func(v float64) string { return strconv.FormatFloat(v*1000, 'f', 1, 64) + " ms" }
	mib := func(v float64) string { return strconv.FormatInt(int64(v)>>20, 10) + " MiB" }
	count := func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
	perCluster := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	type figure func(m Measurement) float64
	row := func(what string, process, withRatio bool, show func(float64) string, f figure) {
		cell := func(m Measurement) (string, bool) {
			if m.Side == "" || (process && !m.Processes) {
				return "-", false
			}
			return show(f(m)), true
		}
		o, oKnown := cell(ours)
		u, uKnown := cell(upstream)
		r := "-"
		if withRatio && oKnown && uKnown && f(upstream) > 0 {
			r = strconv.FormatFloat(f(ours)/f(upstream), 'f', 2, 64)
		}
		fmt.Fprintf(w, "  %-54s %14s %14s %8s\n", what, o, u, r)
	}
	perN := func(v float64, m Measurement) float64 { return v / float64(max(m.N, 1)) }
	row("time to all reconciled", false, true, secs, func(m Measurement) float64 { return m.Reconciled.Seconds() })
	row("time to create all", false, true, secs, func(m Measurement) float64 { return m.Created.Seconds() })
	row("create latency p50 (admission included)", false, true, ms, func(m Measurement) float64 { return m.CreateP50.Seconds() })
	row("create latency p99 (admission included)", false, true, ms, func(m Measurement) float64 { return m.CreateP99.Seconds() })
	row("creates tried again after a transient failure", false, false, count, func(m Measurement) float64 { return float64(m.CreateRetries) })
	row("admission p99 in its own webhooks, measured process", true, true, ms, func(m Measurement) float64 { return m.AdmissionP99.Seconds() })
	row("API requests per cluster, measured process", true, true, perCluster, func(m Measurement) float64 { return perN(m.Requests, m) })
	row("peak RSS, measured process", true, true, mib, func(m Measurement) float64 { return float64(m.Usage.PeakRSS) })
	row("CPU time, measured process", true, true, secs, func(m Measurement) float64 { return m.Usage.CPU.Seconds() })
	// Ours adds the agent to a core manager; upstream's core manager is the
	// measured process itself.
	withCore := func(m Measurement, agent, core float64) float64 {
		if m.Side == Ours {
			return agent + core
		}
		return core
	}
	row("peak RSS, agent + core manager vs core manager", true, true, mib, func(m Measurement) float64 {
		return withCore(m, float64(m.Usage.PeakRSS), float64(m.Core.PeakRSS))
	})
	row("CPU time, agent + core manager vs core manager", true, true, secs, func(m Measurement) float64 {
		return withCore(m, m.Usage.CPU.Seconds(), m.Core.CPU.Seconds())
	})
	row("API requests per cluster, same", true, true, perCluster, func(m Measurement) float64 { return perN(withCore(m, m.Requests, m.CoreRequests), m) })
	row("CPU time, API server since its start", true, true, secs, func(m Measurement) float64 { return m.APIServer.CPU.Seconds() })
	row("no-op resync after a restart: time to idle", true, true, secs, func(m Measurement) float64 { return m.Resync.Seconds() })
	row("no-op resync: writes, the heartbeat Lease aside", true, false, count, func(m Measurement) float64 { return m.ResyncWrites })
	row("no-op resync: objects the topology controller changed", true, false, count, func(m Measurement) float64 { return float64(m.ResyncChanged) })
	if ours.RolloutTime > 0 {
		fmt.Fprintf(w, "  %-54s %14s\n", "fleet rollout of all N to the next minor: time", ours.RolloutTime.Round(time.Second))
		fmt.Fprintf(w, "  %-54s %14s\n", "  the agent's API requests per cluster", perCluster(perN(ours.RolloutRequests, ours)))
		fmt.Fprintf(w, "  %-54s %14s\n", "  the rollout controller's own per cluster", perCluster(perN(ours.RolloutControllerRequests, ours)))
	}
	if ours.DryRunTime > 0 {
		fmt.Fprintf(w, "  %-54s %14s\n", "rollout create --dry-run over all N, preflights included", ours.DryRunTime.Round(100*time.Millisecond))
		fmt.Fprintf(w, "  %-54s %14d\n", "  clusters it says preflight would refuse", ours.DryRunRefused)
	}
	fmt.Fprintln(w, "  The core manager runs beside the agent with ClusterTopology off; upstream, its topology controller is one of its")
	fmt.Fprintln(w, "  controllers, so its requests, memory, CPU and resync writes include those of its other controllers too.")
}

// LoadLine says how busy the machine was, for the record beside a table.
func LoadLine() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "load unknown"
	}
	return fmt.Sprintf("load average %s %s %s", f[0], f[1], f[2])
}
