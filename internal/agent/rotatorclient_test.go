package agent

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestRotatorUpdatesThatChangeNothingAreSkipped: the rotator's CA injection
// into a configuration that has that CA already sends nothing; a new CA
// bundle, or a configuration read at an older resourceVersion, is written.
func TestRotatorUpdatesThatChangeNothingAreSkipped(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := admissionregistrationv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	cfg.Name = "kubectl-topology"
	cfg.Webhooks = []admissionregistrationv1.ValidatingWebhook{{Name: "v.topology.kubectl-topology.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: []byte("ca-1")}}}
	updates := 0
	base := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cfg).WithInterceptorFuncs(interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			updates++
			return c.Update(ctx, obj, opts...)
		},
	}).Build()
	c := unchangedUpdatesSkipped{Client: base, live: base}
	ctx := context.Background()
	read := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("admissionregistration.k8s.io/v1")
		u.SetKind("ValidatingWebhookConfiguration")
		if err := base.Get(ctx, client.ObjectKey{Name: cfg.Name}, u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	setCA := func(u *unstructured.Unstructured, ca string) {
		hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		_ = unstructured.SetNestedField(hooks[0].(map[string]any), ca, "clientConfig", "caBundle")
		_ = unstructured.SetNestedSlice(u.Object, hooks, "webhooks")
	}

	same := read()
	setCA(same, "Y2EtMQ==") // base64 of ca-1: what the API server has
	if err := c.Update(ctx, same); err != nil {
		t.Fatal(err)
	}
	if updates != 0 {
		t.Errorf("an injection of the CA the configuration has was sent (%d updates)", updates)
	}

	stale := read()
	changed := read()
	setCA(changed, "Y2EtMg==")
	if err := c.Update(ctx, changed); err != nil {
		t.Fatal(err)
	}
	if updates != 1 {
		t.Fatalf("a new CA bundle was not written (%d updates)", updates)
	}
	if got, _, _ := unstructured.NestedSlice(read().Object, "webhooks"); got[0].(map[string]any)["clientConfig"].(map[string]any)["caBundle"] != "Y2EtMg==" {
		t.Errorf("the configuration holds %v after the update", got)
	}
	// Read before that write: equal content no longer, and an older
	// resourceVersion, so it goes to the API server, which refuses it.
	setCA(stale, "Y2EtMg==")
	if err := c.Update(ctx, stale); err == nil {
		t.Error("an update from a stale read passed without a conflict")
	}
	if updates != 2 {
		t.Errorf("the stale update did not reach the API server (%d updates)", updates)
	}
}
