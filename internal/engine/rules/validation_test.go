package rules

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/variables"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func ptr[T any](v T) *T { return &v }

func templateRef(kind, name string) v1alpha2.ClusterClassTemplateReference {
	return v1alpha2.ClusterClassTemplateReference{APIVersion: "infrastructure.cluster.x-k8s.io/v1beta1", Kind: kind, Name: name}
}

func validClass() *v1alpha2.TopologyClass {
	return &v1alpha2.TopologyClass{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"},
		Spec: v1alpha2.TopologyClassSpec{
			Infrastructure: v1alpha2.InfrastructureClass{TemplateRef: templateRef("DockerClusterTemplate", "c")},
			ControlPlane: v1alpha2.ControlPlaneClass{
				TemplateRef:           templateRef("KubeadmControlPlaneTemplate", "c"),
				MachineInfrastructure: v1alpha2.MachineInfrastructureTemplate{TemplateRef: templateRef("DockerMachineTemplate", "c")},
			},
			Workers: v1alpha2.WorkersClass{MachineDeployments: []v1alpha2.MachineDeploymentClass{{
				Class:          "w",
				Bootstrap:      v1alpha2.TemplateReferenceHolder{TemplateRef: templateRef("KubeadmConfigTemplate", "w")},
				Infrastructure: v1alpha2.TemplateReferenceHolder{TemplateRef: templateRef("DockerMachineTemplate", "w")},
			}}},
			Variables: []v1alpha2.ClusterClassVariable{{Name: "size", Required: true, Schema: v1alpha2.VariableSchema{OpenAPIV3Schema: v1alpha2.JSONSchemaProps{Type: "integer", Minimum: ptr[int64](1)}}}},
			Patches: []v1alpha2.ClusterClassPatch{{
				Name: "p",
				Definitions: []v1alpha2.PatchDefinition{{
					Selector:    v1alpha2.PatchSelector{APIVersion: "infrastructure.cluster.x-k8s.io/v1beta1", Kind: "DockerMachineTemplate", MatchResources: v1alpha2.PatchSelectorMatch{ControlPlane: true}},
					JSONPatches: []v1alpha2.JSONPatch{{Op: "add", Path: "/spec/template/spec/x", ValueFrom: &v1alpha2.JSONPatchValue{Variable: ptr("size")}}},
				}},
			}},
		},
	}
}

// inline is a DockerMachineTemplate written into the class under name.
func inline(name, spec string) *v1alpha2.InlineTemplate {
	return &v1alpha2.InlineTemplate{APIVersion: "infrastructure.cluster.x-k8s.io/v1beta1", Kind: "DockerMachineTemplate", Name: name, Spec: apiextensionsv1.JSON{Raw: []byte(spec)}}
}

