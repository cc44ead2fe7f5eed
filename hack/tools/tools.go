//go:build tools

// Package tools pins the build-time tools of kubectl-topology so that `go build`
// in this module produces the exact versions the Makefile expects.
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
