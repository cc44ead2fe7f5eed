// Package templateprobe asks a management cluster whether its providers store
// a template kind. A stock cluster (Cluster API's ClusterTopology gate off, as
// clusterctl init installs it) refuses the kinds only a ClusterClass uses, such
// as KubeadmControlPlaneTemplate; a class then holds those inline. convert and
// the agent's class webhook ask the same way, so they agree.
package templateprobe

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ProviderLabel is the label clusterctl puts on a provider's CRDs.
const ProviderLabel = "cluster.x-k8s.io/provider"

// Refusal is a template kind a provider refuses to store because a feature
// gate is off.
type Refusal struct {
	// APIVersion and Kind of the template.
	APIVersion, Kind string
	// Provider is the clusterctl provider of the kind's CRD, or its API group
	// when the CRD carries no provider label.
	Provider string
	// Message is the provider's own words.
	Message string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("%s is refused by this cluster's provider %s: %s", r.Kind, r.Provider, r.Message)
}

// Probe asks the cluster, with a server-side dry-run create of t, whether it
// stores t. It returns a Refusal when a feature gate makes the provider
// refuse the kind, nil when the cluster takes t or has it already, and any
// other refusal as an error.
func Probe(ctx context.Context, c client.Client, t *unstructured.Unstructured) (*Refusal, error) {
	return probe(ctx, c, t, func() string { return provider(ctx, c, t.GroupVersionKind()) })
}

// probe is Probe with the provider's name found only for a refusal.
func probe(ctx context.Context, c client.Client, t *unstructured.Unstructured, providerName func() string) (*Refusal, error) {
	probe := &unstructured.Unstructured{Object: map[string]any{"spec": t.Object["spec"]}}
	probe.SetAPIVersion(t.GetAPIVersion())
	probe.SetKind(t.GetKind())
	probe.SetNamespace(t.GetNamespace())
	probe.SetName(t.GetName())
	probe.SetLabels(t.GetLabels())
	probe.SetAnnotations(t.GetAnnotations())
	err := c.Create(ctx, probe, client.DryRunAll)
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return nil, nil
	case RefusedByGate(err):
		return &Refusal{APIVersion: t.GetAPIVersion(), Kind: t.GetKind(), Provider: providerName(), Message: webhookWords(err)}, nil
	}
	return nil, err
}

// Minimal is the smallest object of a template kind, named as a reference
// names it: what to probe with when the template itself is not there. Its
// spec.template.spec holds what the kind's CRD schema requires at least (a
// KubeadmControlPlaneTemplate needs one property), so that the API server's
// schema validation lets it through to the provider's webhook, which is what
// the probe asks.
func Minimal(ctx context.Context, c client.Client, apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	return minimalOf(crdOf(ctx, c, schema.FromAPIVersionAndKind(apiVersion, kind)), apiVersion, kind, namespace, name)
}

