package extension_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/extension"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// hookServer answers BeforeClusterUpgrade with retryAfter and records the
// requests it got.
type hookServer struct {
	*httptest.Server
	mu         sync.Mutex
	retryAfter int32
	requests   []runtimehooksv1.BeforeClusterUpgradeRequest
}

func startHookServer(t *testing.T, retryAfter int32) *hookServer {
	t.Helper()
	s := &hookServer{retryAfter: retryAfter}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := runtimehooksv1.BeforeClusterUpgradeRequest{}
		_ = json.NewDecoder(r.Body).Decode(&req)
		s.mu.Lock()
		s.requests = append(s.requests, req)
		retry := s.retryAfter
		s.mu.Unlock()
		_ = json.NewEncoder(w).Encode(runtimehooksv1.BeforeClusterUpgradeResponse{CommonRetryResponse: runtimehooksv1.CommonRetryResponse{
			CommonResponse: runtimehooksv1.CommonResponse{Status: runtimehooksv1.ResponseStatusSuccess, Message: "backing up"}, RetryAfterSeconds: retry}})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *hookServer) calls() []runtimehooksv1.BeforeClusterUpgradeRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]runtimehooksv1.BeforeClusterUpgradeRequest(nil), s.requests...)
}

func (s *hookServer) spec(selector *metav1.LabelSelector) v1alpha2.TopologyExtensionSpec {
	u := s.URL
	return v1alpha2.TopologyExtensionSpec{
		ClientConfig:      v1alpha2.ClientConfig{URL: &u, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})},
		NamespaceSelector: selector,
		Settings:          map[string]string{"team": "platform"},
	}
}

func hook(name string) v1alpha2.ExtensionHandler {
	return v1alpha2.ExtensionHandler{Name: name, RequestHook: v1alpha2.GroupVersionHook{APIVersion: extension.APIVersion, Hook: lifecycle.BeforeClusterUpgrade}}
}

// TestLifecycleRemembersAHold: a blocking answer is not asked again before
// its retryAfterSeconds pass, and is asked again after; the request carries
// the extension's settings and the versions.
func TestLifecycleRemembersAHold(t *testing.T) {
	srv := startHookServer(t, 30)
	c := &extension.Client{Registry: extension.NewRegistry()}
	if err := c.Registry.Set("ops", srv.spec(nil), []v1alpha2.ExtensionHandler{hook("backup")}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	l := extension.NewLifecycle(c, nil, func() time.Time { return now })
	topo := &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "dev"}}
	req := lifecycle.Request{Hook: lifecycle.BeforeClusterUpgrade, Topology: topo, From: "v1.33.1", To: "v1.34.0"}
	if _, err := l.Call(context.Background(), req); err == nil {
		t.Fatal("a hook was called before the registry was warmed up")
	}
	c.Registry.MarkReady()

	a, err := l.Call(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if a.RetryAfter != 30*time.Second || a.Message != "backing up" || a.Handlers[0] != "backup.ops" || a.Remembered {
		t.Errorf("first answer %+v, want a 30 s hold by backup.ops", a)
	}
	now = now.Add(20 * time.Second)
	if a, _ = l.Call(context.Background(), req); !a.Remembered || a.RetryAfter != 10*time.Second || len(srv.calls()) != 1 {
		t.Errorf("asked again 20 s into a 30 s hold: %+v, %d calls", a, len(srv.calls()))
	}
	now = now.Add(11 * time.Second)
	if a, _ = l.Call(context.Background(), req); a.Remembered || len(srv.calls()) != 2 {
		t.Errorf("not asked again once the hold passed: %+v, %d calls", a, len(srv.calls()))
	}
	got := srv.calls()[0]
	if got.APIVersion != extension.APIVersion || got.Kind != "BeforeClusterUpgradeRequest" || got.Settings["team"] != "platform" || got.FromKubernetesVersion != "v1.33.1" || got.ToKubernetesVersion != "v1.34.0" ||
		got.Cluster.Name != "dev" || got.Cluster.APIVersion != "cluster.x-k8s.io/v1beta2" {
		t.Errorf("request %+v", got)
	}
}

// TestLifecycleSelectsByNamespaceAndPolicy: an extension whose namespace
// selector does not match is not called; an unreachable one fails the call
// under Fail and lets it go on under Ignore.
func TestLifecycleSelectsByNamespaceAndPolicy(t *testing.T) {
	srv := startHookServer(t, 0)
	c := &extension.Client{Registry: extension.NewRegistry()}
	c.Registry.MarkReady()
	prodOnly := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	if err := c.Registry.Set("ops", srv.spec(prodOnly), []v1alpha2.ExtensionHandler{hook("backup")}); err != nil {
		t.Fatal(err)
	}
	labels := func(_ context.Context, ns string) (map[string]string, error) {
		return map[string]string{"env": ns}, nil
	}
	l := extension.NewLifecycle(c, labels, nil)
	for ns, want := range map[string]int{"dev": 0, "prod": 1} {
		hs, err := l.Handlers(context.Background(), lifecycle.BeforeClusterUpgrade, &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}})
		if err != nil || len(hs) != want {
			t.Errorf("namespace %s: handlers %v (%v), want %d", ns, hs, err, want)
		}
	}

	down := startHookServer(t, 0)
	down.Close()
	fail, ignore := "Fail", "Ignore"
	for policy, wantErr := range map[*string]bool{&fail: true, &ignore: false} {
		h := hook("backup")
		h.FailurePolicy = policy
		if err := c.Registry.Set("ops", down.spec(nil), []v1alpha2.ExtensionHandler{h}); err != nil {
			t.Fatal(err)
		}
		a, err := extension.NewLifecycle(c, nil, nil).Call(context.Background(), lifecycle.Request{Hook: lifecycle.BeforeClusterUpgrade, Topology: &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "c"}}})
		if (err != nil) != wantErr || a.Blocking() {
			t.Errorf("failurePolicy %s with the extension down: %+v, %v", *policy, a, err)
		}
	}
}
