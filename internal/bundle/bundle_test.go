package bundle

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const upstreamClass = `
apiVersion: cluster.x-k8s.io/v1beta1
kind: ClusterClass
metadata:
  name: qs
spec:
  infrastructure:
    ref: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: DockerClusterTemplate, name: c}
  controlPlane:
    ref: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: KubeadmControlPlaneTemplate, name: cp}
`

const upstreamCluster = `
apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata:
  name: one
spec:
  topology:
    class: qs
    version: v1.33.1
`

func read(t *testing.T, docs ...string) (*Bundle, error) {
	t.Helper()
	b := New()
	err := b.Read(strings.NewReader(strings.Join(docs, "\n---\n")), "input.yaml", "team-a")
	return b, err
}

func TestReadSortsObjectsByRole(t *testing.T) {
	b, err := read(t, upstreamClass, upstreamCluster, `
apiVersion: v1
kind: List
items:
- apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
  kind: DockerClusterTemplate
  metadata: {name: c}
- apiVersion: cluster.x-k8s.io/v1beta1
  kind: Cluster
  metadata: {name: plain, namespace: other}
`, "", "# only a comment")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Classes) != 1 || b.Classes["team-a/qs"] == nil || b.Classes["team-a/qs"].Upstream == nil {
		t.Errorf("classes %v; want the upstream class qs in the default namespace", b.Classes)
	}
	if len(b.Topologies) != 1 || b.Topologies[0].Name != "one" || b.Topologies[0].Namespace != "team-a" || b.Topologies[0].Upstream == nil {
		t.Fatalf("topologies %+v; want the Cluster one as an upstream topology", b.Topologies)
	}
	if !strings.Contains(b.Topologies[0].Source, "input.yaml (document 2)") {
		t.Errorf("source %q does not name the file and document", b.Topologies[0].Source)
	}
	var others []string
	for _, o := range b.Objects {
		others = append(others, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	if strings.Join(others, ", ") != "DockerClusterTemplate team-a/c, Cluster other/plain" {
		t.Errorf("other objects: %v; want the List's items, a Cluster without topology among them", others)
	}
	c, err := b.ClassFor(b.Topologies[0])
	if err != nil || c.Name != "qs" {
		t.Errorf("ClassFor: %v, %v", c, err)
	}
}

func TestReadErrors(t *testing.T) {
	cases := []struct {
		name string
		docs []string
		want string
	}{
		{"malformed YAML", []string{"kind: [unclosed"}, "input.yaml (document 1): malformed YAML"},
		{"no kind", []string{"apiVersion: v1\nmetadata: {name: x}"}, "input.yaml (document 1): not a Kubernetes object: kind is missing"},
		{"not a map", []string{"- a\n- b"}, "a document must be a YAML or JSON map"},
		{"no name", []string{"apiVersion: v1\nkind: ConfigMap\nmetadata: {}"}, "ConfigMap has no metadata.name"},
		{"bad apiVersion", []string{"apiVersion: a/b/c\nkind: X\nmetadata: {name: x}"}, `apiVersion "a/b/c"`},
		{"class twice", []string{upstreamClass, upstreamClass}, "class team-a/qs is also defined in input.yaml (document 1)"},
		{"wrong type", []string{"apiVersion: topology.kubectl-topology.io/v1alpha2\nkind: Topology\nmetadata: {name: t}\nspec: {version: [1]}"}, `Topology team-a/t: cannot decode: json: cannot unmarshal array into Go struct field`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := read(t, c.docs...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want one containing %q", err, c.want)
			}
		})
	}
}

