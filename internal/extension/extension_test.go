package extension_test

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/patches"
	"github.com/kubectl-topology/kubectl-topology/internal/extension"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func registered(t *testing.T) (*fixture.ExtensionServer, *extension.Client) {
	t.Helper()
	srv := fixture.StartExtensionServer()
	t.Cleanup(srv.Close)
	c := &extension.Client{Registry: extension.NewRegistry()}
	handlers, err := c.Discover(context.Background(), "ext", srv.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range handlers {
		names = append(names, h.Name+"="+h.RequestHook.Hook)
	}
	if strings.Join(names, ",") != "generate=GeneratePatches,validate=ValidateTopology,variables=DiscoverVariables,upgrade-plan=GenerateUpgradePlan" {
		t.Fatalf("discovered %v", names)
	}
	if err := c.Registry.Set("ext", v1alpha2.TopologyExtensionSpec{ClientConfig: srv.ClientConfig()}, handlers); err != nil {
		t.Fatal(err)
	}
	return srv, c
}

func template(kind string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "x.io/v1beta1", "kind": kind,
		"metadata": map[string]any{"name": strings.ToLower(kind)}, "spec": map[string]any{"template": map[string]any{"spec": spec}}}}
}

func targets() []*patches.Target {
	mdBuiltins := &patches.Builtins{MachineDeployment: &patches.WorkerBuiltins{TopologyName: "md-a"}}
	return []*patches.Target{
		{Object: template("KubeadmControlPlaneTemplate", map[string]any{"kubeadmConfigSpec": map[string]any{"clusterConfiguration": map[string]any{}}}), Description: "control plane template",
			Holder: patches.Holder{APIVersion: "cluster.x-k8s.io/v1beta1", Kind: "Cluster", Namespace: "ns", Name: "dev", FieldPath: "spec.controlPlaneRef"}},
		{Object: template("DockerMachineTemplate", map[string]any{}), Builtins: mdBuiltins, Description: "md-a infrastructure template",
			Overrides: []v1alpha2.ClusterVariable{{Name: "image", Value: apiextensionsv1.JSON{Raw: []byte(`"custom:1"`)}}},
			Holder:    patches.Holder{APIVersion: "cluster.x-k8s.io/v1beta1", Kind: "MachineDeployment", Namespace: "ns", Name: "dev-md-a-x", FieldPath: "spec.template.spec.infrastructureRef"}},
	}
}

func classWith(discovered bool) *v1alpha2.TopologyClass {
	c := &v1alpha2.TopologyClass{}
	if discovered {
		c.Status.Variables = []v1alpha2.ClusterClassStatusVariable{{Name: "image", Definitions: []v1alpha2.ClusterClassStatusVariableDefinition{{From: "ext-patch"}}}}
	}
	return c
}

func generatePatch(handler string) *v1alpha2.ClusterClassPatch {
	return &v1alpha2.ClusterClassPatch{Name: "ext-patch", External: &v1alpha2.ExternalPatchDefinition{GeneratePatchesExtension: &handler, ValidateTopologyExtension: ptr("validate.ext")}}
}

func ptr(s string) *string { return &s }

func TestGeneratePatches(t *testing.T) {
	srv, c := registered(t)
	for _, discovered := range []bool{false, true} {
		ts := targets()
		in := patches.ExternalInput{Builtins: patches.Builtins{Cluster: &patches.ClusterBuiltins{Name: "dev", Namespace: "ns"}}, Targets: ts}
		if err := extension.NewPatcher(c, classWith(discovered)).Generate(context.Background(), generatePatch("generate.ext"), in); err != nil {
			t.Fatal(err)
		}
		name, _, _ := unstructured.NestedString(ts[0].Object.Object, "spec", "template", "spec", "kubeadmConfigSpec", "clusterConfiguration", "controllerManager", "extraArgs", "cluster-name")
		if name != "dev" {
			t.Errorf("the JSON patch built from builtin.cluster.name set %q", name)
		}
		images, _, _ := unstructured.NestedStringSlice(ts[1].Object.Object, "spec", "template", "spec", "preLoadImages")
		want := "pool-md-a"
		if discovered {
			want += ",custom:1" // the override, sent because the extension defined "image"
		}
		if strings.Join(images, ",") != want {
			t.Errorf("discovered %v: the merge patch set %v, want %s", discovered, images, want)
		}
		if ts[1].Object.GetLabels() != nil {
			t.Errorf("the extension's metadata change stuck: %v", ts[1].Object.GetLabels())
		}
	}
	if n := srv.Requests(extension.HookGeneratePatches); n != 2 {
		t.Errorf("%d GeneratePatches calls, want 2", n)
	}
}

func TestValidateTopology(t *testing.T) {
	srv, c := registered(t)
	p := extension.NewPatcher(c, classWith(false))
	in := patches.ExternalInput{Targets: targets()}
	if err := p.Validate(context.Background(), generatePatch("generate.ext"), in); err != nil {
		t.Fatalf("a passing validation: %v", err)
	}
	srv.SetReject("workers need at least 2 replicas")
	err := p.Validate(context.Background(), generatePatch("generate.ext"), in)
	if err == nil || !strings.Contains(err.Error(), "ValidateTopology handler validate.ext: the extension reported a failure: workers need at least 2 replicas") {
		t.Fatalf("a failing validation: %v", err)
	}
}

