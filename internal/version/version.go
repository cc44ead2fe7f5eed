// Package version is the release of kubectl-topology a binary was built as:
// the plugin installs the agent image of the same tag, and `version` warns
// when the plugin and the agent differ.
package version

import "runtime/debug"

// version is set at build time:
// -ldflags "-X github.com/kubectl-topology/kubectl-topology/internal/version.version=v0.2.0".
var version = ""

// Dev is the version of a build from a working tree, and the tag `make image` gives it.
const Dev = "dev"

// Get is the release this binary was built as: the one set at build time,
// else the module version `go install` records, else Dev.
func Get() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return Dev
}
