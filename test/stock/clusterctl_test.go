package stock

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
)

// TestClusterctlReadsTheProviderRepository: the provider repository `make
// provider-repo` writes is one clusterctl reads as a user's configuration
// names it, and what `clusterctl generate provider --addon kubectl-topology`
// renders from it — what `clusterctl init --addon kubectl-topology` would install —
// is the objects `kubectl topology install` installs, with clusterctl's
// labels, the provider label the one the agent's own carry.
func TestClusterctlReadsTheProviderRepository(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	repo := components.Repository{Dir: filepath.Join(dir, "repository"), Version: "v0.1.0"}
	if err := repo.Write(); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "clusterctl.yaml")
	if err := os.WriteFile(config, []byte(repo.ClusterctlConfig()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := suite.Clusterctl(t, "generate", "provider", "--addon", components.ProviderName+":"+repo.Version, "--config", config, "--target-namespace", components.Namespace)
	// The repository writes the image with its registry, which clusterctl
	// insists on; install leaves docker.io to the container runtime.
	if !strings.Contains(out, "image: "+repo.Image()) {
		t.Errorf("clusterctl does not render the release's image %s:\n%s", repo.Image(), out)
	}
	out = strings.ReplaceAll(out, "image: "+repo.Image(), "image: "+components.Image(repo.Version))
	// clusterctl takes the watch namespace's and filter's default ("")
	// literally; the agent reads --namespace="" as every namespace and
	// --watch-filter="" as no filter (shard.New).
	for _, flag := range []string{"--namespace", "--watch-filter"} {
		if !strings.Contains(out, flag+`=""`) {
			t.Errorf("clusterctl no longer renders the default of %s as %s=\"\":\n%s", flag, flag, out)
		}
		out = strings.ReplaceAll(out, flag+`=""`, flag+"=")
	}
	rendered, err := components.Decode([]byte(yamlOnly(out)))
	if err != nil {
		t.Fatalf("clusterctl's output is not components YAML: %v\n%s", err, out)
	}
	source, err := components.Render(components.Image(repo.Version))
	if err != nil {
		t.Fatal(err)
	}
	want, err := components.Transform(source, nil, components.Namespace, "")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range rendered {
		byName[o.GetKind()+"/"+o.GetName()] = o
		if got := o.GetLabels()["cluster.x-k8s.io/provider"]; got != components.ProviderLabelValue {
			t.Errorf("clusterctl labels %s %s as provider %q, the agent's own objects %q", o.GetKind(), o.GetName(), got, components.ProviderLabelValue)
		}
		if _, ok := o.GetLabels()["clusterctl.cluster.x-k8s.io"]; !ok {
			t.Errorf("%s %s lacks clusterctl's label", o.GetKind(), o.GetName())
		}
	}
	var missing []string
	for _, w := range want {
		key := w.GetKind() + "/" + w.GetName()
		got := byName[key]
		if got == nil {
			// clusterctl prefixes cluster-wide RBAC with the target namespace.
			got = byName[w.GetKind()+"/"+components.Namespace+"-"+w.GetName()]
		}
		if got == nil {
			missing = append(missing, key)
			continue
		}
		// Subjects and role references follow clusterctl's renaming of
		// cluster-wide RBAC; what is granted and run must not change.
		for _, f := range []string{"spec", "rules", "data"} {
			if !equality.Semantic.DeepEqual(got.Object[f], w.Object[f]) {
				t.Errorf("%s: clusterctl renders %s as %v, install as %v", key, f, got.Object[f], w.Object[f])
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 || len(rendered) != len(want) {
		t.Errorf("clusterctl renders %d objects, install has %d; missing from clusterctl's: %v", len(rendered), len(want), missing)
	}
}

// yamlOnly is clusterctl's output from its first document on: what it logs
// before is not YAML.
func yamlOnly(out string) string {
	if i := strings.Index(out, "apiVersion:"); i > 0 {
		return out[i:]
	}
	return out
}
