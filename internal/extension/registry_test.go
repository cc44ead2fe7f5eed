package extension

import (
	"testing"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestRegistryKeepsConnections checks that re-registering an extension with
// the same client configuration, as re-discovery does every few minutes,
// keeps its HTTP client and connections, and that a new configuration
// gets a new one.
func TestRegistryKeepsConnections(t *testing.T) {
	r := NewRegistry()
	u, other := "https://a.example", "https://b.example"
	if err := r.Set("ext", v1alpha2.TopologyExtensionSpec{ClientConfig: v1alpha2.ClientConfig{URL: &u}}, nil); err != nil {
		t.Fatal(err)
	}
	first := r.extensions["ext"].http
	if err := r.Set("ext", v1alpha2.TopologyExtensionSpec{ClientConfig: v1alpha2.ClientConfig{URL: &u}}, []v1alpha2.ExtensionHandler{{Name: "generate"}}); err != nil {
		t.Fatal(err)
	}
	if r.extensions["ext"].http != first || len(r.extensions["ext"].handlers) != 1 {
		t.Error("the same configuration got a new client, or the handlers were not replaced")
	}
	if err := r.Set("ext", v1alpha2.TopologyExtensionSpec{ClientConfig: v1alpha2.ClientConfig{URL: &other}}, nil); err != nil {
		t.Fatal(err)
	}
	if r.extensions["ext"].http == first {
		t.Error("a new configuration kept the old client")
	}
}
