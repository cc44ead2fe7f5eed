//go:build kind

// Package kind drives the kind path end to end: a workload cluster whose
// machines are real containers, made by Cluster API's Docker provider from
// what the agent writes, changed and removed through the plugin binary.
// `make e2e-kind` brings the management cluster up (hack/kind/up.sh), runs
// this and takes everything down again.
package kind

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/apply"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/parity"
)

// The example the test stamps, as a user would from the repository.
const (
	clusterName = "kind-dev"
	namespace   = "default"
	version     = "v1.36.3"
)

var (
	root       = mustAbs("../..")
	bin        = filepath.Join(root, "bin")
	kubeconfig = envOr("KIND_KUBECONFIG", filepath.Join(root, ".kind", "kubeconfig"))
	artifacts  = envOr("ARTIFACTS", filepath.Join(root, ".kind", "artifacts"))
	// upgradeVersion has a node image too: make e2e-kind passes the release
	// hack/kind/kubernetes-next pins.
	upgradeVersion = os.Getenv("KIND_UPGRADE_VERSION")
	// clusterctl and the configuration naming the local repositories
	// hack/kind/up.sh installed from.
	clusterctlBin    = envOr("KIND_CLUSTERCTL", filepath.Join(root, "bin", "clusterctl-v1.13.6"))
	clusterctlConfig = envOr("KIND_CLUSTERCTL_CONFIG", filepath.Join(root, ".kind", "clusterctl.yaml"))
)

