package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/internal/process"
)

// TestProviderThatFailsToStart: when a Cluster API manager cannot start,
// Start says which one with its last log lines, and leaves nothing running.
func TestProviderThatFailsToStart(t *testing.T) {
	needBinaries(t)
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

// TestProvidersStockUnlessComparing: every environment but the upstream side
// of a comparison runs the providers as clusterctl init installs them, no
// feature gate changed; the upstream side turns ClusterTopology on in each,
// since its webhooks refuse a ClusterClass's template kinds otherwise, and
// RuntimeSDK in core, whose topology controller then calls the hooks.
func TestProvidersStockUnlessComparing(t *testing.T) {
	stock := ClusterAPIProviders(false)
	if ok, gate := Stock(stock); !ok {
		t.Errorf("the stock providers change a gate: %s", gate)
	}
	upstream := ClusterAPIProviders(true)
	if ok, _ := Stock(upstream); ok {
		t.Error("the upstream side's providers run with no gate, so upstream's topology controller is off")
	}
	for i, p := range upstream {
		want := []string{"--feature-gates=ClusterTopology=true"}
		if p.Name == CoreProviderName {
			// Core's topology controller calls the lifecycle hooks with RuntimeSDK on.
			want = []string{"--feature-gates=ClusterTopology=true,RuntimeSDK=true"}
		}
		if !slices.Equal(p.Args, want) {
			t.Errorf("%s runs with %v on the upstream side, want %v and nothing else", p.Name, p.Args, want)
		}
		if p.Name != stock[i].Name || len(stock[i].Args) != 0 {
			t.Errorf("stock %s runs with %v, want no flag beyond the defaults", stock[i].Name, stock[i].Args)
		}
	}
}

// TestSuitesWithProvidersTakeTurns: the lock of the providers' fixed ports
// is held by one suite at a time (flock is per open file, so a second open
// here is another suite), and the next one gets it once released.
func TestSuitesWithProvidersTakeTurns(t *testing.T) {
	first, err := lockFixedPorts()
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.OpenFile(first.Name(), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("another suite could lock while the first held it: %v", err)
	}
	unlock(first)
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("another suite could not lock once the first released it: %v", err)
	}
}

// TestOnlyTheUpstreamSideTurnsTheGateOn: the code that starts providers with
// ClusterTopology (or RuntimeSDK) on is the upstream side of a comparison and nothing else —
// test/upstream and hack/paritylive; test/scale and hack/localcluster choose
// by a side or a flag whose default is stock.
func TestOnlyTheUpstreamSideTurnsTheGateOn(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"test/upstream/suite_test.go": true, "hack/paritylive/main.go": true}
	gateOn := []string{"TopologyGate: true", "ClusterAPIProviders(true)", "StartWithProvidersForTests(ctx, true)", "ClusterTopology=true", "RuntimeSDK=true"}
	var found []string
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || rel == "internal/harness/localcluster/providers_test.go" || rel == "internal/harness/localcluster/providers.go" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range gateOn {
			if strings.Contains(string(data), s) && !allowed[rel] {
				found = append(found, rel+": "+s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("the gate is turned on outside the upstream side of a comparison:\n%s", strings.Join(found, "\n"))
	}
	for rel := range allowed {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil || !slices.ContainsFunc(gateOn, func(s string) bool { return strings.Contains(string(data), s) }) {
			t.Errorf("%s no longer turns the gate on (%v): update this test's list", rel, err)
		}
	}
}

// needBinaries skips a test that starts the control plane where plain
// `go test ./...` runs without its binaries, saying why; `make test` has them.
func needBinaries(t *testing.T) {
	t.Helper()
	if reason := MissingForTests(false); reason != "" {
		t.Skip(reason)
	}
}
