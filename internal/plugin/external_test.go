package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// externalInput writes the example class with an external patch served by
// extension "ext" (generate, validate and discover variables), its
// templates, the example topology changed by change, and extension — the
// document that registers "ext", or nothing when it is nil — into a
// directory for `plan -f`.
func externalInput(t *testing.T, extension map[string]any, change func(*v1alpha2.Topology)) string {
	t.Helper()
	ex, err := fixture.LoadExample("default")
	if err != nil {
		t.Fatal(err)
	}
	generate, validate, discover := "generate.ext", "validate.ext", "variables.ext"
	ex.Class.Spec.Patches = append(ex.Class.Spec.Patches, v1alpha2.ClusterClassPatch{Name: "from-extension",
		External: &v1alpha2.ExternalPatchDefinition{GeneratePatchesExtension: &generate, ValidateTopologyExtension: &validate, DiscoverVariablesExtension: &discover}})
	ex.Class.SetGroupVersionKind(v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyClassKind))
	ex.Topology.SetGroupVersionKind(v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyKind))
	if change != nil {
		change(ex.Topology)
	}
	docs := []any{ex.Class, ex.Topology}
	for _, o := range ex.Templates {
		docs = append(docs, o.Object)
	}
	if extension != nil {
		docs = append(docs, extension)
	}
	var b strings.Builder
	for _, d := range docs {
		raw, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(raw)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "input.yaml"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// extensionDoc is a TopologyExtension, or with upstream set an
// ExtensionConfig, named "ext" with config.
func extensionDoc(t *testing.T, config v1alpha2.ClientConfig, upstream bool) map[string]any {
	t.Helper()
	e := &v1alpha2.TopologyExtension{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Spec: v1alpha2.TopologyExtensionSpec{ClientConfig: config}}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(e)
	if err != nil {
		t.Fatal(err)
	}
	m["apiVersion"], m["kind"] = v1alpha2.GroupVersion.String(), v1alpha2.TopologyExtensionKind
	if upstream {
		m["apiVersion"], m["kind"] = "runtime.cluster.x-k8s.io/v1alpha1", "ExtensionConfig"
	}
	delete(m, "status")
	return m
}

// createdFile is the content of the one created file whose name starts with prefix.
func createdFile(t *testing.T, files map[string]string, prefix string) string {
	t.Helper()
	var found []string
	for name, content := range files {
		if strings.HasPrefix(name, filepath.Join("created", prefix)) {
			found = append(found, content)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d created files start with %s; want 1 (files: %d)", len(found), prefix, len(files))
	}
	return found[0]
}

// TestPlanRunsExternalPatchesOffline: with the extension's registration
// among the inputs (ours or upstream's), an offline plan asks the extension
// for its handlers and variables and applies its patches, as the agent
// would: the discovered variable is defaulted and can be set.
func TestPlanRunsExternalPatchesOffline(t *testing.T) {
	srv := fixture.StartExtensionServer()
	defer srv.Close()
	for _, tc := range []struct {
		name     string
		upstream bool
		image    string // the topology's value of the discovered variable, "" for unset
		want     string // in md-a's DockerMachineTemplate
	}{
		{"TopologyExtension with the variable defaulted", false, "", "- pool-md-a\n      - kindest/node:latest\n"},
		{"ExtensionConfig with the variable set", true, "registry.example.com/node:v1.33.1", "- pool-md-a\n      - registry.example.com/node:v1.33.1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := externalInput(t, extensionDoc(t, srv.ClientConfig(), tc.upstream), func(topo *v1alpha2.Topology) {
				if tc.image != "" {
					topo.Spec.Variables = append(topo.Spec.Variables, v1alpha2.ClusterVariable{Name: "image", Value: apiextensionsv1.JSON{Raw: []byte(`"` + tc.image + `"`)}})
				}
			})
			out := t.TempDir()
			stdout, stderr, code := runPlugin(t, "plan", "-f", in, "--output-directory", out)
			if code != 0 {
				t.Fatalf("plan failed: %s", stderr)
			}
			files := readTree(t, out)
			if md := createdFile(t, files, "DockerMachineTemplate_default_dev-md-a-"); !strings.Contains(md, tc.want) {
				t.Errorf("md-a's DockerMachineTemplate lacks the extension's preLoadImages %q:\n%s", tc.want, md)
			}
			if cp := createdFile(t, files, "KubeadmControlPlane_default_dev-"); !strings.Contains(cp, "cluster-name: dev") {
				t.Errorf("the KubeadmControlPlane lacks the extension's cluster-name argument:\n%s", cp)
			}
			if !strings.Contains(stdout, "KubeadmControlPlane") {
				t.Errorf("the plan's table:\n%s", stdout)
			}
		})
	}
}

// TestPlanRefusesExternalPatchesItCannotRun: every way an offline plan
// cannot run a class's external patches is an error that says what to do,
// and nothing is written.
func TestPlanRefusesExternalPatchesItCannotRun(t *testing.T) {
	rejecting := fixture.StartExtensionServer()
	defer rejecting.Close()
	rejecting.SetReject("md-gpu needs a GPU image")
	stopped := fixture.StartExtensionServer()
	stoppedConfig := stopped.ClientConfig()
	stopped.Close()
	service := v1alpha2.ClientConfig{Service: &v1alpha2.ServiceReference{Namespace: "runtime", Name: "ext"}}
	for _, tc := range []struct {
		name      string
		extension map[string]any
		image     string
		want      []string
	}{
		{"no registration", nil, "", []string{
			"TopologyClass default/docker-kubeadm spec.patches[6] (from-extension): extension ext is not in the input; add its TopologyExtension or ExtensionConfig with -f"}},
		{"a Service", extensionDoc(t, service, false), "", []string{
			"TopologyExtension ext: spec.clientConfig names a Service, which an offline plan cannot reach; give a url instead"}},
		{"the server is not running", extensionDoc(t, stoppedConfig, false), "", []string{
			"discovery of TopologyExtension ext", "is the extension running at " + *stoppedConfig.URL + "?"}},
		{"the extension's validation refuses", extensionDoc(t, rejecting.ClientConfig(), false), "", []string{
			`spec.patches[6].external.validateExtension: Invalid value: "from-extension": patch "from-extension": ValidateTopology handler validate.ext: the extension reported a failure: md-gpu needs a GPU image`}},
		{"a value the discovered schema refuses", extensionDoc(t, rejecting.ClientConfig(), false), "42", []string{
			"spec.variables[image]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := externalInput(t, tc.extension, func(topo *v1alpha2.Topology) {
				if tc.image != "" {
					topo.Spec.Variables = append(topo.Spec.Variables, v1alpha2.ClusterVariable{Name: "image", Value: apiextensionsv1.JSON{Raw: []byte(tc.image)}})
				}
			})
			out := filepath.Join(t.TempDir(), "plan")
			_, stderr, code := runPlugin(t, "plan", "-f", in, "--output-directory", out)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			for _, want := range tc.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr %q lacks %q", stderr, want)
				}
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("the output directory was made (%v); a refused plan writes nothing", err)
			}
		})
	}
}
