// Command benchscale measures the agent side by side with upstream's
// topology controller (Cluster API's core manager with ClusterTopology on)
// at each N, on a fresh local control plane per side, and prints a table
// per N. `make bench-scale` runs it; see package test/scale.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubectl-topology/kubectl-topology/test/scale"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run() error {
	opts := scale.Options{Log: os.Stderr}
	var ns, kubeconfig, sides string
	flag.StringVar(&opts.BinDir, "bin-dir", "bin", "directory holding the control plane's, Cluster API's and kubectl-topology's binaries")
	flag.StringVar(&opts.Dir, "dir", ".local-bench", "directory for each side's control plane")
	flag.StringVar(&opts.CRDDir, "crd-dir", "manifests/crd", "directory of kubectl-topology's own CRDs")
	flag.StringVar(&opts.Case, "case", "testdata/parity/in-memory", "directory of upstream YAML (ClusterClass, templates, one Cluster) stamped N times")
	flag.IntVar(&opts.Replicas, "replicas", 1, "replicas of the control plane and of each pool in every cluster; -1 keeps the case's")
	flag.StringVar(&ns, "n", "100,1000", "comma-separated numbers of clusters")
	flag.DurationVar(&opts.Timeout, "timeout", 30*time.Minute, "bound on each wait (all reconciled, idle, resynced)")
	flag.StringVar(&kubeconfig, "kubeconfig", "", "measure on this control plane instead of fresh local ones: the agent and/or Cluster API's core manager with ClusterTopology on must run there; only the client's figures are measured")
	flag.BoolVar(&opts.IdleProviders, "idle-providers", false, "keep the bootstrap, control plane and infrastructure providers off the clusters (they serve webhooks and conversions only), so only the topology controllers and Cluster API's core act: for N where machines would take hours")
	flag.StringVar(&sides, "sides", "ours,upstream", "which sides to measure: ours, upstream or both")
	flag.Parse()
	want := map[string]bool{}
	for _, side := range strings.Split(sides, ",") {
		side = strings.TrimSpace(side)
		if side != scale.Ours && side != scale.Upstream {
			return fmt.Errorf("-sides %q: %q is neither %s nor %s", sides, side, scale.Ours, scale.Upstream)
		}
		want[side] = true
	}
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
