package contract

import (
	"strings"

	"k8s.io/apimachinery/pkg/version"
)

// contractLabelGroup starts the labels on a provider's CRD that list, per
// Cluster API contract, the API versions implementing it, oldest first and
// joined by "_": "cluster.x-k8s.io/v1beta2: v1beta2".
const contractLabelGroup = "cluster.x-k8s.io/"

// Contract labels, newest contract first: the order upstream tries them in.
var contractLabels = []Contract{ContractV1Beta2, ContractV1Beta1}

// ContractLabel is the label of the v1beta1 contract, which the local control
// plane adds to CRDs of Cluster API releases that predate it.
const ContractLabel = contractLabelGroup + string(ContractV1Beta1)

// ContractVersion is the API version to use for a provider kind, from its
// CRD's labels: the newest version listed for the newest contract the CRD
// names (v1beta2, then v1beta1), as upstream picks it. ok is false when the
// CRD names neither contract.
func ContractVersion(crdLabels map[string]string) (v string, ok bool) {
	v, _, ok = ContractOf(crdLabels)
	return v, ok
}

// ContractOf is ContractVersion with the contract that version implements.
func ContractOf(crdLabels map[string]string) (v string, contract Contract, ok bool) {
	for _, c := range contractLabels {
		value := crdLabels[contractLabelGroup+string(c)]
		if value == "" {
			continue
		}
		for _, candidate := range strings.Split(value, "_") {
			if v == "" || version.CompareKubeAwareVersionStrings(candidate, v) > 0 {
				v = candidate
			}
		}
		return v, c, true
	}
	return "", "", false
}

// ContractOfVersion is the contract a CRD's labels say apiVersion's version
// implements; ok is false when no contract label lists it.
func ContractOfVersion(crdLabels map[string]string, v string) (Contract, bool) {
	for _, c := range contractLabels {
		for _, listed := range strings.Split(crdLabels[contractLabelGroup+string(c)], "_") {
			if listed == v {
				return c, true
			}
		}
	}
	return "", false
}
