// Command localcluster starts and stops the local control plane that
// `make local-up` and `make local-down` manage: etcd, kube-apiserver and
// kube-controller-manager from bin/, with the Cluster API CRDs and ours.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/localcluster"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("localcluster", flag.ExitOnError)
	dir := fs.String("dir", ".local", "directory for data, logs and the kubeconfig")
	binDir := fs.String("bin-dir", "bin", "directory holding etcd, kube-apiserver and kube-controller-manager")
	crdDir := fs.String("crd-dir", "manifests/crd", "directory of kubectl-topology's own CRDs")
	apiPort := fs.Int("apiserver-port", 16443, "kube-apiserver port on 127.0.0.1")
	etcdPort := fs.Int("etcd-port", 12379, "etcd client port on 127.0.0.1")
	peerPort := fs.Int("etcd-peer-port", 12380, "etcd peer port on 127.0.0.1")
	kcmPort := fs.Int("controller-manager-port", 10357, "kube-controller-manager port on 127.0.0.1")
	providers := fs.Bool("providers", true, "run Cluster API "+localcluster.ProvidersVersion+"'s managers (core, kubeadm, the Docker provider with its in-memory backend) with their CRDs; false installs Cluster API "+localcluster.ClusterAPIVersion+"'s CRDs and runs no provider")
	clusterTopology := fs.Bool("cluster-topology", false, "turn on every provider's ClusterTopology feature gate (upstream's own topology controller, for comparisons); off, they run stock, as clusterctl init installs them")
	purge := fs.Bool("purge", false, "down only: also remove the data (etcd, certificates, the agent's state), keeping the logs, so the next up starts empty")
	var files []string
	fs.Func("f", "YAML file or directory to apply (apply only; repeatable)", func(v string) error { files = append(files, v); return nil })
	if len(os.Args) < 2 {
		return errors.New("usage: localcluster up|down|status|reachable|apply|delete|delete-topologies [flags]")
	}
	verb := os.Args[1]
	if err := fs.Parse(os.Args[2:]); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch verb {
	case "up":
		if up, kubeconfig := localcluster.Running(ctx, *dir); up {
			fmt.Printf("local control plane already running; export KUBECONFIG=%s\n", kubeconfig)
			return nil
		}
		// Leftovers of a crashed run would hold the ports.
		if err := localcluster.StopDir(*dir); err != nil {
			return err
		}
		opts := localcluster.Options{
			Dir: *dir, BinDir: *binDir,
			APIServerPort: *apiPort, EtcdPort: *etcdPort, EtcdPeerPort: *peerPort, ControllerManagerPort: *kcmPort,
			CRDDirs: []string{*crdDir},
		}
		what := "Cluster API " + localcluster.ProvidersVersion + " running"
		if *providers {
			opts.Providers = localcluster.ClusterAPIProviders(*clusterTopology)
			if stock, gate := localcluster.Stock(opts.Providers); stock {
				what += ", stock: every feature gate at its default, as clusterctl init installs them"
			} else {
				what += ", with " + gate + " for upstream's side of a comparison"
			}
		} else {
			dirs, err := localcluster.ClusterAPICRDDirs(ctx)
			if err != nil {
				return err
			}
			opts.CRDDirs = append(dirs, *crdDir)
			what = "Cluster API " + localcluster.ClusterAPIVersion + " CRDs installed, no provider"
		}
		c, err := localcluster.Start(ctx, opts)
		if err != nil {
			return err
		}
		fmt.Printf("local control plane up (%s); logs in %s; export KUBECONFIG=%s\n", what, filepath.Join(*dir, "logs"), c.Kubeconfig)
		return nil
	case "down":
		if *purge {
			if err := localcluster.Purge(*dir); err != nil {
				return err
			}
			fmt.Println("local control plane stopped and its data removed; its logs stay in", filepath.Join(*dir, "logs"))
			return nil
		}
		if err := localcluster.StopDir(*dir); err != nil {
			return err
		}
		fmt.Println("local control plane stopped; its data stays in", *dir)
		return nil
	case "reachable":
		// Whether the API server answers, whatever else runs: what deleting
		// the demo's objects needs, where status needs every component.
		if !localcluster.Reachable(ctx, *dir) {
			fmt.Println("the local API server does not answer")
			os.Exit(3)
		}
		fmt.Println("the local API server answers")
		return nil
	case "status":
		up, kubeconfig := localcluster.Running(ctx, *dir)
		if !up {
			fmt.Println("local control plane is not running; start it with `make local-up`")
			os.Exit(3)
		}
		fmt.Println("local control plane is running; KUBECONFIG=" + kubeconfig)
		return nil
	case "apply":
		up, kubeconfig := localcluster.Running(ctx, *dir)
		if !up {
			return errors.New("local control plane is not running; start it with `make local-up`")
		}
		return apply(ctx, kubeconfig, files)
	case "delete":
		// Deleting needs the API server only: a component restarted by hand
		// (no longer the process its pid file records) must not stop it.
		if !localcluster.Reachable(ctx, *dir) {
			return errors.New("the local API server does not answer")
		}
		return remove(ctx, filepath.Join(*dir, "kubeconfig"), files)
	case "delete-topologies":
		if !localcluster.Reachable(ctx, *dir) {
			return errors.New("the local API server does not answer")
		}
		return removeTopologies(ctx, filepath.Join(*dir, "kubeconfig"))
	}
	return fmt.Errorf("unknown command %q: use up, down, status, reachable, apply, delete or delete-topologies", verb)
}
