// Package extension speaks Cluster API's Runtime SDK to extension servers:
// discovery of their handlers, the topology mutation hooks (GeneratePatches,
// ValidateTopology, DiscoverVariables) that external patches use, the
// upgrade plan and the lifecycle hooks. Requests and responses are
// upstream's own types (sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1),
// so extensions written for Cluster API work unchanged.
package extension

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
)

// APIVersion is the Runtime SDK's hooks API.
var APIVersion = runtimehooksv1.GroupVersion.String()

// Hooks this package calls, named as upstream's catalog names them.
var (
	HookDiscovery         = runtimecatalog.HookName(runtimehooksv1.Discovery)
	HookGeneratePatches   = runtimecatalog.HookName(runtimehooksv1.GeneratePatches)
	HookValidateTopology  = runtimecatalog.HookName(runtimehooksv1.ValidateTopology)
	HookDiscoverVariables = runtimecatalog.HookName(runtimehooksv1.DiscoverVariables)
	// HookGenerateUpgradePlan is Cluster API v1.14's chained-upgrade hook.
	HookGenerateUpgradePlan = runtimecatalog.HookName(runtimehooksv1.GenerateUpgradePlan)
)

// DefaultTimeoutSeconds is how long a handler may take when discovery does not say.
const DefaultTimeoutSeconds = 10

// MaxTimeoutSeconds is the longest a handler may ask to take, as upstream allows.
const MaxTimeoutSeconds = 30

// MaxResponseBytes bounds what is read of an extension's answer: patches for
// every template of a large cluster fit many times over.
const MaxResponseBytes = 16 << 20

// catalog is upstream's registry of hooks: it makes each hook's request and
// response and knows their kinds.
var catalog = func() *runtimecatalog.Catalog {
	c := runtimecatalog.New()
	if err := runtimehooksv1.AddToCatalog(c); err != nil {
		panic(fmt.Sprintf("registering Cluster API's runtime hooks: %v", err))
	}
	return c
}()

// gvh is the hook's group, version and name in the catalog.
func gvh(hook string) runtimecatalog.GroupVersionHook {
	return runtimecatalog.GroupVersionHook{Group: runtimehooksv1.GroupVersion.Group, Version: runtimehooksv1.GroupVersion.Version, Hook: hook}
}

// newMessages makes hook's request and response, as upstream's catalog
// registers them.
func newMessages(hook string) (runtimehooksv1.RequestObject, runtimehooksv1.ResponseObject, error) {
	g := gvh(hook)
	reqObj, err := catalog.NewRequest(g)
	if err != nil {
		return nil, nil, fmt.Errorf("hook %s: %w", hook, err)
	}
	respObj, err := catalog.NewResponse(g)
	if err != nil {
		return nil, nil, fmt.Errorf("hook %s: %w", hook, err)
	}
	req, ok := reqObj.(runtimehooksv1.RequestObject)
	if !ok {
		return nil, nil, fmt.Errorf("hook %s: its request %T is not a Runtime SDK request", hook, reqObj)
	}
	resp, ok := respObj.(runtimehooksv1.ResponseObject)
	if !ok {
		return nil, nil, fmt.Errorf("hook %s: its response %T is not a Runtime SDK response", hook, respObj)
	}
	return req, resp, nil
}

// withKind sets a request's apiVersion and kind from the catalog: an
// extension server reads them in the body.
func withKind(obj runtime.Object) error {
	k, err := catalog.GroupVersionKind(obj)
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(k)
	return nil
}
