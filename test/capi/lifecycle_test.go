package capi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/apply"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/localcluster"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/parity"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestClusterLifecycle takes one cluster of the in-memory class through its
// life with Cluster API's own controllers doing the work: created until
// every machine runs, upgraded (control plane first, a held pool last),
// scaled, reshaped, its machines replaced by a variable change, deleted.
func TestClusterLifecycle(t *testing.T) {
	t.Parallel()
	ns := suite.InMemoryCluster(t, "lifecycle", func(topo *v1alpha2.Topology) {
		// md-b holds its upgrade until released, as an operator would ask.
		topo.Spec.Workers.MachineDeployments[1].Metadata.Annotations = map[string]string{clusterv1.ClusterTopologyHoldUpgradeSequenceAnnotation: ""}
	})
	ctx := context.Background()

	t.Run("created until every machine runs", func(t *testing.T) {
		out := suite.Settle(t, ns, "dev")
		if !strings.Contains(out, " 3/3 ") || !strings.Contains(out, " 2/2 ") || !strings.Contains(out, " 1/1 ") || !strings.Contains(out, "· Ready") {
			t.Errorf("status --watch settled showing:\n%s", out)
		}
		ms, err := suite.Machines(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		for part, want := range map[string]int{"": 3, "md-a": 2, "md-b": 1} {
			if running, all := fixture.Count(ms, part, "v1.33.1"); running != want || all != want {
				t.Errorf("%q: %d of %d machines running v1.33.1, want %d", part, running, all, want)
			}
		}
		cluster := &unstructured.Unstructured{}
		cluster.SetAPIVersion("cluster.x-k8s.io/v1beta2")
		cluster.SetKind("Cluster")
		if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, cluster); err != nil {
			t.Fatal(err)
		}
		if c := condition(cluster, "Available"); c["status"] != "True" {
			t.Errorf("Cluster API calls the Cluster not available: %v", c)
		}
		// A settled cluster gets no writes: the agent once rewrote every
		// reference it read back in another version, on every pass.
		before := generations(t, ns)
		fixture.AfterPasses(t, suite.K8s, client.ObjectKey{Namespace: ns, Name: "dev"}, 2)
		if after := generations(t, ns); !maps.Equal(after, before) {
			t.Errorf("two passes over a settled cluster moved generations:\nbefore %v\nafter  %v", before, after)
		}
		// On Cluster API v1.14 the agent writes what v1.14 stores, and the
		// kubeadm control plane at its v1beta2 contract version.
		for kind, want := range map[string]string{"Cluster": "cluster.x-k8s.io/v1beta2", "MachineDeployment": "cluster.x-k8s.io/v1beta2", "MachineHealthCheck": "cluster.x-k8s.io/v1beta2", "KubeadmControlPlane": "controlplane.cluster.x-k8s.io/v1beta2"} {
			items, err := suite.List(ctx, ns, kind)
			if err != nil || len(items) == 0 {
				t.Fatalf("listing %s: %v (%d)", kind, err, len(items))
			}
			for _, o := range items {
				if got := appliedAs(&o, apply.FieldManager); got != want {
					t.Errorf("%s %s was applied as %q, want %s", kind, o.GetName(), got, want)
				}
			}
		}
		if lines := deprecatedUses(t); len(lines) > 0 {
			t.Errorf("the agent used deprecated APIs:\n%s", strings.Join(lines, "\n"))
		}
	})

	t.Run("upgrade refuses a skipped minor and changes nothing", func(t *testing.T) {
		_, errOut, err := suite.Topology("", "upgrade", "dev", "-n", ns, "--version", "v1.35.0", "--yes")
		if err == nil || !strings.Contains(errOut, "skips a minor version") {
			t.Fatalf("got %v: %s", err, errOut)
		}
		if v := topologyVersion(t, ns); v != "v1.33.1" {
			t.Errorf("version %s after a refused upgrade", v)
		}
	})

	t.Run("upgrade asks, and no is no", func(t *testing.T) {
		out, errOut, err := suite.Topology("n\n", "upgrade", "dev", "-n", ns, "--version", "v1.34.0")
		if err == nil || !strings.Contains(errOut, "not confirmed; nothing was changed") || !strings.Contains(out, "1. control plane") {
			t.Fatalf("got %v:\n%s%s", err, out, errOut)
		}
		if v := topologyVersion(t, ns); v != "v1.33.1" {
			t.Errorf("version %s after declining", v)
		}
	})

	t.Run("upgrade: control plane first, then the pools, the held one when released", func(t *testing.T) {
		out := suite.MustTopology(t, "upgrade", "dev", "-n", ns, "--version", "v1.34.0", "--yes")
		if !strings.Contains(out, "Preflight passed") || !strings.Contains(out, "version v1.33.1 → v1.34.0") {
			t.Fatalf("upgrade output:\n%s", out)
		}
		// A bounded watch of a rollout that takes longer gives up, says
		// why and exits 1; the rollout goes on.
		out, errOut, err := suite.Topology("", "status", "dev", "-n", ns, "--watch", "--interval", "200ms", "--timeout", "1s")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(errOut, "did not settle within 1s") || !strings.Contains(errOut, "The rollout goes on") {
			t.Errorf("status --watch --timeout 1s mid-upgrade: %v\n%s%s", err, out, errOut)
		}
		fixture.Eventually(t, fixture.SettleTimeout, "the control plane and md-a run v1.34.0", func(ctx context.Context) (bool, error) {
			ms, err := suite.Machines(ctx, ns)
			cp, cpAll := fixture.Count(ms, "", "v1.34.0")
			a, aAll := fixture.Count(ms, "md-a", "v1.34.0")
			return err == nil && cp == 3 && cpAll == 3 && a == 2 && aAll == 2, fmt.Errorf("control plane %d/%d, md-a %d/%d (%v)", cp, cpAll, a, aAll, err)
		})
		// md-b is held: the agent's passes after md-a finished leave it as it was.
		fixture.AfterPasses(t, suite.K8s, client.ObjectKey{Namespace: ns, Name: "dev"}, 2)
		mds, err := suite.List(ctx, ns, "MachineDeployment")
		if err != nil {
			t.Fatal(err)
		}
		for _, md := range mds {
			version, _, _ := unstructured.NestedString(md.Object, "spec", "template", "spec", "version")
			if md.GetLabels()[clusterv1.ClusterTopologyMachineDeploymentNameLabel] == "md-b" && version != "v1.33.1" {
				t.Errorf("md-b, held, was moved to %s", version)
			}
		}
		ms, err := suite.Machines(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		if running, all := fixture.Count(ms, "md-b", "v1.34.0"); all != 1 || running != 0 {
			t.Errorf("md-b, held, has %d machines, %d running v1.34.0", all, running)
		}
		status := suite.MustTopology(t, "status", "dev", "-n", ns)
		if !strings.Contains(status, "md-b") || !strings.Contains(strings.ToLower(status), "hold") {
			t.Errorf("status does not say md-b is held:\n%s", status)
		}
		suite.ChangeTopology(t, ns, func(topo *v1alpha2.Topology) {
			delete(topo.Spec.Workers.MachineDeployments[1].Metadata.Annotations, clusterv1.ClusterTopologyHoldUpgradeSequenceAnnotation)
		})
		suite.Settle(t, ns, "dev")

		// The order, from the Machines upstream's controllers created.
		ms, err = suite.Machines(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		var cpLast, aFirst, aLast, bFirst time.Time
		for _, m := range ms {
			if m.Version != "v1.34.0" {
				t.Errorf("machine %s still at %s", m.Name, m.Version)
				continue
			}
			switch {
			case m.ControlPlane:
				cpLast = later(cpLast, m.Created)
			case m.Pool == "md-a":
				aFirst, aLast = earlier(aFirst, m.Created), later(aLast, m.Created)
			case m.Pool == "md-b":
				bFirst = earlier(bFirst, m.Created)
			}
		}
		if !aFirst.After(cpLast) {
			t.Errorf("md-a's first new machine (%s) is not after the control plane's last (%s)", aFirst, cpLast)
		}
		if !bFirst.After(aLast) {
			t.Errorf("md-b's new machine (%s) is not after md-a's last (%s)", bFirst, aLast)
		}
	})

	t.Run("scale the control plane and a pool", func(t *testing.T) {
		suite.MustTopology(t, "scale", "dev", "-n", ns, "--control-plane", "1", "--worker", "md-a=3", "--yes")
		suite.Settle(t, ns, "dev")
		ms, err := suite.Machines(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		for part, want := range map[string]int{"": 1, "md-a": 3, "md-b": 1} {
			if running, all := fixture.Count(ms, part, "v1.34.0"); running != want || all != want {
				t.Errorf("%q: %d of %d machines running, want %d", part, running, all, want)
			}
		}
	})

	t.Run("add a pool and remove one", func(t *testing.T) {
		suite.ChangeTopology(t, ns, func(topo *v1alpha2.Topology) {
			mds := topo.Spec.Workers.MachineDeployments
			topo.Spec.Workers.MachineDeployments = []v1alpha2.MachineDeploymentTopology{mds[0], {Class: "default-worker", Name: "md-c", Replicas: ptr.To[int32](1)}}
		})
		suite.Settle(t, ns, "dev")
		ms, err := suite.Machines(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		if running, all := fixture.Count(ms, "md-c", "v1.34.0"); running != 1 || all != 1 {
			t.Errorf("md-c: %d of %d machines running, want 1", running, all)
		}
		fixture.Eventually(t, time.Minute, "md-b's MachineDeployment and machines are gone", func(ctx context.Context) (bool, error) {
			ms, err := suite.Machines(ctx, ns)
			_, b := fixture.Count(ms, "md-b", "v1.34.0")
			mds, lerr := suite.List(ctx, ns, "MachineDeployment")
			return err == nil && lerr == nil && b == 0 && len(mds) == 2, fmt.Errorf("md-b machines %d, MachineDeployments %d", b, len(mds))
		})
	})

	t.Run("a variable change rotates the worker template and rolls new machines", func(t *testing.T) {
		before := workerTemplate(t, ns, "md-a")
		suite.MustTopology(t, "set", "variable", "dev", "-n", ns, "workerStartup=2s", "--yes")
		fixture.Eventually(t, 30*time.Second, "md-a refers to a new template", func(context.Context) (bool, error) {
			return workerTemplate(t, ns, "md-a") != before, nil
		})
		suite.Settle(t, ns, "dev")
		after := workerTemplate(t, ns, "md-a")
		tmpl := &unstructured.Unstructured{}
		tmpl.SetAPIVersion("infrastructure.cluster.x-k8s.io/v1beta2")
		tmpl.SetKind("DevMachineTemplate")
		if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: after}, tmpl); err != nil {
			t.Fatal(err)
		}
		if d, _, _ := unstructured.NestedString(tmpl.Object, "spec", "template", "spec", "backend", "inMemory", "vm", "provisioning", "startupDuration"); d != "2s" {
			t.Errorf("the new template %s starts machines in %q, want 2s", after, d)
		}
		devMachines, err := suite.List(ctx, ns, "DevMachine")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range devMachines {
			if m.GetLabels()["topology.cluster.x-k8s.io/deployment-name"] != "md-a" && !strings.Contains(m.GetName(), "-md-a-") {
				continue
			}
			n++
			if from := m.GetAnnotations()["cluster.x-k8s.io/cloned-from-name"]; from != after {
				t.Errorf("md-a's DevMachine %s is cloned from %s, want the new template %s", m.GetName(), from, after)
			}
		}
		if n != 3 {
			t.Errorf("md-a has %d DevMachines, want 3", n)
		}
	})

	t.Run("delete takes everything through Cluster API's own deletion", func(t *testing.T) {
		if err := suite.K8s.Delete(ctx, &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev"}}); err != nil {
			t.Fatal(err)
		}
		fixture.Eventually(t, 2*time.Minute, "the Topology and everything of it are gone", func(ctx context.Context) (bool, error) {
			err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, &v1alpha2.Topology{})
			left := []string{}
			for _, kind := range []string{"Cluster", "KubeadmControlPlane", "MachineDeployment", "MachineSet", "Machine", "DevMachine", "DevCluster", "KubeadmConfig"} {
				items, lerr := suite.List(ctx, ns, kind)
				if lerr != nil {
					return false, lerr
				}
				if len(items) > 0 {
					left = append(left, fmt.Sprintf("%d %s", len(items), kind))
				}
			}
			return apierrors.IsNotFound(err) && len(left) == 0, fmt.Errorf("Topology: %v; left: %v", err, left)
		})
	})
}

// generations are the generation of each object the agent writes that a
// controller acts on, by kind and name.
func generations(t *testing.T, ns string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, kind := range []string{"Cluster", "KubeadmControlPlane", "MachineDeployment", "DevCluster"} {
		items, err := suite.List(context.Background(), ns, kind)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			out[kind+"/"+o.GetName()] = o.GetGeneration()
		}
	}
	return out
}

