package capi

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	statusv1 "github.com/kubectl-topology/kubectl-topology/pkg/api/status/v1"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// itemOf finds a Topology's item in a report.
func itemOf(r statusv1.StatusReport, ns, name string) *statusv1.TopologyReport {
	for i := range r.Items {
		if r.Items[i].Namespace == ns && r.Items[i].Name == name {
			return &r.Items[i]
		}
	}
	return nil
}

// workloadClient reaches the workload cluster of Cluster ns/name: for the
// in-memory provider, the API server it fakes in its process.
func workloadClient(t *testing.T, ns, name string) client.Client {
	t.Helper()
	secret := &corev1.Secret{}
	if err := suite.K8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-kubeconfig"}, secret); err != nil {
		t.Fatalf("reading the workload kubeconfig: %v", err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["value"])
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// setNodeReady sets the Ready condition of a workload cluster's Node, as a
// kubelet that stopped (or came back) would be seen; Cluster API's Machine
// controller reads it from there.
func setNodeReady(t *testing.T, wc client.Client, node string, ready bool) {
	t.Helper()
	fixture.Eventually(t, 30*time.Second, "Node "+node+" takes the Ready change", func(ctx context.Context) (bool, error) {
		n := &corev1.Node{}
		if err := wc.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return false, err
		}
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				n.Status.Conditions[i].Status, n.Status.Conditions[i].Reason, n.Status.Conditions[i].Message = corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"
				if !ready {
					n.Status.Conditions[i].Status, n.Status.Conditions[i].Reason, n.Status.Conditions[i].Message = corev1.ConditionFalse, "KubeletStopped", "kubelet stopped posting node status"
				}
			}
		}
		// The in-memory API server keeps status with the object: an update of
		// the Node carries it.
		return true, wc.Update(ctx, n)
	})
}

// nodeOf is the Node of the first Machine that matches.
func nodeOf(t *testing.T, ns string, match func(*unstructured.Unstructured) bool) (machine, node string) {
	t.Helper()
	items, err := suite.List(context.Background(), ns, "Machine")
	if err != nil {
		t.Fatal(err)
	}
	for i := range items {
		if match(&items[i]) {
			n, _, _ := unstructured.NestedString(items[i].Object, "status", "nodeRef", "name")
			return items[i].GetName(), n
		}
	}
	t.Fatalf("no Machine in %s matches", ns)
	return "", ""
}

