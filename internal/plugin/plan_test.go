package plugin

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/localcluster"
)

var update = flag.Bool("update", false, "rewrite golden files")

const exampleDir = "../../examples/docker"

// runPlugin runs the root command with args and returns stdout, stderr and the exit code.
func runPlugin(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	cmd := NewRootCommand(streams)
	cmd.SetArgs(args)
	code := Execute(cmd, streams)
	return out.String(), errOut.String(), code
}

// readTree returns every file under dir by relative path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(raw)
		return nil
	})
	return out
}

func TestPlanGolden(t *testing.T) {
	type planCase struct {
		name  string
		files []string
		args  []string
	}
	cases := []planCase{
		// v1.10's objects, for a management cluster still on Cluster API v1.10.
		{name: "docker-kubeadm-ours", files: []string{exampleDir}, args: []string{"--cluster-api-version", "v1beta1"}},
		// v1.14's, the default.
		{name: "docker-kubeadm-ours-v1beta2", files: []string{exampleDir}},
	}
	// Every upstream-dialect case that `make parity` checks against clusterctl
	// is also a golden here, so that make test needs neither clusterctl nor ../shared.
	dirs, err := filepath.Glob("../../testdata/parity/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases under testdata/parity: %v", err)
	}
	for _, d := range dirs {
		cases = append(cases, planCase{name: filepath.Base(d) + "-upstream", files: []string{d}})
	}
	// Every provider's published class that plans offline (one needs its
	// extension: TestProviderClassNeedingAnExtension).
	for _, d := range providerDirs(t) {
		cases = append(cases, planCase{name: "provider-" + filepath.Base(d), files: []string{d}})
	}
	// Upstream v1.14.2's own quick-start class, read from its module, with a
	// v1beta2 Cluster: planned in v1beta2, as its topology controller writes.
	cases = append(cases, planCase{name: "quick-start-v1beta2-upstream", files: []string{
		filepath.Join(upstreamE2EData(t), "clusterclass-quick-start.yaml"), "../../testdata/upstream-v1beta2/quick-start-cluster.yaml",
	}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"plan", "--random-seed", "42", "--output-directory", dir}, tc.args...)
			for _, f := range tc.files {
				args = append(args, "-f", f)
			}
			stdout, stderr, code := runPlugin(t, args...)
			if code != 0 {
				t.Fatalf("plan failed (%d): %s", code, stderr)
			}
			got := readTree(t, dir)
			got["stdout.txt"] = stdout
			golden := filepath.Join("testdata", "golden", tc.name)
			if *update {
				_ = os.RemoveAll(golden)
				for rel, content := range got {
					p := filepath.Join(golden, rel)
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			want := readTree(t, golden)
			if len(want) == 0 {
				t.Fatalf("no golden files in %s; run go test ./internal/plugin -update", golden)
			}
			var keys []string
			for k := range want {
				keys = append(keys, k)
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				if got[k] != want[k] {
					t.Errorf("%s differs from golden:\n--- got\n%s\n--- want\n%s", k, got[k], want[k])
				}
			}
		})
	}
}