func TestMain(m *testing.M) {
	if _, err := os.Stat(kubeconfig); err != nil {
		fmt.Fprintf(os.Stderr, "no kind management cluster at %s: run `make kind-up` first (or `make e2e-kind`, which does)\n", kubeconfig)
		os.Exit(1)
	}
	if upgradeVersion == "" {
		fmt.Fprintln(os.Stderr, "KIND_UPGRADE_VERSION is not set: give the Kubernetes release of the second node image (hack/kind/kubernetes-next)")
		os.Exit(1)
	}
	if os.Getenv("DOCKER_HOST") == "" {
		fmt.Fprintln(os.Stderr, "DOCKER_HOST is not set: point it at the kind path's daemon (`hack/kind/dockerd.sh host`)")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestWorkloadClusterLifecycle stamps the example workload cluster from
// upstream's own quick-start class, as Cluster API's Docker provider publishes
// it, converted by the plugin for this stock management cluster. It checks
// the Nodes and pod traffic on the workload cluster itself, upgrades it,
// scales its pool and deletes it, checking that every container it had is
// gone.
func TestWorkloadClusterLifecycle(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			collectArtifacts(t)
		}
	})
	class := convertQuickStart(t)
	start := time.Now()
	mgmt(t, 2*time.Minute, "apply", "--server-side",
		"-f", filepath.Join(root, "examples/kind/flannel.yaml"),
		"-f", class, "-f", filepath.Join(root, "examples/kind/topology.yaml"))
	t.Cleanup(func() { deleteTopology(t) })

	settle(t, 15*time.Minute)
	t.Logf("settled %s after the apply", time.Since(start).Round(time.Second))
	wl := workloadKubeconfig(t)
	nodes := waitNodes(t, wl, 2, 5*time.Minute)
	for _, n := range nodes {
		if n.Version != version {
			t.Errorf("workload Node %s runs kubelet %s, want %s", n.Name, n.Version, version)
		}
	}
	if got := containers(t); len(got) != 3 {
		t.Errorf("containers of %s: %v, want a load balancer, a control plane machine and a worker", clusterName, got)
	}

	t.Run("pods on different machines reach each other", func(t *testing.T) {
		podsTalkAcrossNodes(t, wl, nodes)
	})

	t.Run("upgrade replaces the control plane, then the pool, the leading agent's Pod deleted midway", func(t *testing.T) {
		mgmt(t, 6*time.Minute, "-n", "topology-system", "rollout", "status", "deployment/topology-controller-manager", "--timeout", "5m")
		if ready := mgmt(t, time.Minute, "-n", "topology-system", "get", "deployment/topology-controller-manager", "-o", "jsonpath={.status.readyReplicas}"); ready != "2" {
			t.Errorf("%s agent replicas ready, want 2", ready)
		}
		begin := time.Now()
		plugin(t, 2*time.Minute, "upgrade", clusterName, "--version", upgradeVersion, "--yes")
		// Once the control plane is rolling, the leader goes: the standby
		// takes over, admits meanwhile and finishes the upgrade.
		fixture.EventuallyEvery(t, 2*time.Second, 10*time.Minute, "the agent starts the control plane's upgrade", func(context.Context) (bool, error) {
			v := mgmt(t, time.Minute, "-n", namespace, "get", "kubeadmcontrolplanes", "-l", "cluster.x-k8s.io/cluster-name="+clusterName, "-o", "jsonpath={.items[0].spec.version}")
			return v == upgradeVersion, fmt.Errorf("the control plane asks for %q", v)
		})
		leader := heartbeatHolder(t)
		mgmt(t, time.Minute, "-n", "topology-system", "delete", "pod", leader, "--wait=false")
		deleted := time.Now()
		mgmt(t, time.Minute, "-n", namespace, "label", "topologies.topology.kubectl-topology.io", clusterName, "ha-check="+strconv.FormatInt(deleted.Unix(), 10), "--overwrite")
		t.Logf("a change admitted %s after the leader's Pod %s was deleted; agent replicas ready then: %s", time.Since(deleted).Round(time.Millisecond), leader,
			mgmt(t, time.Minute, "-n", "topology-system", "get", "deployment/topology-controller-manager", "-o", "jsonpath={.status.readyReplicas}"))
		fixture.EventuallyEvery(t, time.Second, 5*time.Minute, "another agent leads", func(context.Context) (bool, error) {
			h := heartbeatHolder(t)
			return h != "" && h != leader, fmt.Errorf("the heartbeat names %q", h)
		})
		t.Logf("takeover: %s renewed the heartbeat %s after %s's Pod was deleted", heartbeatHolder(t), time.Since(deleted).Round(time.Second), leader)
		settle(t, 20*time.Minute)
		t.Logf("upgrade to %s done %s after it began", upgradeVersion, time.Since(begin).Round(time.Second))
		for _, n := range waitNodes(t, wl, 2, 5*time.Minute) {
			if n.Version != upgradeVersion {
				t.Errorf("after the upgrade workload Node %s runs kubelet %s, want %s", n.Name, n.Version, upgradeVersion)
			}
		}
		cp, pool := machinesAt(t, upgradeVersion)
		if len(cp) != 1 || len(pool) != 1 {
			t.Fatalf("Machines at %s: control plane %v, pool %v, want one each", upgradeVersion, cp, pool)
		}
		if !cp[0].created.Before(pool[0].created) {
			t.Errorf("the pool's Machine %s (created %s) was not made after the control plane's %s (created %s)",
				pool[0].name, pool[0].created, cp[0].name, cp[0].created)
		}
	})

	t.Run("scale adds a worker container", func(t *testing.T) {
		begin := time.Now()
		plugin(t, 2*time.Minute, "scale", clusterName, "--worker", "md-0=2", "--yes")
		settle(t, 10*time.Minute)
		waitNodes(t, wl, 3, 5*time.Minute)
		t.Logf("3 Ready Nodes %s after the scale", time.Since(begin).Round(time.Second))
		if got := containers(t); len(got) != 4 {
			t.Errorf("containers of %s after the scale: %v, want 4", clusterName, got)
		}
	})

	t.Run("clusterctl upgrade apply moves the agent to its next release, which writes nothing", func(t *testing.T) {
		upgradeAgentWithClusterctl(t)
	})

	t.Run("deleting the Topology removes every container", func(t *testing.T) {
		begin := time.Now()
		deleteTopology(t)
		fixture.EventuallyEvery(t, 3*time.Second, 5*time.Minute, "no container of "+clusterName+" is left", func(context.Context) (bool, error) {
			left := containers(t)
			return len(left) == 0, fmt.Errorf("left: %v", left)
		})
		t.Logf("no container left %s after the delete", time.Since(begin).Round(time.Second))
	})
}

