package engine

import (
	"strings"

	"k8s.io/apimachinery/pkg/version"
)

// ContractLabel is the label on a provider's CRD that lists, for Cluster
// API's v1beta1 contract, the API versions implementing it, oldest first and
// joined by "_" (e.g. "v1alpha4_v1beta1").
const ContractLabel = "cluster.x-k8s.io/v1beta1"

// ContractVersion is the API version to use for a provider kind, from its
// CRD's labels: the newest of those the contract label lists, as upstream
// picks it. ok is false when the CRD has no contract label.
func ContractVersion(crdLabels map[string]string) (v string, ok bool) {
	value, ok := crdLabels[ContractLabel]
	if !ok || value == "" {
		return "", false
	}
	for _, candidate := range strings.Split(value, "_") {
		if v == "" || version.CompareKubeAwareVersionStrings(candidate, v) > 0 {
			v = candidate
		}
	}
	return v, true
}
