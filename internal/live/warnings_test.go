package live

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The API server's warnings reach the user once each, as kubectl prints
// them, and not as a logger's complaint that it was never set.
func TestWarningsArePrintedOnceEach(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Warning", `299 - "cluster.x-k8s.io/v1beta1 Cluster is deprecated; use cluster.x-k8s.io/v1beta2 Cluster"`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`))
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	var out bytes.Buffer
	WarnTo(cfg, &out)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Namespace"), meta.RESTScopeRoot)
	c, err := client.New(cfg, client.Options{Scheme: Scheme(), Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := c.Get(context.Background(), client.ObjectKey{Name: "default"}, &corev1.Namespace{}); err != nil {
			t.Fatal(err)
		}
	}
	want := "Warning: cluster.x-k8s.io/v1beta1 Cluster is deprecated; use cluster.x-k8s.io/v1beta2 Cluster\n"
	if out.String() != want {
		t.Errorf("printed %q, want %q once", out.String(), want)
	}
	if strings.Contains(out.String(), "SetLogger") {
		t.Errorf("a logger's complaint reached the user: %s", out.String())
	}
}
