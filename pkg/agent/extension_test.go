package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
	"github.com/kubectl-topology/kubectl-topology/pkg/controller"
	"github.com/kubectl-topology/kubectl-topology/test/fixture"
)

// TestExternalPatches registers a Runtime SDK extension server with a
// TopologyExtension and stamps a Topology from a class with an external
// patch: discovery fills the extension's status, the extension's patches
// reach the generated objects, and its validator's refusal stops the
// reconcile with the extension's message.
func TestExternalPatches(t *testing.T) {
	ctx := context.Background()
	startAgent(t)
	srv := fixture.StartExtensionServer()
	t.Cleanup(srv.Close)
	ns := newNamespace(t, "external")
	extName := "ext-" + ns

	ext := &v1alpha2.TopologyExtension{ObjectMeta: metav1.ObjectMeta{Name: extName}, Spec: v1alpha2.TopologyExtensionSpec{ClientConfig: srv.ClientConfig()}}
	if err := k8s.Create(ctx, ext); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, ext) })
	eventually(t, "the extension is discovered", func() (bool, error) {
		got := &v1alpha2.TopologyExtension{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: extName}, got); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, controller.DiscoveredCondition)
		if c == nil || c.Status != metav1.ConditionTrue {
			return false, fmt.Errorf("condition %+v", c)
		}
		var names []string
		for _, h := range got.Status.Handlers {
			names = append(names, h.Name)
		}
		want := fmt.Sprintf("generate.%[1]s,validate.%[1]s,variables.%[1]s", extName)
		if strings.Join(names, ",") != want {
			return false, fmt.Errorf("handlers %v, want %s", names, want)
		}
		return true, nil
	})

	ex := loadExample(t, ns)
	generate, validate, discover := "generate."+extName, "validate."+extName, "variables."+extName
	ex.Class.Spec.Patches = append(ex.Class.Spec.Patches, v1alpha2.ClusterClassPatch{Name: "from-extension",
		External: &v1alpha2.ExternalPatchDefinition{GeneratePatchesExtension: &generate, ValidateTopologyExtension: &validate, DiscoverVariablesExtension: &discover}})
	createClass(t, ex)
	eventually(t, "the class lists the variable its extension defines", func() (bool, error) {
		class := &v1alpha2.TopologyClass{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ex.Class), class); err != nil {
			return false, err
		}
		for _, v := range class.Status.Variables {
			if v.Name == "image" && len(v.Definitions) == 1 && v.Definitions[0].From == "from-extension" {
				return true, nil
			}
		}
		return false, fmt.Errorf("status.variables %+v", class.Status.Variables)
	})
	bad := ex.Topology.DeepCopy()
	bad.Name = "bad-image"
	bad.Spec.Variables = append(bad.Spec.Variables, v1alpha2.ClusterVariable{Name: "image", Value: apiextensionsv1.JSON{Raw: []byte("42")}})
	if err := k8s.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "spec.variables[image].value: Invalid value") {
		t.Errorf("an image that is not a string, against the discovered schema: %v", err)
	}
	if err := k8s.Create(ctx, ex.Topology.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	reconciled(t, ns, "dev", controller.ReasonSucceeded)

	kcp := objectOfKind(t, ns, "KubeadmControlPlane")
	if got := nested(kcp, "spec", "kubeadmConfigSpec", "clusterConfiguration", "controllerManager", "extraArgs", "cluster-name"); got != "dev" {
		t.Errorf("the control plane's cluster-name argument is %v; the extension's JSON patch sets it from builtin.cluster.name", got)
	}
	md := poolObject(t, ns, "dev", mdGVK, "md-a")
	infra, err := get(t, dmtGVK, ns, nested(md, "spec", "template", "spec", "infrastructureRef", "name").(string))
	if err != nil {
		t.Fatal(err)
	}
	images, _, _ := unstructured.NestedStringSlice(infra.Object, "spec", "template", "spec", "preLoadImages")
	if strings.Join(images, ",") != "pool-md-a,kindest/node:latest" {
		t.Errorf("md-a's machine template preloads %v; the extension's merge patch sets pool-md-a from builtin.machineDeployment.topologyName and the discovered variable's default", images)
	}
	if _, set := infra.GetLabels()["set-by-extension"]; set {
		t.Error("the extension's metadata change reached the object")
	}

	if err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) {
		for i := range topo.Spec.Variables {
			if topo.Spec.Variables[i].Name == "image" {
				topo.Spec.Variables[i].Value.Raw = []byte(`"registry.example/node:1"`)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "md-a preloads the image the Topology sets", func() (bool, error) {
		md := poolObject(t, ns, "dev", mdGVK, "md-a")
		infra, err := get(t, dmtGVK, ns, nested(md, "spec", "template", "spec", "infrastructureRef", "name").(string))
		if err != nil {
			return false, err
		}
		images, _, _ := unstructured.NestedStringSlice(infra.Object, "spec", "template", "spec", "preLoadImages")
		return strings.Join(images, ",") == "pool-md-a,registry.example/node:1", fmt.Errorf("preloads %v", images)
	})

	srv.SetReject("md-a needs at least 3 replicas")
	if err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) {
		two := int32(2)
		topo.Spec.ControlPlane.Replicas = &two
	}); err != nil {
		t.Fatal(err)
	}
	topo := reconciled(t, ns, "dev", controller.ReasonFailed)
	c := meta.FindStatusCondition(topo.Status.Conditions, controller.ReconciledCondition)
	if !strings.Contains(c.Message, "md-a needs at least 3 replicas") {
		t.Errorf("the refusal is not in the condition: %s", c.Message)
	}
	if got := nested(objectOfKind(t, ns, "KubeadmControlPlane"), "spec", "replicas"); got != int64(3) {
		t.Errorf("a refused change reached the control plane: replicas %v", got)
	}
}

// objectOfKind is the one object of a kind generated for the example's cluster.
func objectOfKind(t *testing.T, ns, kind string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range live(t, ns, "dev") {
		if o.GetKind() == kind {
			return o
		}
	}
	t.Fatalf("no %s generated in %s", kind, ns)
	return nil
}
