package e2e

// The reliability suite: what operators' mistakes and attackers' inputs do
// to the real agent binary on a real API server. Each test here is one
// defect that was found by trying, and the summary of the bad-input table
// is what the project reports (tried, refused naming the field, admitted,
// stored).

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// badTopologies are Topologies the agent's webhooks, or the CRD's schema,
// must refuse, each naming the field at fault. All of them were admitted
// once, and then failed every reconcile or could not be deleted.
var badTopologies = []struct {
	name, field string
	mutate      func(*v1alpha2.Topology)
}{
	{"name longer than a label value", "metadata.name", func(t *v1alpha2.Topology) { t.Name = strings.Repeat("n", 64) }},
	{"pod CIDR not a CIDR", "spec.clusterNetwork.pods.cidrBlocks[0]", func(t *v1alpha2.Topology) {
		t.Spec.ClusterNetwork.Pods.CIDRBlocks = []string{"not-a-cidr"}
	}},
	{"service CIDR with a /99 prefix", "spec.clusterNetwork.services.cidrBlocks[0]", func(t *v1alpha2.Topology) {
		t.Spec.ClusterNetwork.Services.CIDRBlocks = []string{"10.0.0.0/99"}
	}},
	{"API server port 70000", "spec.clusterNetwork.apiServerPort", func(t *v1alpha2.Topology) {
		p := int32(70000)
		t.Spec.ClusterNetwork.APIServerPort = &p
	}},
	{"unhealthyLessThanOrEqualTo abc", "spec.controlPlane.healthCheck.remediation.triggerIf.unhealthyLessThanOrEqualTo", func(t *v1alpha2.Topology) {
		v := intstr.FromString("abc")
		t.Spec.ControlPlane.HealthCheck.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo = &v
	}},
	{"maxSurge abc", "spec.workers.machineDeployments[0].rollout.strategy.rollingUpdate.maxSurge", func(t *v1alpha2.Topology) {
		v := intstr.FromString("abc")
		t.Spec.Workers.MachineDeployments[0].Rollout.Strategy.RollingUpdate.MaxSurge = &v
	}},
	{"label key with spaces", "spec.workers.machineDeployments[0].metadata.labels", func(t *v1alpha2.Topology) {
		t.Spec.Workers.MachineDeployments[0].Metadata.Labels = map[string]string{"bad key!": "v"}
	}},
	{"annotation key without a name", "spec.controlPlane.metadata.annotations", func(t *v1alpha2.Topology) {
		t.Spec.ControlPlane.Metadata.Annotations = map[string]string{"/bad": "v"}
	}},
	{"upgrade concurrency abc", "metadata.annotations[topology.cluster.x-k8s.io/upgrade-concurrency]", func(t *v1alpha2.Topology) {
		t.Annotations = map[string]string{clusterv1.ClusterTopologyUpgradeConcurrencyAnnotation: "abc"}
	}},
	{"no class", "spec.classRef.name", func(t *v1alpha2.Topology) { t.Spec.ClassRef.Name = "" }},
	{"variable of the wrong type", "spec.variables[maxPods].value", func(t *v1alpha2.Topology) {
		t.Spec.Variables = append(t.Spec.Variables, v1alpha2.ClusterVariable{Name: "maxPods", Value: apiextensionsv1.JSON{Raw: []byte(`"abc"`)}})
	}},
	{"negative drain timeout", "spec.controlPlane.deletion.nodeDrainTimeoutSeconds", func(t *v1alpha2.Topology) {
		s := int32(-5)
		t.Spec.ControlPlane.Deletion.NodeDrainTimeoutSeconds = &s
	}},
	{"2 MB object", "spec.variables", func(t *v1alpha2.Topology) {
		t.Spec.Variables = append(t.Spec.Variables, v1alpha2.ClusterVariable{Name: "apiServerCertSANs", Value: apiextensionsv1.JSON{Raw: []byte(`["` + strings.Repeat("a", 2<<20) + `"]`)}})
	}},
}

