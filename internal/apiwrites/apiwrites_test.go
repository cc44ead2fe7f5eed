package apiwrites

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestWrapCountsWritesByVerbResourceAndDryRun(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNotFound) // a refused write is counted too
		}
	}))
	defer srv.Close()
	reg := prometheus.NewRegistry()
	c, err := New(reg, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: c.Wrap(http.DefaultTransport)}
	send := func(method, path string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	const clusters = "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/clusters"
	send(http.MethodPost, clusters)
	send(http.MethodPost, clusters)
	send(http.MethodPatch, clusters+"/c1?fieldManager=x&dryRun=All")
	send(http.MethodPatch, clusters+"/c1/status")
	send(http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l")
	send(http.MethodDelete, "/api/v1/namespaces/ns/configmaps/cm")
	send(http.MethodGet, clusters)            // a read
	send(http.MethodGet, clusters+"?watch=1") // a watch
	send(http.MethodPost, "/healthz")         // not a resource

	want := `
# HELP kubectl_topology_api_writes_total API writes made, by verb, resource (resource/subresource) and dry run.
# TYPE kubectl_topology_api_writes_total counter
kubectl_topology_api_writes_total{dry_run="false",resource="clusters",verb="create"} 2
kubectl_topology_api_writes_total{dry_run="false",resource="clusters/status",verb="patch"} 1
kubectl_topology_api_writes_total{dry_run="false",resource="configmaps",verb="delete"} 1
kubectl_topology_api_writes_total{dry_run="false",resource="leases",verb="update"} 1
kubectl_topology_api_writes_total{dry_run="true",resource="clusters",verb="patch"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), MetricName); err != nil {
		t.Error(err)
	}
}

func TestNewRefusesASecondRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(reg, logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if _, err := New(reg, logr.Discard()); err == nil {
		t.Error("a second counter of the same name registered; its writes would be lost")
	}
}
