package stock

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// machineIdentities maps each Machine in ns to its version and the
// provider's ID of what it runs on.
func machineIdentities(t *testing.T, c client.Client, ns string) map[string]string {
	t.Helper()
	items, err := fixture.ListKind(context.Background(), c, ns, "Machine")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range items {
		id, _, _ := unstructured.NestedString(m.Object, "spec", "providerID")
		out[m.GetName()] = id
	}
	return out
}

func render(m map[string]string) string {
	var l []string
	for k, v := range m {
		l = append(l, k+"="+v)
	}
	sort.Strings(l)
	return strings.Join(l, " ")
}

// TestPivotToAnotherManagementCluster is how a production management
// cluster is born: a cluster made from a bootstrap management cluster, then
// `clusterctl move` pivots it — Topology, class, templates and every Cluster
// API object — to the permanent one, where an agent runs and whose own
// Cluster API managers take it over. There the Topology reports Ready with
// the same Machines on the same infrastructure, an upgrade through the
// plugin rolls it, and deleting it removes every Machine. The bootstrap
// cluster keeps nothing of it. The second control plane shares the first's
// certificates, so its providers' webhooks are served by the first's
// managers until they move over, as clusterctl expects both to run.
// It is the suite's one serial test: it moves the managers away and back,
// so it runs before the parallel tests start.
func TestPivotToAnotherManagementCluster(t *testing.T) {
	ctx := context.Background()
	ex, err := fixture.ClassInNewNamespace(ctx, suite.K8s, "in-memory", "pivot")
	if err != nil {
		t.Fatal(err)
	}
	ns := ex.Topology.Namespace
	topo := ex.Topology.DeepCopy()
	fixture.OneMachineEach(topo)
	if err := suite.K8s.Create(ctx, topo); err != nil {
		t.Fatal(err)
	}
	suite.Settle(t, ns, "dev")
	before := machineIdentities(t, suite.K8s, ns)
	if len(before) != 2 {
		t.Fatalf("Machines before the pivot: %s, want a control plane machine and a worker", render(before))
	}

	pivoted := false
	t.Cleanup(func() {
		// After the target has stopped (cleanups run last first): the suite's
		// other tests need the bootstrap cluster's managers back.
		if pivoted {
			if err := suite.Cluster.StartProviders(ctx); err != nil {
				t.Errorf("starting the providers of the suite's control plane again: %v", err)
			}
		}
	})
	mt := suite.MoveTarget(t, "pivot")
	target, tk := mt.Cluster, mt.K8s

	suite.Clusterctl(t, "move", "-n", ns, "--kubeconfig", suite.Kubeconfig, "--to-kubeconfig", target.Kubeconfig)
	for name, o := range map[string]client.Object{"dev": &v1alpha2.Topology{}, ex.Class.Name: &v1alpha2.TopologyClass{}} {
		if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o); !apierrors.IsNotFound(err) {
			t.Errorf("the bootstrap cluster still has %T %s after the move (%v)", o, name, err)
		}
	}
	if left := machineIdentities(t, suite.K8s, ns); len(left) != 0 {
		t.Errorf("the bootstrap cluster still has Machines after the move: %s", render(left))
	}
	if err := target.PivotProviders(ctx); err != nil {
		t.Fatal(err)
	}
	pivoted = true

	topology := func(args ...string) string {
		t.Helper()
		out, errOut, err := fixture.RunPlugin(suite.Plugin, target.Kubeconfig, "", args...)
		if err != nil {
			t.Fatalf("kubectl topology %s on the target: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
		return out
	}
	topology("status", "dev", "-n", ns, "--watch", "--interval", "1s", "--timeout", fixture.SettleTimeout.String())
	if after := machineIdentities(t, tk, ns); render(after) != render(before) {
		t.Errorf("Machines after the pivot:\n got %s\nwant %s (the same, on the same infrastructure)", render(after), render(before))
	}

	topology("upgrade", "dev", "-n", ns, "--version", "v1.34.0", "--yes")
	topology("status", "dev", "-n", ns, "--watch", "--interval", "1s", "--timeout", fixture.SettleTimeout.String())
	fixture.Eventually(t, time.Minute, "every Machine on the target runs v1.34.0", func(ctx context.Context) (bool, error) {
		items, err := fixture.ListKind(ctx, tk, ns, "Machine")
		if err != nil {
			return false, err
		}
		var at []string
		for _, m := range items {
			v, _, _ := unstructured.NestedString(m.Object, "spec", "version")
			phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
			at = append(at, m.GetName()+"@"+v+"/"+phase)
			if v != "v1.34.0" || phase != "Running" {
				return false, fmt.Errorf("machines %v", at)
			}
		}
		return len(items) == 2, fmt.Errorf("machines %v", at)
	})

	if err := tk.Delete(ctx, &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev"}}); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, fixture.SettleTimeout, "the Topology and every Machine are gone from the target", func(ctx context.Context) (bool, error) {
		err := tk.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, &v1alpha2.Topology{})
		left := machineIdentities(t, tk, ns)
		return apierrors.IsNotFound(err) && len(left) == 0, fmt.Errorf("Topology: %v; Machines: %s", err, render(left))
	})
}
