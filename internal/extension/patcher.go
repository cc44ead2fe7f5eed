package extension

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/patches"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Patcher runs a class's external patches in computations of a topology's
// desired state; it knows which variables each patch's extension defined.
type Patcher struct {
	client *Client
	// definedBy maps a patch name to the variables discovered from its
	// extension: upstream sends an external patch only those.
	definedBy map[string]map[string]bool
}

var _ patches.External = (*Patcher)(nil)

// NewPatcher returns the external patch runner for class, from its status's
// variable definitions.
func NewPatcher(client *Client, class *v1alpha2.TopologyClass) *Patcher {
	p := &Patcher{client: client, definedBy: map[string]map[string]bool{}}
	for _, v := range class.Status.Variables {
		for _, d := range v.Definitions {
			if p.definedBy[d.From] == nil {
				p.definedBy[d.From] = map[string]bool{}
			}
			p.definedBy[d.From][v.Name] = true
		}
	}
	return p
}

// Skipped lists the handlers a best-effort client could not call since the
// last time it was asked.
func (p *Patcher) Skipped() []Skip { return p.client.Skipped() }

// Generate calls the patch's generate extension with every template and
// applies what it returns, keeping only each template's spec, as upstream does.
func (p *Patcher) Generate(ctx context.Context, patch *v1alpha2.ClusterClassPatch, in patches.ExternalInput) error {
	globals, items, err := p.request(patch, in)
	if err != nil {
		return err
	}
	req := &runtimehooksv1.GeneratePatchesRequest{CommonRequest: runtimehooksv1.CommonRequest{Settings: patch.External.Settings}, Variables: globals}
	byUID := map[types.UID]int{}
	for i, it := range items {
		// Stable per request; extensions only echo them back.
		uid := types.UID(strconv.Itoa(i))
		byUID[uid] = i
		req.Items = append(req.Items, runtimehooksv1.GeneratePatchesRequestItem{UID: uid, HolderReference: it.HolderReference, Object: it.Object, Variables: it.Variables})
	}
	resp := &runtimehooksv1.GeneratePatchesResponse{}
	if err := p.client.Call(ctx, HookGeneratePatches, *patch.External.GeneratePatchesExtension, req, resp); err != nil {
		return err
	}
	for _, item := range resp.Items {
		i, ok := byUID[item.UID]
		if !ok {
			return fmt.Errorf("the extension returned a patch for uid %q, which no template in the request has", item.UID)
		}
		// Patches for the same template apply one after the other.
		t := in.Targets[i]
		raw, err := json.Marshal(t.Object.Object)
		if err != nil {
			return err
		}
		if err := applyItem(t, raw, item); err != nil {
			return fmt.Errorf("%s: %w", t.Description, err)
		}
	}
	return nil
}

// applyItem applies one returned patch to the template it names; only the
// spec of the result is taken, so metadata cannot be patched.
func applyItem(t *patches.Target, original []byte, item runtimehooksv1.GeneratePatchesResponseItem) error {
	var patched []byte
	var err error
	switch item.PatchType {
	case runtimehooksv1.JSONPatchType:
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(item.Patch); err != nil {
			return fmt.Errorf("the extension's JSON patch does not decode: %w", err)
		}
		if patched, err = p.Apply(original); err != nil {
			return fmt.Errorf("the extension's JSON patch does not apply: %w", err)
		}
	case runtimehooksv1.JSONMergePatchType:
		if patched, err = jsonpatch.MergePatch(original, item.Patch); err != nil {
			return fmt.Errorf("the extension's merge patch does not apply: %w", err)
		}
	default:
		return fmt.Errorf("the extension returned patch type %q; want %s or %s", item.PatchType, runtimehooksv1.JSONPatchType, runtimehooksv1.JSONMergePatchType)
	}
	var obj map[string]any
	if err := json.Unmarshal(patched, &obj); err != nil {
		return err
	}
	if spec, ok := obj["spec"]; ok {
		t.Object.Object["spec"] = spec
	} else {
		delete(t.Object.Object, "spec")
	}
	return nil
}