func rawJSON(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

// fields renders the paths of errors for comparison.
func fields(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

func TestValidateClass(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *v1alpha2.TopologyClass)
		field  string
		detail string
	}{
		{"valid", func(*v1alpha2.TopologyClass) {}, "", ""},
		{"list variable with a rule and a default", func(c *v1alpha2.TopologyClass) {
			c.Spec.Variables = append(c.Spec.Variables, v1alpha2.ClusterClassVariable{Name: "sans", Schema: v1alpha2.VariableSchema{OpenAPIV3Schema: v1alpha2.JSONSchemaProps{
				Type: "array", MaxItems: ptr[int64](4), Items: &v1alpha2.JSONSchemaProps{Type: "string", MaxLength: ptr[int64](64)},
				Default: rawJSON(`["localhost"]`), XValidations: []v1alpha2.ValidationRule{{Rule: "self.all(x, x != '')"}},
			}}})
		}, "", ""},
		{"missing infrastructure ref", func(c *v1alpha2.TopologyClass) {
			c.Spec.Infrastructure.TemplateRef = v1alpha2.ClusterClassTemplateReference{}
		}, "spec.infrastructure.templateRef", "must be set"},
		{"ref without a name", func(c *v1alpha2.TopologyClass) { c.Spec.ControlPlane.TemplateRef.Name = "" }, "spec.controlPlane.templateRef", "must all be set"},
		{"duplicate worker class", func(c *v1alpha2.TopologyClass) {
			c.Spec.Workers.MachineDeployments = append(c.Spec.Workers.MachineDeployments, c.Spec.Workers.MachineDeployments[0])
		}, "spec.workers.machineDeployments[1].class", "Duplicate"},
		{"MHC without machines", func(c *v1alpha2.TopologyClass) {
			c.Spec.ControlPlane.MachineInfrastructure = v1alpha2.MachineInfrastructureTemplate{}
			c.Spec.ControlPlane.HealthCheck.Checks.NodeStartupTimeoutSeconds = ptr[int32](60)
		}, "spec.controlPlane.healthCheck", "machineInfrastructure"},
		{"naming template does not parse", func(c *v1alpha2.TopologyClass) {
			c.Spec.ControlPlane.Naming.Template = "{{ .cluster.name "
		}, "spec.controlPlane.naming.template", "parsing naming template"},
		{"naming template unknown key", func(c *v1alpha2.TopologyClass) {
			c.Spec.Workers.MachineDeployments[0].Naming.Template = "{{ .nope }}"
		}, "spec.workers.machineDeployments[0].naming.template", "map has no entry"},
		{"variable named builtin", func(c *v1alpha2.TopologyClass) { c.Spec.Variables[0].Name = "builtin" }, "spec.variables[0].name", "reserved"},
		{"variable name with dot", func(c *v1alpha2.TopologyClass) { c.Spec.Variables[0].Name = "a.b" }, "spec.variables[0].name", `cannot contain "."`},
		{"duplicate variable", func(c *v1alpha2.TopologyClass) { c.Spec.Variables = append(c.Spec.Variables, c.Spec.Variables[0]) }, "spec.variables[1].name", "Duplicate"},
		{"unknown type", func(c *v1alpha2.TopologyClass) { c.Spec.Variables[0].Schema.OpenAPIV3Schema.Type = "float" }, "spec.variables[0].schema.openAPIV3Schema.type", "Unsupported"},
		{"default violates schema", func(c *v1alpha2.TopologyClass) { c.Spec.Variables[0].Schema.OpenAPIV3Schema.Default = rawJSON("0") }, "spec.variables[0].schema.openAPIV3Schema.default", "greater than or equal to 1"},
		{"example violates schema", func(c *v1alpha2.TopologyClass) { c.Spec.Variables[0].Schema.OpenAPIV3Schema.Example = rawJSON(`"x"`) }, "spec.variables[0].schema.openAPIV3Schema.example", "integer"},
		{"CEL rule does not compile", func(c *v1alpha2.TopologyClass) {
			c.Spec.Variables[0].Schema.OpenAPIV3Schema.XValidations = []v1alpha2.ValidationRule{{Rule: "self >"}}
		}, "spec.variables[0].schema.openAPIV3Schema.x-kubernetes-validations[0].rule", "compil"},
		{"duplicate patch", func(c *v1alpha2.TopologyClass) { c.Spec.Patches = append(c.Spec.Patches, c.Spec.Patches[0]) }, "spec.patches[1].name", "Duplicate"},
		{"patch with definitions and external", func(c *v1alpha2.TopologyClass) {
			c.Spec.Patches[0].External = &v1alpha2.ExternalPatchDefinition{GeneratePatchesExtension: ptr("x")}
		}, "spec.patches[0]", "not both"},
		{"enabledIf does not parse", func(c *v1alpha2.TopologyClass) { c.Spec.Patches[0].EnabledIf = ptr("{{ if }}") }, "spec.patches[0].enabledIf", "does not parse"},
		{"selector matches nothing", func(c *v1alpha2.TopologyClass) {
			c.Spec.Patches[0].Definitions[0].Selector.MatchResources = v1alpha2.PatchSelectorMatch{}
		}, "spec.patches[0].definitions[0].selector.matchResources", "at least one"},
		{"bad op", func(c *v1alpha2.TopologyClass) { c.Spec.Patches[0].Definitions[0].JSONPatches[0].Op = "move" }, "spec.patches[0].definitions[0].jsonPatches[0].op", "Unsupported"},
		{"path outside spec", func(c *v1alpha2.TopologyClass) {
			c.Spec.Patches[0].Definitions[0].JSONPatches[0].Path = "/metadata/labels"
		}, "spec.patches[0].definitions[0].jsonPatches[0].path", `must start with "/spec"`},
		{"add of the whole spec, as CAPV's class does", func(c *v1alpha2.TopologyClass) {
			c.Spec.Patches[0].Definitions[0].JSONPatches[0].Path = "/spec"
		}, "", ""},
		{"add at inner index", func(c *v1alpha2.TopologyClass) {
			c.Spec.Patches[0].Definitions[0].JSONPatches[0].Path = "/spec/template/spec/list/3"
		}, "spec.patches[0].definitions[0].jsonPatches[0].path", "index 0"},
		{"add through an inner index", func(c *v1alpha2.TopologyClass) {
			c.Spec.Patches[0].Definitions[0].JSONPatches[0].Path = "/spec/template/spec/list/1/name"
		}, "spec.patches[0].definitions[0].jsonPatches[0].path", "index 0"},
		{"replace by index", func(c *v1alpha2.TopologyClass) {
			c.Spec.Patches[0].Definitions[0].JSONPatches[0].Op = "replace"
			c.Spec.Patches[0].Definitions[0].JSONPatches[0].Path = "/spec/template/spec/list/0"
		}, "spec.patches[0].definitions[0].jsonPatches[0].path", "replace may not reach into a list by index"},
		{"remove by index", func(c *v1alpha2.TopologyClass) {
			c.Spec.Patches[0].Definitions[0].JSONPatches[0] = v1alpha2.JSONPatch{Op: "remove", Path: "/spec/template/spec/list/0/name"}
		}, "spec.patches[0].definitions[0].jsonPatches[0].path", "remove may not reach into a list by index"},
		{"append not last", func(c *v1alpha2.TopologyClass) {
			c.Spec.Patches[0].Definitions[0].JSONPatches[0].Path = "/spec/list/-/x"
		}, "spec.patches[0].definitions[0].jsonPatches[0].path", `"-"`},
		{"value and valueFrom", func(c *v1alpha2.TopologyClass) { c.Spec.Patches[0].Definitions[0].JSONPatches[0].Value = rawJSON("1") }, "spec.patches[0].definitions[0].jsonPatches[0]", "not both"},
		{"neither value nor valueFrom", func(c *v1alpha2.TopologyClass) { c.Spec.Patches[0].Definitions[0].JSONPatches[0].ValueFrom = nil }, "spec.patches[0].definitions[0].jsonPatches[0].value", "set value or valueFrom"},
		{"remove with value", func(c *v1alpha2.TopologyClass) { c.Spec.Patches[0].Definitions[0].JSONPatches[0].Op = "remove" }, "spec.patches[0].definitions[0].jsonPatches[0]", "neither value"},
		{"template does not parse", func(c *v1alpha2.TopologyClass) {
			c.Spec.Patches[0].Definitions[0].JSONPatches[0].ValueFrom = &v1alpha2.JSONPatchValue{Template: ptr("{{ .x | nofunc }}")}
		}, "spec.patches[0].definitions[0].jsonPatches[0].valueFrom.template", "does not parse"},
		// What reached etcd before and then failed every reconcile.
		{"naming template renders an invalid name", func(c *v1alpha2.TopologyClass) {
			c.Spec.Workers.MachineDeployments[0].Naming.Template = "c08-t_X"
		}, "spec.workers.machineDeployments[0].naming.template", "not a valid object name"},
		{"control plane annotation key without name", func(c *v1alpha2.TopologyClass) {
			c.Spec.ControlPlane.Metadata.Annotations = map[string]string{"/bad": "v"}
		}, "spec.controlPlane.metadata.annotations", "prefix part must be non-empty"},
		{"worker label key with spaces", func(c *v1alpha2.TopologyClass) {
			c.Spec.Workers.MachineDeployments[0].Metadata.Labels = map[string]string{"bad key!": "v"}
		}, "spec.workers.machineDeployments[0].metadata.labels", "name part must consist of"},
		{"maxUnhealthy not a number", func(c *v1alpha2.TopologyClass) {
			c.Spec.ControlPlane.HealthCheck.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo = ptr(intstr.FromString("abc"))
		}, "spec.controlPlane.healthCheck.remediation.triggerIf.unhealthyLessThanOrEqualTo", "integer or a percentage"},
		{"unhealthyRange malformed", func(c *v1alpha2.TopologyClass) {
			c.Spec.ControlPlane.HealthCheck.Remediation.TriggerIf.UnhealthyInRange = "[5-3]"
		}, "spec.controlPlane.healthCheck.remediation.triggerIf.unhealthyInRange", "lower bound"},
		{"machine condition the check owns", func(c *v1alpha2.TopologyClass) {
			c.Spec.Workers.MachineDeployments[0].HealthCheck.Checks.UnhealthyMachineConditions = []v1alpha2.UnhealthyMachineCondition{{Type: "Ready", Status: "False", TimeoutSeconds: ptr[int32](60)}}
		}, "spec.workers.machineDeployments[0].healthCheck.checks.unhealthyMachineConditions[0].type", "sets or reads this condition"},
		{"node startup timeout too short", func(c *v1alpha2.TopologyClass) {
			c.Spec.ControlPlane.HealthCheck.Checks.NodeStartupTimeoutSeconds = ptr[int32](10)
		}, "spec.controlPlane.healthCheck.checks.nodeStartupTimeoutSeconds", "at least 30"},
		{"maxSurge not a number", func(c *v1alpha2.TopologyClass) {
			c.Spec.Workers.MachineDeployments[0].Rollout.Strategy.RollingUpdate.MaxSurge = ptr(intstr.FromString("abc"))
		}, "spec.workers.machineDeployments[0].rollout.strategy.rollingUpdate.maxSurge", "integer or a percentage"},
		{"kubernetesVersions out of order", func(c *v1alpha2.TopologyClass) {
			c.Spec.KubernetesVersions = []string{"v1.32.0", "v1.33.2", "v1.33.1"}
		}, "spec.kubernetesVersions[2]", "must be newer than v1.33.2"},
		{"kubernetesVersions not a version", func(c *v1alpha2.TopologyClass) { c.Spec.KubernetesVersions = []string{"1.32"} }, "spec.kubernetesVersions[0]", "Kubernetes version"},
		{"kubernetesVersions skip a minor", func(c *v1alpha2.TopologyClass) { c.Spec.KubernetesVersions = []string{"v1.31.2", "v1.33.0"} }, "spec.kubernetesVersions[1]", "list a v1.32.x version in between"},
		{"negative drain timeout", func(c *v1alpha2.TopologyClass) {
			c.Spec.ControlPlane.Deletion.NodeDrainTimeoutSeconds = ptr[int32](-1)
		}, "spec.controlPlane.deletion.nodeDrainTimeoutSeconds", "negative"},
		{"variable that does not exist", func(c *v1alpha2.TopologyClass) {
			c.Spec.Patches[0].Definitions[0].JSONPatches[0].ValueFrom = &v1alpha2.JSONPatchValue{Variable: ptr("nope")}
		}, "spec.patches[0].definitions[0].jsonPatches[0].valueFrom.variable", `defines no variable "nope"`},
		{"builtin that does not exist", func(c *v1alpha2.TopologyClass) {
			c.Spec.Patches[0].Definitions[0].JSONPatches[0].ValueFrom = &v1alpha2.JSONPatchValue{Variable: ptr("builtin.nope")}
		}, "spec.patches[0].definitions[0].jsonPatches[0].valueFrom.variable", `has no field "nope"`},
		{"selector names a MachineDeployment class the class lacks", func(c *v1alpha2.TopologyClass) {
			c.Spec.Patches[0].Definitions[0].Selector.MatchResources = v1alpha2.PatchSelectorMatch{MachineDeploymentClass: &v1alpha2.PatchSelectorMatchMachineDeploymentClass{Names: []string{"gpu"}}}
		}, "spec.patches[0].definitions[0].selector.matchResources.machineDeploymentClass.names[0]", "matches no MachineDeployment class"},
		{"selector kind no template has", func(c *v1alpha2.TopologyClass) {
			c.Spec.Patches[0].Definitions[0].Selector.Kind = "AWSMachineTemplate"
		}, "spec.patches[0].definitions[0].selector.matchResources.controlPlane", "neither the control plane template"},
		{"selector pattern with two stars", func(c *v1alpha2.TopologyClass) {
			c.Spec.Patches[0].Definitions[0].Selector.MatchResources = v1alpha2.PatchSelectorMatch{MachineDeploymentClass: &v1alpha2.PatchSelectorMatchMachineDeploymentClass{Names: []string{"a*b*"}}}
		}, "spec.patches[0].definitions[0].selector.matchResources.machineDeploymentClass.names[0]", `at most one "*"`},
		{"JSON pointer with a bad escape", func(c *v1alpha2.TopologyClass) {
			c.Spec.Patches[0].Definitions[0].JSONPatches[0].Path = "/spec/template/spec/a~2b"
		}, "spec.patches[0].definitions[0].jsonPatches[0].path", "not a JSON pointer"},
		{"CEL rule with unbounded cost", func(c *v1alpha2.TopologyClass) {
			c.Spec.Variables[0].Schema.OpenAPIV3Schema = v1alpha2.JSONSchemaProps{
				Type:         "array",
				Items:        &v1alpha2.JSONSchemaProps{Type: "string"},
				XValidations: []v1alpha2.ValidationRule{{Rule: "self.all(x, self.all(y, self.all(z, x + y + z != '')))"}},
			}
		}, "spec.variables[0].schema.openAPIV3Schema.x-kubernetes-validations[0].rule", "exceeds the budget"},
		{"two inline templates of one kind and name that differ", func(c *v1alpha2.TopologyClass) {
			c.Spec.ControlPlane.MachineInfrastructure = v1alpha2.MachineInfrastructureTemplate{TemplateRef: v1alpha2.ClusterClassTemplateReference{}, Template: inline("shared", `{"template":{"spec":{"cpu":2}}}`)}
			c.Spec.Workers.MachineDeployments[0].Infrastructure = v1alpha2.TemplateReferenceHolder{Template: inline("shared", `{"template":{"spec":{"cpu":8}}}`)}
		}, "spec.workers.machineDeployments[0].infrastructure.template.name", "differs from the one at spec.controlPlane.machineInfrastructure.template"},
		{"two equal inline templates of one kind and name", func(c *v1alpha2.TopologyClass) {
			c.Spec.ControlPlane.MachineInfrastructure = v1alpha2.MachineInfrastructureTemplate{TemplateRef: v1alpha2.ClusterClassTemplateReference{}, Template: inline("shared", `{"template":{"spec":{"cpu":2}}}`)}
			c.Spec.Workers.MachineDeployments[0].Infrastructure = v1alpha2.TemplateReferenceHolder{Template: inline("shared", `{"template":{"spec":{"cpu":2}}}`)}
		}, "", ""},
		{"two inline templates of one kind, each named by its slot", func(c *v1alpha2.TopologyClass) {
			c.Spec.ControlPlane.MachineInfrastructure = v1alpha2.MachineInfrastructureTemplate{TemplateRef: v1alpha2.ClusterClassTemplateReference{}, Template: inline("", `{"template":{"spec":{"cpu":2}}}`)}
			c.Spec.Workers.MachineDeployments[0].Infrastructure = v1alpha2.TemplateReferenceHolder{Template: inline("", `{"template":{"spec":{"cpu":8}}}`)}
		}, "", ""},
		{"nested enum value of the wrong type", func(c *v1alpha2.TopologyClass) {
			c.Spec.Variables[0].Schema.OpenAPIV3Schema = v1alpha2.JSONSchemaProps{Type: "object", Properties: map[string]v1alpha2.JSONSchemaProps{
				"mode": {Type: "string", Enum: []apiextensionsv1.JSON{*rawJSON(`"a"`), *rawJSON("3")}},
			}}
		}, "spec.variables[0].schema.openAPIV3Schema.properties[mode].enum[1]", "string"},
		{"nested example of the wrong type", func(c *v1alpha2.TopologyClass) {
			c.Spec.Variables[0].Schema.OpenAPIV3Schema = v1alpha2.JSONSchemaProps{Type: "object", Properties: map[string]v1alpha2.JSONSchemaProps{
				"count": {Type: "integer", Example: rawJSON(`"many"`)},
			}}
		}, "spec.variables[0].schema.openAPIV3Schema.properties[count].example", "integer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validClass()
			tc.mutate(c)
			errs := ValidateClass(context.Background(), c)
			if tc.field == "" {
				if len(errs) > 0 {
					t.Fatalf("valid class rejected: %v", errs)
				}
				return
			}
			for _, e := range errs {
				if e.Field == tc.field && strings.Contains(e.Error(), tc.detail) {
					return
				}
			}
			t.Fatalf("want error at %s mentioning %q, got %v (%v)", tc.field, tc.detail, fields(errs), errs)
		})
	}
}

