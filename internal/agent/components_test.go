package agent

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/manifests"
)

// TestComponentsApply installs the components on the real API server: every
// object is accepted, and the manager role aggregates its rules.
func TestComponentsApply(t *testing.T) {
	ctx := context.Background()
	objs, err := components.Transform(manifests.Components, nil, components.Namespace, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := k8s.Patch(ctx, o, client.Apply, client.FieldOwner("test"), client.ForceOwnership); err != nil { //nolint:staticcheck // SSA of arbitrary YAML
			t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	eventually(t, "the manager ClusterRole aggregates the topology rules", func() (bool, error) {
		role := &rbacv1.ClusterRole{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: "topology-manager-role"}, role); err != nil {
			return false, err
		}
		for _, r := range role.Rules {
			for _, res := range r.Resources {
				if res == "topologies" {
					return true, nil
				}
			}
		}
		return false, nil
	})
}
