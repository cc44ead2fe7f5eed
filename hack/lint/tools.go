//go:build tools

// Package lint pins golangci-lint, which `make lint` builds into bin/. It is a
// module of its own so that its dependencies never move those of the
// Kubernetes build in hack/tools.
package lint

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