func TestValidateTopology(t *testing.T) {
	class := validClass()
	cat, errs := variables.NewCatalog(class.Spec.Variables)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	valid := func() *v1alpha2.Topology {
		return &v1alpha2.Topology{
			ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "default"},
			Spec: v1alpha2.TopologySpec{
				ClassRef: v1alpha2.ClassRef{Name: "c"}, Version: "v1.32.0",
				Variables: []v1alpha2.ClusterVariable{{Name: "size", Value: *rawJSON("3")}},
				Workers:   &v1alpha2.WorkersTopology{MachineDeployments: []v1alpha2.MachineDeploymentTopology{{Class: "w", Name: "md-0"}}},
			},
		}
	}
	cases := []struct {
		name   string
		mutate func(*v1alpha2.Topology)
		field  string
		detail string
	}{
		{"valid", func(*v1alpha2.Topology) {}, "", ""},
		{"version not semver", func(t *v1alpha2.Topology) { t.Spec.Version = "1.32" }, "spec.version", "Kubernetes version"},
		{"version without v", func(t *v1alpha2.Topology) { t.Spec.Version = "1.32.0" }, "spec.version", "Kubernetes version"},
		{"no class", func(t *v1alpha2.Topology) { t.Spec.ClassRef.Name = "" }, "spec.classRef.name", "Required"},
		{"duplicate MD name", func(t *v1alpha2.Topology) {
			t.Spec.Workers.MachineDeployments = append(t.Spec.Workers.MachineDeployments, t.Spec.Workers.MachineDeployments[0])
		}, "spec.workers.machineDeployments[1].name", "Duplicate"},
		{"unknown MD class", func(t *v1alpha2.Topology) { t.Spec.Workers.MachineDeployments[0].Class = "x" }, "spec.workers.machineDeployments[0].class", "not defined"},
		{"MD name not a label value", func(t *v1alpha2.Topology) { t.Spec.Workers.MachineDeployments[0].Name = "gpu pool" }, "spec.workers.machineDeployments[0].name", "valid label value"},
		{"unknown MP class", func(t *v1alpha2.Topology) {
			t.Spec.Workers.MachinePools = []v1alpha2.MachinePoolTopology{{Class: "x", Name: "mp"}}
		}, "spec.workers.machinePools[0].class", "not defined"},
		{"MHC enabled with none defined", func(t *v1alpha2.Topology) {
			t.Spec.Workers.MachineDeployments[0].HealthCheck.Enabled = ptr(true)
		}, "spec.workers.machineDeployments[0].healthCheck.enabled", "no health check"},
		{"required variable missing", func(t *v1alpha2.Topology) { t.Spec.Variables = nil }, "spec.variables[size]", "required variable"},
		{"variable out of bounds", func(t *v1alpha2.Topology) { t.Spec.Variables[0].Value = *rawJSON("0") }, "spec.variables[size].value", "greater than or equal to 1"},
		{"variable wrong type", func(t *v1alpha2.Topology) { t.Spec.Variables[0].Value = *rawJSON(`"three"`) }, "spec.variables[size].value", "integer"},
		{"unknown variable", func(t *v1alpha2.Topology) {
			t.Spec.Variables = append(t.Spec.Variables, v1alpha2.ClusterVariable{Name: "nope", Value: *rawJSON("1")})
		}, "spec.variables[nope]", "not defined"},
		{"variable set twice", func(t *v1alpha2.Topology) { t.Spec.Variables = append(t.Spec.Variables, t.Spec.Variables[0]) }, "spec.variables[size]", "Duplicate"},
		// What reached etcd before and then failed every reconcile.
		{"name longer than a label value", func(t *v1alpha2.Topology) { t.Name = strings.Repeat("a", 64) }, "metadata.name", "valid label value"},
		{"control plane annotation key without name", func(t *v1alpha2.Topology) {
			t.Spec.ControlPlane.Metadata.Annotations = map[string]string{"/bad": "v"}
		}, "spec.controlPlane.metadata.annotations", "prefix part must be non-empty"},
		{"pool label key with spaces", func(t *v1alpha2.Topology) {
			t.Spec.Workers.MachineDeployments[0].Metadata.Labels = map[string]string{"bad key!": "v"}
		}, "spec.workers.machineDeployments[0].metadata.labels", "name part must consist of"},
		{"pod CIDR not a CIDR", func(t *v1alpha2.Topology) {
			t.Spec.ClusterNetwork = &v1alpha2.ClusterNetwork{Pods: &v1alpha2.NetworkRanges{CIDRBlocks: []string{"not-a-cidr"}}}
		}, "spec.clusterNetwork.pods.cidrBlocks[0]", "CIDR block"},
		{"service CIDR prefix too long", func(t *v1alpha2.Topology) {
			t.Spec.ClusterNetwork = &v1alpha2.ClusterNetwork{Services: &v1alpha2.NetworkRanges{CIDRBlocks: []string{"10.0.0.0/99"}}}
		}, "spec.clusterNetwork.services.cidrBlocks[0]", "CIDR block"},
		{"API server port out of range", func(t *v1alpha2.Topology) {
			t.Spec.ClusterNetwork = &v1alpha2.ClusterNetwork{APIServerPort: ptr[int32](70000)}
		}, "spec.clusterNetwork.apiServerPort", "between 1 and 65535"},
		{"maxUnhealthy not a number", func(t *v1alpha2.Topology) {
			t.Spec.ControlPlane.HealthCheck.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo = ptr(intstr.FromString("abc"))
		}, "spec.controlPlane.healthCheck.remediation.triggerIf.unhealthyLessThanOrEqualTo", "integer or a percentage"},
		{"maxInFlight not a number", func(t *v1alpha2.Topology) {
			t.Spec.Workers.MachineDeployments[0].HealthCheck.Remediation.MaxInFlight = ptr(intstr.FromString("abc"))
		}, "spec.workers.machineDeployments[0].healthCheck.remediation.maxInFlight", "integer or a percentage"},
		{"negative deletion timeout", func(t *v1alpha2.Topology) {
			t.Spec.Workers.MachineDeployments[0].Deletion.NodeDeletionTimeoutSeconds = ptr[int32](-5)
		}, "spec.workers.machineDeployments[0].deletion.nodeDeletionTimeoutSeconds", "negative"},
		{"maxSurge not a number", func(t *v1alpha2.Topology) {
			t.Spec.Workers.MachineDeployments[0].Rollout.Strategy.RollingUpdate.MaxSurge = ptr(intstr.FromString("abc"))
		}, "spec.workers.machineDeployments[0].rollout.strategy.rollingUpdate.maxSurge", "integer or a percentage"},
		{"upgrade concurrency not a number", func(t *v1alpha2.Topology) {
			t.Annotations = map[string]string{clusterv1.ClusterTopologyUpgradeConcurrencyAnnotation: "abc"}
		}, "metadata.annotations[topology.cluster.x-k8s.io/upgrade-concurrency]", "positive integer"},
		{"upgrade concurrency zero", func(t *v1alpha2.Topology) {
			t.Annotations = map[string]string{clusterv1.ClusterTopologyUpgradeConcurrencyAnnotation: "0"}
		}, "metadata.annotations[topology.cluster.x-k8s.io/upgrade-concurrency]", "at least 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			topo := valid()
			tc.mutate(topo)
			errs := ValidateTopology(context.Background(), topo, nil, class, cat, field.NewPath("spec"))
			if tc.field == "" {
				if len(errs) > 0 {
					t.Fatalf("valid topology rejected: %v", errs)
				}
				return
			}
			for _, e := range errs {
				if e.Field == tc.field && strings.Contains(e.Error(), tc.detail) {
					return
				}
			}
			t.Fatalf("want error at %s mentioning %q, got %v", tc.field, tc.detail, errs)
		})
	}
}

