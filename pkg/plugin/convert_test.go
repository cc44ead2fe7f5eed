package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// withoutOwners is a created object's YAML without its ownerReferences,
// which are all that differ between the dialects (ARCHITECTURE.md §4).
func withoutOwners(t *testing.T, doc string) string {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "ownerReferences")
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestConvertPlansAsTheUpstreamInput: for every upstream case, what convert
// writes plans to the same objects as the upstream input itself, but for
// ownership — so convert keeps everything the engine reads. The Cluster is
// left out: upstream's input has it already, ours creates it.
func TestConvertPlansAsTheUpstreamInput(t *testing.T) {
	dirs, err := filepath.Glob("../../testdata/parity/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases under testdata/parity: %v", err)
	}
	dirs = append(dirs, providerDirs(t)...)
	for _, d := range dirs {
		t.Run(filepath.Base(d), func(t *testing.T) {
			converted, stderr, code := runPlugin(t, "convert", "-f", d)
			if code != 0 {
				t.Fatalf("convert failed: %s", stderr)
			}
			if strings.Contains(converted, "kind: ClusterClass") || strings.Contains(converted, "\n  topology:") {
				t.Errorf("convert left upstream objects in its output:\n%s", converted)
			}
			file := filepath.Join(t.TempDir(), "converted.yaml")
			if err := os.WriteFile(file, []byte(converted), 0o600); err != nil {
				t.Fatal(err)
			}
			// An upstream Cluster is planned in its own version, so ours is
			// planned in that one too: v1beta1 as v1.10 would, or v1beta2.
			core := "v1beta1"
			if cluster, err := os.ReadFile(filepath.Join(d, "cluster.yaml")); err == nil && strings.Contains(string(cluster), "apiVersion: cluster.x-k8s.io/v1beta2") {
				core = "v1beta2"
			}
			plans := map[string]map[string]string{}
			for name, input := range map[string]string{"converted": file, "upstream": d} {
				out := t.TempDir()
				if _, stderr, code := runPlugin(t, "plan", "--random-seed", "42", "--cluster-api-version", core, "-f", input, "--output-directory", out); code != 0 {
					t.Fatalf("plan of the %s input failed: %s", name, stderr)
				}
				plans[name] = readTree(t, out)
			}
			compared := 0
			for rel, ours := range plans["converted"] {
				if !strings.HasPrefix(rel, "created/") || strings.HasPrefix(rel, "created/Cluster_") {
					continue
				}
				theirs, ok := plans["upstream"][rel]
				if !ok {
					t.Errorf("%s is planned from the converted input only", rel)
					continue
				}
				compared++
				if a, b := withoutOwners(t, ours), withoutOwners(t, theirs); a != b {
					t.Errorf("%s differs beyond ownership:\n--- converted\n%s\n--- upstream\n%s", rel, a, b)
				}
			}
			if compared < 5 {
				t.Errorf("only %d created objects compared; the case plans more than that", compared)
			}
		})
	}
}

// TestConvertExtensionConfig: an upstream ExtensionConfig becomes a
// TopologyExtension with the same spec, before the classes that use it.
func TestConvertExtensionConfig(t *testing.T) {
	in := filepath.Join(t.TempDir(), "ext.yaml")
	doc := `apiVersion: runtime.cluster.x-k8s.io/v1alpha1
kind: ExtensionConfig
metadata:
  name: ext
spec:
  clientConfig:
    url: https://ext.example.com:8443
  settings:
    mode: strict
`
	if err := os.WriteFile(in, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runPlugin(t, "convert", "-f", in, "-f", "../../testdata/parity/docker-kubeadm")
	if code != 0 {
		t.Fatalf("convert failed: %s", stderr)
	}
	// The same document but for its apiVersion and kind.
	want := strings.Replace(doc, "runtime.cluster.x-k8s.io/v1alpha1\nkind: ExtensionConfig", "topology.kubectl-topology.io/v1alpha2\nkind: TopologyExtension", 1) +
		"---\napiVersion: topology.kubectl-topology.io/v1alpha2\nkind: TopologyClass\n"
	if !strings.HasPrefix(stdout, want) {
		t.Errorf("convert output begins:\n%s\nwant it to begin:\n%s", stdout[:min(len(stdout), len(want)+200)], want)
	}
}
