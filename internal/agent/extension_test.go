package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/controller"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestExternalPatches registers a Runtime SDK extension server with a
// TopologyExtension and stamps a Topology from a class with an external
// patch: discovery fills the extension's status, the extension's patches
// reach the generated objects, and its validator's refusal stops the
// reconcile with the extension's message.
func TestExternalPatches(t *testing.T) {
	ctx := context.Background()
	startAgent(t)
	ns := newNamespace(t, "external")
	srv, extName := registerExtension(t, ns)

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
	// The webhook reads the class from the agent's cache, which may lag the
	// status just read; until it has caught up it answers that image is not
	// defined. Once it refuses the value, Topologies created after are
	// defaulted from the discovered variable too.
	eventually(t, "the webhook refuses an image that is not a string, against the discovered schema", func() (bool, error) {
		err := k8s.Create(ctx, bad.DeepCopy())
		if err == nil {
			t.Fatal("the webhook let an image that is not a string through")
		}
		return strings.Contains(err.Error(), "spec.variables[image].value: Invalid value"), err
	})
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

// registerExtension starts a Runtime SDK extension server, registers it
// with a TopologyExtension named for ns and waits until the agent has
// discovered its handlers.
func registerExtension(t *testing.T, ns string) (*fixture.ExtensionServer, string) {
	t.Helper()
	ctx := context.Background()
	srv := fixture.StartExtensionServer()
	t.Cleanup(srv.Close)
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
		want := fmt.Sprintf("generate.%[1]s,validate.%[1]s,variables.%[1]s,upgrade-plan.%[1]s", extName)
		if strings.Join(names, ",") != want {
			return false, fmt.Errorf("handlers %v, want %s", names, want)
		}
		return true, nil
	})
	return srv, extName
}

// TestUpgradePlanFromExtension: a class that names an upgrade-plan
// extension and lists no kubernetesVersions admits an upgrade over two
// minors; the agent asks the extension for the chain, refuses an answer
// that skips a minor without writing anything, and walks the control plane
// through the extension's intermediate version before the workers move.
func TestUpgradePlanFromExtension(t *testing.T) {
	ctx := context.Background()
	startAgent(t)
	ns := newNamespace(t, "upgrade-plan")
	srv, extName := registerExtension(t, ns)
	ex := loadExample(t, ns)
	ex.Class.Spec.Upgrade.External.GenerateUpgradePlanExtension = "upgrade-plan." + extName
	createClass(t, ex)
	if err := k8s.Create(ctx, ex.Topology.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	reconciled(t, ns, "dev", controller.ReasonSucceeded)
	setControlPlaneStatus(t, ns, "dev", "v1.33.1")
	kcpVersion := func() string {
		v, _ := nested(objectOfKind(t, ns, "KubeadmControlPlane"), "spec", "version").(string)
		return v
	}

	srv.SetUpgradePlan(&runtimehooksv1.GenerateUpgradePlanResponse{CommonResponse: runtimehooksv1.CommonResponse{Status: runtimehooksv1.ResponseStatusSuccess},
		ControlPlaneUpgrades: []runtimehooksv1.UpgradeStep{{Version: "v1.35.0"}}})
	if err := updateTopology(t, ns, "dev", func(topo *v1alpha2.Topology) { topo.Spec.Version = "v1.35.0" }); err != nil {
		t.Fatalf("two minors at once, with an upgrade-plan extension: %v", err)
	}
	reconciledSaying(t, ns, "dev", controller.ReasonFailed, "upgrade-plan extension upgrade-plan."+extName+" answered a control plane plan [v1.35.0]: step 1, v1.35.0, skips a minor after v1.33.1")
	if v := kcpVersion(); v != "v1.33.1" {
		t.Errorf("the control plane moved to %s on a refused plan", v)
	}

	srv.SetUpgradePlan(nil)
	eventually(t, "the control plane takes the extension's first step", func() (bool, error) {
		return kcpVersion() == "v1.34.0", fmt.Errorf("control plane at %s", kcpVersion())
	})
	topo := reconciledSaying(t, ns, "dev", controller.ReasonClusterUpgrading, "v1.35.0")
	// v1.34.0 is written, so what is left is the last step, for both.
	if got := topo.Status.UpgradePlan; got == nil || !slices.Equal(got.ControlPlane, []string{"v1.35.0"}) || !slices.Equal(got.Workers, []string{"v1.35.0"}) {
		t.Errorf("status.upgradePlan %+v, want v1.35.0 left for the control plane and the workers", got)
	}
	var asked []string
	for _, r := range srv.UpgradePlanRequests() {
		asked = append(asked, r.FromControlPlaneKubernetesVersion+"/"+r.FromWorkersKubernetesVersion+"→"+r.ToKubernetesVersion)
		if r.Cluster.Name != "dev" || r.Cluster.Spec.Topology.Version != "v1.35.0" {
			t.Errorf("the extension was sent Cluster %q at topology version %q, want dev at v1.35.0", r.Cluster.Name, r.Cluster.Spec.Topology.Version)
		}
	}
	if want := "v1.33.1/v1.33.1→v1.35.0"; len(asked) == 0 || asked[0] != want {
		t.Errorf("the extension was asked %v, want first %s", asked, want)
	}

	setControlPlaneStatus(t, ns, "dev", "v1.34.0")
	eventually(t, "the control plane takes the last step", func() (bool, error) {
		return kcpVersion() == "v1.35.0", fmt.Errorf("control plane at %s", kcpVersion())
	})
	for _, pool := range []string{"md-a", "md-gpu"} {
		if v := mdVersion(t, ns, pool); v != "v1.33.1" {
			t.Errorf("%s moved to %s while the control plane was on its way", pool, v)
		}
	}
	setControlPlaneStatus(t, ns, "dev", "v1.35.0")
	eventually(t, "md-a follows the control plane to v1.35.0", func() (bool, error) {
		return mdVersion(t, ns, "md-a") == "v1.35.0", fmt.Errorf("md-a at %s", mdVersion(t, ns, "md-a"))
	})
	seen := map[string]int{}
	for _, r := range srv.UpgradePlanRequests() {
		seen[r.FromControlPlaneKubernetesVersion+"/"+r.FromWorkersKubernetesVersion]++
	}
	// A good answer is reused by every reconcile until the versions move.
	// (From v1.33.1 the refused plan was asked for again on each retry.)
	for _, from := range []string{"v1.34.0/v1.33.1", "v1.35.0/v1.33.1"} {
		if seen[from] != 1 {
			t.Errorf("the extension was asked %d times from %s, want once: %v", seen[from], from, seen)
		}
	}
}
