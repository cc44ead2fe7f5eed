package extension

import (
	"context"

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
		req := &DiscoverVariablesRequest{Settings: p.External.Settings}
		req.APIVersion, req.Kind = APIVersion, "DiscoverVariablesRequest"
		resp := &DiscoverVariablesResponse{}
		if err := c.Call(ctx, HookDiscoverVariables, *p.External.DiscoverVariablesExtension, req, resp); err != nil {
			out = append(out, rules.PatchVariables{Patch: p.Name, Err: err})
			continue
		}
		out = append(out, rules.PatchVariables{Patch: p.Name, Variables: resp.Variables})
	}
	return out
}