// Releases of the agent's clusterctl provider repository that hack/kind/up.sh
// writes: clusterctl init installs the first, the test upgrades to the second.
const (
	firstRelease = "v0.1.0"
	nextRelease  = "v0.1.1"
)

// generatedKinds are the kinds of what the agent makes of the example, as
// kubectl names them.
const generatedKinds = "clusters.cluster.x-k8s.io,kubeadmcontrolplanes,machinedeployments,machinehealthchecks,devclusters,devmachinetemplates,kubeadmconfigtemplates"

// upgradeAgentWithClusterctl runs `clusterctl upgrade apply` from the agent
// release clusterctl init installed to the next one, with the workload
// cluster up: the new release runs, the Topology stays settled, and the new
// agent writes nothing to what the old one made.
func upgradeAgentWithClusterctl(t *testing.T) {
	t.Helper()
	agentImage := func() string {
		return mgmt(t, time.Minute, "-n", "topology-system", "get", "deployment/topology-controller-manager",
			"-o", `jsonpath={.spec.template.spec.containers[?(@.name=="manager")].image}`)
	}
	if image, want := agentImage(), "docker.io/kubectl-topology/agent:"+firstRelease; image != want {
		t.Errorf("clusterctl init installed the agent as %s, want %s", image, want)
	}
	plan := clusterctl(t, 2*time.Minute, "upgrade", "plan")
	if !strings.Contains(plan, "topology") || !strings.Contains(plan, nextRelease) {
		t.Errorf("clusterctl upgrade plan does not offer the agent's %s:\n%s", nextRelease, plan)
	}
	generation := mgmt(t, time.Minute, "-n", namespace, "get", "clusters.cluster.x-k8s.io", clusterName, "-o", "jsonpath={.metadata.generation}")
	clusterGeneration, err := strconv.ParseInt(strings.TrimSpace(generation), 10, 64)
	if err != nil {
		t.Fatalf("the Cluster's generation %q: %v", generation, err)
	}
	begin := metav1.Now().Rfc3339Copy()
	clusterctl(t, 10*time.Minute, "upgrade", "apply", "--addon", "topology-system/kubectl-topology:"+nextRelease, "--wait-providers", "--wait-provider-timeout", "300")
	if image, want := agentImage(), "docker.io/kubectl-topology/agent:"+nextRelease; image != want {
		t.Errorf("after clusterctl upgrade apply the agent runs %s, want %s", image, want)
	}
	mgmt(t, 6*time.Minute, "-n", "topology-system", "rollout", "status", "deployment/topology-controller-manager", "--timeout", "5m")
	settle(t, 5*time.Minute)
	// The new agent reconciles every Topology as it starts; a write of its
	// to a generated object would show as a newer field-manager entry. It is
	// checked after two passes the agent is made to finish: each carries a
	// fresh mark from the Topology's annotations to the Cluster's metadata
	// (fixture.AfterPasses), the one write they may make, which leaves the
	// Cluster's generation.
	k8s, err := fixture.NewClient(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	fixture.AfterPasses(t, k8s, client.ObjectKey{Namespace: namespace, Name: clusterName}, 2)
	out := mgmt(t, time.Minute, "-n", namespace, "get", generatedKinds,
		"-l", "cluster.x-k8s.io/cluster-name="+clusterName, "-o", "json")
	var list struct {
		Items []unstructured.Unstructured `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Items {
		if o.GetKind() == "Cluster" {
			if o.GetGeneration() != clusterGeneration {
				t.Errorf("the Cluster's generation moved from %d to %d after the agent's upgrade", clusterGeneration, o.GetGeneration())
			}
			continue
		}
		for _, mf := range o.GetManagedFields() {
			if mf.Manager == apply.FieldManager && mf.Subresource == "" && mf.Time != nil && !mf.Time.Before(&begin) {
				t.Errorf("the agent wrote %s %s at %s, after the upgrade began (%s)", o.GetKind(), o.GetName(), mf.Time, begin)
			}
		}
	}
}

// clusterctl runs clusterctl with the kind path's configuration (its local
// repositories) against the management cluster.
func clusterctl(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	cmd := append(args, "--config", clusterctlConfig, "--kubeconfig", kubeconfig)
	return run(t, timeout, clusterctlBin, cmd...)
}

// TestAgentHoldsGoBelowItsMemoryLimit: the installed agent reads its
// container's memory limit from the downward API and holds Go's runtime to
// nine tenths of it, as its start-up log says.
func TestAgentHoldsGoBelowItsMemoryLimit(t *testing.T) {
	raw := mgmt(t, time.Minute, "-n", "topology-system", "get", "deployment/topology-controller-manager",
		"-o", `jsonpath={.spec.template.spec.containers[?(@.name=="manager")].resources.limits.memory}`)
	limit, err := resource.ParseQuantity(raw)
	if err != nil {
		t.Fatalf("the agent's memory limit %q: %v", raw, err)
	}
	want := fmt.Sprintf(`"memoryLimit":"%dMiB"`, int64(float64(limit.Value())*0.9)>>20)
	logs := mgmt(t, time.Minute, "-n", "topology-system", "logs", "deployment/topology-controller-manager", "-c", "manager", "--tail", "-1")
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, `"msg":"starting"`) {
			if !strings.Contains(line, want) {
				t.Errorf("the agent started with %s, want %s (limit %s)", line, want, raw)
			}
			return
		}
	}
	t.Fatalf("no start-up line in the agent's log:\n%s", logs)
}

// convertQuickStart converts upstream's quick-start ClusterClass with
// `kubectl topology convert` against the kind cluster, whose stock providers
// refuse to store the control plane and cluster templates: those two must
// come out inline, the others referenced. The result must be the committed
// examples/kind/class.yaml, so that the example is what a user gets.
func convertQuickStart(t *testing.T) string {
	t.Helper()
	out := plugin(t, time.Minute, "convert", "-f", filepath.Join(root, "testdata/providers/capi-docker/class.yaml"))
	file := filepath.Join(t.TempDir(), "class.yaml")
	if err := os.WriteFile(file, []byte(out+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := decodeObjects(t, out)
	class := got["TopologyClass/quick-start"]
	if class == nil {
		t.Fatalf("convert made no TopologyClass quick-start of upstream's class:\n%s", out)
	}
	for _, slot := range [][]string{{"infrastructure"}, {"controlPlane"}} {
		inline, _, _ := unstructured.NestedMap(class, append(append([]string{"spec"}, slot...), "template")...)
		if inline == nil {
			t.Errorf("spec.%s of the converted class is not inline, though the stock providers refuse to store its template", strings.Join(slot, "."))
		}
	}
	for _, name := range []string{"KubeadmControlPlaneTemplate/quick-start-control-plane", "DevClusterTemplate/quick-start-cluster"} {
		if got[name] != nil {
			t.Errorf("convert kept %s as an object of its own, which the stock providers refuse to store", name)
		}
	}
	for _, name := range []string{"DevMachineTemplate/quick-start-control-plane", "DevMachineTemplate/quick-start-default-worker-machinetemplate", "KubeadmConfigTemplate/quick-start-default-worker-bootstraptemplate"} {
		if got[name] == nil {
			t.Errorf("convert inlined %s, which the stock providers store: it should stay referenced", name)
		}
	}
	example, err := os.ReadFile(filepath.Join(root, "examples/kind/class.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := decodeObjects(t, string(example)); !reflect.DeepEqual(got, want) {
		saved := filepath.Join(artifacts, "converted-quick-start.yaml")
		_ = os.MkdirAll(artifacts, 0o755)
		_ = os.WriteFile(saved, []byte(out+"\n"), 0o644)
		t.Errorf("examples/kind/class.yaml is not what convert makes of upstream's quick-start on this cluster (saved as %s): "+
			"write that output, below the example's header, into examples/kind/class.yaml", saved)
	}
	return file
}

// decodeObjects reads a multi-document YAML stream into its objects by
// kind/name.
func decodeObjects(t *testing.T, data string) map[string]map[string]any {
	t.Helper()
	list, err := parity.Decode([]byte(data))
	if err != nil {
		t.Fatalf("decoding YAML: %v", err)
	}
	objs := map[string]map[string]any{}
	for _, o := range list {
		objs[o.GetKind()+"/"+o.GetName()] = o.Object
	}
	return objs
}

// podImage is flannel's image, preloaded on every machine: its Debian base
// has socat and bash, enough for a server and a client.
const podImage = "kubectl-topology-kind/flannel:v0.28.10"

// podsTalkAcrossNodes runs a TCP server pod on the first Node and a client
// pod on each other one, and checks that each client gets the server's
// answer across machines: the CNI routes pod to pod, not just to services.
func podsTalkAcrossNodes(t *testing.T, wl string, nodes []node) {
	t.Helper()
	kubectl := func(timeout time.Duration, args ...string) string {
		return run(t, timeout, filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", wl, "-n", "default"}, args...)...)
	}
	pod := func(name, node, script string) string {
		return fmt.Sprintf(`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": %q},
 "spec": {"nodeName": %q, "terminationGracePeriodSeconds": 0, "tolerations": [{"operator": "Exists"}],
  "containers": [{"name": "c", "image": %q, "imagePullPolicy": "Never", "command": ["/bin/bash", "-c", %q]}]}}`, name, node, podImage, script)
	}
	manifests := []string{pod("echo-server", nodes[0].Name, `exec socat TCP-LISTEN:8080,fork,reuseaddr SYSTEM:"echo pong from $(hostname)"`)}
	for i, n := range nodes[1:] {
		manifests = append(manifests, pod(fmt.Sprintf("echo-client-%d", i), n.Name, "exec sleep infinity"))
	}
	file := filepath.Join(t.TempDir(), "pods.json")
	if err := os.WriteFile(file, []byte(`{"apiVersion": "v1", "kind": "List", "items": [`+strings.Join(manifests, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(time.Minute, "apply", "-f", file)
	t.Cleanup(func() { kubectl(2*time.Minute, "delete", "-f", file, "--ignore-not-found", "--wait=false") })
	kubectl(3*time.Minute, "wait", "--for=condition=Ready", "pod", "--all", "--timeout=150s")
	serverIP := kubectl(time.Minute, "get", "pod", "echo-server", "-o", "jsonpath={.status.podIP}")
	for i := range nodes[1:] {
		client := fmt.Sprintf("echo-client-%d", i)
		clientIP := kubectl(time.Minute, "get", "pod", client, "-o", "jsonpath={.status.podIP}")
		got := kubectl(time.Minute, "exec", client, "--", "socat", "-t5", "-T10", "-", "TCP:"+serverIP+":8080")
		if got != "pong from echo-server" {
			t.Errorf("pod %s (%s, on %s) asked echo-server (%s, on %s) and got %q, want %q",
				client, clientIP, nodes[i+1].Name, serverIP, nodes[0].Name, got, "pong from echo-server")
		}
	}
}

// machine is what the test reads of a Cluster API Machine.
type machine struct {
	name    string
	created time.Time
}

// machinesAt lists the cluster's Machines at version, of the control plane
// and of the pool.
func machinesAt(t *testing.T, version string) (controlPlane, pool []machine) {
	t.Helper()
	out := mgmt(t, time.Minute, "-n", namespace,
		"get", "machines", "-l", "cluster.x-k8s.io/cluster-name="+clusterName, "-o", "json")
	var list struct {
		Items []struct {
			Metadata struct {
				Name              string
				CreationTimestamp time.Time
				Labels            map[string]string
			}
			Spec struct{ Version string }
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("reading Machines: %v", err)
	}
	for _, m := range list.Items {
		if m.Spec.Version != version {
			continue
		}
		mm := machine{name: m.Metadata.Name, created: m.Metadata.CreationTimestamp}
		if _, ok := m.Metadata.Labels["cluster.x-k8s.io/control-plane"]; ok {
			controlPlane = append(controlPlane, mm)
		} else {
			pool = append(pool, mm)
		}
	}
	return controlPlane, pool
}

// settle follows the rollout with the plugin until it settles.
// heartbeatHolder is the agent replica that leads: the one that renews
// the heartbeat Lease, under its Pod's name.
func heartbeatHolder(t *testing.T) string {
	t.Helper()
	return mgmt(t, time.Minute, "-n", "topology-system", "get", "leases.coordination.k8s.io", components.HeartbeatLease, "-o", "jsonpath={.spec.holderIdentity}")
}

func settle(t *testing.T, timeout time.Duration) {
	t.Helper()
	plugin(t, timeout+time.Minute, "status", clusterName, "--watch", "--timeout", timeout.String())
}

func deleteTopology(t *testing.T) {
	t.Helper()
	mgmt(t, 6*time.Minute, "-n", namespace,
		"delete", "topology", clusterName, "--ignore-not-found", "--wait", "--timeout", "5m")
}

// workloadKubeconfig writes the workload cluster's admin kubeconfig, which
// Cluster API keeps in a Secret, to a file.
func workloadKubeconfig(t *testing.T) string {
	t.Helper()
	out := mgmt(t, time.Minute, "-n", namespace,
		"get", "secret", clusterName+"-kubeconfig", "-o", "jsonpath={.data.value}")
	data, err := base64.StdEncoding.DecodeString(out)
	if err != nil {
		t.Fatalf("decoding Secret %s/%s-kubeconfig: %v", namespace, clusterName, err)
	}
	path := filepath.Join(t.TempDir(), "workload.kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// node is what the test reads of a workload cluster's Node.
type node struct {
	Name, Version string
	Ready         bool
}

// waitNodes waits for n Ready Nodes in the workload cluster.
func waitNodes(t *testing.T, wl string, n int, timeout time.Duration) []node {
	t.Helper()
	var nodes []node
	fixture.EventuallyEvery(t, 5*time.Second, timeout, fmt.Sprintf("workload cluster %s has %d Ready Nodes", clusterName, n), func(context.Context) (bool, error) {
		var err error
		nodes, err = workloadNodes(wl)
		ready := 0
		for _, nd := range nodes {
			if nd.Ready {
				ready++
			}
		}
		return err == nil && ready == n && len(nodes) == n, fmt.Errorf("have %v (%v)", nodes, err)
	})
	return nodes
}

func workloadNodes(wl string) ([]node, error) {
	out, err := exec.Command(filepath.Join(bin, "kubectl"), "--kubeconfig", wl, "get", "nodes", "-o", "json", "--request-timeout", "10s").Output()
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []struct {
			Metadata struct{ Name string }
			Status   struct {
				NodeInfo   struct{ KubeletVersion string }
				Conditions []struct{ Type, Status string }
			}
		}
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, err
	}
	var nodes []node
	for _, it := range list.Items {
		nd := node{Name: it.Metadata.Name, Version: it.Status.NodeInfo.KubeletVersion}
		for _, c := range it.Status.Conditions {
			if c.Type == "Ready" && c.Status == "True" {
				nd.Ready = true
			}
		}
		nodes = append(nodes, nd)
	}
	return nodes, nil
}

// containers are the names of the containers the Docker provider made for
// the workload cluster, by the label it puts on each.
func containers(t *testing.T) []string {
	t.Helper()
	out := run(t, time.Minute, "docker", "ps", "-a", "--filter", "label=io.x-k8s.kind.cluster="+clusterName, "--format", "{{.Names}}")
	return strings.Fields(out)
}

func plugin(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	return run(t, timeout, filepath.Join(bin, "kubectl-topology"), append([]string{"--kubeconfig", kubeconfig, "-n", namespace}, args...)...)
}

// run runs a command and fails the test with its output if it fails.
func run(t *testing.T, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	stdout, stderr, err := runE(timeout, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), strings.Join(args, " "), err, stdout, stderr)
	}
	return stdout
}

func runE(timeout time.Duration, name string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return strings.TrimSpace(stdout.String()), stderr.String(), err
}

// mgmt runs bin/kubectl against the management cluster. Every call of it
// reads, or writes what may be written again (server-side apply, delete
// --ignore-not-found), so an answer the API server could not give now (the
// kind cluster shares two cores with the Go suites under make test) is
// asked again every 5 s until timeout; any other failure fails the test at once.
func mgmt(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	args = append([]string{"--kubeconfig", kubeconfig}, args...)
	var stdout, stderr string
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		deadline, _ := ctx.Deadline()
		var err error
		if stdout, stderr, err = runE(time.Until(deadline), filepath.Join(bin, "kubectl"), args...); err != nil && busyAnswer(stderr) {
			t.Logf("kubectl %s: asking again: %s", strings.Join(args[2:], " "), strings.TrimSpace(stderr))
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
	}
	return stdout
}

// busyAnswer tells whether kubectl's stderr says the API server, or the way
// to it, could not answer now, rather than that the request is wrong: the
// cases of transient.Is as kubectl prints them, since kubectl hands the test
// text, not an error.
func busyAnswer(stderr string) bool {
	for _, s := range []string{
		"the server was unable to return a response in the time allotted",
		"the server is currently unable to handle the request",
		"the server has received too many requests",
		"etcdserver: request timed out",
		"Internal error occurred",
		"TLS handshake timeout",
		"connection refused",
		"connection reset by peer",
		"i/o timeout",
		"http2: client connection lost",
		"unexpected EOF",
		"context deadline exceeded",
	} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// collectArtifacts saves what explains a failure: the logs of every
// provider and of the agent, the Cluster API objects and the containers.
func collectArtifacts(t *testing.T) {
	dir := filepath.Join(artifacts, time.Now().UTC().Format("20060102-150405"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("artifacts: %v", err)
		return
	}
	kubectl := filepath.Join(bin, "kubectl")
	save := func(file string, name string, args ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, _ := exec.CommandContext(ctx, name, args...).CombinedOutput()
		_ = os.WriteFile(filepath.Join(dir, file), out, 0o644)
	}
	for _, d := range []string{
		"capi-system/capi-controller-manager",
		"capi-kubeadm-bootstrap-system/capi-kubeadm-bootstrap-controller-manager",
		"capi-kubeadm-control-plane-system/capi-kubeadm-control-plane-controller-manager",
		"capd-system/capd-controller-manager",
		"topology-system/topology-controller-manager",
	} {
		ns, name, _ := strings.Cut(d, "/")
		save(name+".log", kubectl, "--kubeconfig", kubeconfig, "-n", ns, "logs", "deployment/"+name, "--all-containers", "--tail", "-1")
	}
	save("objects.yaml", kubectl, "--kubeconfig", kubeconfig, "get", "-A", "-o", "yaml",
		"topologies,topologyclasses,clusters,machines,machinedeployments,machinesets,kubeadmcontrolplanes,kubeadmconfigs,devclusters,devmachines")
	save("events.txt", kubectl, "--kubeconfig", kubeconfig, "get", "events", "-A", "--sort-by", ".lastTimestamp")
	save("status.txt", filepath.Join(bin, "kubectl-topology"), "--kubeconfig", kubeconfig, "-n", namespace, "status", clusterName)
	save("containers.txt", "docker", "ps", "-a")
	t.Logf("artifacts in %s", dir)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func mustAbs(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return abs
}

// TestClusterctlDeletesTheAgent: `clusterctl delete --addon kubectl-topology` removes
// the agent and the webhook configurations it registered, and leaves its
// CRDs and every Topology, as clusterctl leaves a provider's without
// --include-crd. Run last: the agent is gone afterwards.
func TestClusterctlDeletesTheAgent(t *testing.T) {
	kubectl := filepath.Join(bin, "kubectl")
	clusterctl(t, 5*time.Minute, "delete", "--addon", "kubectl-topology")
	fixture.Eventually(t, 2*time.Minute, "the agent's Deployment and webhook configurations are gone", func(ctx context.Context) (bool, error) {
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "get", "deployments,mutatingwebhookconfigurations,validatingwebhookconfigurations",
			"-A", "-l", "cluster.x-k8s.io/provider=addon-kubectl-topology", "-o", "name").Output()
		if err != nil {
			return false, err
		}
		if left := strings.TrimSpace(string(out)); left != "" {
			return false, fmt.Errorf("still there: %s", left)
		}
		return true, nil
	})
	mgmt(t, time.Minute, "get", "crd", "topologies.topology.kubectl-topology.io", "topologyclasses.topology.kubectl-topology.io")
	if inv := mgmt(t, time.Minute, "get", "providers.clusterctl.cluster.x-k8s.io", "-A", "-o", "name"); strings.Contains(inv, "topology") {
		t.Errorf("clusterctl's inventory still lists the agent after delete --addon:\n%s", inv)
	}
}
