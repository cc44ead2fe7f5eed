package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/controller"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func TestWebhooks(t *testing.T) {
	ctx := context.Background()
	_, ex := startExample(t, "webhooks")
	ns := ex.Topology.Namespace

	t.Run("defaults variables from the class", func(t *testing.T) {
		topo := getTopology(t, ns, "dev")
		found := false
		for _, v := range topo.Spec.Variables {
			if v.Name == "imageRepository" {
				found = string(v.Value.Raw) == `""`
			}
		}
		if !found {
			t.Errorf("imageRepository was not defaulted to \"\" by the webhook: %+v", topo.Spec.Variables)
		}
	})

	// Each bad Topology is refused with the field at fault, and nothing is stored.
	bad := []struct {
		name   string
		change func(*v1alpha2.Topology)
		field  string
	}{
		{"unknown MachineDeployment class", func(t *v1alpha2.Topology) { t.Spec.Workers.MachineDeployments[0].Class = "nope" }, "spec.workers.machineDeployments[0].class"},
		{"variable of the wrong type", func(t *v1alpha2.Topology) {
			t.Spec.Variables = append(t.Spec.Variables, v1alpha2.ClusterVariable{Name: "maxPods", Value: apiextensionsv1.JSON{Raw: []byte(`"many"`)}})
		}, "spec.variables"},
		{"undefined variable", func(t *v1alpha2.Topology) {
			t.Spec.Variables = append(t.Spec.Variables, v1alpha2.ClusterVariable{Name: "nosuch", Value: apiextensionsv1.JSON{Raw: []byte(`1`)}})
		}, "spec.variables"},
	}
	for _, tc := range bad {
		t.Run("refuses a Topology with "+tc.name, func(t *testing.T) {
			topo := ex.Topology.DeepCopy()
			topo.Name = "bad"
			tc.change(topo)
			err := k8s.Create(ctx, topo)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("got %v, want Invalid naming %s", err, tc.field)
			}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bad"}, &v1alpha2.Topology{}); !apierrors.IsNotFound(err) {
				t.Errorf("a refused Topology was stored: %v", err)
			}
		})
	}

	versionChanges := []struct {
		name, version, want string
		unsafe              bool
	}{
		{"a downgrade", "v1.32.0", "downgrading", false},
		{"a skipped minor", "v1.35.0", "skips a minor version", false},
		{"a malformed version", "1.34", "spec.version", false},
	}
	for _, tc := range versionChanges {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) { topo.Spec.Version = tc.version })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a refusal mentioning %q", err, tc.want)
			}
			if v := getTopology(t, ns, "dev").Spec.Version; v != "v1.33.1" {
				t.Errorf("version is %s after a refused change", v)
			}
		})
	}

	t.Run("the unsafe annotation lets a skipped minor through", func(t *testing.T) {
		err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) {
			topo.Annotations = map[string]string{clusterv1.ClusterTopologyUnsafeUpdateVersionAnnotation: ""}
			topo.Spec.Version = "v1.35.0"
		})
		if err != nil {
			t.Fatalf("refused with the unsafe annotation: %v", err)
		}
	})

	t.Run("refuses an invalid TopologyClass", func(t *testing.T) {
		c := ex.Class.DeepCopy()
		c.Name = "broken"
		c.Spec.Variables[0].Schema.OpenAPIV3Schema.Type = "notatype"
		err := k8s.Create(ctx, c)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.variables[0]") {
			t.Fatalf("got %v, want Invalid naming spec.variables[0]", err)
		}
	})

	t.Run("refuses a class change that strands its topologies", func(t *testing.T) {
		c := &v1alpha2.TopologyClass{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ex.Class), c); err != nil {
			t.Fatal(err)
		}
		c.Spec.Workers.MachineDeployments = c.Spec.Workers.MachineDeployments[:1] // drops "gpu", which dev uses
		err := k8s.Update(ctx, c)
		if err == nil || !strings.Contains(err.Error(), "Topology "+ns+"/dev would become invalid") {
			t.Fatalf("got %v, want a refusal naming the Topology", err)
		}
	})

	t.Run("refuses to delete a class in use", func(t *testing.T) {
		err := k8s.Delete(ctx, ex.Class.DeepCopy())
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), ns+"/dev") {
			t.Fatalf("got %v, want Forbidden naming %s/dev", err, ns)
		}
	})

	t.Run("refuses a class update that changes a provider", func(t *testing.T) {
		c := &v1alpha2.TopologyClass{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ex.Class), c); err != nil {
			t.Fatal(err)
		}
		c.Spec.ControlPlane.TemplateRef.Kind = "K3sControlPlaneTemplate"
		err := k8s.Update(ctx, c)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.controlPlane.templateRef.kind: Forbidden: the kind cannot change from "KubeadmControlPlaneTemplate" to "K3sControlPlaneTemplate"`) {
			t.Fatalf("got %v, want the control plane kind refused", err)
		}
	})

	// A class like the example's but for another control plane provider,
	// and one that is the example's under a new name.
	incompatible, compatible := ex.Class.DeepCopy(), ex.Class.DeepCopy()
	incompatible.Name, compatible.Name = "other-provider", "docker-kubeadm-v2"
	incompatible.Spec.ControlPlane.TemplateRef.Kind = "K3sControlPlaneTemplate"
	incompatible.Spec.Patches = nil // they patch a KubeadmControlPlaneTemplate, which this class no longer has
	for _, c := range []*v1alpha2.TopologyClass{incompatible, compatible} {
		if err := k8s.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("refuses to switch to a class of another provider", func(t *testing.T) {
		err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) { topo.Spec.ClassRef.Name = "other-provider" })
		if err == nil || !strings.Contains(err.Error(), "cannot switch from class "+ns+"/docker-kubeadm to "+ns+"/other-provider: spec.controlPlane.templateRef.kind") {
			t.Fatalf("got %v, want the switch refused naming the control plane kind", err)
		}
		if c := getTopology(t, ns, "dev").Spec.ClassRef.Name; c != "docker-kubeadm" {
			t.Errorf("class is %s after a refused switch", c)
		}
	})
	t.Run("refuses to switch to a class that does not exist", func(t *testing.T) {
		err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) { topo.Spec.ClassRef.Name = "nope" })
		if err == nil || !strings.Contains(err.Error(), "TopologyClass "+ns+"/nope does not exist") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("switches to a compatible class", func(t *testing.T) {
		if err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) { topo.Spec.ClassRef.Name = "docker-kubeadm-v2" }); err != nil {
			t.Fatalf("a switch between compatible classes was refused: %v", err)
		}
		eventually(t, "the agent reconciles dev with its new class", func() (bool, error) {
			topo := getTopology(t, ns, "dev")
			c, current := fixture.Reconciled(topo)
			// The version moved to v1.35.0 above with no provider to roll it out.
			return current && c.Reason == controller.ReasonClusterUpgrading, fmt.Errorf("condition %+v", c)
		})
		if err := k8s.Delete(ctx, ex.Class.DeepCopy()); err != nil {
			t.Errorf("the old class is still held after the switch: %v", err)
		}
	})
}