// minimalOf is Minimal from the kind's CRD, which may be nil.
func minimalOf(crd *unstructured.Unstructured, apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	spec := map[string]any{}
	if s := templateSpecSchema(crd, schema.FromAPIVersionAndKind(apiVersion, kind).Version); s != nil {
		if v, ok := minimalValue(s, 0).(map[string]any); ok {
			spec = v
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": spec}}}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// templateSpecSchema is the OpenAPI schema of spec.template.spec at version
// in a kind's CRD, or nil.
func templateSpecSchema(crd *unstructured.Unstructured, version string) map[string]any {
	if crd == nil {
		return nil
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		vm, ok := v.(map[string]any)
		if !ok || vm["name"] != version {
			continue
		}
		s, _, _ := unstructured.NestedMap(vm, "schema", "openAPIV3Schema", "properties", "spec", "properties", "template", "properties", "spec")
		return s
	}
	return nil
}

// maxSchemaDepth bounds the walk of a schema; deeper requirements are left
// unmet (the probe then gives no verdict).
const maxSchemaDepth = 12

// minimalValue is a small value that meets a schema's type, required
// properties, minProperties, minItems, minLength and enum, or nil where it
// cannot tell (a pattern, a format); best effort, for a probe.
func minimalValue(s map[string]any, depth int) any {
	if depth > maxSchemaDepth {
		return nil
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	switch s["type"] {
	case "object":
		props, _ := s["properties"].(map[string]any)
		out := map[string]any{}
		required, _ := s["required"].([]any)
		for _, r := range required {
			name, _ := r.(string)
			p, _ := props[name].(map[string]any)
			if v := minimalValue(p, depth+1); v != nil {
				out[name] = v
			}
		}
		minProps, _ := s["minProperties"].(int64)
		names := make([]string, 0, len(props))
		for n := range props {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if int64(len(out)) >= minProps {
				break
			}
			if _, done := out[n]; done {
				continue
			}
			p, _ := props[n].(map[string]any)
			if v := minimalValue(p, depth+1); v != nil {
				out[n] = v
			}
		}
		return out
	case "array":
		items, _ := s["items"].(map[string]any)
		n, _ := s["minItems"].(int64)
		out := make([]any, 0, max(n, 1))
		for range max(n, 1) {
			v := minimalValue(items, depth+1)
			if v == nil {
				return nil
			}
			out = append(out, v)
		}
		return out
	case "string":
		if _, ok := s["pattern"]; ok {
			return nil
		}
		if _, ok := s["format"]; ok {
			return nil
		}
		n, _ := s["minLength"].(int64)
		return strings.Repeat("a", int(max(n, 1)))
	case "integer", "number":
		if m, ok := s["minimum"].(int64); ok {
			return m
		}
		return int64(1)
	case "boolean":
		return false
	}
	return nil
}

// RefusedByGate tells a refusal because a feature gate is off, as Cluster
// API's webhooks word it ("can be set only if the ClusterTopology feature
// flag is enabled").
func RefusedByGate(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "feature flag") || strings.Contains(msg, "feature gate")
}

// GateError is an object a provider refuses because one of its feature
// gates is off, as on a stock management cluster.
type GateError struct {
	Kind, Name string
	// Provider is the clusterctl provider of the kind's CRD, or its API group.
	Provider string
	// Words are what the provider's webhook said, naming the gate.
	Words string
}

func (e *GateError) Error() string {
	return fmt.Sprintf("provider %s refuses %s %s because a feature gate of its is off, as clusterctl init leaves it (%s): turn that gate on in the provider's manager, or change the class so that it does not need it",
		e.Provider, e.Kind, e.Name, e.Words)
}

// ExplainGate turns a refusal of obj because a provider's feature gate is
// off into a GateError naming the provider and the gate; any other error is
// returned as it is.
func ExplainGate(ctx context.Context, c client.Client, obj *unstructured.Unstructured, err error) error {
	if err == nil || !RefusedByGate(err) {
		return err
	}
	return &GateError{Kind: obj.GetKind(), Name: obj.GetName(), Provider: provider(ctx, c, obj.GroupVersionKind()), Words: webhookWords(err)}
}

// webhookWords is what the provider's webhook said, without the API
// server's wrapping.
func webhookWords(err error) string {
	msg := err.Error()
	if _, after, ok := strings.Cut(msg, "denied the request: "); ok {
		return after
	}
	return msg
}

// provider names the clusterctl provider of a kind from its CRD's label,
// else its API group.
func provider(ctx context.Context, c client.Client, gvk schema.GroupVersionKind) string {
	if crd := crdOf(ctx, c, gvk); crd != nil && crd.GetLabels()[ProviderLabel] != "" {
		return crd.GetLabels()[ProviderLabel]
	}
	return gvk.Group
}

// crdOf reads the CRD of a kind, or nil.
func crdOf(ctx context.Context, c client.Client, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	m, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil
	}
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := c.Get(ctx, client.ObjectKey{Name: m.Resource.Resource + "." + gvk.Group}, crd); err != nil {
		return nil
	}
	return crd
}

// Provider is one clusterctl provider of the cluster, by its CRDs' label,
// with the template kinds it defines and those it refuses to store.
type Provider struct {
	// Name is the clusterctl provider label, e.g. control-plane-kubeadm.
	Name string
	// Templates are its template kinds, sorted.
	Templates []string
	// Refused are those it refuses to store, in Templates' order.
	Refused []Refusal
}

// Survey lists the providers whose CRDs carry the clusterctl provider label
// and asks, with a dry run in namespace, which of their template kinds they
// refuse to store. A kind the dry run refuses for another reason is not
// counted: the probe cannot tell.
func Survey(ctx context.Context, c client.Client, namespace string) ([]Provider, error) {
	crds := &unstructured.UnstructuredList{}
	crds.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinitionList"})
	if err := c.List(ctx, crds, client.HasLabels{ProviderLabel}); err != nil {
		return nil, err
	}
	byName := map[string]*Provider{}
	var names []string
	for _, crd := range crds.Items {
		name := crd.GetLabels()[ProviderLabel]
		p := byName[name]
		if p == nil {
			p = &Provider{Name: name}
			byName[name] = p
			names = append(names, name)
		}
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		version := storageVersion(crd)
		if !strings.HasSuffix(kind, "Template") || version == "" {
			continue
		}
		p.Templates = append(p.Templates, kind)
		apiVersion := group + "/" + version
		refusal, err := probe(ctx, c, minimalOf(&crd, apiVersion, kind, namespace, "kubectl-topology-probe"), func() string { return name })
		if err == nil && refusal != nil {
			p.Refused = append(p.Refused, *refusal)
		}
	}
	sort.Strings(names)
	out := make([]Provider, 0, len(names))
	for _, n := range names {
		p := byName[n]
		sort.Strings(p.Templates)
		sort.Slice(p.Refused, func(i, j int) bool { return p.Refused[i].Kind < p.Refused[j].Kind })
		out = append(out, *p)
	}
	return out, nil
}

// storageVersion is the version a CRD stores, or "".
func storageVersion(crd unstructured.Unstructured) string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		if vm, ok := v.(map[string]any); ok && vm["storage"] == true {
			name, _ := vm["name"].(string)
			return name
		}
	}
	return ""
}