func TestCallErrors(t *testing.T) {
	srv, c := registered(t)
	cases := map[string]string{
		"generate":          `handler "generate" is not named HANDLER.EXTENSION`,
		"generate.other":    "no TopologyExtension other is registered",
		"missing.ext":       "TopologyExtension ext has no handler missing",
		"validate.ext":      "handler \"validate.ext\" serves ValidateTopology, not GeneratePatches",
		"generate.ext.more": "is not named HANDLER.EXTENSION",
	}
	for handler, want := range cases {
		err := extension.NewPatcher(c, classWith(false)).Generate(context.Background(), generatePatch(handler), patches.ExternalInput{Targets: targets()})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", handler, err, want)
		}
	}
	// A server that is gone: an error, unless the handler's policy is Ignore.
	handlers, _ := c.Discover(context.Background(), "ext", srv.ClientConfig())
	srv.Close()
	if err := c.Registry.Set("ext", v1alpha2.TopologyExtensionSpec{ClientConfig: srv.ClientConfig()}, handlers); err != nil {
		t.Fatal(err)
	}
	if err := extension.NewPatcher(c, classWith(false)).Generate(context.Background(), generatePatch("generate.ext"), patches.ExternalInput{Targets: targets()}); err == nil {
		t.Error("calling a stopped server succeeded")
	}
	handlers[0].FailurePolicy = ptr("Ignore")
	_ = c.Registry.Set("ext", v1alpha2.TopologyExtensionSpec{ClientConfig: srv.ClientConfig()}, handlers)
	if err := extension.NewPatcher(c, classWith(false)).Generate(context.Background(), generatePatch("generate.ext"), patches.ExternalInput{Targets: targets()}); err != nil {
		t.Errorf("with failurePolicy Ignore an unreachable handler is an error: %v", err)
	}
}

func TestDiscoverRefusesPlainHTTPAndBadCA(t *testing.T) {
	c := &extension.Client{Registry: extension.NewRegistry()}
	plain := "http://127.0.0.1:1"
	if _, err := c.Discover(context.Background(), "ext", v1alpha2.ClientConfig{URL: &plain}); err == nil || !strings.Contains(err.Error(), "over https") {
		t.Errorf("http URL: %v", err)
	}
	srv := fixture.StartExtensionServer()
	defer srv.Close()
	cfg := srv.ClientConfig()
	cfg.CABundle = []byte("not a certificate")
	if _, err := c.Discover(context.Background(), "ext", cfg); err == nil || !strings.Contains(err.Error(), "caBundle holds no PEM certificate") {
		t.Errorf("bad CA bundle: %v", err)
	}
	cfg.CABundle = nil // the test server's certificate is not in the system's roots
	if _, err := c.Discover(context.Background(), "ext", cfg); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("an untrusted server: %v", err)
	}
}

// TestBestEffort is how the plugin calls extensions from outside the
// cluster: what it cannot reach is skipped and named, a Failure still fails.
func TestBestEffort(t *testing.T) {
	srv := fixture.StartExtensionServer()
	defer srv.Close()
	c := &extension.Client{Registry: extension.NewRegistry(), BestEffort: true}
	ext := &v1alpha2.TopologyExtension{}
	ext.Name = "ext"
	ext.Spec.ClientConfig = srv.ClientConfig()
	for _, h := range []struct{ name, hook string }{{"generate.ext", extension.HookGeneratePatches}, {"validate.ext", extension.HookValidateTopology}} {
		ext.Status.Handlers = append(ext.Status.Handlers, v1alpha2.ExtensionHandler{Name: h.name, RequestHook: v1alpha2.GroupVersionHook{APIVersion: extension.APIVersion, Hook: h.hook}})
	}
	if err := c.Registry.FromStatus(ext); err != nil {
		t.Fatal(err)
	}
	p := extension.NewPatcher(c, classWith(false))
	ts := targets()
	if err := p.Generate(context.Background(), generatePatch("generate.ext"), patches.ExternalInput{Targets: ts}); err != nil {
		t.Fatalf("a handler registered from status: %v", err)
	}
	if images, _, _ := unstructured.NestedStringSlice(ts[1].Object.Object, "spec", "template", "spec", "preLoadImages"); len(images) == 0 {
		t.Error("the handler registered from status was not called")
	}
	if err := p.Generate(context.Background(), generatePatch("generate.elsewhere"), patches.ExternalInput{Targets: targets()}); err != nil {
		t.Fatalf("an unknown extension is an error in best effort: %v", err)
	}
	srv.SetReject("no")
	if err := p.Validate(context.Background(), generatePatch("generate.ext"), patches.ExternalInput{Targets: targets()}); err == nil {
		t.Error("a validator's Failure was skipped")
	}
	srv.Close()
	if err := p.Generate(context.Background(), generatePatch("generate.ext"), patches.ExternalInput{Targets: targets()}); err != nil {
		t.Fatalf("an unreachable server is an error in best effort: %v", err)
	}
	skipped := p.Skipped()
	if len(skipped) != 2 || skipped[0].Handler != "generate.elsewhere" || skipped[1].Handler != "generate.ext" ||
		!strings.Contains(skipped[1].String(), "external patch handler generate.ext was not run from here, so the preview lacks its changes") {
		t.Errorf("skipped %q", skipped)
	}
	if again := p.Skipped(); len(again) != 0 {
		t.Errorf("Skipped does not start over: %q", again)
	}
}
