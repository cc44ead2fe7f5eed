//go:build tools

// Package crictl pins crictl for the kind path's node image: the Docker
// provider runs `crictl ps` in each machine before it bootstraps it. The
// proxy refuses `go install` of cri-tools, so it is built from this module.
package crictl

import (
	_ "sigs.k8s.io/cri-tools/cmd/crictl"
)
