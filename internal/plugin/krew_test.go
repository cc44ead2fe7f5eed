package plugin

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestKrewManifest checks plugins/krew.yaml the way krew's validator would
// on the points we can get wrong: one platform per os/arch pair Krew
// supports, each with its own archive placeholder, the binary and LICENSE.
// (krew's validate-krew-manifest is not available from this module proxy.)
func TestKrewManifest(t *testing.T) {
	data, err := os.ReadFile("../../plugins/krew.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		APIVersion, Kind string
		Metadata         struct{ Name string }
		Spec             struct {
			Version, ShortDescription, Description, Homepage string
			Platforms                                        []struct {
				Selector         struct{ MatchLabels map[string]string }
				URI, Sha256, Bin string
				Files            []struct{ From, To string }
			}
		}
	}
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "topology" || m.Spec.ShortDescription == "" {
		t.Errorf("header: %+v %+v", m.APIVersion, m.Metadata)
	}
	seen := map[string]bool{}
	for _, p := range m.Spec.Platforms {
		key := p.Selector.MatchLabels["os"] + "_" + p.Selector.MatchLabels["arch"]
		if seen[key] {
			t.Errorf("platform %s twice", key)
		}
		seen[key] = true
		if p.URI != "URI_"+key || p.Sha256 != "SHA_"+key {
			t.Errorf("%s: uri %q sha256 %q do not match its placeholders", key, p.URI, p.Sha256)
		}
		wantBin := "kubectl-topology"
		if strings.HasPrefix(key, "windows") {
			wantBin += ".exe"
		}
		var files []string
		for _, f := range p.Files {
			files = append(files, f.From)
		}
		if p.Bin != wantBin || !strings.Contains(strings.Join(files, " "), wantBin) || !strings.Contains(strings.Join(files, " "), "LICENSE") {
			t.Errorf("%s: bin %q, files %v; want %s and LICENSE", key, p.Bin, files, wantBin)
		}
	}
	for _, os := range []string{"linux", "darwin", "windows"} {
		for _, arch := range []string{"amd64", "arm64"} {
			if !seen[os+"_"+arch] {
				t.Errorf("no platform for %s/%s", os, arch)
			}
		}
	}
}
