package extension_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
	var cluster map[string]any
	if err := json.Unmarshal(got.Cluster.Raw, &cluster); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: cluster}
	if class, _, _ := unstructured.NestedString(cluster, "spec", "topology", "classRef", "name"); class != "quick-start" {
		t.Errorf("spec.topology.classRef.name %q, want quick-start", class)
	}
	if v, _, _ := unstructured.NestedString(cluster, "spec", "topology", "version"); v != "v1.35.0" {
		t.Errorf("spec.topology.version %q, want v1.35.0", v)
	}
	if _, has := cluster["status"]; has || len(u.GetManagedFields()) > 0 || u.GetAnnotations()["keep"] != "me" || len(u.GetAnnotations()) != 1 {
		t.Errorf("the Cluster was sent with status, managedFields or last-applied configuration: %v", cluster)
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
	srv.SetUpgradePlan(&extension.GenerateUpgradePlanResponse{CommonResponse: extension.CommonResponse{Status: extension.StatusSuccess},
		ControlPlaneUpgrades: []extension.UpgradeStep{{Version: "v1.36.0"}}})
	for range 2 {
		if cp, _, err := planner.GenerateUpgradePlan(ctx, "upgrade-plan.ext", other); err != nil || !slices.Equal(cp, []string{"v1.36.0"}) {
			t.Errorf("the refused plan: %v, %v", cp, err)
		}
	}
	if n := len(srv.UpgradePlanRequests()); n != 5 {
		t.Errorf("%d requests; a plan the engine refuses must not be reused", n)
	}

	// The extension's own failure is an error naming the handler.
	srv.SetUpgradePlan(&extension.GenerateUpgradePlanResponse{CommonResponse: extension.CommonResponse{Status: extension.StatusFailure, Message: "v1.37 is not certified"}})
	other.Desired = "v1.37.0"
	if _, _, err := planner.GenerateUpgradePlan(ctx, "upgrade-plan.ext", other); err == nil || !strings.Contains(err.Error(), "v1.37 is not certified") || !strings.Contains(err.Error(), "upgrade-plan.ext") {
		t.Errorf("a failing extension: %v", err)
	}
	if _, _, err := planner.GenerateUpgradePlan(ctx, "missing.ext", req); err == nil {
		t.Error("an unknown extension gave a plan")
	}
}
