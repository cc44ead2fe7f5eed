package agent

import (
	"bytes"
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/manifests"
	"github.com/kubectl-topology/kubectl-topology/pkg/components"
)

// components parses addon-components.yaml with the watch namespace variable
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

func TestComponentsFollowTheClusterctlContract(t *testing.T) {
	objs := componentObjects(t, "")
	byKind := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetLabels()["cluster.x-k8s.io/provider"] != "addon-topology" {
			t.Errorf("%s %s lacks the cluster.x-k8s.io/provider label", o.GetKind(), o.GetName())
		}
		byKind[o.GetKind()] = o
	}
	if ns := byKind["Namespace"]; ns == nil || ns.GetName() != "topology-system" {
		t.Fatalf("no topology-system Namespace in the components")
	}
	d := &appsv1.Deployment{}
	if err := runtimeFromUnstructured(byKind["Deployment"], d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Name != "manager" {
		t.Errorf("container %q, the contract wants \"manager\"", c.Name)
	}
	if !strings.Contains(string(manifests.Components), `--namespace=${TOPOLOGY_WATCH_NAMESPACE:=""}`) {
		t.Error("--namespace is not wired to ${TOPOLOGY_WATCH_NAMESPACE:=\"\"}")
	}
	sc, psc := c.SecurityContext, d.Spec.Template.Spec.SecurityContext
	if sc == nil || psc == nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || len(sc.Capabilities.Drop) != 1 || !*psc.RunAsNonRoot || psc.SeccompProfile == nil {
		t.Errorf("container is not hardened: %+v, pod %+v", sc, psc)
	}
	if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() || c.ReadinessProbe == nil || c.LivenessProbe == nil {
		t.Error("container lacks resource requests/limits or probes")
	}
	if !bytes.Contains(manifests.Metadata, []byte("contract: v1beta1")) {
		t.Error("metadata.yaml does not map a release series to contract v1beta1")
	}
}

func TestComponentsAreGeneratedFromTheirSource(t *testing.T) {
	want, err := components.Render(components.DefaultImage)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, manifests.Components) || string(manifests.Metadata) != components.Metadata {
		t.Fatal("manifests/ is stale: run make manifests")
	}
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
