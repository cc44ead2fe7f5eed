package selfinstall

import (
	"testing"
	"testing/fstest"

	"github.com/kubectl-topology/kubectl-topology/manifests"
)

func TestReadCRDsFS(t *testing.T) {
	crds, err := ReadCRDsFS(manifests.CRDs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range crds {
		names = append(names, c.Name)
	}
	want := []string{"topologies.topology.kubectl-topology.io", "topologyclasses.topology.kubectl-topology.io", "topologyextensions.topology.kubectl-topology.io", "topologyrollouts.topology.kubectl-topology.io"}
	if len(names) != len(want) {
		t.Fatalf("CRDs %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Errorf("CRD %d is %s, want %s (sorted by name)", i, names[i], want[i])
		}
	}
	bad := fstest.MapFS{"crd/x.yaml": {Data: []byte("kind: CustomResourceDefinition\nspec: {nope: 1}\n")}}
	if _, err := ReadCRDsFS(bad); err == nil {
		t.Error("a CRD with an unknown field was read")
	}
}

// The installed hash decides whether a restarted agent rewrites its CRDs:
// it must not change with the annotation it is stored in, and must change
// with the spec.
func TestHashOfACRD(t *testing.T) {
	crds, err := ReadCRDsFS(manifests.CRDs)
	if err != nil {
		t.Fatal(err)
	}
	c := crds[0]
	before := hashOf(c)
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[HashAnnotation] = "anything"
	c.ResourceVersion = "42"
	if hashOf(c) != before {
		t.Error("the hash changes with the annotation it is stored in or the resourceVersion")
	}
	c.Spec.Versions[0].Served = !c.Spec.Versions[0].Served
	if hashOf(c) == before {
		t.Error("the hash does not change with the spec")
	}
}