func TestValidateVersionChange(t *testing.T) {
	upgrading := &upgrade.Sequence{ControlPlane: upgrade.Decision{Phase: v1alpha2.PhaseUpgrading}}
	mdUpgrading := &upgrade.Sequence{ControlPlane: upgrade.Decision{Phase: v1alpha2.PhaseUpToDate}, MachineDeployments: []upgrade.Decision{{Name: "md-0", Phase: v1alpha2.PhaseUpgrading}}}
	settled := &upgrade.Sequence{ControlPlane: upgrade.Decision{Phase: v1alpha2.PhaseUpToDate}, MachineDeployments: []upgrade.Decision{{Name: "md-0", Phase: v1alpha2.PhaseUpToDate}}}
	cases := []struct {
		name   string
		vc     VersionChange
		detail string
	}{
		{"patch upgrade", VersionChange{Old: "v1.32.0", New: "v1.32.3", Sequence: settled}, ""},
		{"minor upgrade", VersionChange{Old: "v1.32.3", New: "v1.33.0", Sequence: settled}, ""},
		{"unchanged while upgrading", VersionChange{Old: "v1.32.0", New: "v1.32.0", Sequence: upgrading}, ""},
		{"downgrade", VersionChange{Old: "v1.33.0", New: "v1.32.9"}, "downgrading from v1.33.0 to v1.32.9"},
		{"while AfterClusterUpgrade holds", VersionChangeOf(&v1alpha2.Topology{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{runtimev1.PendingHooksAnnotation: lifecycle.AfterClusterUpgrade}},
			Spec:       v1alpha2.TopologySpec{Version: "v1.33.0"},
		}, "v1.34.0"), "cannot change the version while the AfterClusterUpgrade hook of the upgrade to v1.33.0 still holds"},
		{"skip a minor", VersionChange{Old: "v1.31.0", New: "v1.33.0"}, "skips a minor version; upgrade to v1.32 first"},
		{"major change", VersionChange{Old: "v1.33.0", New: "v2.0.0"}, "major version"},
		{"chained through the class's versions", VersionChange{Old: "v1.31.0", New: "v1.33.0", Sequence: settled, ClassVersions: []string{"v1.31.0", "v1.32.1", "v1.33.0"}}, ""},
		{"a version the class does not list", VersionChange{Old: "v1.31.0", New: "v1.32.0", Sequence: settled, ClassVersions: []string{"v1.31.0", "v1.32.1"}}, `supported values: "v1.31.0", "v1.32.1"`},
		{"chained over a gap in the class's versions", VersionChange{Old: "v1.31.0", New: "v1.33.0", Sequence: settled, ClassVersions: []string{"v1.31.0", "v1.33.0"}}, "list no v1.32.x"},
		{"chained by an upgrade-plan extension", VersionChange{Old: "v1.31.0", New: "v1.34.0", Sequence: settled, PlanExtension: "plan.ext"}, ""},
		{"an extension does not lift the class's list", VersionChange{Old: "v1.31.0", New: "v1.34.0", Sequence: settled, PlanExtension: "plan.ext", ClassVersions: []string{"v1.31.0", "v1.32.0"}}, "Unsupported value"},
		{"an extension does not allow going down", VersionChange{Old: "v1.31.0", New: "v1.30.0", Sequence: settled, PlanExtension: "plan.ext"}, "downgrading"},
		{"control plane in flight", VersionChange{Old: "v1.32.0", New: "v1.33.0", Sequence: upgrading}, "the control plane is upgrading"},
		{"pool in flight", VersionChange{Old: "v1.32.0", New: "v1.33.0", Sequence: mdUpgrading}, "md-0 is upgrading"},
		{"unsafe escape hatch", VersionChange{Old: "v1.33.0", New: "v1.31.0", Unsafe: true}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateVersionChange(tc.vc)
			if tc.detail == "" {
				if len(errs) > 0 {
					t.Fatalf("rejected: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != "spec.version" || !strings.Contains(errs[0].Error(), tc.detail) {
				t.Fatalf("want spec.version error mentioning %q, got %v", tc.detail, errs)
			}
		})
	}
}

