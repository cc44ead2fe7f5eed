package engine

import "testing"

func TestContractVersion(t *testing.T) {
	for value, want := range map[string]string{
		"v1beta1":                  "v1beta1",
		"v1alpha4_v1beta1":         "v1beta1",
		"v1beta1_v1alpha4":         "v1beta1",
		"v1alpha3_v1alpha4":        "v1alpha4",
		"v1beta1_v1_v1beta2":       "v1",
		"v1alpha2_v1alpha10":       "v1alpha10",
		"v1alpha4_v1beta1_v1beta2": "v1beta2",
	} {
		got, ok := ContractVersion(map[string]string{ContractLabel: value, "other": "v9"})
		if !ok || got != want {
			t.Errorf("%s: %q, %v; want %s", value, got, ok, want)
		}
	}
	if _, ok := ContractVersion(map[string]string{"cluster.x-k8s.io/v1alpha4": "v1alpha4"}); ok {
		t.Error("a CRD without the v1beta1 contract label has a contract version")
	}
}
