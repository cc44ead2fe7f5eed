// Package stock drives the real plugin and agent binaries against a local
// control plane whose Cluster API managers run stock, exactly as
// `clusterctl init` installs them: every feature gate at its default, so
// ClusterTopology is off, upstream's topology controller does not run and the
// providers refuse the template kinds only a ClusterClass uses. This is the
// management cluster the product is for.
package stock

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubectl-topology/kubectl-topology/pkg/agent"
	"github.com/kubectl-topology/kubectl-topology/pkg/localcluster"
	"github.com/kubectl-topology/kubectl-topology/pkg/process"
	"github.com/kubectl-topology/kubectl-topology/test/fixture"
)

// env is the stock management cluster the tests share.
var env struct {
	kubeconfig, plugin, kubectl, agentLog string
	k8s                                   client.Client
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrllog.SetLogger(logr.Discard()) // the client's warnings are not the test's
	bins, tmp, remove, err := fixture.SuiteBinaries("stock")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer remove()
	c, err := localcluster.StartWithProvidersForTests(context.Background(), false)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = c.Cleanup() }()
	env.kubeconfig, env.plugin, env.kubectl = c.Kubeconfig, bins.Plugin, c.Binary("kubectl")
	cfg, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err == nil {
		env.k8s, err = client.New(cfg, client.Options{Scheme: agent.Scheme()})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	state := filepath.Join(tmp, "agent")
	env.agentLog = filepath.Join(state, "agent.log")
	if out, errOut, err := fixture.RunPlugin(env.plugin, env.kubeconfig, "", "install", "--local", "--state-dir", state); err != nil {
		fmt.Fprintf(os.Stderr, "install --local: %v\n%s%s", err, out, errOut)
		return 1
	}
	defer func() { _ = process.Stop(filepath.Join(state, "agent.pid")) }()
	code := m.Run()
	if code != 0 {
		for _, name := range []string{"capi-core", "capi-kubeadm-control-plane", "capi-docker"} {
			fmt.Fprintf(os.Stderr, "--- %s's log:\n%s\n", name, lastLines(filepath.Join(c.LogDir(), name+".log")))
		}
		fmt.Fprintf(os.Stderr, "--- the agent's log:\n%s\n", lastLines(env.agentLog))
	}
	return code
}

// lastLines are the last 20 lines of a log, where a failure is explained.
func lastLines(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// topology runs the built plugin as a user would; a failure fails the test.
func topology(t *testing.T, args ...string) (string, string) {
	t.Helper()
	out, errOut, err := fixture.RunPlugin(env.plugin, env.kubeconfig, "", args...)
	if err != nil {
		t.Fatalf("kubectl topology %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out, errOut
}

// waitFor polls cond every half second until it holds, or fails the test
// after timeout with the last error cond saw.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			last = err
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waited %s for %s (last error: %v)", timeout, what, last)
	}
}

// objects lists a Cluster API kind (v1beta2) in ns.
func objects(ctx context.Context, group, kind, ns string) ([]unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1beta2", Kind: kind + "List"})
	err := env.k8s.List(ctx, l, client.InNamespace(ns))
	return l.Items, err
}
