package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// SuiteGOGC is the test suites' Options.GOGC.
const SuiteGOGC = 200

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

// MissingForTests says why a suite's control plane cannot start under plain
// `go test`: a binary missing from bin/, with providers Cluster API's
// managers too. It is "" when all are there, and always under `make test`
// (BinDirEnv set), where a missing binary fails the suite instead.
func MissingForTests(providers bool) string {
	if os.Getenv(BinDirEnv) != "" {
		return ""
	}
	root, err := ModuleRoot()
	if err != nil {
		return err.Error()
	}
	bin := filepath.Join(root, "bin")
	names := []string{Etcd, APIServer, ControllerManager}
	if providers {
		for _, p := range ClusterAPIProviders(false) {
			names = append(names, p.Name)
		}
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(bin, n)); err != nil {
			return fmt.Sprintf("%s is not in %s (`make control-plane-bins capi-bins` builds it; `make test` runs this suite)", n, bin)
		}
	}
	return ""
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
	// Suites with providers take turns: the in-memory backend's port is
	// fixed, so two at once would refuse each other; one in a network
	// namespace of its own has its own.
	var lock *os.File
	if needsFixedPorts(providers) && !InOwnNetwork() {
		if lock, err = lockFixedPorts(); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "kubectl-topology-local-")
	if err != nil {
		unlock(lock)
		return nil, err
	}
	c, err := Start(ctx, Options{Dir: dir, BinDir: bin, CRDDirs: crdDirs, Providers: providers, GOGC: SuiteGOGC})
	if err != nil {
		_ = os.RemoveAll(dir)
		unlock(lock)
		return nil, fmt.Errorf("starting the local control plane (binaries from %s; `make control-plane-bins capi-bins` builds them): %w", bin, err)
	}
	c.lock = lock
	stock, gate := Stock(providers)
	switch {
	case len(providers) == 0:
	case stock:
		fmt.Fprintf(os.Stderr, "local control plane: Cluster API %s providers stock (every feature gate at its default, as clusterctl init installs them)\n", ProvidersVersion)
	default:
		fmt.Fprintf(os.Stderr, "local control plane: Cluster API %s providers with a gate turned on for upstream's side (%s)\n", ProvidersVersion, gate)
	}
	return c, nil
}

// needsFixedPorts tells whether any provider listens on a port no flag moves.
func needsFixedPorts(providers []Provider) bool {
	for _, p := range providers {
		if len(p.FixedPorts) > 0 {
			return true
		}
	}
	return false
}

// HoldFixedPorts waits until no test suite or tool runs providers with
// fixed ports on this machine, and holds the lock until release: for a
// long-running tool that starts providers, so that it takes its turn.
func HoldFixedPorts() (release func(), err error) {
	f, err := lockFixedPorts()
	if err != nil {
		return nil, err
	}
	return func() { unlock(f) }, nil
}

// lockFixedPorts waits for the machine-wide lock of the providers' fixed
// ports, held until Cleanup (or until this process ends).
func lockFixedPorts() (*os.File, error) {
	path := filepath.Join(os.TempDir(), "kubectl-topology-fixed-ports.lock")
	return LockFile(path, "local control plane: waiting for another test suite's providers to stop")
}

// LockFile takes the machine-wide lock of the file at path, made if
// missing, waiting while another process holds it; closing the file
// releases it. When it has to wait it says so on stderr, with waiting,
// unless waiting is empty.
func LockFile(path, waiting string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if waiting != "" {
			fmt.Fprintf(os.Stderr, "%s (%s)\n", waiting, path)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
	}
	return f, nil
}

func unlock(f *os.File) {
	if f != nil {
		_ = f.Close() // closing releases the flock
	}
}

// Cleanup stops the control plane, removes its directory and lets the next
// suite with providers start.
func (c *Cluster) Cleanup() error {
	err := c.Stop()
	if rmErr := os.RemoveAll(c.opts.Dir); err == nil {
		err = rmErr
	}
	unlock(c.lock)
	c.lock = nil
	return err
}
