package extension

import (
	"context"
	"encoding/json"
	"fmt"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// DiscoverVariables asks the extension of every external patch of class
// that has a discoverVariablesExtension for its variable definitions, in
// patch order. A patch whose extension cannot be asked carries the reason
// in Err, so the caller decides: the agent keeps what status recorded, an
// offline plan stops.
func (c *Client) DiscoverVariables(ctx context.Context, class *v1alpha2.TopologyClass) []rules.PatchVariables {
	var out []rules.PatchVariables
	for _, p := range class.Spec.Patches {
		if p.External == nil || p.External.DiscoverVariablesExtension == nil {
			continue
		}
		req := &runtimehooksv1.DiscoverVariablesRequest{CommonRequest: runtimehooksv1.CommonRequest{Settings: p.External.Settings}}
		resp := &runtimehooksv1.DiscoverVariablesResponse{}
		if err := c.Call(ctx, HookDiscoverVariables, *p.External.DiscoverVariablesExtension, req, resp); err != nil {
			out = append(out, rules.PatchVariables{Patch: p.Name, Err: err})
			continue
		}
		variables, err := classVariables(resp.Variables)
		if err != nil {
			out = append(out, rules.PatchVariables{Patch: p.Name, Err: fmt.Errorf("%s handler %s: %w", HookDiscoverVariables, *p.External.DiscoverVariablesExtension, err)})
			continue
		}
		out = append(out, rules.PatchVariables{Patch: p.Name, Variables: variables})
	}
	return out
}

// classVariables are upstream's variable definitions as a TopologyClass
// holds them; the two share their JSON shape, field for field.
func classVariables(in []clusterv1.ClusterClassVariable) ([]v1alpha2.ClusterClassVariable, error) {
	if len(in) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encoding the discovered variables: %w", err)
	}
	var out []v1alpha2.ClusterClassVariable
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("the discovered variables do not fit a TopologyClass's: %w", err)
	}
	return out, nil
}