// badTopologyFields are values no Go type can hold, written as JSON.
var badTopologyFields = []struct {
	name, field string
	path        []string
	value       any
}{
	{"seconds in words", "spec.controlPlane.deletion.nodeDrainTimeoutSeconds", []string{"spec", "controlPlane", "deletion", "nodeDrainTimeoutSeconds"}, "5 minutes"},
	{"seconds as a duration", "spec.workers.machineDeployments[0].deletion.nodeDeletionTimeoutSeconds", []string{"spec", "workers", "machineDeployments", "0", "deletion", "nodeDeletionTimeoutSeconds"}, "300s"},
}

// badClasses are TopologyClasses that must be refused, naming the field.
var badClasses = []struct {
	name, field string
	mutate      func(*v1alpha2.TopologyClass)
}{
	{"naming template rendering an invalid name", "spec.workers.machineDeployments[0].naming.template", func(c *v1alpha2.TopologyClass) {
		c.Spec.Workers.MachineDeployments[0].Naming.Template = "c08-t_X"
	}},
	{"unhealthyLessThanOrEqualTo abc", "spec.workers.machineDeployments[0].healthCheck.remediation.triggerIf.unhealthyLessThanOrEqualTo", func(c *v1alpha2.TopologyClass) {
		v := intstr.FromString("abc")
		c.Spec.Workers.MachineDeployments[0].HealthCheck.Remediation.TriggerIf.UnhealthyLessThanOrEqualTo = &v
	}},
	{"variable that does not exist", "valueFrom.variable", func(c *v1alpha2.TopologyClass) {
		v := "nope"
		firstVariableOp(c).ValueFrom = &v1alpha2.JSONPatchValue{Variable: &v}
	}},
	{"builtin that does not exist", "valueFrom.variable", func(c *v1alpha2.TopologyClass) {
		v := "builtin.nope"
		firstVariableOp(c).ValueFrom = &v1alpha2.JSONPatchValue{Variable: &v}
	}},
	{"selector of a MachineDeployment class that does not exist", "selector.matchResources.machineDeploymentClass.names[0]", func(c *v1alpha2.TopologyClass) {
		c.Spec.Patches[0].Definitions[0].Selector.MatchResources = v1alpha2.PatchSelectorMatch{MachineDeploymentClass: &v1alpha2.PatchSelectorMatchMachineDeploymentClass{Names: []string{"nope"}}}
	}},
	{"selector of a kind no template has", "selector.matchResources", func(c *v1alpha2.TopologyClass) {
		c.Spec.Patches[0].Definitions[0].Selector.Kind = "AWSMachineTemplate"
	}},
	{"selector pattern a*b*", "selector.matchResources.machineDeploymentClass.names[0]", func(c *v1alpha2.TopologyClass) {
		c.Spec.Patches[0].Definitions[0].Selector.MatchResources = v1alpha2.PatchSelectorMatch{MachineDeploymentClass: &v1alpha2.PatchSelectorMatchMachineDeploymentClass{Names: []string{"a*b*"}}}
	}},
	{"JSON pointer with ~2", "jsonPatches[0].path", func(c *v1alpha2.TopologyClass) {
		c.Spec.Patches[0].Definitions[0].JSONPatches[0].Path = "/spec/template/spec/a~2b"
	}},
	{"CEL rule with unbounded cost", "x-kubernetes-validations[0].rule", func(c *v1alpha2.TopologyClass) {
		c.Spec.Variables[1].Schema.OpenAPIV3Schema.MaxItems = nil
		c.Spec.Variables[1].Schema.OpenAPIV3Schema.XValidations = []v1alpha2.ValidationRule{{Rule: "self.all(x, self.all(y, self.all(z, x + y + z != '')))"}}
	}},
	{"nested enum value of the wrong type", "properties[level].enum[4]", func(c *v1alpha2.TopologyClass) {
		p := c.Spec.Variables[2].Schema.OpenAPIV3Schema.Properties["level"]
		p.Enum = append(p.Enum, apiextensionsv1.JSON{Raw: []byte("42")})
		c.Spec.Variables[2].Schema.OpenAPIV3Schema.Properties["level"] = p
	}},
	{"nested example of the wrong type", "properties[enabled].example", func(c *v1alpha2.TopologyClass) {
		p := c.Spec.Variables[2].Schema.OpenAPIV3Schema.Properties["enabled"]
		p.Example = &apiextensionsv1.JSON{Raw: []byte(`"yes"`)}
		c.Spec.Variables[2].Schema.OpenAPIV3Schema.Properties["enabled"] = p
	}},
	{"control plane annotation key without a name", "spec.controlPlane.metadata.annotations", func(c *v1alpha2.TopologyClass) {
		c.Spec.ControlPlane.Metadata.Annotations = map[string]string{"/bad": "v"}
	}},
}

