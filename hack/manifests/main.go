// Command manifests writes manifests/addon-components.yaml and
// manifests/metadata.yaml from pkg/components.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubectl-topology/kubectl-topology/pkg/components"
)

func main() {
	out := flag.String("out", "manifests", "directory to write to")
	image := flag.String("image", components.DefaultImage, "agent image the Deployment runs")
	flag.Parse()
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
