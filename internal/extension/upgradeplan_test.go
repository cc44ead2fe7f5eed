package extension_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/internal/extension"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// upgradeRequest is a Topology at v1.35.0 of class quick-start whose
// control plane and workers are at v1.33.1, with its Cluster as stored.
func upgradeRequest() upgrade.UpgradePlanRequest {
	cluster := &unstructured.Unstructured{}
	cluster.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	cluster.SetKind("Cluster")
	cluster.SetNamespace("team-a")
	cluster.SetName("dev")
	cluster.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl-topology"}})
	cluster.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "me"})
	_ = unstructured.SetNestedField(cluster.Object, "Provisioned", "status", "phase")
	topo := &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "dev"}}
	topo.Spec.ClassRef.Name = "quick-start"
	topo.Spec.Version = "v1.35.0"
	return upgrade.UpgradePlanRequest{Cluster: cluster, Topology: topo, Desired: "v1.35.0", ControlPlane: "v1.33.1", MinWorkers: "v1.33.1"}
}

// TestUpgradePlanner asks a GenerateUpgradePlan handler over the wire:
// the request carries the Cluster as upstream sends it, with the class and
// version where an extension written for upstream reads them; the answer is
// reused for the same versions until the cache's time runs out, and an
// answer the engine refuses is not reused.
func TestUpgradePlanner(t *testing.T) {
	srv, c := registered(t)
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	planner := extension.NewUpgradePlanner(c, func() time.Time { return now })
	ctx := context.Background()
	req := upgradeRequest()

	cp, workers, err := planner.GenerateUpgradePlan(ctx, "upgrade-plan.ext", req)
	if err != nil || !slices.Equal(cp, []string{"v1.34.0", "v1.35.0"}) || len(workers) != 0 {
		t.Fatalf("plan %v / %v, %v; want the control plane through v1.34.0", cp, workers, err)
	}
	sent := srv.UpgradePlanRequests()
	if len(sent) != 1 {
		t.Fatalf("%d requests, want 1", len(sent))
	}
	got := sent[0]
	if got.APIVersion != extension.APIVersion || got.Kind != "GenerateUpgradePlanRequest" || got.FromControlPlaneKubernetesVersion != "v1.33.1" ||
		got.FromWorkersKubernetesVersion != "v1.33.1" || got.ToKubernetesVersion != "v1.35.0" {
		t.Errorf("request %+v", got)
	}
	sentCluster := got.Cluster
	if sentCluster.APIVersion != "cluster.x-k8s.io/v1beta2" || sentCluster.Kind != "Cluster" || sentCluster.Name != "dev" {
		t.Errorf("the request's cluster is %s %s %q, want the v1beta2 Cluster dev", sentCluster.APIVersion, sentCluster.Kind, sentCluster.Name)
	}
	if class := sentCluster.Spec.Topology.ClassRef.Name; class != "quick-start" {
		t.Errorf("spec.topology.classRef.name %q, want quick-start", class)
	}
	if v := sentCluster.Spec.Topology.Version; v != "v1.35.0" {
		t.Errorf("spec.topology.version %q, want v1.35.0", v)
	}
	if sentCluster.Status.Phase != "" || len(sentCluster.ManagedFields) > 0 || !maps.Equal(sentCluster.Annotations, map[string]string{"keep": "me"}) {
		t.Errorf("the Cluster was sent with status, managedFields or last-applied configuration: %+v", sentCluster)
	}
	if req.Cluster.GetManagedFields() == nil {
		t.Error("the caller's Cluster lost its managedFields")
	}

	// Same versions: the answer is reused; other versions, or a stale
	// answer, ask again.
	if _, _, err := planner.GenerateUpgradePlan(ctx, "upgrade-plan.ext", req); err != nil || len(srv.UpgradePlanRequests()) != 1 {
		t.Errorf("asked again for the same versions: %d requests, %v", len(srv.UpgradePlanRequests()), err)
	}
	moved := req
	moved.ControlPlane = "v1.34.0"
	if cp, _, err := planner.GenerateUpgradePlan(ctx, "upgrade-plan.ext", moved); err != nil || !slices.Equal(cp, []string{"v1.35.0"}) || len(srv.UpgradePlanRequests()) != 2 {
		t.Errorf("from v1.34.0: %v, %v, %d requests", cp, err, len(srv.UpgradePlanRequests()))
	}
	now = now.Add(extension.UpgradePlanCacheTTL)
	if _, _, err := planner.GenerateUpgradePlan(ctx, "upgrade-plan.ext", req); err != nil || len(srv.UpgradePlanRequests()) != 3 {
		t.Errorf("a stale answer was reused: %d requests, %v", len(srv.UpgradePlanRequests()), err)
	}

	// A plan that skips a minor is handed to the engine, which refuses it,
	// and the extension is asked again next time.
	other := req
	other.Desired = "v1.36.0"
	srv.SetUpgradePlan(&runtimehooksv1.GenerateUpgradePlanResponse{CommonResponse: runtimehooksv1.CommonResponse{Status: runtimehooksv1.ResponseStatusSuccess},
		ControlPlaneUpgrades: []runtimehooksv1.UpgradeStep{{Version: "v1.36.0"}}})
	for range 2 {
		if cp, _, err := planner.GenerateUpgradePlan(ctx, "upgrade-plan.ext", other); err != nil || !slices.Equal(cp, []string{"v1.36.0"}) {
			t.Errorf("the refused plan: %v, %v", cp, err)
		}
	}
	if n := len(srv.UpgradePlanRequests()); n != 5 {
		t.Errorf("%d requests; a plan the engine refuses must not be reused", n)
	}

	// The extension's own failure is an error naming the handler.
	srv.SetUpgradePlan(&runtimehooksv1.GenerateUpgradePlanResponse{CommonResponse: runtimehooksv1.CommonResponse{Status: runtimehooksv1.ResponseStatusFailure, Message: "v1.37 is not certified"}})
	other.Desired = "v1.37.0"
	if _, _, err := planner.GenerateUpgradePlan(ctx, "upgrade-plan.ext", other); err == nil || !strings.Contains(err.Error(), "v1.37 is not certified") || !strings.Contains(err.Error(), "upgrade-plan.ext") {
		t.Errorf("a failing extension: %v", err)
	}
	if _, _, err := planner.GenerateUpgradePlan(ctx, "missing.ext", req); err == nil {
		t.Error("an unknown extension gave a plan")
	}
}

