package contract

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
		t.Error("a CRD without a v1beta1 or v1beta2 contract label has a contract version")
	}
}

// TestContractV1Beta2First: a CRD labelled for both contracts is used at the
// version of the newest contract, as upstream v1.14 picks it, even when the
// v1beta1 label lists a version that sorts later.
func TestContractV1Beta2First(t *testing.T) {
	labels := map[string]string{"cluster.x-k8s.io/v1beta1": "v1beta1_v1beta3", "cluster.x-k8s.io/v1beta2": "v1beta2"}
	v, c, ok := ContractOf(labels)
	if !ok || v != "v1beta2" || c != ContractV1Beta2 {
		t.Fatalf("got %q %q %v, want v1beta2 of contract v1beta2", v, c, ok)
	}
	if c, ok := ContractOfVersion(labels, "v1beta3"); !ok || c != ContractV1Beta1 {
		t.Errorf("v1beta3 implements %q %v, want v1beta1", c, ok)
	}
	if v, c, ok := ContractOf(map[string]string{"cluster.x-k8s.io/v1beta2": "v1alpha1_v1alpha2"}); !ok || v != "v1alpha2" || c != ContractV1Beta2 {
		t.Errorf("a v1beta2-only provider: %q %q %v", v, c, ok)
	}
}
