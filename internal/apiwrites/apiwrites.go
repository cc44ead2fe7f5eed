// Package apiwrites counts a client's API writes by verb and resource, so
// that a reconcile's cost, and any write a no-op resync still makes, can be
// named from the agent's metrics rather than from a debug log.
package apiwrites

import (
	"net/http"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// MetricName is the counter's name, which `make bench-scale` reads.
const MetricName = "kubectl_topology_api_writes_total"

// Counter counts writes by verb (create, update, patch, delete,
// deletecollection), resource (with its subresource after a slash) and
// whether the write was a dry run.
type Counter struct {
	writes *prometheus.CounterVec
	// log names each write at V(4), for finding what a quiet state writes.
	log    logr.Logger
	parser request.RequestInfoFactory
}

// New returns a Counter registered with reg that logs each write to log at
// V(4).
func New(reg prometheus.Registerer, log logr.Logger) (*Counter, error) {
	c := &Counter{
		log: log,
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricName,
			Help: "API writes made, by verb, resource (resource/subresource) and dry run.",
		}, []string{"verb", "resource", "dry_run"}),
		// The prefixes every Kubernetes API server serves resources under.
		parser: request.RequestInfoFactory{
			APIPrefixes:          sets.NewString("api", "apis"),
			GrouplessAPIPrefixes: sets.NewString("api"),
		},
	}
	if err := reg.Register(c.writes); err != nil {
		return nil, err
	}
	return c, nil
}

// Wrap returns rt counting each write request it sends, whatever its answer:
// a refused write cost the API server and its webhooks as much as an
// accepted one.
func (c *Counter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return promhttp.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet {
			c.count(req)
		}
		return rt.RoundTrip(req)
	})
}

func (c *Counter) count(req *http.Request) {
	info, err := c.parser.NewRequestInfo(req)
	if err != nil || !info.IsResourceRequest {
		return
	}
	resource := info.Resource
	if info.Subresource != "" {
		resource += "/" + info.Subresource
	}
	dryRun := "false"
	if req.URL.Query().Has("dryRun") {
		dryRun = "true"
	}
	c.writes.WithLabelValues(info.Verb, resource, dryRun).Inc()
	c.log.V(4).Info("write", "verb", info.Verb, "path", req.URL.Path, "dryRun", dryRun)
}
