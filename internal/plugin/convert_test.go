package plugin

import (
	"os"
	"path/filepath"
	"regexp"
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
			converted, stderr, code := runPlugin(t, "convert", "--inline=none", "-f", d)
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
	stdout, stderr, code := runPlugin(t, "convert", "--inline=none", "-f", in, "-f", "../../testdata/parity/docker-kubeadm")
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

// TestConvertInline: --inline=all writes every referenced template into the
// class and drops the template objects; the class plans to the same objects
// as with --inline=none, but for the cloned-from-name annotation. A bad
// --inline value is refused, and --inline=refused without a cluster says
// what to give offline.
func TestConvertInline(t *testing.T) {
	dir := "../../testdata/parity/in-memory"
	plans := map[string]map[string]string{}
	for _, mode := range []string{"all", "none"} {
		converted, stderr, code := runPlugin(t, "convert", "--inline="+mode, "-f", dir)
		if code != 0 {
			t.Fatalf("convert --inline=%s failed: %s", mode, stderr)
		}
		kinds := map[string]int{}
		for _, m := range regexp.MustCompile(`(?m)^kind: (\w+)$`).FindAllStringSubmatch(converted, -1) {
			kinds[m[1]]++
		}
		switch mode {
		case "all":
			if len(kinds) != 2 || kinds["TopologyClass"] != 1 || kinds["Topology"] != 1 {
				t.Errorf("--inline=all printed %v; want the class and the topology only", kinds)
			}
			for _, want := range []string{
				"Inlined: KubeadmControlPlaneTemplate default/in-memory-control-plane is written into class default/in-memory as spec.controlPlane.template",
				"Inlined: DevClusterTemplate default/in-memory-cluster is written into class default/in-memory as spec.infrastructure.template",
			} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr %q does not say %q", stderr, want)
				}
			}
		case "none":
			if kinds["KubeadmControlPlaneTemplate"] != 1 || kinds["DevMachineTemplate"] != 2 || stderr != "" {
				t.Errorf("--inline=none printed %v and said %q; want every template as it was, and nothing said", kinds, stderr)
			}
		}
		file := filepath.Join(t.TempDir(), "converted.yaml")
		if err := os.WriteFile(file, []byte(converted), 0o600); err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		if _, stderr, code := runPlugin(t, "plan", "--random-seed", "42", "-f", file, "--output-directory", out); code != 0 {
			t.Fatalf("plan of --inline=%s failed: %s", mode, stderr)
		}
		plans[mode] = readTree(t, out)
	}
	if len(plans["all"]) != len(plans["none"]) {
		t.Fatalf("%d files planned from the inline class, %d from the referencing one", len(plans["all"]), len(plans["none"]))
	}
	// The inline templates keep their names: every object, its
	// cloned-from-name annotation included, is as from the references.
	for rel, ref := range plans["none"] {
		a, b := plans["all"][rel], ref
		if a != b {
			t.Errorf("%s differs between the inline and the referencing class:\n--- inline\n%s\n--- referenced\n%s", rel, a, b)
		}
	}

	if _, stderr, code := runPlugin(t, "convert", "--inline=some", "-f", dir); code != 1 || !strings.Contains(stderr, `--inline "some" is not supported: use refused, all or none`) {
		t.Errorf("--inline=some: exit %d, %q; want it refused with the choices", code, stderr)
	}
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	if _, stderr, code := runPlugin(t, "convert", "-f", dir); code != 1 || !strings.Contains(stderr, "offline, give --inline=all or --inline=none") {
		t.Errorf("--inline=refused with no cluster: exit %d, %q; want it refused saying what to give offline", code, stderr)
	}
}

// TestConvertCarriesCAPIv115Pins: a Cluster API v1.15 Cluster with a
// pinned MachineDeployment converts to a Topology with the same pin, and
// plan builds that pool at its pin from either, the other at the cluster's
// version.
func TestConvertCarriesCAPIv115Pins(t *testing.T) {
	dir := "../../testdata/upstream-v1.15/pinned"
	converted, stderr, code := runPlugin(t, "convert", "--inline=none", "-f", dir)
	if code != 0 {
		t.Fatalf("convert failed: %s", stderr)
	}
	if !regexp.MustCompile(`(?m)^    - class: default-worker\n      name: md-b\n      replicas: 1\n      version: v1.32.4$`).MatchString(converted) {
		t.Errorf("the Topology does not pin md-b at v1.32.4:\n%s", converted)
	}
	file := filepath.Join(t.TempDir(), "converted.yaml")
	if err := os.WriteFile(file, []byte(converted), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, input := range map[string]string{"converted": file, "upstream": dir} {
		out := t.TempDir()
		if _, stderr, code := runPlugin(t, "plan", "--random-seed", "42", "-f", input, "--output-directory", out); code != 0 {
			t.Fatalf("plan of the %s input failed: %s", name, stderr)
		}
		versions := map[string]string{}
		for rel, body := range readTree(t, out) {
			if !strings.HasPrefix(rel, "created/MachineDeployment_") {
				continue
			}
			pool := regexp.MustCompile(`topology.cluster.x-k8s.io/deployment-name: (\S+)`).FindStringSubmatch(body)
			version := regexp.MustCompile(`(?m)^\s+version: (v\S+)$`).FindStringSubmatch(body)
			if pool != nil && version != nil {
				versions[pool[1]] = version[1]
			}
		}
		if versions["md-a"] != "v1.33.1" || versions["md-b"] != "v1.32.4" {
			t.Errorf("plan of the %s input builds the pools at %v; want md-a at v1.33.1 and md-b at its pin v1.32.4", name, versions)
		}
	}
}
