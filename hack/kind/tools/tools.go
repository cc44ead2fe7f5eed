//go:build tools

// Package tools pins what the kind path builds and reads from the Go module
// proxy: kind itself (its CLI, and the base image files its node images are
// made of). It is a module of its own, so that kind's dependencies never
// move the main module's.
package tools

import (
	_ "sigs.k8s.io/kind/pkg/cluster"
	_ "sigs.k8s.io/kind/pkg/cmd/kind"
)
