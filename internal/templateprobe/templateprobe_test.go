package templateprobe

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"sigs.k8s.io/yaml"
)

func schemaOf(t *testing.T, doc string) map[string]any {
	t.Helper()
	var s map[string]any
	if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	return toInt64(s).(map[string]any)
}

// toInt64 reads numbers as the API server's JSON decoding gives them.
func toInt64(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = toInt64(e)
		}
	case []any:
		for i, e := range x {
			x[i] = toInt64(e)
		}
	case float64:
		return int64(x)
	}
	return v
}

// A probe's body meets what the schema demands at least, so that schema
// validation lets it through to the provider's webhook: required
// properties, minProperties (the first properties by name that can be
// filled), minItems, minLength, enum, minimum.
func TestMinimalValue(t *testing.T) {
	cases := []struct {
		name, schema string
		want         any
	}{
		{"empty object", `{type: object, properties: {a: {type: string}}}`, map[string]any{}},
		{"one property at least, the first by name that can be filled", `{type: object, minProperties: 1, properties: {b: {type: string}, a: {type: string, pattern: "^x$"}}}`,
			map[string]any{"b": "a"}},
		{"required, nested", `{type: object, required: [node], properties: {node: {type: object, required: [k, list], properties: {k: {type: integer, minimum: 3}, list: {type: array, minItems: 2, items: {type: string, minLength: 2}}}}}}`,
			map[string]any{"node": map[string]any{"k": int64(3), "list": []any{"aa", "aa"}}}},
		{"enum", `{type: string, enum: [Linux, Windows]}`, "Linux"},
		{"pattern cannot be met", `{type: string, pattern: "^v"}`, nil},
		{"kubeadm control plane template's spec", `{type: object, minProperties: 1, properties: {kubeadmConfigSpec: {type: object, minProperties: 1, properties: {bootCommands: {type: array, minItems: 1, items: {type: string, minLength: 1}}, format: {type: string, enum: [cloud-config, ignition]}}}}}`,
			map[string]any{"kubeadmConfigSpec": map[string]any{"bootCommands": []any{"a"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := minimalValue(schemaOf(t, tc.schema), 0); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

// Only a refusal because a gate is off counts, in Cluster API's words; the
// provider's words are kept without the API server's wrapping.
func TestRefusedByGate(t *testing.T) {
	gate := errors.New(`admission webhook "validation.kubeadmcontrolplanetemplate.controlplane.cluster.x-k8s.io" denied the request: spec: Forbidden: can be set only if the ClusterTopology feature flag is enabled`)
	if !RefusedByGate(gate) {
		t.Error("the kubeadm control plane provider's refusal is not read as a gate's")
	}
	if got := webhookWords(gate); got != "spec: Forbidden: can be set only if the ClusterTopology feature flag is enabled" {
		t.Errorf("webhook words %q", got)
	}
	if RefusedByGate(errors.New(`admission webhook "x" denied the request: spec.template.spec.replicas: Invalid value: -1`)) {
		t.Error("an invalid value is read as a gate's refusal")
	}
}

// A gate's refusal of a generated object names the provider and the gate,
// and what to do; another error passes as it is.
func TestExplainGate(t *testing.T) {
	kcp := &unstructured.Unstructured{}
	kcp.SetAPIVersion("controlplane.cluster.x-k8s.io/v1beta2")
	kcp.SetKind("KubeadmControlPlane")
	kcp.SetName("dev-x")
	c := fake.NewClientBuilder().Build()
	ignition := errors.New(`admission webhook "validation.kubeadmcontrolplane.controlplane.cluster.x-k8s.io" denied the request: spec.kubeadmConfigSpec.format: Forbidden: can be set only if the KubeadmBootstrapFormatIgnition feature gate is enabled`)
	err := ExplainGate(context.Background(), c, kcp, ignition)
	var gate *GateError
	if !errors.As(err, &gate) {
		t.Fatalf("got %v, want a GateError", err)
	}
	for _, want := range []string{"provider controlplane.cluster.x-k8s.io refuses KubeadmControlPlane dev-x", "KubeadmBootstrapFormatIgnition feature gate", "turn that gate on in the provider's manager"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	other := errors.New("spec.replicas: Invalid value: -1")
	if got := ExplainGate(context.Background(), c, kcp, other); got != other {
		t.Errorf("another refusal became %v", got)
	}
}