// An unknown field is dropped with a warning naming its path, as the API
// server prunes it; strict refuses it instead, naming every such field.
func TestUnknownFieldsArePrunedOrRefused(t *testing.T) {
	topology := "apiVersion: topology.kubectl-topology.io/v1alpha2\nkind: Topology\nmetadata: {name: t}\nspec: {clas: x, version: v1.33.0}" //nolint:misspell // the misspelled field is the input
	class := strings.Replace(upstreamClass, "spec:\n", "spec:\n  machineHealthCheck: {}\n", 1)
	extension := "apiVersion: runtime.cluster.x-k8s.io/v1alpha1\nkind: ExtensionConfig\nmetadata: {name: theirs}\nspec:\n  clientConfig: {url: https://127.0.0.1:9443}\n  selector: {}"
	cases := []struct {
		name, doc, warning, strictError string
	}{
		{"ours", topology, `Topology team-a/t: unknown field "spec.clas" is dropped`, `Topology team-a/t: unknown field "spec.clas": remove it, or leave out --strict`},
		{"upstream class", class, `ClusterClass team-a/qs: unknown field "spec.machineHealthCheck" is dropped`, `ClusterClass team-a/qs: spec: unknown field "spec.machineHealthCheck"`},
		{"upstream extension", extension, `ExtensionConfig theirs: unknown field "spec.selector" is dropped`, `ExtensionConfig team-a/theirs: spec: unknown field "spec.selector"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := read(t, tc.doc)
			if err != nil {
				t.Fatalf("read: %v; want the field dropped with a warning", err)
			}
			if got := strings.Join(b.Warnings, "\n"); !strings.Contains(got, tc.warning) {
				t.Errorf("warnings %q; want one containing %q", got, tc.warning)
			}
			if len(b.Classes)+len(b.Topologies)+len(b.Extensions) != 1 {
				t.Errorf("read %d classes, %d topologies, %d extensions; want the object read", len(b.Classes), len(b.Topologies), len(b.Extensions))
			}
			strict := New()
			strict.Strict = true
			err = strict.Read(strings.NewReader(tc.doc), "input.yaml", "team-a")
			if err == nil || !strings.Contains(err.Error(), tc.strictError) {
				t.Errorf("strict: error %v; want one containing %q", err, tc.strictError)
			}
		})
	}
}

func TestClassForNamesWhatIsMissing(t *testing.T) {
	b, err := read(t, upstreamCluster)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.ClassFor(b.Topologies[0])
	want := "Cluster team-a/one: spec.topology.class: class team-a/qs is not in the input (classes given: []); add the file that defines it with -f"
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant %s", err, want)
	}
}

func TestUpstreamDurationsReadAsClusterAPIWritesThem(t *testing.T) {
	b, err := read(t, upstreamCluster+`
    controlPlane:
      nodeDrainTimeout: 120s
      machineHealthCheck:
        unhealthyConditions:
        - {type: Ready, status: "False", timeout: 90s}
`)
	if err != nil {
		t.Fatal(err)
	}
	u := b.Topologies[0].Upstream
	drain, _, _ := unstructured.NestedString(u.Object, "spec", "topology", "controlPlane", "nodeDrainTimeout")
	conds, _, _ := unstructured.NestedSlice(u.Object, "spec", "topology", "controlPlane", "machineHealthCheck", "unhealthyConditions")
	if drain != "2m0s" || conds[0].(map[string]any)["timeout"] != "1m30s" {
		t.Errorf("durations read as %q and %v; want 2m0s and 1m30s", drain, conds[0])
	}
	cp := b.Topologies[0].Spec.ControlPlane
	if d := cp.Deletion.NodeDrainTimeoutSeconds; d == nil || *d != 120 {
		t.Errorf("the Topology's drain timeout is %v seconds, want 120", d)
	}
	if c := cp.HealthCheck.Checks.UnhealthyNodeConditions; len(c) != 1 || *c[0].TimeoutSeconds != 90 {
		t.Errorf("the Topology's unhealthy node conditions are %+v, want one of 90 seconds", c)
	}
}

// TestReadExtensions: a TopologyExtension and an upstream ExtensionConfig
// are both read as extensions, cluster-scoped whatever the default
// namespace; a name given twice, or a field neither kind has, is refused.
func TestReadExtensions(t *testing.T) {
	ours := `
apiVersion: topology.kubectl-topology.io/v1alpha2
kind: TopologyExtension
metadata: {name: ours}
spec:
  clientConfig: {url: "https://127.0.0.1:9443"}
  settings: {mode: strict}
`
	upstream := `
apiVersion: runtime.cluster.x-k8s.io/v1alpha1
kind: ExtensionConfig
metadata: {name: theirs}
spec:
  clientConfig:
    service: {namespace: runtime, name: ext, port: 8443}
  namespaceSelector:
    matchLabels: {team: a}
`
	b, err := read(t, ours, upstream)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Extensions) != 2 || len(b.Objects) != 0 {
		t.Fatalf("extensions %d, objects %d; want 2 extensions and no other object", len(b.Extensions), len(b.Objects))
	}
	o, u := b.Extensions[0], b.Extensions[1]
	if o.Name != "ours" || o.Namespace != "" || *o.Spec.ClientConfig.URL != "https://127.0.0.1:9443" || o.Spec.Settings["mode"] != "strict" {
		t.Errorf("TopologyExtension read as %+v", o)
	}
	if u.Name != "theirs" || u.Namespace != "" || u.Kind != "TopologyExtension" || u.Spec.ClientConfig.Service == nil ||
		u.Spec.ClientConfig.Service.Name != "ext" || *u.Spec.ClientConfig.Service.Port != 8443 || u.Spec.NamespaceSelector.MatchLabels["team"] != "a" {
		t.Errorf("ExtensionConfig read as %+v", u)
	}

	for _, tc := range []struct {
		docs []string
		want string
	}{
		{[]string{ours, ours}, "input.yaml (document 2): extension ours is given twice; give each extension once"},
	} {
		if _, err := read(t, tc.docs...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v; want an error containing %q", err, tc.want)
		}
	}
}
