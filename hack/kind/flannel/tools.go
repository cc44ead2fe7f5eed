//go:build tools

// Package flannel pins flannel, the workload clusters' CNI on the kind path:
// built from its module and preloaded in the node image, so that pods on
// different machines reach each other without pulling an image.
package flannel

import (
	_ "github.com/flannel-io/flannel"
)
