package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/controller"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

var (
	mdGVK  = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "MachineDeployment"}
	dmtGVK = schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Kind: "DockerMachineTemplate"}
	kcpGVK = schema.GroupVersionKind{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta1", Kind: "KubeadmControlPlane"}
)

// updateTopology changes a Topology as a user would, retrying on conflicts.
func updateTopology(t *testing.T, ns, name string, change func(*v1alpha2.Topology)) error {
	t.Helper()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		topo := getTopology(t, ns, name)
		change(topo)
		return k8s.Update(context.Background(), topo)
	})
}

// poolObject finds the generated object of kind for a pool by its topology name.
func poolObject(t *testing.T, ns, cluster string, gvk schema.GroupVersionKind, pool string) *unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := k8s.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster, clusterv1.ClusterTopologyMachineDeploymentNameLabel: pool}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		return nil
	}
	return &list.Items[0]
}

func nested(o *unstructured.Unstructured, path ...string) any {
	if o == nil {
		return nil
	}
	v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
	return v
}

func get(t *testing.T, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	return u, err
}

// startExample starts an agent and creates the example topology in a fresh
// namespace, returning once it is reconciled.
func startExample(t *testing.T, prefix string) (*runningAgent, example) {
	t.Helper()
	a := startAgent(t)
	ns := newNamespace(t, prefix)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("what the API server has in namespace %s:\n%s", ns, fixture.Explain(context.Background(), k8s, ns))
		}
	})
	ex := loadExample(t, ns)
	createClass(t, ex)
	if err := k8s.Create(context.Background(), ex.Topology.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	reconciled(t, ns, "dev", controller.ReasonSucceeded)
	waitIdle(t, a)
	return a, ex
}