// TestBothDialectsPlanAlike: examples/in-memory (ours) and its upstream
// form in testdata/parity/in-memory (which make parity-live applies to
// upstream's controller) are the same cluster, so every object generated
// from the class is the same. Only the Cluster and owners differ by nature:
// ours creates the Cluster, upstream's is the input (with a shim Secret);
// and ours holds the two template kinds a stock cluster refuses inline, so
// what their clones say they were cloned from is the class's slot.
func TestBothDialectsPlanAlike(t *testing.T) {
	generated := func(dir string) map[string]string {
		t.Helper()
		// The upstream form is v1beta1 (clusterctl v1.10 plans it too); ours matches it.
		out, errOut, code := runPlugin(t, "plan", "--random-seed", "5", "--cluster-api-version", "v1beta1", "-f", dir, "-o", "json")
		if code != 0 {
			t.Fatalf("plan -f %s: %s", dir, errOut)
		}
		var p struct {
			Changes []struct {
				Action string                     `json:"action"`
				Object *unstructured.Unstructured `json:"object"`
			} `json:"changes"`
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("plan -f %s -o json: %v", dir, err)
		}
		objs := map[string]string{}
		for _, c := range p.Changes {
			if k := c.Object.GetKind(); k != "Cluster" && k != "Secret" {
				c.Object.SetOwnerReferences(nil) // the Topology, or upstream's Cluster or its shim
				if a := c.Object.GetAnnotations(); a["cluster.x-k8s.io/cloned-from-name"] == "in-memory-cluster" || a["cluster.x-k8s.io/cloned-from-name"] == "in-memory-control-plane" && k == "KubeadmControlPlane" {
					a["cluster.x-k8s.io/cloned-from-name"] = "in-memory-" + map[string]string{"DevCluster": "infrastructure", "KubeadmControlPlane": "control-plane"}[k]
					c.Object.SetAnnotations(a)
				}
				data, _ := json.Marshal(c.Object)
				objs[c.Action+" "+k+" "+c.Object.GetName()] = string(data)
			}
		}
		return objs
	}
	ours, upstream := generated("../../examples/in-memory"), generated("../../testdata/parity/in-memory")
	if len(ours) != 12 {
		t.Errorf("plan of examples/in-memory generates %d objects besides the Cluster, want 12", len(ours))
	}
	for k, o := range ours {
		if upstream[k] != o {
			t.Errorf("%s: examples/in-memory plans\n%s\ntestdata/parity/in-memory plans\n%s", k, o, upstream[k])
		}
	}
	for k := range upstream {
		if _, ok := ours[k]; !ok {
			t.Errorf("%s: planned from the upstream dialect only", k)
		}
	}
}

func TestPlanIsDeterministicWithSeed(t *testing.T) {
	a, _, _ := runPlugin(t, "plan", "--random-seed", "9", "-f", exampleDir, "-o", "yaml")
	b, _, _ := runPlugin(t, "plan", "--random-seed", "9", "-f", exampleDir, "-o", "yaml")
	if a != b || !strings.Contains(a, "action: created") {
		t.Fatalf("same seed gave different output or no plan:\n%s", a)
	}
}