// TestUpgradePlannerSendsAV1beta1ClusterAsV1beta2: on a management cluster
// whose Cluster is read at v1beta1, the hook still gets a v1beta2 Cluster,
// as upstream's v1beta2 hooks do, converted by upstream's conversion.
func TestUpgradePlannerSendsAV1beta1ClusterAsV1beta2(t *testing.T) {
	srv, c := registered(t)
	req := upgradeRequest()
	req.Cluster.SetAPIVersion("cluster.x-k8s.io/v1beta1")
	ref := map[string]any{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlane", "name": "dev-cp"}
	if err := unstructured.SetNestedMap(req.Cluster.Object, ref, "spec", "controlPlaneRef"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := extension.NewUpgradePlanner(c, nil).GenerateUpgradePlan(context.Background(), "upgrade-plan.ext", req); err != nil {
		t.Fatal(err)
	}
	sent := srv.UpgradePlanRequests()
	if len(sent) != 1 {
		t.Fatalf("%d requests, want 1", len(sent))
	}
	got := sent[0].Cluster
	if got.APIVersion != "cluster.x-k8s.io/v1beta2" {
		t.Errorf("the Cluster was sent at %s, want cluster.x-k8s.io/v1beta2", got.APIVersion)
	}
	if cp := got.Spec.ControlPlaneRef; cp.APIGroup != "controlplane.cluster.x-k8s.io" || cp.Kind != "KubeadmControlPlane" || cp.Name != "dev-cp" {
		t.Errorf("spec.controlPlaneRef %+v, want the v1beta2 reference to KubeadmControlPlane dev-cp", cp)
	}
	if got.Spec.Topology.ClassRef.Name != "quick-start" {
		t.Errorf("spec.topology.classRef.name %q, want quick-start", got.Spec.Topology.ClassRef.Name)
	}
}
