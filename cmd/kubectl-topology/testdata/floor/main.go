// Command floor links, for their package initialisation only, the libraries
// the plugin is built on by the project's rules, and does nothing else:
// BenchmarkStartupFloor times it beside the plugin, so that what the
// plugin's own code adds to a start is measured, not guessed.
package main

import (
	_ "github.com/Masterminds/sprig/v3"
	_ "github.com/charmbracelet/bubbles/textinput"
	_ "github.com/charmbracelet/bubbletea"
	_ "github.com/charmbracelet/lipgloss"
	_ "github.com/evanphx/json-patch/v5"
	_ "github.com/spf13/cobra"
	_ "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	_ "k8s.io/cli-runtime/pkg/genericclioptions"
	_ "k8s.io/cli-runtime/pkg/resource"
	_ "sigs.k8s.io/controller-runtime/pkg/client"

	// As the plugin does, before the packages above start up.
	_ "github.com/kubectl-topology/kubectl-topology/internal/gcpercent"
)

func main() {}
