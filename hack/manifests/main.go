// Command manifests writes manifests/addon-components.yaml and
// manifests/metadata.yaml from internal/components, or with -repo a clusterctl
// provider repository of one release.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
)

func main() {
	out := flag.String("out", "manifests", "directory to write to")
	image := flag.String("image", components.DefaultImage, "agent image the Deployment runs")
	repo := flag.String("repo", "", "write a clusterctl provider repository of release -version here instead")
	version := flag.String("version", "", "the release of the repository, a semantic version such as v0.1.0")
	flag.Parse()
	if *repo != "" {
		r := components.Repository{Dir: *repo, Version: *version}
		if err := r.Write(); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
		fmt.Printf("wrote %s\nclusterctl init --addon %s --config clusterctl.yaml, with clusterctl.yaml:\n%s", r.ComponentsURL(), components.ProviderName, r.ClusterctlConfig())
		return
	}
	if err := write(*out, *image); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func write(dir, image string) error {
	data, err := components.Render(image)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "addon-components.yaml"), data, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "metadata.yaml"), []byte(components.Metadata), 0o644)
}
