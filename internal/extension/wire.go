// Package extension speaks Cluster API's Runtime SDK to extension servers:
// discovery of their handlers, and the topology mutation hooks
// (GeneratePatches, ValidateTopology, DiscoverVariables) that external
// patches use. The wire format is upstream's hooks.runtime.cluster.x-k8s.io/
// v1alpha1, so extensions written for Cluster API work unchanged.
package extension

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// APIVersion is the Runtime SDK's hooks API.
const APIVersion = "hooks.runtime.cluster.x-k8s.io/v1alpha1"

// Hooks this package calls.
const (
	HookDiscovery         = "Discovery"
	HookGeneratePatches   = "GeneratePatches"
	HookValidateTopology  = "ValidateTopology"
	HookDiscoverVariables = "DiscoverVariables"
	// HookGenerateUpgradePlan is Cluster API v1.14's chained-upgrade hook.
	HookGenerateUpgradePlan = "GenerateUpgradePlan"
)

// DefaultTimeoutSeconds is how long a handler may take when discovery does not say.
const DefaultTimeoutSeconds = 10

// MaxTimeoutSeconds is the longest a handler may ask to take, as upstream allows.
const MaxTimeoutSeconds = 30

// MaxResponseBytes bounds what is read of an extension's answer: patches for
// every template of a large cluster fit many times over.
const MaxResponseBytes = 16 << 20

// ResponseStatus is the outcome an extension reports.
type ResponseStatus string

// Outcomes.
const (
	StatusSuccess ResponseStatus = "Success"
	StatusFailure ResponseStatus = "Failure"
)

// CommonResponse is in every response.
type CommonResponse struct {
	Status  ResponseStatus `json:"status"`
	Message string         `json:"message,omitempty"`
}

// Response is what every hook's response has.
type Response interface {
	common() *CommonResponse
}

func (r *CommonResponse) common() *CommonResponse { return r }

// DiscoveryRequest asks an extension server for its handlers.
type DiscoveryRequest struct {
	metav1.TypeMeta `json:",inline"`
}

// DiscoveryResponse lists an extension server's handlers.
type DiscoveryResponse struct {
	metav1.TypeMeta `json:",inline"`
	CommonResponse  `json:",inline"`
	// Handlers, named as the server names them; the API type has the same
	// shape, with names completed as HANDLER.EXTENSION in status.
	Handlers []v1alpha2.ExtensionHandler `json:"handlers,omitempty"`
}

// Variable is a variable's name and JSON value, as hooks receive them.
type Variable struct {
	Name  string               `json:"name"`
	Value apiextensionsv1.JSON `json:"value"`
}

// HolderReference says where a template is used: the object and the field
// that will refer to the object made from it.
type HolderReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	FieldPath  string `json:"fieldPath"`
}

// GeneratePatchesRequest carries every template of a topology to an
// external patch.
type GeneratePatchesRequest struct {
	metav1.TypeMeta `json:",inline"`
	Settings        map[string]string            `json:"settings,omitempty"`
	Variables       []Variable                   `json:"variables,omitempty"`
	Items           []GeneratePatchesRequestItem `json:"items"`
}

// GeneratePatchesRequestItem is one template.
type GeneratePatchesRequestItem struct {
	UID             types.UID            `json:"uid"`
	HolderReference HolderReference      `json:"holderReference"`
	Object          runtime.RawExtension `json:"object"`
	Variables       []Variable           `json:"variables,omitempty"`
}

// GeneratePatchesResponse holds a patch per template the extension changes.
type GeneratePatchesResponse struct {
	metav1.TypeMeta `json:",inline"`
	CommonResponse  `json:",inline"`
	Items           []GeneratePatchesResponseItem `json:"items,omitempty"`
}

// PatchType is how a patch is written.
type PatchType string

// Patch types.
const (
	JSONPatch      PatchType = "JSONPatch"
	JSONMergePatch PatchType = "JSONMergePatch"
)

// GeneratePatchesResponseItem is a patch for the template with UID.
type GeneratePatchesResponseItem struct {
	UID       types.UID `json:"uid"`
	PatchType PatchType `json:"patchType"`
	Patch     []byte    `json:"patch"`
}

// ValidateTopologyRequest carries the patched templates to a validator.
type ValidateTopologyRequest struct {
	metav1.TypeMeta `json:",inline"`
	Settings        map[string]string              `json:"settings,omitempty"`
	Variables       []Variable                     `json:"variables,omitempty"`
	Items           []*ValidateTopologyRequestItem `json:"items"`
}

// ValidateTopologyRequestItem is one patched template.
type ValidateTopologyRequestItem struct {
	HolderReference HolderReference      `json:"holderReference"`
	Object          runtime.RawExtension `json:"object"`
	Variables       []Variable           `json:"variables,omitempty"`
}

// ValidateTopologyResponse is Success or Failure with a message.
type ValidateTopologyResponse struct {
	metav1.TypeMeta `json:",inline"`
	CommonResponse  `json:",inline"`
}

// DiscoverVariablesRequest asks an extension for the variables its patches read.
type DiscoverVariablesRequest struct {
	metav1.TypeMeta `json:",inline"`
	Settings        map[string]string `json:"settings,omitempty"`
}

// DiscoverVariablesResponse lists variable definitions, as a class's.
type DiscoverVariablesResponse struct {
	metav1.TypeMeta `json:",inline"`
	CommonResponse  `json:",inline"`
	Variables       []v1alpha2.ClusterClassVariable `json:"variables,omitempty"`
}

// GenerateUpgradePlanRequest asks for the versions an upgrade goes through.
type GenerateUpgradePlanRequest struct {
	metav1.TypeMeta `json:",inline"`
	Settings        map[string]string `json:"settings,omitempty"`
	// Cluster is the Cluster API Cluster, without status and managedFields.
	Cluster                           runtime.RawExtension `json:"cluster"`
	FromControlPlaneKubernetesVersion string               `json:"fromControlPlaneKubernetesVersion"`
	FromWorkersKubernetesVersion      string               `json:"fromWorkersKubernetesVersion,omitempty"`
	ToKubernetesVersion               string               `json:"toKubernetesVersion"`
}

// GenerateUpgradePlanResponse lists the steps of the control plane and,
// optionally, of the workers.
type GenerateUpgradePlanResponse struct {
	metav1.TypeMeta      `json:",inline"`
	CommonResponse       `json:",inline"`
	ControlPlaneUpgrades []UpgradeStep `json:"controlPlaneUpgrades,omitempty"`
	WorkersUpgrades      []UpgradeStep `json:"workersUpgrades,omitempty"`
}

// UpgradeStep is one version of an upgrade plan.
type UpgradeStep struct {
	Version string `json:"version"`
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: APIVersion, Kind: kind}
}
