package localcluster

import (
	"context"
	"fmt"
	"net"
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

// TestProviderPortTaken: a port a provider cannot be told to move off is
// checked before anything starts, and the error says what probably holds it.
func TestProviderPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	dir, bin := t.TempDir(), t.TempDir()
	for _, name := range []string{Etcd, APIServer, ControllerManager, "capi-docker"} {
		if err := os.WriteFile(filepath.Join(bin, name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, err = Start(context.Background(), Options{Dir: dir, BinDir: bin, Providers: []Provider{{Name: "capi-docker", FixedPorts: []int{port}}}})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("port %d, which capi-docker always listens on", port)) || !strings.Contains(err.Error(), "another local control plane") {
		t.Errorf("Start with a provider's fixed port taken: %v", err)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*.pid")); len(names) > 0 {
		t.Errorf("pid files left: %v", names)
	}
}