func TestUpgradePreflight(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	topo := &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Name: "t"}, Spec: v1alpha2.TopologySpec{Version: "v1.33.1"}}
	topo.Generation, topo.Status.ObservedGeneration = 2, 2
	topo.Status.ControlPlane = &v1alpha2.PartStatus{Name: upgrade.ControlPlaneName, Phase: v1alpha2.PhaseUpToDate, State: v1alpha2.StateReady, Version: "v1.33.1", DesiredVersion: "v1.33.1"}
	if errs, unhealthy := UpgradePreflight(topo, nil, "v1.34.0", now); len(errs) != 0 || len(unhealthy) != 0 {
		t.Errorf("a Ready, reconciled topology: %v %v", errs, unhealthy)
	}
	topo.Status.ObservedGeneration = 1
	errs, _ := UpgradePreflight(topo, nil, "v1.34.0", now)
	if len(errs) != 1 || !strings.Contains(errs.ToAggregate().Error(), "has not reconciled the latest change") {
		t.Errorf("got %v", errs)
	}
	topo.Status.ControlPlane.State = v1alpha2.StateDegraded
	topo.Status.ControlPlane.Problems = []v1alpha2.Problem{{Object: "Machine/cp-1", Reason: "NotReady"}}
	if _, unhealthy := UpgradePreflight(topo, nil, "v1.34.0", now); len(unhealthy) != 2 || !strings.HasPrefix(unhealthy[0], "the control plane is Degraded") || unhealthy[1] != "Machine/cp-1 NotReady" {
		t.Errorf("a degraded control plane: %q", unhealthy)
	}
	if errs, unhealthy := UpgradePreflight(topo, nil, "v1.33.1", now); len(errs) != 0 || len(unhealthy) != 0 {
		t.Errorf("no version change is no upgrade: %v %v", errs, unhealthy)
	}
}
