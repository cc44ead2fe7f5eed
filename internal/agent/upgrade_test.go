package agent

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/controller"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

var machineGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Machine"}

// setControlPlaneStatus plays the control plane provider: it reports the
// version its Machines run.
func setControlPlaneStatus(t *testing.T, ns, cluster, version string) {
	t.Helper()
	c, err := get(t, schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Cluster"}, ns, cluster)
	if err != nil {
		t.Fatal(err)
	}
	kcp, err := get(t, kcpGVK, ns, nested(c, "spec", "controlPlaneRef", "name").(string))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"version": version, "replicas": int64(3), "readyReplicas": int64(3), "updatedReplicas": int64(3), "initialized": true, "ready": true} {
		_ = unstructured.SetNestedField(kcp.Object, v, "status", k)
	}
	if err := k8s.Status().Update(context.Background(), kcp); err != nil {
		t.Fatal(err)
	}
}

// machineOf plays the MachineSet controller: one Machine of a MachineDeployment at a version.
func machineOf(t *testing.T, md *unstructured.Unstructured, version string) *unstructured.Unstructured {
	t.Helper()
	m := &unstructured.Unstructured{}
	m.SetGroupVersionKind(machineGVK)
	m.SetNamespace(md.GetNamespace())
	m.SetName(md.GetName() + "-machine")
	m.SetLabels(map[string]string{clusterv1.ClusterNameLabel: "dev", "cluster.x-k8s.io/deployment-name": md.GetName()})
	m.Object["spec"] = map[string]any{
		"clusterName":       "dev",
		"version":           version,
		"bootstrap":         map[string]any{"dataSecretName": "unused"},
		"infrastructureRef": map[string]any{"apiVersion": dmtGVK.GroupVersion().String(), "kind": "DockerMachine", "name": md.GetName() + "-machine"},
	}
	if err := k8s.Create(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	return m
}

func mdVersion(t *testing.T, ns, pool string) string {
	t.Helper()
	v, _ := nested(poolObject(t, ns, "dev", mdGVK, pool), "spec", "template", "spec", "version").(string)
	return v
}

func partPhase(topo *v1alpha2.Topology, pool string) v1alpha2.PartPhase {
	for _, p := range topo.Status.MachineDeployments {
		if p.Name == pool {
			return p.Phase
		}
	}
	return ""
}

func TestUpgradeSequence(t *testing.T) {
	ctx := context.Background()
	outer := t
	agent, ex := startExample(t, "upgrade")
	ns := ex.Topology.Namespace
	setControlPlaneStatus(t, ns, "dev", "v1.33.1")
	mdA := poolObject(t, ns, "dev", mdGVK, "md-a")
	machine := machineOf(t, mdA, "v1.33.1")
	reconciled(t, ns, "dev", controller.ReasonSucceeded)

	t.Run("the control plane upgrades first", func(t *testing.T) {
		if err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) { topo.Spec.Version = "v1.34.0" }); err != nil {
			t.Fatal(err)
		}
		topo := reconciledSaying(t, ns, "dev", controller.ReasonClusterUpgrading, "MachineDeployments md-a, md-gpu pending upgrade to version v1.34.0")
		c, _ := get(t, schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Cluster"}, ns, "dev")
		kcp, _ := get(t, kcpGVK, ns, nested(c, "spec", "controlPlaneRef", "name").(string))
		if v := nested(kcp, "spec", "version"); v != "v1.34.0" {
			t.Errorf("control plane spec.version %v, want v1.34.0", v)
		}
		for _, pool := range []string{"md-a", "md-gpu"} {
			if v := mdVersion(t, ns, pool); v != "v1.33.1" {
				t.Errorf("%s moved to %s before the control plane finished", pool, v)
			}
		}
		if topo.Status.ControlPlane.Phase != v1alpha2.PhaseUpgrading {
			t.Errorf("control plane phase %s, want Upgrading", topo.Status.ControlPlane.Phase)
		}
	})

	t.Run("a version change during the rollout is refused", func(t *testing.T) {
		err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) { topo.Spec.Version = "v1.35.0" })
		if err == nil || !strings.Contains(err.Error(), "cannot change the version while") {
			t.Fatalf("got %v, want the webhook to refuse a version change mid-rollout", err)
		}
		if v := getTopology(t, ns, "dev").Spec.Version; v != "v1.34.0" {
			t.Errorf("stored version %s after a refused change", v)
		}
	})

	t.Run("then MachineDeployments, one at a time", func(t *testing.T) {
		setControlPlaneStatus(t, ns, "dev", "v1.34.0")
		eventually(t, "md-a upgrades", func() (bool, error) { return mdVersion(t, ns, "md-a") == "v1.34.0", nil })
		// md-a's Machine still runs v1.33.1, so md-a is upgrading and md-gpu waits.
		waitIdle(t, agent)
		if v := mdVersion(t, ns, "md-gpu"); v != "v1.33.1" {
			t.Errorf("md-gpu moved to %s while md-a was upgrading (concurrency 1)", v)
		}
		if p := partPhase(getTopology(t, ns, "dev"), "md-gpu"); p != v1alpha2.PhasePending {
			t.Errorf("md-gpu phase %s, want Pending", p)
		}
	})

	t.Run("defer holds a MachineDeployment back", func(t *testing.T) {
		if err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) {
			md := &topo.Spec.Workers.MachineDeployments[1]
			if md.Metadata.Annotations == nil {
				md.Metadata.Annotations = map[string]string{}
			}
			md.Metadata.Annotations[clusterv1.ClusterTopologyDeferUpgradeAnnotation] = ""
		}); err != nil {
			t.Fatal(err)
		}
		// Only once the agent has seen the annotation may md-a finish: otherwise
		// the two changes race, as they would for a user. While md-a rolls,
		// the cluster is upgrading; as upstream, deferral is the reason only
		// once nothing else moves.
		reconciledSaying(t, ns, "dev", controller.ReasonClusterUpgrading, "MachineDeployment md-gpu upgrade to version v1.34.0 deferred")
		// md-a's Machine rolls to the new version: md-a is done.
		m, err := get(t, machineGVK, ns, machine.GetName())
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(m.Object, "v1.34.0", "spec", "version")
		if err := k8s.Update(ctx, m); err != nil {
			t.Fatal(err)
		}
		var topo *v1alpha2.Topology
		eventually(t, "md-a is up to date once its Machine runs v1.34.0", func() (bool, error) {
			topo = reconciled(t, ns, "dev", controller.ReasonMachineDeploymentsDeferred)
			return partPhase(topo, "md-a") == v1alpha2.PhaseUpToDate, nil
		})
		if v := mdVersion(t, ns, "md-gpu"); v != "v1.33.1" {
			t.Errorf("deferred md-gpu moved to %s", v)
		}
		if p := partPhase(topo, "md-gpu"); p != v1alpha2.PhaseDeferred {
			t.Errorf("md-gpu phase %s, want Deferred", p)
		}
	})

	t.Run("a restarted agent finishes the rollout without duplicates", func(t *testing.T) {
		before := kindCounts(live(t, ns, "dev"))
		agent.stop()
		if err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) {
			delete(topo.Spec.Workers.MachineDeployments[1].Metadata.Annotations, clusterv1.ClusterTopologyDeferUpgradeAnnotation)
		}); err == nil {
			t.Fatal("the webhook accepted a change while no agent serves it")
		}
		agent = startAgent(outer)
		if err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) {
			delete(topo.Spec.Workers.MachineDeployments[1].Metadata.Annotations, clusterv1.ClusterTopologyDeferUpgradeAnnotation)
		}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "md-gpu upgrades", func() (bool, error) { return mdVersion(t, ns, "md-gpu") == "v1.34.0", nil })
		reconciled(t, ns, "dev", controller.ReasonSucceeded)
		waitIdle(t, agent)
		if after := kindCounts(live(t, ns, "dev")); after != before {
			t.Errorf("objects after the restart %s, before %s", after, before)
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(mdGVK.GroupVersion().WithKind("MachineDeploymentList"))
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 2 {
			t.Errorf("%d MachineDeployments, want 2", len(list.Items))
		}
	})
}
