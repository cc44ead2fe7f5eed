package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/pkg/process"
)

// TestProviderThatFailsToStart: when a Cluster API manager cannot start,
// Start says which one with its last log lines, and leaves nothing running.
func TestProviderThatFailsToStart(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	realBins := os.Getenv(BinDirEnv)
	if realBins == "" {
		realBins = filepath.Join(root, "bin")
	}
	bin := t.TempDir()
	for _, name := range []string{Etcd, APIServer, ControllerManager} {
		if err := os.Symlink(filepath.Join(realBins, name), filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\necho 'unable to start manager: the webhook port is taken' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "capi-broken"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, err = Start(context.Background(), Options{Dir: dir, BinDir: bin, Providers: []Provider{
		{Name: "capi-broken", Label: "cluster-api", Module: "sigs.k8s.io/cluster-api", Path: "core"},
	}})
	if err == nil {
		_ = StopDir(dir)
		t.Fatal("Start succeeded with a provider that exits at once")
	}
	for _, want := range []string{"capi-broken exited while starting", "the webhook port is taken"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	for _, name := range processNames(dir) {
		if pid, up := process.Running(filepath.Join(dir, name+".pid")); up {
			t.Errorf("%s (pid %d) still runs after the failed start", name, pid)
		}
	}
}