func condition(obj *unstructured.Unstructured, kind string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == kind {
			return m
		}
	}
	return nil
}

func topologyVersion(t *testing.T, ns string) string {
	t.Helper()
	topo := &v1alpha2.Topology{}
	if err := suite.K8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "dev"}, topo); err != nil {
		t.Fatal(err)
	}
	return topo.Spec.Version
}

// workerTemplate is the infrastructure template pool's MachineDeployment
// refers to.
func workerTemplate(t *testing.T, ns, pool string) string {
	t.Helper()
	mds, err := suite.List(context.Background(), ns, "MachineDeployment")
	if err != nil {
		t.Fatal(err)
	}
	for _, md := range mds {
		if md.GetLabels()["topology.cluster.x-k8s.io/deployment-name"] == pool {
			name, _, _ := unstructured.NestedString(md.Object, "spec", "template", "spec", "infrastructureRef", "name")
			return name
		}
	}
	t.Fatalf("no MachineDeployment for %s", pool)
	return ""
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// appliedAs is the apiVersion field manager applied o with, from its managed fields.
func appliedAs(o *unstructured.Unstructured, manager string) string {
	for _, m := range o.GetManagedFields() {
		if m.Manager == manager && m.Operation == metav1.ManagedFieldsOperationApply {
			return m.APIVersion
		}
	}
	return ""
}

// deprecatedUses are the agent's deprecation warnings, but for the template
// versions a class of this suite names itself: a class may reference v1beta1
// templates (testdata/parity/docker-kubeadm does, as upstream's v1beta1
// quick-start did), and the agent reads them at that version, as upstream
// v1.14 does. Any other API the agent reads or writes must be current.
func deprecatedUses(t *testing.T) []string {
	t.Helper()
	root, err := localcluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "testdata", "parity", "*", "class.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no parity classes: %v", err)
	}
	named := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := parity.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, o := range objs {
			if o.GetKind() == "ClusterClass" {
				collectAPIVersions(o.Object["spec"], named)
			}
		}
	}
	var out []string
	for _, l := range suite.AgentLogLines("is deprecated") {
		excused := false
		for gv := range named {
			excused = excused || strings.Contains(l, gv+" ")
		}
		if !excused {
			out = append(out, l)
		}
	}
	return out
}

// collectAPIVersions adds every apiVersion value under v to into.
func collectAPIVersions(v any, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "apiVersion" {
				// Core types are never the class's to choose.
				if !strings.HasPrefix(s, "cluster.x-k8s.io/") {
					into[s] = true
				}
				continue
			}
			collectAPIVersions(e, into)
		}
	case []any:
		for _, e := range x {
			collectAPIVersions(e, into)
		}
	}
}
