package engine

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
)

func compatClass() *v1alpha1.TopologyClass {
	ref := func(apiVersion, kind string) *corev1.ObjectReference {
		return &corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Name: "t"}
	}
	c := &v1alpha1.TopologyClass{}
	c.Spec.Infrastructure.Ref = ref("infrastructure.cluster.x-k8s.io/v1beta1", "DockerClusterTemplate")
	c.Spec.ControlPlane.Ref = ref("controlplane.cluster.x-k8s.io/v1beta1", "KubeadmControlPlaneTemplate")
	c.Spec.ControlPlane.MachineInfrastructure = &v1alpha1.LocalObjectTemplate{Ref: ref("infrastructure.cluster.x-k8s.io/v1beta1", "DockerMachineTemplate")}
	md := v1alpha1.MachineDeploymentClass{Class: "general"}
	md.Template.Infrastructure.Ref = ref("infrastructure.cluster.x-k8s.io/v1beta1", "DockerMachineTemplate")
	md.Template.Bootstrap.Ref = ref("bootstrap.cluster.x-k8s.io/v1beta1", "KubeadmConfigTemplate")
	c.Spec.Workers.MachineDeployments = []v1alpha1.MachineDeploymentClass{md}
	mp := v1alpha1.MachinePoolClass{Class: "pool"}
	mp.Template.Infrastructure.Ref = ref("infrastructure.cluster.x-k8s.io/v1beta1", "DockerMachinePoolTemplate")
	c.Spec.Workers.MachinePools = []v1alpha1.MachinePoolClass{mp}
	return c
}

func TestClassesCompatible(t *testing.T) {
	cases := []struct {
		name   string
		change func(c *v1alpha1.TopologyClass)
		field  string // "" means compatible
	}{
		{"same class", func(*v1alpha1.TopologyClass) {}, ""},
		{"new template names and versions", func(c *v1alpha1.TopologyClass) {
			c.Spec.Infrastructure.Ref.Name = "other"
			c.Spec.Infrastructure.Ref.APIVersion = "infrastructure.cluster.x-k8s.io/v1beta2"
		}, ""},
		{"bootstrap kind may change", func(c *v1alpha1.TopologyClass) {
			c.Spec.Workers.MachineDeployments[0].Template.Bootstrap.Ref.Kind = "TalosConfigTemplate"
		}, ""},
		{"a new worker class", func(c *v1alpha1.TopologyClass) {
			md := c.Spec.Workers.MachineDeployments[0]
			md.Class = "gpu"
			md.Template.Infrastructure.Ref = &corev1.ObjectReference{APIVersion: "infrastructure.example/v1", Kind: "GPUMachineTemplate"}
			c.Spec.Workers.MachineDeployments = append(c.Spec.Workers.MachineDeployments, md)
		}, ""},
		{"infrastructure provider", func(c *v1alpha1.TopologyClass) {
			c.Spec.Infrastructure.Ref.APIVersion = "infrastructure.example/v1"
		}, "spec.infrastructure.ref.apiVersion"},
		{"control plane kind", func(c *v1alpha1.TopologyClass) { c.Spec.ControlPlane.Ref.Kind = "K3sControlPlaneTemplate" }, "spec.controlPlane.ref.kind"},
		{"control plane machines", func(c *v1alpha1.TopologyClass) {
			c.Spec.ControlPlane.MachineInfrastructure.Ref.Kind = "AWSMachineTemplate"
		}, "spec.controlPlane.machineInfrastructure.ref.kind"},
		{"MachineDeployment infrastructure", func(c *v1alpha1.TopologyClass) {
			c.Spec.Workers.MachineDeployments[0].Template.Infrastructure.Ref.Kind = "AWSMachineTemplate"
		}, "spec.workers.machineDeployments[0].template.infrastructure.ref.kind"},
		{"MachinePool infrastructure", func(c *v1alpha1.TopologyClass) {
			c.Spec.Workers.MachinePools[0].Template.Infrastructure.Ref.APIVersion = "infrastructure.example/v1"
		}, "spec.workers.machinePools[0].template.infrastructure.ref.apiVersion"},
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