func TestTopologyChanges(t *testing.T) {
	ctx := context.Background()
	agent, ex := startExample(t, "changes")
	ns := ex.Topology.Namespace
	mdA := poolObject(t, ns, "dev", mdGVK, "md-a")
	if mdA == nil {
		t.Fatal("no MachineDeployment for md-a")
	}
	infraA := nested(mdA, "spec", "template", "spec", "infrastructureRef", "name").(string)

	t.Run("replicas change patches the MachineDeployment in place", func(t *testing.T) {
		if err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) {
			four := int32(4)
			topo.Spec.Workers.MachineDeployments[0].Replicas = &four
		}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "md-a has 4 replicas", func() (bool, error) {
			md := poolObject(t, ns, "dev", mdGVK, "md-a")
			return fmt.Sprint(nested(md, "spec", "replicas")) == "4", nil
		})
		md := poolObject(t, ns, "dev", mdGVK, "md-a")
		if md.GetName() != mdA.GetName() || nested(md, "spec", "template", "spec", "infrastructureRef", "name") != infraA {
			t.Errorf("md-a became %s with template %v; want %s with %s, patched in place", md.GetName(), nested(md, "spec", "template", "spec", "infrastructureRef", "name"), mdA.GetName(), infraA)
		}
	})

	t.Run("a hand edit of a field the topology sets is reverted, others kept", func(t *testing.T) {
		md := poolObject(t, ns, "dev", mdGVK, "md-a")
		patch := client.MergeFrom(md.DeepCopy())
		_ = unstructured.SetNestedField(md.Object, int64(7), "spec", "replicas")
		labels := md.GetLabels()
		labels["edited-by"] = "hand"
		md.SetLabels(labels)
		if err := k8s.Patch(ctx, md, patch, client.FieldOwner("someone")); err != nil {
			t.Fatal(err)
		}
		eventually(t, "md-a is back at 4 replicas", func() (bool, error) {
			md := poolObject(t, ns, "dev", mdGVK, "md-a")
			return fmt.Sprint(nested(md, "spec", "replicas")) == "4", nil
		})
		if got := poolObject(t, ns, "dev", mdGVK, "md-a").GetLabels()["edited-by"]; got != "hand" {
			t.Errorf("a label set by hand was not preserved: %q", got)
		}
	})

	t.Run("a template change through the class rotates the clone", func(t *testing.T) {
		// A MachineSet still made from the old clone, as the MachineSet
		// controller leaves it during a rollout: the clone must outlive it,
		// read through the agent's cache, which keeps of MachineSets only
		// their template references.
		ms := &unstructured.Unstructured{}
		ms.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "MachineSet"})
		ms.SetNamespace(ns)
		ms.SetName("md-a-old")
		ms.SetLabels(map[string]string{"cluster.x-k8s.io/cluster-name": "dev"})
		ms.Object["spec"] = map[string]any{
			"clusterName": "dev",
			"selector":    map[string]any{"matchLabels": map[string]any{"set": "md-a-old"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"set": "md-a-old"}},
				"spec": map[string]any{
					"clusterName":       "dev",
					"bootstrap":         map[string]any{"dataSecretName": "none"},
					"infrastructureRef": map[string]any{"apiVersion": dmtGVK.GroupVersion().String(), "kind": dmtGVK.Kind, "name": infraA},
				},
			},
		}
		if err := k8s.Create(ctx, ms); err != nil {
			t.Fatal(err)
		}
		tpl, err := get(t, dmtGVK, ns, "docker-kubeadm-worker")
		if err != nil {
			t.Fatal(err)
		}
		// preLoadImages is not set by any of the class's patches.
		_ = unstructured.SetNestedStringSlice(tpl.Object, []string{"busybox:1.36"}, "spec", "template", "spec", "preLoadImages")
		if err := k8s.Update(ctx, tpl); err != nil {
			t.Fatal(err)
		}
		var newName string
		eventually(t, "md-a references a new DockerMachineTemplate", func() (bool, error) {
			md := poolObject(t, ns, "dev", mdGVK, "md-a")
			newName, _ = nested(md, "spec", "template", "spec", "infrastructureRef", "name").(string)
			return newName != infraA, nil
		})
		clone, err := get(t, dmtGVK, ns, newName)
		if err != nil {
			t.Fatal(err)
		}
		if imgs := fmt.Sprint(nested(clone, "spec", "template", "spec", "preLoadImages")); imgs != "[busybox:1.36]" {
			t.Errorf("new clone %s has preLoadImages %s", newName, imgs)
		}
		events := &corev1.EventList{}
		if err := k8s.List(ctx, events, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		rotated := false
		for _, e := range events.Items {
			rotated = rotated || (e.Reason == "TemplateRotated" && strings.Contains(e.Message, newName+" to replace "+infraA))
		}
		if !rotated {
			t.Errorf("no TemplateRotated event names %s replacing %s", newName, infraA)
		}
		waitIdle(t, agent)
		if _, err := get(t, dmtGVK, ns, infraA); err != nil {
			t.Errorf("the old clone %s, still used by MachineSet %s: %v", infraA, ms.GetName(), err)
		}
		if err := k8s.Delete(ctx, ms); err != nil {
			t.Fatal(err)
		}
		// Here no MachineDeployment status moves, as it would when Cluster
		// API removes the old MachineSet, so a label brings the next reconcile.
		if err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) {
			if topo.Labels == nil {
				topo.Labels = map[string]string{}
			}
			topo.Labels["touched"] = "after-the-machineset"
		}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the old clone is deleted once no MachineSet uses it", func() (bool, error) {
			_, err := get(t, dmtGVK, ns, infraA)
			return client.IgnoreNotFound(err) == nil && err != nil, nil
		})
	})

	t.Run("the class reports its variables", func(t *testing.T) {
		c := &v1alpha2.TopologyClass{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ex.Class), c); err != nil {
			t.Fatal(err)
		}
		if c.Status.ObservedGeneration != c.Generation || len(c.Status.Variables) != len(c.Spec.Variables) || c.Status.Variables[0].Definitions[0].From != v1alpha2.VariableDefinitionFromInline {
			t.Errorf("class status %+v", c.Status)
		}
	})

	t.Run("infrastructure is Provisioned once the provider says so", func(t *testing.T) {
		c, err := get(t, schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Cluster"}, ns, "dev")
		if err != nil {
			t.Fatal(err)
		}
		dc, err := get(t, schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Kind: "DockerCluster"}, ns, nested(c, "spec", "infrastructureRef", "name").(string))
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(dc.Object, true, "status", "ready")
		if err := k8s.Status().Update(ctx, dc); err != nil {
			t.Fatal(err)
		}
		eventually(t, "status.infrastructure is Provisioned", func() (bool, error) {
			return getTopology(t, ns, "dev").Status.Infrastructure == v1alpha2.InfrastructureProvisioned, nil
		})
	})

	t.Run("paused changes nothing until it is cleared", func(t *testing.T) {
		if err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) {
			topo.Spec.Paused = true
			five := int32(5)
			topo.Spec.Workers.MachineDeployments[0].Replicas = &five
		}); err != nil {
			t.Fatal(err)
		}
		reconciled(t, ns, "dev", controller.ReasonPaused)
		if r := fmt.Sprint(nested(poolObject(t, ns, "dev", mdGVK, "md-a"), "spec", "replicas")); r != "4" {
			t.Errorf("md-a has %s replicas while paused, want 4", r)
		}
		if err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) { topo.Spec.Paused = false }); err != nil {
			t.Fatal(err)
		}
		eventually(t, "md-a has 5 replicas after unpausing", func() (bool, error) {
			return fmt.Sprint(nested(poolObject(t, ns, "dev", mdGVK, "md-a"), "spec", "replicas")) == "5", nil
		})
	})

	t.Run("a MachineDeployment added to the topology is created", func(t *testing.T) {
		if err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) {
			md := topo.Spec.Workers.MachineDeployments[0].DeepCopy()
			md.Name = "md-b"
			topo.Spec.Workers.MachineDeployments = append(topo.Spec.Workers.MachineDeployments, *md)
		}); err != nil {
			t.Fatal(err)
		}
		// The control plane is still provisioning (no status.version), so a new
		// MachineDeployment waits, as upstream's does.
		reconciledSaying(t, ns, "dev", controller.ReasonClusterUpgrading, "MachineDeployment md-b creation deferred while control plane upgrade is in progress")
		if poolObject(t, ns, "dev", mdGVK, "md-b") != nil {
			t.Fatal("md-b was created while the control plane was provisioning")
		}
		setControlPlaneStatus(t, ns, "dev", "v1.33.1")
		eventually(t, "md-b exists with its templates", func() (bool, error) {
			return poolObject(t, ns, "dev", mdGVK, "md-b") != nil && poolObject(t, ns, "dev", dmtGVK, "md-b") != nil, nil
		})
	})

	t.Run("a MachineDeployment removed from the topology is deleted with its templates", func(t *testing.T) {
		gpu := poolObject(t, ns, "dev", mdGVK, "md-gpu")
		if gpu == nil {
			t.Fatal("no MachineDeployment for md-gpu")
		}
		if err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) {
			var keep []v1alpha2.MachineDeploymentTopology
			for _, md := range topo.Spec.Workers.MachineDeployments {
				if md.Name != "md-gpu" {
					keep = append(keep, md)
				}
			}
			topo.Spec.Workers.MachineDeployments = keep
		}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "md-gpu and its templates are gone", func() (bool, error) {
			for _, gvk := range []schema.GroupVersionKind{mdGVK, dmtGVK, {Group: "bootstrap.cluster.x-k8s.io", Version: "v1beta1", Kind: "KubeadmConfigTemplate"}} {
				if o := poolObject(t, ns, "dev", gvk, "md-gpu"); o != nil {
					return false, fmt.Errorf("%s %s still exists", gvk.Kind, o.GetName())
				}
			}
			return true, nil
		})
		if poolObject(t, ns, "dev", mdGVK, "md-a") == nil {
			t.Error("md-a was deleted too")
		}
	})
}