// firstVariableOp is the first JSON patch of the class that takes its value
// from a variable.
func firstVariableOp(c *v1alpha2.TopologyClass) *v1alpha2.JSONPatch {
	for i := range c.Spec.Patches {
		for j := range c.Spec.Patches[i].Definitions {
			for k := range c.Spec.Patches[i].Definitions[j].JSONPatches {
				if op := &c.Spec.Patches[i].Definitions[j].JSONPatches[k]; op.ValueFrom != nil && op.ValueFrom.Variable != nil {
					return op
				}
			}
		}
	}
	panic("the example class has no patch from a variable")
}

// outcome is how the API server answered one bad input.
type outcome struct{ tried, refusedWithField, admitted, stored int }

func (o *outcome) record(t *testing.T, what, field string, err error, stored bool) {
	t.Helper()
	o.tried++
	switch {
	case err == nil:
		o.admitted++
		t.Errorf("%s was admitted; want it refused at %s", what, field)
	case !isRefusal(err):
		t.Errorf("%s: got %v (HTTP %d), want a 4xx refusal naming %s", what, err, statusCode(err), field)
	case !strings.Contains(err.Error(), field):
		t.Errorf("%s: refused, but the answer does not name %s: %v", what, field, err)
	default:
		o.refusedWithField++
	}
	if stored {
		o.stored++
		t.Errorf("%s was stored", what)
	}
}

func statusCode(err error) int32 {
	if s, ok := err.(apierrors.APIStatus); ok {
		return s.Status().Code
	}
	return 0
}

func isRefusal(err error) bool {
	code := statusCode(err)
	return code >= 400 && code < 500
}

