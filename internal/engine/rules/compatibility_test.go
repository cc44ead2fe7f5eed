package rules

import (
	"strings"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func compatClass() *v1alpha2.TopologyClass {
	ref := func(apiVersion, kind string) v1alpha2.ClusterClassTemplateReference {
		return v1alpha2.ClusterClassTemplateReference{APIVersion: apiVersion, Kind: kind, Name: "t"}
	}
	c := &v1alpha2.TopologyClass{}
	c.Spec.Infrastructure.TemplateRef = ref("infrastructure.cluster.x-k8s.io/v1beta1", "DockerClusterTemplate")
	c.Spec.ControlPlane.TemplateRef = ref("controlplane.cluster.x-k8s.io/v1beta1", "KubeadmControlPlaneTemplate")
	c.Spec.ControlPlane.MachineInfrastructure.TemplateRef = ref("infrastructure.cluster.x-k8s.io/v1beta1", "DockerMachineTemplate")
	md := v1alpha2.MachineDeploymentClass{Class: "general"}
	md.Infrastructure.TemplateRef = ref("infrastructure.cluster.x-k8s.io/v1beta1", "DockerMachineTemplate")
	md.Bootstrap.TemplateRef = ref("bootstrap.cluster.x-k8s.io/v1beta1", "KubeadmConfigTemplate")
	c.Spec.Workers.MachineDeployments = []v1alpha2.MachineDeploymentClass{md}
	mp := v1alpha2.MachinePoolClass{Class: "pool"}
	mp.Infrastructure.TemplateRef = ref("infrastructure.cluster.x-k8s.io/v1beta1", "DockerMachinePoolTemplate")
	c.Spec.Workers.MachinePools = []v1alpha2.MachinePoolClass{mp}
	return c
}

func TestClassesCompatible(t *testing.T) {
	cases := []struct {
		name   string
		change func(c *v1alpha2.TopologyClass)
		field  string // "" means compatible
	}{
		{"same class", func(*v1alpha2.TopologyClass) {}, ""},
		{"new template names and versions", func(c *v1alpha2.TopologyClass) {
			c.Spec.Infrastructure.TemplateRef.Name = "other"
			c.Spec.Infrastructure.TemplateRef.APIVersion = "infrastructure.cluster.x-k8s.io/v1beta2"
		}, ""},
		{"bootstrap kind may change", func(c *v1alpha2.TopologyClass) {
			c.Spec.Workers.MachineDeployments[0].Bootstrap.TemplateRef.Kind = "TalosConfigTemplate"
		}, ""},
		{"a new worker class", func(c *v1alpha2.TopologyClass) {
			md := c.Spec.Workers.MachineDeployments[0]
			md.Class = "gpu"
			md.Infrastructure.TemplateRef = v1alpha2.ClusterClassTemplateReference{APIVersion: "infrastructure.example/v1", Kind: "GPUMachineTemplate"}
			c.Spec.Workers.MachineDeployments = append(c.Spec.Workers.MachineDeployments, md)
		}, ""},
		{"infrastructure provider", func(c *v1alpha2.TopologyClass) {
			c.Spec.Infrastructure.TemplateRef.APIVersion = "infrastructure.example/v1"
		}, "spec.infrastructure.templateRef.apiVersion"},
		{"control plane kind", func(c *v1alpha2.TopologyClass) { c.Spec.ControlPlane.TemplateRef.Kind = "K3sControlPlaneTemplate" }, "spec.controlPlane.templateRef.kind"},
		{"control plane machines", func(c *v1alpha2.TopologyClass) {
			c.Spec.ControlPlane.MachineInfrastructure.TemplateRef.Kind = "AWSMachineTemplate"
		}, "spec.controlPlane.machineInfrastructure.templateRef.kind"},
		{"MachineDeployment infrastructure", func(c *v1alpha2.TopologyClass) {
			c.Spec.Workers.MachineDeployments[0].Infrastructure.TemplateRef.Kind = "AWSMachineTemplate"
		}, "spec.workers.machineDeployments[0].infrastructure.templateRef.kind"},
		{"MachinePool infrastructure", func(c *v1alpha2.TopologyClass) {
			c.Spec.Workers.MachinePools[0].Infrastructure.TemplateRef.APIVersion = "infrastructure.example/v1"
		}, "spec.workers.machinePools[0].infrastructure.templateRef.apiVersion"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			desired := compatClass()
			tc.change(desired)
			errs := ClassesCompatible(compatClass(), desired)
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
			}
			if got := strings.Join(fields, ","); got != tc.field {
				t.Fatalf("errors at %q, want %q: %v", got, tc.field, errs)
			}
		})
	}
}
