package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubectl-topology/kubectl-topology/internal/controller"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// handlers are the Topology webhooks as the agent serves them, reading the
// example class from a fake client: they are tested here without an API
// server, for their answers alone.
type handlers struct{ mutate, validate *admission.Webhook }

func newHandlers(tb testing.TB) (handlers, fixture.Example) {
	tb.Helper()
	ex, err := fixture.LoadExample("default")
	if err != nil {
		tb.Fatal(err)
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha2.AddToScheme(scheme))
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ex.Class.DeepCopy()).Build()
	t := &Topology{classes: classReader{cached: reader}, Classes: rules.NewClassCache()}
	gk := v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyKind).GroupKind()
	return handlers{
		mutate:   guarded(admission.WithDefaulter[*v1alpha2.Topology](scheme, t), gk, typeOfTopology, true),
		validate: guarded(admission.WithValidator[*v1alpha2.Topology](scheme, t), gk, typeOfTopology, false),
	}, ex
}

func request(op admissionv1.Operation, obj, old []byte) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: op, Name: "dev", Namespace: "default",
		Kind:      metav1.GroupVersionKind{Group: v1alpha2.GroupVersion.Group, Version: "v1alpha2", Kind: v1alpha2.TopologyKind},
		Object:    runtime.RawExtension{Raw: obj},
		OldObject: runtime.RawExtension{Raw: old},
	}}
}

func jsonOf(tb testing.TB, v any) []byte {
	tb.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func TestGuardNamesTheField(t *testing.T) {
	h, ex := newHandlers(t)
	valid := jsonOf(t, ex.Topology)
	withDuration := strings.Replace(string(valid), `"controlPlane":{`, `"controlPlane":{"deletion":{"nodeDrainTimeoutSeconds":"5 minutes"},`, 1)
	huge := ex.Topology.DeepCopy()
	huge.Spec.Variables = append(huge.Spec.Variables, v1alpha2.ClusterVariable{Name: "apiServerCertSANs", Value: apiextensionsv1.JSON{Raw: []byte(`["` + strings.Repeat("a", MaxObjectBytes) + `"]`)}})
	cases := []struct {
		name, object, field, detail string
	}{
		{"seconds in words", withDuration, "spec.controlPlane.deletion.nodeDrainTimeoutSeconds", "give whole seconds as a number"},
		{"a number where a string goes", strings.Replace(string(valid), `"name":"docker-kubeadm"`, `"name":7`, 1), "spec.classRef.name", "cannot unmarshal number"},
		{"an object too large to store", string(jsonOf(t, huge)), "spec.variables", "etcd cannot store"},
		{"not JSON", "{", "<nil>", "not a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.validate.Handle(context.Background(), request(admissionv1.Create, []byte(tc.object), nil))
			if resp.Allowed || resp.Result.Code != http.StatusUnprocessableEntity {
				t.Fatalf("allowed %v, code %d, want a 422 refusal", resp.Allowed, resp.Result.Code)
			}
			if !strings.Contains(resp.Result.Message, tc.field) || !strings.Contains(resp.Result.Message, tc.detail) {
				t.Errorf("message %q does not name %s and say %q", resp.Result.Message, tc.field, tc.detail)
			}
			// The defaulting webhook lets it through unchanged, so the API
			// server's own schema check, which runs next, names the field.
			if m := h.mutate.Handle(context.Background(), request(admissionv1.Create, []byte(tc.object), nil)); !m.Allowed || len(m.Patches) > 0 {
				t.Errorf("defaulting answered allowed %v with %d patches, want allowed unchanged", m.Allowed, len(m.Patches))
			}
		})
	}
}

// A Topology admitted before its class may hold a value the class refuses:
// updates of its metadata alone, above all removing the finalizer, and every
// update once it is being deleted, must go through.
func TestMetadataOnlyUpdatesOfAnInvalidTopology(t *testing.T) {
	h, ex := newHandlers(t)
	invalid := ex.Topology.DeepCopy()
	invalid.Finalizers = []string{controller.TopologyFinalizer}
	invalid.Spec.Variables = append(invalid.Spec.Variables, v1alpha2.ClusterVariable{Name: "maxPods", Value: apiextensionsv1.JSON{Raw: []byte(`"abc"`)}})
	old := jsonOf(t, invalid)

	unfinalized := invalid.DeepCopy()
	unfinalized.Finalizers = nil
	labelled := invalid.DeepCopy()
	labelled.Labels = map[string]string{"team": "a"}
	deleting := unfinalized.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	for name, obj := range map[string]*v1alpha2.Topology{"finalizer removed": unfinalized, "label added": labelled, "being deleted": deleting} {
		for hook, wh := range map[string]*admission.Webhook{"defaulting": h.mutate, "validation": h.validate} {
			resp := wh.Handle(context.Background(), request(admissionv1.Update, jsonOf(t, obj), old))
			if !resp.Allowed {
				t.Errorf("%s: %s refused: %v", name, hook, resp.Result)
			}
			// A defaulted spec would be a spec change, which validation
			// then checks in full and refuses.
			if len(resp.Patches) > 0 {
				t.Errorf("%s: %s changed the object: %v", name, hook, resp.Patches)
			}
		}
	}
	changed := invalid.DeepCopy()
	changed.Spec.ControlPlane.Replicas = ptr(int32(5))
	if resp := h.validate.Handle(context.Background(), request(admissionv1.Update, jsonOf(t, changed), old)); resp.Allowed {
		t.Error("a spec change keeping the invalid value was admitted")
	} else if !strings.Contains(resp.Result.Message, "spec.variables[maxPods].value") {
		t.Errorf("refused without naming the field: %s", resp.Result.Message)
	}
}

func ptr[T any](v T) *T { return &v }

// FuzzAdmitTopology sends arbitrary bytes as a Topology through both
// webhooks: they may refuse, with a 4xx naming a field, but never fail with
// a server error or panic.
func FuzzAdmitTopology(f *testing.F) {
	h, ex := newHandlers(f)
	valid := jsonOf(f, ex.Topology)
	f.Add(valid)
	f.Add([]byte(strings.Replace(string(valid), `"controlPlane":{`, `"controlPlane":{"nodeDrainTimeout":"abc",`, 1)))
	f.Add([]byte(strings.Replace(string(valid), `"class":"docker-kubeadm"`, `"class":""`, 1)))
	f.Add([]byte(strings.Replace(string(valid), `"cidrBlocks":["192.168.0.0/16"]`, `"cidrBlocks":["not-a-cidr"]`, 1)))
	f.Add([]byte(`{"spec":{"workers":{"machineDeployments":[{"name":"a b","class":"nope"}]}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		for hook, wh := range map[string]*admission.Webhook{"defaulting": h.mutate, "validation": h.validate} {
			resp := wh.Handle(context.Background(), request(admissionv1.Create, raw, nil))
			if resp.Allowed {
				continue
			}
			if resp.Result == nil || resp.Result.Code < 400 || resp.Result.Code >= 500 {
				t.Fatalf("%s refused %q with %+v, want a 4xx", hook, raw, resp.Result)
			}
		}
	})
}
