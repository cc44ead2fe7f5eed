package plugin

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// completion is the shape of a cobra completion function.
type completion = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)

// completionAccess connects for a completion, or nil when the cluster cannot
// be reached: a completion never prints an error into the user's shell.
func completionAccess(flags *genericclioptions.ConfigFlags) *live.Cluster {
	ca, err := connect(flags)
	if err != nil {
		return nil
	}
	return ca
}

// withPrefix keeps the names that start with prefix, each with suffix added.
func withPrefix(prefix, suffix string, names ...string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n+suffix)
		}
	}
	return out
}

// completeTopologyNames completes a Topology NAME argument from the cluster.
func completeTopologyNames(flags *genericclioptions.ConfigFlags) completion {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ca := completionAccess(flags)
		if ca == nil {
			return nil, cobra.ShellCompDirectiveError
		}
		names, topoErr := ca.TopologyNames(cmd.Context(), ca.Namespace)
		// Upstream Clusters with spec.topology complete as cluster/NAME.
		clusters, _, clusterErr := ca.ListClusters(cmd.Context(), false, false)
		if topoErr != nil && (clusterErr != nil || len(clusters) == 0) {
			return nil, cobra.ShellCompDirectiveError
		}
		for i := range clusters {
			names = append(names, upstream.Ref(&clusters[i]))
		}
		return withPrefix(toComplete, "", names...), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeNamespaces completes -n from the cluster's namespaces.
func completeNamespaces(flags *genericclioptions.ConfigFlags) completion {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		ca := completionAccess(flags)
		if ca == nil {
			return nil, cobra.ShellCompDirectiveError
		}
		names, err := ca.NamespaceNames(cmd.Context())
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return withPrefix(toComplete, "", names...), cobra.ShellCompDirectiveNoFileComp
	}
}

// completedTopology reads the Topology named by the first argument, for
// completions of what follows it.
func completedTopology(cmd *cobra.Command, flags *genericclioptions.ConfigFlags, args []string) (*v1alpha2.Topology, *live.Cluster) {
	if len(args) == 0 {
		return nil, nil
	}
	ca := completionAccess(flags)
	if ca == nil {
		return nil, nil
	}
	t, err := ca.Topology(cmd.Context(), ca.Namespace, args[0])
	if err != nil {
		return nil, nil
	}
	return t, ca
}

// completePools completes --worker POOL= from the Topology's pools.
func completePools(flags *genericclioptions.ConfigFlags) completion {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		t, _ := completedTopology(cmd, flags, args)
		if t == nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return withPrefix(toComplete, "=", poolNames(t)...), cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
}

// completeVariables completes NAME first, then KEY= from the variables of
// the Topology's class.
func completeVariables(flags *genericclioptions.ConfigFlags) completion {
	names := completeTopologyNames(flags)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return names(cmd, args, toComplete)
		}
		t, ca := completedTopology(cmd, flags, args)
		if t == nil {
			return nil, cobra.ShellCompDirectiveError
		}
		key := t.GetClassKey()
		class, err := ca.Class(cmd.Context(), key.Namespace, key.Name)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var vars []string
		for _, v := range class.Spec.Variables {
			vars = append(vars, v.Name)
		}
		return withPrefix(toComplete, "=", vars...), cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
}

// completeVersions completes --version with what an upgrade may move to:
// the next patch and the next minor of the Topology's version.
func completeVersions(flags *genericclioptions.ConfigFlags) completion {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		t, _ := completedTopology(cmd, flags, args)
		if t == nil {
			return nil, cobra.ShellCompDirectiveError
		}
		v, err := upgrade.ParseVersion(t.Spec.Version)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		next := []string{fmt.Sprintf("v%d.%d.%d", v.Major, v.Minor, v.Patch+1), fmt.Sprintf("v%d.%d.0", v.Major, v.Minor+1)}
		return withPrefix(toComplete, "", next...), cobra.ShellCompDirectiveNoFileComp
	}
}