// kubectl runs kubectl itself against the local control plane.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(suite.Kubectl, append([]string{"--kubeconfig", suite.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestHealthThroughDegradedStates drives a cluster through the states an
// on-call engineer meets — provisioning, ready, a control plane Machine and
// a pool Machine whose Nodes go not ready, recovery, deletion — with Cluster
// API's own controllers reporting each, and checks that status, get, the
// JSON report, --watch, upgrade's preflight and kubectl itself all say so,
// with the reason and the time since.
func TestHealthThroughDegradedStates(t *testing.T) {
	t.Parallel()
	ns := suite.InMemoryCluster(t, "health", func(topo *v1alpha2.Topology) {
		topo.Spec.ControlPlane.Replicas = ptr.To[int32](1)
		topo.Spec.Workers.MachineDeployments = topo.Spec.Workers.MachineDeployments[:1]
		topo.Spec.Workers.MachineDeployments[0].Replicas = ptr.To[int32](2)
	}, slowControlPlane)

	// Provisioning: the control plane's machine takes 30 s to start.
	fixture.Eventually(t, 30*time.Second, "status reports the cluster Provisioning", func(context.Context) (bool, error) {
		item := itemOf(suite.StatusReport(t, "dev", "-n", ns), ns, "dev")
		return item != nil && item.State == v1alpha2.StateProvisioning && !item.Settled, nil
	})
	if out := suite.MustTopology(t, "get", "-n", ns); !strings.Contains(out, "Provisioning") {
		t.Errorf("get does not say Provisioning:\n%s", out)
	}
	if _, errOut, err := suite.Topology("", "status", "dev", "-n", ns, "--watch", "--timeout", "3s", "--interval", "1s"); err == nil || !strings.Contains(errOut, "did not settle within 3s: Provisioning") {
		t.Errorf("a bounded watch during provisioning: err %v\n%s", err, errOut)
	}

	suite.Settle(t, ns, "dev")
	item := itemOf(suite.StatusReport(t, "-A"), ns, "dev")
	if item == nil || item.State != v1alpha2.StateReady || !item.Settled || len(item.Problems) != 0 {
		t.Fatalf("settled cluster in status -A -o json: %+v", item)
	}

	// Degraded: the control plane's Node and one of md-a's go not ready.
	wc := workloadClient(t, ns, "dev")
	cpMachine, cpNode := nodeOf(t, ns, func(m *unstructured.Unstructured) bool {
		_, ok := m.GetLabels()["cluster.x-k8s.io/control-plane"]
		return ok
	})
	mdMachine, mdNode := nodeOf(t, ns, func(m *unstructured.Unstructured) bool {
		return m.GetLabels()["topology.cluster.x-k8s.io/deployment-name"] == "md-a"
	})
	setNodeReady(t, wc, cpNode, false)
	setNodeReady(t, wc, mdNode, false)
	fixture.Eventually(t, time.Minute, "status reports both parts Degraded", func(context.Context) (bool, error) {
		item := itemOf(suite.StatusReport(t, "dev", "-n", ns), ns, "dev")
		if item == nil || item.State != v1alpha2.StateDegraded || len(item.Parts) != 2 {
			return false, fmt.Errorf("report %+v", item)
		}
		// KubeadmControlPlane counts ready replicas a resync after the
		// Machine's condition turns, so wait for the counts too.
		return item.Parts[0].State == v1alpha2.StateDegraded && item.Parts[1].State == v1alpha2.StateDegraded &&
			item.Parts[0].Replicas.Ready == 0 && item.Parts[1].Replicas.Ready == 1, nil
	})
	// The durations read at least a second once a second has passed.
	wants := []string{"Degraded for ", "0/1", "1/2", "Machine/" + cpMachine + " NotReady", "Machine/" + mdMachine + " NotReady", "Node.Ready: kubelet stopped posting node status (for "}
	fixture.Eventually(t, 30*time.Second, "status says why the cluster is degraded, and since when", func(context.Context) (bool, error) {
		out := suite.MustTopology(t, "status", "dev", "-n", ns)
		for _, want := range wants {
			if !strings.Contains(out, want) {
				return false, fmt.Errorf("status lacks %q:\n%s", want, out)
			}
		}
		return !strings.Contains(out, "for 0s"), fmt.Errorf("a duration reads 0s:\n%s", out)
	})
	if out := suite.MustTopology(t, "get", "-n", ns); !strings.Contains(out, "Degraded") || !strings.Contains(out, "control-plane Degraded,md-a Degraded") {
		t.Errorf("get does not name the degraded parts:\n%s", out)
	}
	if _, errOut, err := suite.Topology("", "status", "dev", "-n", ns, "--watch", "--timeout", "3s", "--interval", "1s"); err == nil ||
		!strings.Contains(errOut, "did not settle within 3s: Degraded") || !strings.Contains(errOut, "control plane: Degraded for ") {
		t.Errorf("a bounded watch of a degraded cluster (versions all match): err %v\n%s", err, errOut)
	}
	_, errOut, err := suite.Topology("", "upgrade", "dev", "-n", ns, "--version", "v1.34.0", "--dry-run")
	if err == nil || !strings.Contains(errOut, "the control plane is Degraded for ") || !strings.Contains(errOut, "Machine/"+cpMachine+" NotReady") || !strings.Contains(errOut, "add --force") {
		t.Errorf("preflight of an upgrade of a degraded control plane: err %v\n%s", err, errOut)
	}
	if out, errOut, err := suite.Topology("", "upgrade", "dev", "-n", ns, "--version", "v1.34.0", "--dry-run", "--force"); err != nil ||
		!strings.Contains(errOut, "upgrading an unhealthy control plane (--force)") || !strings.Contains(out, "Dry run: nothing was changed") {
		t.Errorf("upgrade --force --dry-run of a degraded control plane: err %v\n%s%s", err, out, errOut)
	}
	if out := kubectl(t, "get", "topology", "dev", "-n", ns); !strings.Contains(out, "Degraded") {
		t.Errorf("kubectl get topology dev does not show the state:\n%s", out)
	}

	// Recovery: the Nodes are ready again and the watch settles.
	setNodeReady(t, wc, cpNode, true)
	setNodeReady(t, wc, mdNode, true)
	suite.Settle(t, ns, "dev")

	// Deletion: reported as such until the Topology is gone.
	topo := &v1alpha2.Topology{}
	if err := suite.K8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "dev"}, topo); err != nil {
		t.Fatal(err)
	}
	if err := suite.K8s.Delete(context.Background(), topo); err != nil {
		t.Fatal(err)
	}
	sawDeleting := false
	fixture.Eventually(t, 2*time.Minute, "the Topology is gone", func(ctx context.Context) (bool, error) {
		out, errOut, err := suite.Topology("", "get", "dev", "-n", ns)
		if err != nil {
			return strings.Contains(errOut, "not found"), nil
		}
		if strings.Contains(out, "Deleting") {
			sawDeleting = true
		}
		err = suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, &v1alpha2.Topology{})
		return apierrors.IsNotFound(err), nil
	})
	if !sawDeleting {
		t.Error("get never showed the Topology Deleting")
	}
}

// TestKubectlWorks runs kubectl itself on the CRDs: the singular and plural
// names, the short names and describe all answer, and the printer columns
// mirror `kubectl topology get`.
func TestKubectlWorks(t *testing.T) {
	t.Parallel()
	ns := suite.InMemoryCluster(t, "kubectl", func(topo *v1alpha2.Topology) {
		topo.Spec.ControlPlane.Replicas = ptr.To[int32](1)
		topo.Spec.Workers.MachineDeployments = topo.Spec.Workers.MachineDeployments[:1]
	})
	suite.Settle(t, ns, "dev")
	for _, args := range [][]string{{"get", "topology", "dev"}, {"get", "topologies", "dev"}, {"get", "topo", "dev"}} {
		out := kubectl(t, append(args, "-n", ns)...)
		if !strings.Contains(out, "STATE") || !strings.Contains(out, "Ready") || !strings.Contains(out, "in-memory") {
			t.Errorf("kubectl %s:\n%s", strings.Join(args, " "), out)
		}
	}
	if out := kubectl(t, "get", "topology", "dev", "-n", ns, "-o", "wide"); !strings.Contains(out, "INFRASTRUCTURE") || !strings.Contains(out, "Provisioned") {
		t.Errorf("kubectl get -o wide:\n%s", out)
	}
	if out := kubectl(t, "describe", "topology", "dev", "-n", ns); !strings.Contains(out, "Kind:         Topology") || !strings.Contains(out, "State:") {
		t.Errorf("kubectl describe topology dev:\n%s", out)
	}
	if out := kubectl(t, "get", "tc", "-n", ns); !strings.Contains(out, "in-memory") {
		t.Errorf("kubectl get tc:\n%s", out)
	}
	if out := kubectl(t, "explain", "topology.spec"); !strings.Contains(out, "KIND:       Topology") {
		t.Errorf("kubectl explain topology.spec:\n%s", out)
	}
}
