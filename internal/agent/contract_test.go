package agent

import (
	"context"
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/controller"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/selfinstall"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// contractCRD is a provider kind served at two versions whose contract label
// names the newer one, as a provider upgraded from v1alpha1 to v1beta1 has.
func contractCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	version := func(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "contractmachinetemplates.infrastructure.contract.test", Labels: map[string]string{contract.ContractLabel: "v1alpha1_v1beta1"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "infrastructure.contract.test", Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "contractmachinetemplates", Singular: "contractmachinetemplate", Kind: "ContractMachineTemplate", ListKind: "ContractMachineTemplateList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1alpha1", false), version("v1beta1", true)},
		},
	}
}

// TestTemplateRefsFollowTheContract writes a class against a provider's
// older API version: the agent moves the reference to the version the CRD's
// contract label names, and the Topology is reconciled with it.
func TestTemplateRefsFollowTheContract(t *testing.T) {
	ctx := context.Background()
	if err := selfinstall.ApplyCRDs(ctx, suiteCluster.Config, []*apiextensionsv1.CustomResourceDefinition{contractCRD()}); err != nil {
		t.Fatal(err)
	}
	startAgent(t)
	ns := newNamespace(t, "contract")
	ex := loadExample(t, ns)
	tmpl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.contract.test/v1alpha1", "kind": "ContractMachineTemplate",
		"metadata": map[string]any{"name": "contract-worker", "namespace": ns},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"size": "small"}}},
	}}
	if err := k8s.Create(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	ex.Class.Spec.Workers.MachineDeployments[0].Infrastructure.TemplateRef.APIVersion = "infrastructure.contract.test/v1alpha1"
	ex.Class.Spec.Workers.MachineDeployments[0].Infrastructure.TemplateRef.Kind = "ContractMachineTemplate"
	ex.Class.Spec.Workers.MachineDeployments[0].Infrastructure.TemplateRef.Name = "contract-worker"
	createClass(t, ex)
	eventually(t, "the class refers to the contract's version", func() (bool, error) {
		class := &v1alpha2.TopologyClass{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ex.Class), class); err != nil {
			return false, err
		}
		got := class.Spec.Workers.MachineDeployments[0].Infrastructure.TemplateRef.APIVersion
		return got == "infrastructure.contract.test/v1beta1", fmt.Errorf("apiVersion %s", got)
	})
	if err := k8s.Create(ctx, ex.Topology.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	reconciled(t, ns, "dev", controller.ReasonSucceeded)
	md := poolObject(t, ns, "dev", mdGVK, "md-a")
	ref := nested(md, "spec", "template", "spec", "infrastructureRef").(map[string]any)
	if ref["apiVersion"] != "infrastructure.contract.test/v1beta1" || ref["kind"] != "ContractMachineTemplate" {
		t.Errorf("md-a refers to %v", ref)
	}
}
