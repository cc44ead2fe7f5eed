// Package capi drives the real plugin and agent binaries against a local
// control plane where Cluster API v1.14's own managers (core, kubeadm
// bootstrap and control plane, the Docker provider's in-memory backend) act
// on what the agent writes: machines are created, upgraded, scaled and
// deleted by upstream's controllers, and every assertion reads their objects.
package capi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubectl-topology/kubectl-topology/pkg/agent"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
	"github.com/kubectl-topology/kubectl-topology/pkg/localcluster"
	"github.com/kubectl-topology/kubectl-topology/pkg/process"
	"github.com/kubectl-topology/kubectl-topology/test/fixture"
)

var (
	kubeconfig string
	k8s        client.Client
	pluginBin  string
	// agentState is the state directory of the agent `install --local` runs.
	agentState string
	// kubectlBin is kubectl, built with the control plane's binaries.
	kubectlBin string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	ctrllog.SetLogger(logr.Discard())
	bins, tmp, remove, err := fixture.SuiteBinaries("capi")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer remove()
	pluginBin = bins.Plugin
	// The core manager runs with ClusterTopology on, so that upstream's own
	// topology controller is there to compare with (TestParityWithUpstream);
	// it acts only on Clusters with spec.topology, which the agent never writes.
	c, err := localcluster.StartWithProvidersForTests(ctx, true)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = c.Cleanup() }()
	kubeconfig = c.Kubeconfig
	kubectlBin = c.Binary("kubectl")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg.QPS, cfg.Burst = 100, 200
	if k8s, err = client.New(cfg, client.Options{Scheme: agent.Scheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	agentState = filepath.Join(tmp, "agent")
	if out, errOut, err := plugin("", "install", "--local", "--state-dir", agentState); err != nil {
		fmt.Fprintf(os.Stderr, "install --local: %v\n%s%s", err, out, errOut)
		return 1
	}
	defer func() { _ = process.Stop(filepath.Join(agentState, "agent.pid")) }()
	code := m.Run()
	if code != 0 {
		// What Cluster API's managers said is where a failure here is explained.
		for _, name := range []string{"capi-core", "capi-kubeadm-control-plane", "capi-docker"} {
			fmt.Fprintf(os.Stderr, "--- last lines of %s's log:\n%s\n", name, tail(filepath.Join(c.LogDir(), name+".log"), 20))
		}
		fmt.Fprintf(os.Stderr, "--- last lines of the agent's log:\n%s\n", tail(filepath.Join(agentState, "agent.log"), 30))
	}
	return code
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// agentLogLines are the lines of the agent's log that contain s.
func agentLogLines(s string) []string {
	data, _ := os.ReadFile(filepath.Join(agentState, "agent.log"))
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// plugin runs the built kubectl-topology binary as a user would.
func plugin(stdin string, args ...string) (string, string, error) {
	return fixture.RunPlugin(pluginBin, kubeconfig, stdin, args...)
}

// mustPlugin runs the plugin and fails the test when it fails.
func mustPlugin(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := plugin("", args...)
	if err != nil {
		t.Fatalf("kubectl topology %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// settle follows the rollout with `status --watch` until every part is
// ready and up to date, as an on-call engineer would.
func settle(t *testing.T, ns, name string, timeout time.Duration) string {
	t.Helper()
	return mustPlugin(t, "status", name, "-n", ns, "--watch", "--interval", "1s", "--timeout", timeout.String())
}

// eventually polls cond every half second until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil && ctx.Err() == nil {
			last = err
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %s waiting until %s (last: %v)", timeout, what, last)
	}
}

// inMemoryCluster creates examples/in-memory in a new namespace, the
// Topology changed by shape and the class by adjust, and returns the
// namespace. The Topology is deleted when the test ends.
func inMemoryCluster(t *testing.T, prefix string, shape func(*v1alpha2.Topology), adjust ...func(*fixture.Example)) string {
	t.Helper()
	ctx := context.Background()
	ex, err := fixture.ClassInNewNamespace(ctx, k8s, "in-memory", prefix, adjust...)
	if err != nil {
		t.Fatal(err)
	}
	topo := ex.Topology.DeepCopy()
	if shape != nil {
		shape(topo)
	}
	if err := k8s.Create(ctx, topo); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, topo.DeepCopy())
		eventually(t, 2*time.Minute, "the Topology is deleted", func(ctx context.Context) (bool, error) {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(topo), &v1alpha2.Topology{})
			return apierrors.IsNotFound(err), err
		})
	})
	return topo.Namespace
}

// changeTopology applies change to Topology dev, again on conflicts.
func changeTopology(t *testing.T, ns string, change func(*v1alpha2.Topology)) {
	t.Helper()
	if err := fixture.ChangeTopology(context.Background(), k8s, client.ObjectKey{Namespace: ns, Name: "dev"}, change); err != nil {
		t.Fatalf("changing Topology %s/dev: %v", ns, err)
	}
}

// machine is what the tests read of a Cluster API Machine, in the storage
// version (v1beta2), as upstream's controllers wrote it.
type machine struct {
	name, version, pool, phase string
	controlPlane               bool
	created                    time.Time
	infrastructure             string
}

func list(ctx context.Context, ns, kind string) ([]unstructured.Unstructured, error) {
	group := map[string]string{
		"Machine": "cluster.x-k8s.io", "MachineSet": "cluster.x-k8s.io", "MachineDeployment": "cluster.x-k8s.io", "Cluster": "cluster.x-k8s.io", "MachineHealthCheck": "cluster.x-k8s.io",
		"KubeadmControlPlane": "controlplane.cluster.x-k8s.io",
		"DevMachine":          "infrastructure.cluster.x-k8s.io", "DevMachineTemplate": "infrastructure.cluster.x-k8s.io", "DevCluster": "infrastructure.cluster.x-k8s.io",
		"KubeadmConfigTemplate": "bootstrap.cluster.x-k8s.io", "KubeadmConfig": "bootstrap.cluster.x-k8s.io",
	}[kind]
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1beta2", Kind: kind + "List"})
	if err := k8s.List(ctx, l, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	return l.Items, nil
}

func machines(ctx context.Context, ns string) ([]machine, error) {
	items, err := list(ctx, ns, "Machine")
	if err != nil {
		return nil, err
	}
	var out []machine
	for _, m := range items {
		version, _, _ := unstructured.NestedString(m.Object, "spec", "version")
		phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
		infra, _, _ := unstructured.NestedString(m.Object, "spec", "infrastructureRef", "name")
		_, cp := m.GetLabels()["cluster.x-k8s.io/control-plane"]
		out = append(out, machine{
			name: m.GetName(), version: version, phase: phase, controlPlane: cp, infrastructure: infra,
			pool:    m.GetLabels()["topology.cluster.x-k8s.io/deployment-name"],
			created: m.GetCreationTimestamp().Time,
		})
	}
	return out, nil
}

// count says how many machines of part (control plane: "") are running at
// version.
func count(ms []machine, part, version string) (running, all int) {
	for _, m := range ms {
		if (part == "" && m.controlPlane) || (part != "" && m.pool == part) {
			all++
			if m.version == version && m.phase == "Running" {
				running++
			}
		}
	}
	return running, all
}
