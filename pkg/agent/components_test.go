package agent

import (
	"bytes"
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/manifests"
)

// componentObjects parses addon-components.yaml with the watch namespace variable
// substituted as clusterctl would.
func componentObjects(t *testing.T, watchNamespace string) []*unstructured.Unstructured {
	t.Helper()
	data := bytes.ReplaceAll(manifests.Components, []byte(`${TOPOLOGY_WATCH_NAMESPACE:=""}`), []byte(watchNamespace))
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(data), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out
}

// TestComponentsApply installs the components on the real API server: every
// object is accepted, and the manager role aggregates its rules.
func TestComponentsApply(t *testing.T) {
	ctx := context.Background()
	for _, o := range componentObjects(t, "") {
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
