package components

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/blang/semver/v4"
)

// ProviderName is the agent's name as a clusterctl add-on provider:
// `clusterctl init --addon kubectl-topology`; clusterctl labels what it installs
// with ProviderLabelValue, "addon-" and this.
const ProviderName = "kubectl-topology"

// Repository is a clusterctl provider repository of one release of the
// agent, as clusterctl reads a local one: Dir/addon-kubectl-topology/VERSION/ holds
// addon-components.yaml and metadata.yaml.
type Repository struct {
	Dir     string
	Version string
}

// ComponentsURL is what a clusterctl configuration's providers entry names
// as the url of this release.
func (r Repository) ComponentsURL() string {
	return "file://" + filepath.Join(r.versionDir(), "addon-components.yaml")
}

func (r Repository) versionDir() string {
	return filepath.Join(r.Dir, ProviderLabelValue, r.Version)
}

// Write writes the release: the components running the agent image of the
// release's own tag, and metadata.yaml.
func (r Repository) Write() error {
	if _, err := semver.ParseTolerant(r.Version); err != nil {
		return fmt.Errorf("release %q of a clusterctl repository must be a semantic version such as v0.1.0: %w", r.Version, err)
	}
	data, err := Render(r.Image())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(r.versionDir(), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.versionDir(), "addon-components.yaml"), data, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.versionDir(), "metadata.yaml"), []byte(Metadata), 0o644)
}

// Image is the agent image the release's components run, written in full:
// clusterctl refuses a reference without its registry, which install's
// short form (Image) leaves to the container runtime's default, docker.io.
func (r Repository) Image() string { return "docker.io/" + Image(r.Version) }

// ClusterctlConfig is a clusterctl configuration naming this repository as
// the add-on provider ProviderName, for `clusterctl --config`.
func (r Repository) ClusterctlConfig() string {
	return fmt.Sprintf("providers:\n- name: %s\n  type: AddonProvider\n  url: %s\n", ProviderName, r.ComponentsURL())
}
