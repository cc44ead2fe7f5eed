// Command agent is the in-cluster half of kubectl-topology: it reconciles
// Topologies into Cluster API objects and serves the admission webhooks.
package main

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubectl-topology/kubectl-topology/internal/agent"
	"github.com/kubectl-topology/kubectl-topology/internal/apiwrites"
	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/localagent"
	"github.com/kubectl-topology/kubectl-topology/internal/shard"
	"github.com/kubectl-topology/kubectl-topology/internal/version"
)

// gcPercent is the agent's garbage collection target unless GOGC says
// otherwise: its heap is mostly its long-lived cache, and memory is what
// add-ons are limited and evicted by. docs/benchmarks.md (2026-12-01) has
// the peak RSS and resync CPU at 30, 40 and 50 that chose 40.
const gcPercent = 40

// setGCPercent applies gcPercent unless the environment set GOGC, and
// returns the target in force.
func setGCPercent(lookupEnv func(string) (string, bool)) int {
	if _, set := lookupEnv("GOGC"); set {
		current := debug.SetGCPercent(100)
		debug.SetGCPercent(current)
		return current
	}
	debug.SetGCPercent(gcPercent)
	return gcPercent
}

// memoryLimitShare is the part of the container's limit the Go runtime is
// held to: the rest is what Go does not count, the binary's resident pages
// (43 MiB at 1,000 Topologies) among them.
const memoryLimitShare = 0.9

// setMemoryLimit holds the runtime to memoryLimitShare of the container's
// memory limit unless GOMEMLIMIT is set, so that a heap near the limit makes
// the collector work harder instead of the kernel killing the agent, and
// returns the limit in force (math.MaxInt64 for none). A limit it cannot read
// is an error and changes nothing.
func setMemoryLimit(lookupEnv func(string) (string, bool)) (int64, error) {
	current := debug.SetMemoryLimit(-1)
	if _, set := lookupEnv("GOMEMLIMIT"); set {
		return current, nil
	}
	raw, set := lookupEnv(components.MemoryLimitEnv)
	if !set || raw == "" {
		return current, nil
	}
	bytes, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || bytes <= 0 {
		return current, fmt.Errorf("%s=%q is not a positive number of bytes; the agent runs without a memory limit (set GOMEMLIMIT to give it one)", components.MemoryLimitEnv, raw)
	}
	limit := int64(float64(bytes) * memoryLimitShare)
	debug.SetMemoryLimit(limit)
	return limit, nil
}