// TestBadInputIsRefusedWithItsField writes every bad input through the API
// server with the agent's webhooks in place, and checks each is refused
// with the field at fault named, and that none of them is stored.
func TestBadInputIsRefusedWithItsField(t *testing.T) {
	ctx := context.Background()
	startAgentBinary(t)
	ex := exampleClass(t, "bad-input")
	var o outcome

	exists := func(obj client.Object) bool {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		return err == nil
	}
	for _, tc := range badTopologies {
		t.Run("Topology/"+tc.name, func(t *testing.T) {
			topo := ex.Topology.DeepCopy()
			tc.mutate(topo)
			err := k8s.Create(ctx, topo)
			stored := err == nil || (topo.Name != "" && exists(topo))
			if err == nil {
				_ = k8s.Delete(ctx, topo)
			}
			o.record(t, "Topology with "+tc.name, tc.field, err, stored)
		})
	}
	for _, tc := range badTopologyFields {
		t.Run("Topology/"+tc.name, func(t *testing.T) {
			raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ex.Topology)
			if err != nil {
				t.Fatal(err)
			}
			setPath(raw, tc.path, tc.value)
			u := &unstructured.Unstructured{Object: raw}
			u.SetGroupVersionKind(v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyKind))
			err = k8s.Create(ctx, u)
			if err == nil {
				_ = k8s.Delete(ctx, u)
			}
			o.record(t, "Topology with "+tc.name, tc.field, err, err == nil || exists(ex.Topology))
		})
	}
	for i, tc := range badClasses {
		t.Run("TopologyClass/"+tc.name, func(t *testing.T) {
			c := ex.Class.DeepCopy()
			c.Name = fmt.Sprintf("bad-%d", i)
			tc.mutate(c)
			err := k8s.Create(ctx, c)
			if err == nil {
				_ = k8s.Delete(ctx, c)
			}
			o.record(t, "TopologyClass with "+tc.name, tc.field, err, err == nil || exists(c))
		})
	}
	t.Run("Topology/transition rule changed on update", func(t *testing.T) {
		c := ex.Class.DeepCopy()
		c.Name = "immutable-id"
		c.Spec.Variables = append(c.Spec.Variables, v1alpha2.ClusterClassVariable{Name: "clusterID", Schema: v1alpha2.VariableSchema{OpenAPIV3Schema: v1alpha2.JSONSchemaProps{
			Type: "string", XValidations: []v1alpha2.ValidationRule{{Rule: "self == oldSelf", Message: "clusterID cannot change"}},
		}}})
		if err := k8s.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		topo := ex.Topology.DeepCopy()
		topo.Name, topo.Spec.ClassRef.Name = "transition", c.Name
		topo.Spec.Variables = append(topo.Spec.Variables, v1alpha2.ClusterVariable{Name: "clusterID", Value: apiextensionsv1.JSON{Raw: []byte(`"a"`)}})
		if err := k8s.Create(ctx, topo); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteAndWait(t, topo) })
		// The agent writes the Topology too (its finalizer): retry on a conflict.
		var err error
		var before *v1alpha2.Topology
		waitFor(t, "the update is answered without a conflict", func(ctx context.Context) (bool, error) {
			before = &v1alpha2.Topology{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(topo), before); err != nil {
				return false, err
			}
			changed := before.DeepCopy()
			for i := range changed.Spec.Variables {
				if changed.Spec.Variables[i].Name == "clusterID" {
					changed.Spec.Variables[i].Value.Raw = []byte(`"b"`)
				}
			}
			err = k8s.Update(ctx, changed)
			return !apierrors.IsConflict(err), err
		})
		after := &v1alpha2.Topology{}
		if gerr := k8s.Get(ctx, client.ObjectKeyFromObject(topo), after); gerr != nil {
			t.Fatal(gerr)
		}
		stored := false
		for _, v := range after.Spec.Variables {
			stored = stored || (v.Name == "clusterID" && string(v.Value.Raw) == `"b"`)
		}
		o.record(t, "update of a variable its rule keeps immutable", "spec.variables[clusterID].value", err, stored)
	})
	t.Logf("bad input: tried %d, refused naming the field %d, admitted %d, stored %d", o.tried, o.refusedWithField, o.admitted, o.stored)
}

// setPath sets value at path in a JSON object; numeric segments index lists.
func setPath(obj map[string]any, path []string, value any) {
	var cur any = obj
	for i, p := range path {
		last := i == len(path)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[p] = value
				return
			}
			if c[p] == nil {
				c[p] = map[string]any{} // a struct the example leaves empty
			}
			cur = c[p]
		case []any:
			var idx int
			_, _ = fmt.Sscan(p, &idx)
			if last {
				c[idx] = value
				return
			}
			cur = c[idx]
		default:
			panic(fmt.Sprintf("setPath: %s is not a map or list", strings.Join(path[:i], ".")))
		}
	}
}

// deleteAndWait deletes obj and waits until it is gone.
func deleteAndWait(t *testing.T, obj client.Object) {
	t.Helper()
	_ = k8s.Delete(context.Background(), obj)
	waitFor(t, fmt.Sprintf("%s is deleted", obj.GetName()), func(ctx context.Context) (bool, error) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		return apierrors.IsNotFound(err), err
	})
}

// readyz asks an agent's probe endpoint which checks fail.
func (p *agentProcess) readyz(path string) (int, string) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/%s?verbose", p.probePort, path))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	return resp.StatusCode, b.String()
}
