package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// BinDirEnv names the directory of the control-plane binaries for tests;
// `make test` sets it. Without it, bin/ at the module root is used.
const BinDirEnv = "TOPOLOGY_BIN_DIR"

// ModuleRoot finds the directory of the main module's go.mod, walking up from
// the working directory (a test runs in its package's directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// StartForTests starts a bare control plane in a temporary directory with
// Cluster API ClusterAPIVersion's CRDs and kubectl-topology's own, and no
// provider, for a test suite's TestMain.
func StartForTests(ctx context.Context) (*Cluster, error) {
	return startForTests(ctx, nil)
}

// StartWithProvidersForTests starts a control plane in a temporary directory
// with Cluster API ProvidersVersion's managers running (see
// ClusterAPIProviders) and kubectl-topology's CRDs, for a test suite's TestMain.
func StartWithProvidersForTests(ctx context.Context, topologyGate bool) (*Cluster, error) {
	return startForTests(ctx, ClusterAPIProviders(topologyGate))
}

func startForTests(ctx context.Context, providers []Provider) (*Cluster, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	bin := os.Getenv(BinDirEnv)
	switch {
	case bin == "":
		bin = filepath.Join(root, "bin")
	case !filepath.IsAbs(bin):
		bin = filepath.Join(root, bin) // relative to the module, not to the package under test
	}
	crdDirs := []string{filepath.Join(root, "manifests", "crd")}
	if len(providers) == 0 {
		dirs, err := ClusterAPICRDDirs(ctx)
		if err != nil {
			return nil, err
		}
		crdDirs = append(dirs, crdDirs...)
	}
	dir, err := os.MkdirTemp("", "kubectl-topology-local-")
	if err != nil {
		return nil, err
	}
	c, err := Start(ctx, Options{Dir: dir, BinDir: bin, CRDDirs: crdDirs, Providers: providers})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting the local control plane (binaries from %s; `make control-plane-bins capi-bins` builds them): %w", bin, err)
	}
	return c, nil
}

// Cleanup stops the control plane and removes its directory.
func (c *Cluster) Cleanup() error {
	err := c.Stop()
	if rmErr := os.RemoveAll(c.opts.Dir); err == nil {
		err = rmErr
	}
	return err
}
