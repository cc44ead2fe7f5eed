// Command benchscale measures the agent side by side with upstream's
// topology controller (Cluster API's core manager with ClusterTopology on)
// at each N, on a fresh local control plane per side, and prints a table
// per N. `make bench-scale` runs it; see package test/scale.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/scale"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// flags is the command line, parsed.
type flags struct {
	opts                  scale.Options
	ns, kubeconfig, sides string
	want                  map[string]bool
}

// parseFlags reads args into a FlagSet of its own: the global one already
// holds controller-runtime's -kubeconfig, which this command's own would
// redefine (a panic at start).
func parseFlags(args []string) (flags, error) {
	f := flags{opts: scale.Options{Log: os.Stderr}, want: map[string]bool{}}
	opts, fs := &f.opts, flag.NewFlagSet("benchscale", flag.ContinueOnError)
	ns, kubeconfig, sides := &f.ns, &f.kubeconfig, &f.sides
	fs.StringVar(&opts.BinDir, "bin-dir", "bin", "directory holding the control plane's, Cluster API's and kubectl-topology's binaries")
	fs.StringVar(&opts.Dir, "dir", ".local-bench", "directory for each side's control plane")
	fs.StringVar(&opts.CRDDir, "crd-dir", "manifests/crd", "directory of kubectl-topology's own CRDs")
	fs.StringVar(&opts.Case, "case", "testdata/parity/in-memory", "directory of upstream YAML (ClusterClass, templates, one Cluster) stamped N times")
	fs.IntVar(&opts.Replicas, "replicas", 1, "replicas of the control plane and of each pool in every cluster; -1 keeps the case's")
	fs.StringVar(ns, "n", "100,1000", "comma-separated numbers of clusters")
	fs.DurationVar(&opts.Timeout, "timeout", 30*time.Minute, "bound on each wait (all reconciled, idle, resynced)")
	fs.StringVar(kubeconfig, "kubeconfig", "", "measure on this control plane instead of fresh local ones: the agent and/or Cluster API's core manager with ClusterTopology on must run there; only the client's figures are measured")
	fs.BoolVar(&opts.IdleProviders, "idle-providers", false, "keep the bootstrap, control plane and infrastructure providers off the clusters (they serve webhooks and conversions only), so only the topology controllers and Cluster API's core act: for N where machines would take hours")
	fs.StringVar(sides, "sides", "ours,upstream", "which sides to measure: ours, upstream or both")
	var agentFlags string
	fs.StringVar(&agentFlags, "agent-flags", "", "flags added to the agent's command line, space-separated, e.g. \"--concurrency 40\"")
	fs.BoolVar(&opts.Profile, "profile", false, "save Go profiles into each side's directory under -dir: 30 s of the API server's and the agent's CPU from the last create on, the agent's heap once it is idle, and 30 s of its CPU from its restart for the no-op resync")
	fs.StringVar(&opts.RolloutVersion, "rollout", "", "end our side with a TopologyRollout of every cluster to this version (e.g. v1.34.0), measuring its time and API requests per cluster; providers must run")
	fs.IntVar(&opts.RolloutInFlight, "rollout-in-flight", 10, "with -rollout: clusters in flight at once")
	fs.StringVar(&opts.RolloutDryRun, "rollout-dry-run", "", "end our side with a timed `rollout create --dry-run --set NAME=VALUE` over every cluster (e.g. workerStartup=2s): the live dry run, every cluster's preflight and whole-change dry run included")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	opts.AgentFlags = strings.Fields(agentFlags)
	for _, side := range strings.Split(*sides, ",") {
		side = strings.TrimSpace(side)
		if side != scale.Ours && side != scale.Upstream {
			return f, fmt.Errorf("-sides %q: %q is neither %s nor %s", *sides, side, scale.Ours, scale.Upstream)
		}
		f.want[side] = true
	}
	return f, nil
}

func run() error {
	f, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	opts, ns, kubeconfig, want := f.opts, f.ns, f.kubeconfig, f.want
	ctrllog.SetLogger(logr.Discard())
	ctx := context.Background()
	providers := "providers reconciling"
	if opts.IdleProviders {
		providers = "providers idle (webhooks only)"
	}
	fmt.Printf("kubectl-topology agent vs Cluster API v1.14.2's topology controller, case %s, %d replicas per part, %s; %d CPUs, %s at start\n",
		opts.Case, opts.Replicas, providers, runtime.NumCPU(), scale.LoadLine())
	for _, s := range strings.Split(ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return fmt.Errorf("-n %q: %q is not a positive number", ns, s)
		}
		opts.N = n
		measured := map[string]scale.Measurement{}
		for _, side := range []string{scale.Ours, scale.Upstream} {
			if !want[side] {
				continue
			}
			var m scale.Measurement
			var err error
			if kubeconfig != "" {
				m, err = scale.RunAgainst(ctx, opts, side, kubeconfig)
			} else {
				m, err = scale.Run(ctx, opts, side)
			}
			if err != nil {
				return fmt.Errorf("%s at N=%d: %w", side, n, err)
			}
			measured[side] = m
		}
		scale.Table(os.Stdout, opts.Case, measured[scale.Ours], measured[scale.Upstream])
		fmt.Printf("  (%s after both sides)\n", scale.LoadLine())
	}
	return nil
}