func TestPlanBadInput(t *testing.T) {
	class := filepath.Join(exampleDir, "class.yaml")
	topo := filepath.Join(exampleDir, "topology.yaml")
	bad := func(n string) string { return filepath.Join("testdata", "bad", n) }
	cases := []struct {
		name  string
		files []string
		extra []string
		want  []string
	}{
		{"invalid variable", []string{class, bad("invalid-variable.yaml")}, nil,
			[]string{"Topology default/bad is invalid", "spec.variables[maxPods].value", "250"}},
		{"CEL rule violated", []string{class, bad("cel-violation.yaml")}, nil,
			[]string{"spec.variables[auditPolicy].value", "an enabled audit policy needs a level other than None"}},
		{"unknown variable", []string{class, bad("unknown-variable.yaml")}, nil,
			[]string{"spec.variables[noSuchVariable]", "not defined in the class"}},
		{"unknown class", []string{class, bad("unknown-class.yaml")}, nil,
			[]string{"Topology default/bad", "spec.classRef", "class default/nope is not in the input"}},
		{"unknown worker class", []string{class, bad("unknown-worker-class.yaml")}, nil,
			[]string{"spec.workers.machineDeployments[0].class", `MachineDeployment class "nope" is not defined`}},
		{"malformed YAML", []string{class, bad("malformed.yaml")}, nil,
			[]string{"malformed.yaml", "document 1"}},
		{"unknown field", []string{class, bad("unknown-field.yaml")}, nil,
			[]string{`Warning: Topology default/bad: unknown field "spec.verison" is dropped`, "spec.version: Invalid value"}},
		{"unknown field, --strict", []string{class, bad("unknown-field.yaml")}, []string{"--strict"},
			[]string{"Topology default/bad", `unknown field "spec.verison"`, "leave out --strict"}},
		{"several topologies, no --topology", []string{class, bad("two-topologies.yaml")}, nil,
			[]string{"the input has 2 topologies: default/one, default/two", "--topology NAME"}},
		{"--topology names no topology", []string{class, topo}, []string{"--topology", "nope"},
			[]string{"--topology nope: no such topology", "default/dev"}},
		{"patch cannot apply", []string{bad("patch-cannot-apply.class"), topo}, nil,
			[]string{"TopologyClass default/docker-kubeadm is invalid", "spec.patches[5].definitions[0]", `patch "loadBalancer"`, "InfrastructureCluster template docker-kubeadm-cluster"}},
		{"template does not parse", []string{bad("template-does-not-parse.class"), topo}, nil,
			[]string{"spec.patches[3].definitions[1].jsonPatches[0]", "template does not parse", "nosuchfunc"}},
		{"template does not render", []string{bad("template-does-not-render.class"), topo}, nil,
			[]string{"spec.patches[2].definitions[0].jsonPatches[0]", "template does not render"}},
		{"class fails validation", []string{bad("path-outside-spec.class"), topo}, nil,
			[]string{"TopologyClass default/docker-kubeadm is invalid", "spec.patches[5].definitions[0].jsonPatches[0].path", `must start with "/spec"`}},
		{"invalid override", []string{class, bad("invalid-override.yaml")}, nil,
			[]string{"spec.workers.machineDeployments[0].variables.overrides[maxPods].value", "less than or equal to 250"}},
		{"no input", nil, nil, []string{"plan needs input"}},
		{"missing file", []string{"does-not-exist.yaml"}, nil, []string{"reading does-not-exist.yaml"}},
		{"bad output format", []string{class, topo}, []string{"-o", "xml"}, []string{`--output "xml" is not supported`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			args := []string{"plan", "--output-directory", dir}
			for _, f := range tc.files {
				args = append(args, "-f", f)
			}
			args = append(args, tc.extra...)
			stdout, stderr, code := runPlugin(t, args...)
			if code != 1 {
				t.Fatalf("exit code %d, want 1; stderr: %s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("error %q does not mention %q", stderr, w)
				}
			}
			if stdout != "" {
				t.Errorf("printed output on error: %s", stdout)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("wrote %s on error", dir)
			}
		})
	}
}

// providerNeedingExtension is the provider class whose patches come from a
// Runtime SDK extension, so it plans only with that extension given.
const providerNeedingExtension = "capi-docker-runtimesdk"

// providerDirs are the provider classes of testdata/providers that plan
// offline, each with one Cluster of it.
func providerDirs(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob("../../testdata/providers/*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		if info, err := os.Stat(d); err == nil && info.IsDir() && filepath.Base(d) != providerNeedingExtension {
			out = append(out, d)
		}
	}
	if len(out) < 19 {
		t.Fatalf("%d provider classes under testdata/providers, want 19", len(out))
	}
	return out
}

// TestProviderClassNeedingAnExtension: the class whose patches an extension
// generates is refused offline with that extension named and what to do.
func TestProviderClassNeedingAnExtension(t *testing.T) {
	stdout, stderr, code := runPlugin(t, "plan", "-f", filepath.Join("../../testdata/providers", providerNeedingExtension))
	if code != 1 || stdout != "" {
		t.Fatalf("exit %d, stdout %q; want 1 and nothing printed", code, stdout)
	}
	for _, want := range []string{"spec.patches[0]", "extension k8s-upgrade-with-runtimesdk is not in the input", "add its TopologyExtension or ExtensionConfig with -f"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("error %q does not say %q", stderr, want)
		}
	}
}

// upstreamE2EData is the directory of Cluster API v1.14.2's e2e classes for
// the Docker provider, in the module cache.
func upstreamE2EData(t *testing.T) string {
	t.Helper()
	dir, err := localcluster.ModuleDir(context.Background(), "sigs.k8s.io/cluster-api/test@"+localcluster.ProvidersVersion)
	if err != nil {
		t.Fatalf("reading Cluster API's e2e data: %v", err)
	}
	return filepath.Join(dir, "e2e", "data", "infrastructure-docker", "main")
}