func main() {
	gc := setGCPercent(os.LookupEnv)
	memLimit, memLimitErr := setMemoryLimit(os.LookupEnv)
	opts := agent.Defaults()
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		opts.AgentNamespace = ns
	}
	var kubeconfig, watchFilter string
	var namespaces []string
	var verbosity int
	fs := pflag.NewFlagSet("agent", pflag.ExitOnError)
	fs.StringSliceVar(&namespaces, "namespace", nil, "Namespaces to watch for Topologies, comma-separated or repeated; all namespaces when empty.")
	fs.StringVar(&watchFilter, "watch-filter", "", "Reconcile only Topologies and TopologyRollouts labelled "+shard.WatchLabel+" with this value, as Cluster API's managers do; all when empty.")
	fs.BoolVar(&opts.Webhooks, "webhooks", opts.Webhooks, "Register and serve the admission webhooks, which admit for every shard; false when another agent of a sharded management cluster serves them.")
	fs.StringVar(&opts.AgentNamespace, "agent-namespace", opts.AgentNamespace, "Namespace the agent runs in and keeps its certificate Secret in (default from POD_NAMESPACE).")
	fs.BoolVar(&opts.LeaderElect, "leader-elect", false, "Enable leader election, for running more than one replica.")
	fs.DurationVar(&opts.LeaseDuration, "leader-elect-lease-duration", opts.LeaseDuration, "How long a standby waits, after the leader's last renewal, before it takes the lead (a leader that dies without releasing its Lease is replaced after this).")
	fs.DurationVar(&opts.RenewDeadline, "leader-elect-renew-deadline", opts.RenewDeadline, "How long the leader keeps retrying to renew its Lease before it gives up leading.")
	fs.DurationVar(&opts.RetryPeriod, "leader-elect-retry-period", opts.RetryPeriod, "How often replicas try to take or renew the Lease.")
	fs.StringVar(&opts.MetricsBindAddress, "metrics-bind-address", opts.MetricsBindAddress, "Address the metrics endpoint binds to; \"0\" disables it.")
	fs.StringVar(&opts.HealthProbeBindAddress, "health-probe-bind-address", opts.HealthProbeBindAddress, "Address the /healthz and /readyz endpoints bind to.")
	fs.StringVar(&opts.PprofBindAddress, "pprof-bind-address", "", "Address Go's profiles (/debug/pprof/) are served on, e.g. 127.0.0.1:6060, for measuring the agent; empty serves none. Never expose it beyond the host.")
	fs.IntVar(&opts.WebhookPort, "webhook-port", opts.WebhookPort, "Port the admission webhooks are served on.")
	fs.StringVar(&opts.CertDir, "webhook-cert-dir", opts.CertDir, "Directory the serving certificate is written to.")
	fs.IntVar(&opts.Concurrency, "concurrency", opts.Concurrency, "Number of Topologies reconciled at once.")
	fs.Float32Var(&opts.QPS, "kube-api-qps", opts.QPS, "Maximum queries per second to the API server.")
	fs.IntVar(&opts.Burst, "kube-api-burst", opts.Burst, "Maximum burst of queries to the API server.")
	fs.DurationVar(&opts.HealthCheckInterval, "api-server-check-interval", opts.HealthCheckInterval, "How often readiness checks that the API server answers; liveness fails after six intervals of an untrusted API server certificate.")
	fs.StringVar(&opts.ExtensionProxy, "extension-proxy", "", "HTTP proxy for calls to Runtime SDK extensions; by default they are called directly, whatever HTTPS_PROXY says.")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig to use out of cluster; in-cluster config or $KUBECONFIG otherwise.")
	fs.BoolVar(&opts.Local, "local", false, "Run out of cluster: serve webhooks on 127.0.0.1 and register them by URL.")
	fs.BoolVar(&opts.MetricsSecure, "metrics-secure", opts.MetricsSecure, "Serve metrics over HTTPS to authenticated and authorized clients only (a TokenReview and SubjectAccessReview per request); false serves plain HTTP.")
	fs.IntVarP(&verbosity, "v", "v", 0, "Log verbosity: 0 info, higher for debug.")
	_ = fs.Parse(os.Args[1:])
	// clusterctl hands the components' ${TOPOLOGY_WATCH_NAMESPACE:=""} over
	// literally; shard.New reads --namespace="" as every namespace.
	opts.Shard = shard.New(namespaces, watchFilter)

	ctrl.SetLogger(zap.New(zap.Level(zapcore.Level(-verbosity))))
	log := ctrl.Log.WithName("agent")
	log.Info("starting", "version", version.Get(), "gcPercent", gc, "memoryLimit", memoryLimitText(memLimit))
	if memLimitErr != nil {
		log.Error(memLimitErr, "ignoring the container's memory limit")
	}
	if opts.Local {
		// Several local replicas share the host's name: the process tells them apart.
		opts.Identity = localagent.Identity(os.Getpid())
		// Out of cluster, nothing outside this machine should reach the
		// probes or metrics, and the serving key must not sit at a path
		// anyone can predict.
		for flag, addr := range map[string]*string{"metrics-bind-address": &opts.MetricsBindAddress, "health-probe-bind-address": &opts.HealthProbeBindAddress} {
			if !fs.Changed(flag) {
				*addr = loopback(*addr)
			}
		}
		if !fs.Changed("webhook-cert-dir") {
			dir, err := os.MkdirTemp("", "kubectl-topology-agent-")
			if err != nil {
				fmt.Fprintln(os.Stderr, "error:", err)
				os.Exit(1)
			}
			defer os.RemoveAll(dir)
			opts.CertDir = dir
		}
	}
	if err := run(kubeconfig, opts); err != nil {
		log.Error(err, "agent stopped")
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1) //nolint:gocritic // the deferred removal of a temporary directory does not matter here
	}
}

func run(kubeconfig string, opts agent.Options) error {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	// Every write counted by verb and resource: what a reconcile costs, and
	// what a resync that should be quiet still writes, named in the metrics
	// (and, at -v=4, each one logged).
	writes, err := apiwrites.New(ctrlmetrics.Registry, ctrl.Log.WithName("writes"))
	if err != nil {
		return fmt.Errorf("registering the API writes counter: %w", err)
	}
	cfg.Wrap(writes.Wrap)
	ctx := ctrl.SetupSignalHandler()
	a, err := agent.New(ctx, cfg, opts)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

// memoryLimitText is the runtime's memory limit for the start-up log.
func memoryLimitText(limit int64) string {
	if limit == math.MaxInt64 {
		return "none"
	}
	return fmt.Sprintf("%dMiB", limit>>20)
}

// loopback turns ":8443" into "127.0.0.1:8443"; "0" (disabled) and addresses
// with a host stay as they are.
func loopback(addr string) string {
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}