// Validate calls the patch's validate extension with every patched template.
func (p *Patcher) Validate(ctx context.Context, patch *v1alpha2.ClusterClassPatch, in patches.ExternalInput) error {
	globals, items, err := p.request(patch, in)
	if err != nil {
		return err
	}
	req := &runtimehooksv1.ValidateTopologyRequest{CommonRequest: runtimehooksv1.CommonRequest{Settings: patch.External.Settings}, Variables: globals}
	for i := range items {
		req.Items = append(req.Items, &items[i])
	}
	return p.client.Call(ctx, HookValidateTopology, *patch.External.ValidateTopologyExtension, req, &runtimehooksv1.ValidateTopologyResponse{})
}

// request is what both hooks are sent: the global variables and the
// templates, with only the variables the patch's extension defined.
func (p *Patcher) request(patch *v1alpha2.ClusterClassPatch, in patches.ExternalInput) ([]runtimehooksv1.Variable, []runtimehooksv1.ValidateTopologyRequestItem, error) {
	defined := p.definedBy[patch.Name]
	globals, err := globalVariables(in, defined)
	if err != nil {
		return nil, nil, err
	}
	items, err := templates(in, defined)
	return globals, items, err
}

// templates are the targets as hooks receive them: where each is used, the
// template as the patches so far left it, and its own variables.
func templates(in patches.ExternalInput, defined map[string]bool) ([]runtimehooksv1.ValidateTopologyRequestItem, error) {
	out := make([]runtimehooksv1.ValidateTopologyRequestItem, 0, len(in.Targets))
	for _, t := range in.Targets {
		raw, err := json.Marshal(t.Object.Object)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.Description, err)
		}
		vars, err := targetVariables(t, defined)
		if err != nil {
			return nil, err
		}
		out = append(out, runtimehooksv1.ValidateTopologyRequestItem{HolderReference: holder(t), Object: runtime.RawExtension{Raw: raw}, Variables: vars})
	}
	return out, nil
}

func holder(t *patches.Target) runtimehooksv1.HolderReference {
	h := t.Holder
	return runtimehooksv1.HolderReference{APIVersion: h.APIVersion, Kind: h.Kind, Namespace: h.Namespace, Name: h.Name, FieldPath: h.FieldPath}
}

// globalVariables are the topology's variables the patch's extension
// defined, and builtin with the cluster's builtins.
func globalVariables(in patches.ExternalInput, defined map[string]bool) ([]runtimehooksv1.Variable, error) {
	var out []runtimehooksv1.Variable
	for _, v := range in.Variables {
		if defined[v.Name] {
			out = append(out, runtimehooksv1.Variable{Name: v.Name, Value: v.Value})
		}
	}
	b, err := builtin(patches.Builtins{Cluster: in.Builtins.Cluster})
	if err != nil {
		return nil, err
	}
	return append(out, b), nil
}

// targetVariables are a template's own: the part's overrides the extension
// defined, and builtin with its control plane, MachineDeployment or MachinePool builtins.
func targetVariables(t *patches.Target, defined map[string]bool) ([]runtimehooksv1.Variable, error) {
	var out []runtimehooksv1.Variable
	for _, v := range t.Overrides {
		if defined[v.Name] {
			out = append(out, runtimehooksv1.Variable{Name: v.Name, Value: v.Value})
		}
	}
	if t.Builtins == nil {
		return out, nil
	}
	b, err := builtin(*t.Builtins)
	if err != nil {
		return nil, err
	}
	return append(out, b), nil
}

func builtin(b patches.Builtins) (runtimehooksv1.Variable, error) {
	raw, err := json.Marshal(b)
	if err != nil {
		return runtimehooksv1.Variable{}, fmt.Errorf("builtin variables: %w", err)
	}
	return runtimehooksv1.Variable{Name: "builtin", Value: apiextensionsv1.JSON{Raw: raw}}, nil
}
