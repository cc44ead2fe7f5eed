package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// rolloutRequests counts the API requests the rollout controller itself
// makes — its reads come from the cache — by what they are for: status
// writes, changes written to clusters, and preflight dry runs. The agent's
// other controllers share its process, so its rest_client_requests_total
// cannot tell them apart; `make bench-scale` divides this by the clusters.
var rolloutRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "kubectl_topology_rollout_api_requests_total",
	Help: "API requests of the TopologyRollout controller, by purpose (status, change, preflight, dryrun).",
}, []string{"purpose"})

func init() {
	ctrlmetrics.Registry.MustRegister(rolloutRequests)
}

// Purposes of the rollout controller's requests.
const (
	requestStatus    = "status"
	requestChange    = "change"
	requestPreflight = "preflight"
	// requestDryRun: the dry run that tells a cluster in flight refused.
	requestDryRun = "dryrun"
)
