package scale

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/localcluster"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestCPUFromStat(t *testing.T) {
	// The command name holds a space and a parenthesis; utime 250 and
	// stime 130 ticks are fields 14 and 15.
	stat := "4242 (capi core (x)) S 1 4242 4242 0 -1 4194560 5000 0 0 0 250 130 0 0 20 0 12 0 100 0 0"
	got, err := cpuFromStat(stat)
	if err != nil || got != 3800*time.Millisecond {
		t.Errorf("cpuFromStat = %v, %v; want 3.8s", got, err)
	}
	if _, err := cpuFromStat("4242 capi-core S 1"); err == nil {
		t.Error("a line without the command's parentheses was read")
	}
	if _, err := cpuFromStat("4242 (agent) S 1 2"); err == nil {
		t.Error("a short line was read")
	}
}

func TestReadUsageOfThisProcess(t *testing.T) {
	u, err := ReadUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.PeakRSS < 1<<20 {
		t.Errorf("peak RSS of the test process is %d bytes; it is at least a MiB", u.PeakRSS)
	}
	if u.RSS < 1<<20 || u.RSS > u.PeakRSS {
		t.Errorf("RSS of the test process is %d bytes against a peak of %d; it is at least a MiB and at most the peak", u.RSS, u.PeakRSS)
	}
	if u.FileRSS <= 0 || u.FileRSS >= u.RSS {
		t.Errorf("RSS of the test process mapped from files is %d bytes against an RSS of %d; the binary's pages make it more than none and the heap's less than all", u.FileRSS, u.RSS)
	}
	if _, err := ReadUsage(-1); err == nil {
		t.Error("a process that does not exist has usage")
	}
}

func TestMetricsSum(t *testing.T) {
	m := Metrics(`# HELP rest_client_requests_total Number of HTTP requests.
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 120
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 7
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 3
rest_client_requests_total{code="409",host="127.0.0.1:6443",method="PUT"} 1.5e+00
rest_client_requests_total_other 99
workqueue_depth{controller="topology",name="topology"} 0
workqueue_depth{controller="topology/cluster",name="topology/cluster"} 4
`)
	for _, tc := range []struct {
		name    string
		filters []string
		want    float64
	}{
		{"rest_client_requests_total", nil, 131.5},
		{"rest_client_requests_total", []string{`method="GET"`}, 120},
		{"workqueue_depth", []string{`name="topology"`}, 0},
		{"workqueue_depth", []string{`name="topology/cluster"`}, 4},
		{"missing", nil, 0},
	} {
		if got := m.Sum(tc.name, tc.filters...); got != tc.want {
			t.Errorf("Sum(%s, %v) = %v, want %v", tc.name, tc.filters, got, tc.want)
		}
	}
	if got := m.Writes(); got != 11.5 {
		t.Errorf("Writes() = %v, want 11.5 (POST, PATCH, PUT)", got)
	}
	if got, want := m.RequestsByMethod(), map[string]float64{"GET": 120, "POST": 7, "PUT": 1.5, "PATCH": 3, "DELETE": 0}; !maps.Equal(got, want) {
		t.Errorf("RequestsByMethod() = %v, want %v", got, want)
	}
}

func TestMetricsWritesByResource(t *testing.T) {
	m := Metrics(`# HELP kubectl_topology_api_writes_total API writes made.
# TYPE kubectl_topology_api_writes_total counter
kubectl_topology_api_writes_total{dry_run="false",resource="clusters",verb="create"} 2
kubectl_topology_api_writes_total{dry_run="true",resource="kubeadmcontrolplanes",verb="patch"} 3
kubectl_topology_api_writes_total{dry_run="false",resource="topologies/status",verb="patch"} 24
# HELP rest_client_requests_total Number of HTTP requests.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="h",method="PATCH"} 29
`)
	want := map[string]float64{
		"create clusters":                      2,
		"patch kubeadmcontrolplanes (dry run)": 3,
		"patch topologies/status":              24,
	}
	if got := m.WritesByResource(); !maps.Equal(got, want) {
		t.Errorf("WritesByResource() = %v, want %v", got, want)
	}
	if got := Metrics("rest_client_requests_total 3\n").WritesByResource(); len(got) != 0 {
		t.Errorf("WritesByResource() of a process that does not count them = %v, want none", got)
	}
}

// TestMetricsServerWrites reads an API server's writes by resource, each
// code and version summed, reads and watches left out, and lists the largest.
func TestMetricsServerWrites(t *testing.T) {
	m := Metrics(`# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="cluster.x-k8s.io",resource="machinedeployments",scope="resource",subresource="status",verb="PATCH",version="v1beta2"} 40
apiserver_request_total{code="409",component="apiserver",dry_run="",group="cluster.x-k8s.io",resource="machinedeployments",scope="resource",subresource="status",verb="PATCH",version="v1beta2"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="cluster.x-k8s.io",resource="machinedeployments",scope="resource",subresource="",verb="APPLY",version="v1beta2"} 10
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="",group="cluster.x-k8s.io",resource="clusters",scope="resource",subresource="",verb="GET",version="v1beta2"} 500
apiserver_request_total{code="200",component="apiserver",dry_run="",group="cluster.x-k8s.io",resource="clusters",scope="namespace",subresource="",verb="WATCH",version="v1beta2"} 7
`)
	want := map[string]float64{
		"PATCH machinedeployments/status": 42,
		"APPLY machinedeployments":        10,
		"POST events":                     10,
	}
	got := m.ServerWritesByResource()
	if !maps.Equal(got, want) {
		t.Errorf("ServerWritesByResource() = %v, want %v", got, want)
	}
	if s, want := largest(got, 2), "PATCH machinedeployments/status 42, APPLY machinedeployments 10, and 1 more"; s != want {
		t.Errorf("largest(2) = %q, want %q", s, want)
	}
	if s := largest(Metrics("up 1\n").ServerWritesByResource(), 5); s != "none" {
		t.Errorf("largest of no writes = %q, want none", s)
	}
}

func TestMetricsQuantile(t *testing.T) {
	// Two webhooks' histograms (cumulative buckets), as controller-runtime
	// exposes them: 100 requests to the default path, 100 to the validate path.
	m := Metrics(`# TYPE controller_runtime_webhook_latency_seconds histogram
controller_runtime_webhook_latency_seconds_bucket{webhook="/default"} 99
controller_runtime_webhook_latency_seconds_bucket{le="0.005",webhook="/default"} 90
controller_runtime_webhook_latency_seconds_bucket{le="0.01",webhook="/default"} 100
controller_runtime_webhook_latency_seconds_bucket{le="+Inf",webhook="/default"} 100
controller_runtime_webhook_latency_seconds_bucket{le="0.005",webhook="/validate"} 50
controller_runtime_webhook_latency_seconds_bucket{le="0.01",webhook="/validate"} 90
controller_runtime_webhook_latency_seconds_bucket{le="+Inf",webhook="/validate"} 100
controller_runtime_webhook_latency_seconds_sum{webhook="/validate"} 0.5
controller_runtime_webhook_latency_seconds_count{webhook="/validate"} 100
`)
	const name = "controller_runtime_webhook_latency_seconds"
	for _, tc := range []struct {
		q       float64
		filters []string
		want    float64
	}{
		{0.5, []string{`webhook="/default"`}, 0.005 * 50 / 90},
		{0.95, []string{`webhook="/default"`}, 0.0075},
		{0.5, []string{`webhook="/validate"`}, 0.005},
		{0.7, []string{`webhook="/validate"`}, 0.0075},
		{0.99, []string{`webhook="/validate"`}, 0.01}, // past the last finite bound
		{0.5, nil, 0.005 * 100 / 140},                 // both paths together
		{0.99, []string{`webhook="/missing"`}, 0},     // no samples
	} {
		got := m.Quantile(tc.q, name, tc.filters...)
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Quantile(%v, %v) = %v, want %v", tc.q, tc.filters, got, tc.want)
		}
	}
	if mean, p99, ok := m.WebhookLatency("/validate"); !ok || mean != 5*time.Millisecond || p99 != 10*time.Millisecond {
		t.Errorf("WebhookLatency(/validate) = %v, %v, %v; want 5ms, 10ms, true", mean, p99, ok)
	}
	if _, _, ok := m.WebhookLatency("/default"); ok {
		t.Error("WebhookLatency of a path without a _count sample says it has requests")
	}
}

func fromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSetReplicas(t *testing.T) {
	cluster := fromYAML(t, `{kind: Cluster, spec: {topology: {controlPlane: {replicas: 3}, workers: {machineDeployments: [{name: a, replicas: 2}, {name: b}]}}}}`)
	topology := fromYAML(t, `{kind: Topology, spec: {controlPlane: {replicas: 3}, workers: {machinePools: [{name: p, replicas: 4}]}}}`)
	for _, o := range []*unstructured.Unstructured{cluster, topology} {
		if err := setReplicas(o, 1); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := yaml.Marshal(cluster.Object)
	want := "kind: Cluster\nspec:\n  topology:\n    controlPlane:\n      replicas: 1\n    workers:\n      machineDeployments:\n      - name: a\n        replicas: 1\n      - name: b\n        replicas: 1\n"
	if string(got) != want {
		t.Errorf("Cluster:\n%s\nwant:\n%s", got, want)
	}
	got, _ = yaml.Marshal(topology.Object)
	want = "kind: Topology\nspec:\n  controlPlane:\n    replicas: 1\n  workers:\n    machinePools:\n    - name: p\n      replicas: 1\n"
	if string(got) != want {
		t.Errorf("Topology:\n%s\nwant:\n%s", got, want)
	}
}

func TestReconciledNow(t *testing.T) {
	const deferred = `"Cluster is upgrading to v1.33.1\n  * MachineDeployment md-0 creation deferred while control plane upgrade is in progress"`
	const deferredAndPending = `"Cluster is upgrading to v1.33.1\n  * KubeadmControlPlane pending upgrade to version v1.33.1\n  * MachineDeployment md-0 creation deferred while control plane upgrade is in progress"`
	for _, tc := range []struct {
		doc            string
		want, wantIdle bool
	}{
		{`{kind: Cluster, apiVersion: v1, metadata: {generation: 2}, status: {conditions: [{type: Available, status: "False"}, {type: TopologyReconciled, status: "True", observedGeneration: 2}]}}`, true, true},
		{`{kind: Cluster, apiVersion: v1, metadata: {generation: 3}, status: {conditions: [{type: TopologyReconciled, status: "True", observedGeneration: 2}]}}`, false, false},
		{`{kind: Cluster, apiVersion: v1, metadata: {generation: 2}, status: {conditions: [{type: TopologyReconciled, status: "False", observedGeneration: 2}]}}`, false, false},
		{`{kind: Cluster, apiVersion: v1, metadata: {generation: 1}}`, false, false},
		{`{kind: Topology, apiVersion: v1, metadata: {generation: 1}, status: {conditions: [{type: TopologyReconciled, status: "False", reason: ClusterUpgrading, observedGeneration: 1, message: ` + deferred + `}]}}`, false, true},
		{`{kind: Topology, apiVersion: v1, metadata: {generation: 2}, status: {conditions: [{type: TopologyReconciled, status: "False", reason: ClusterUpgrading, observedGeneration: 1, message: ` + deferred + `}]}}`, false, false},
		{`{kind: Topology, apiVersion: v1, metadata: {generation: 1}, status: {conditions: [{type: TopologyReconciled, status: "False", reason: ClusterUpgrading, observedGeneration: 1, message: ` + deferredAndPending + `}]}}`, false, false},
		{`{kind: Topology, apiVersion: v1, metadata: {generation: 1}, status: {conditions: [{type: TopologyReconciled, status: "False", reason: ClusterUpgrading, observedGeneration: 1, message: "Cluster is upgrading to v1.33.1"}]}}`, false, false},
		{`{kind: Topology, apiVersion: v1, metadata: {generation: 1}, status: {conditions: [{type: TopologyReconciled, status: "False", reason: ReconcileFailed, observedGeneration: 1, message: ` + deferred + `}]}}`, false, false},
	} {
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(mustJSON(t, tc.doc)); err != nil {
			t.Fatal(err)
		}
		if got := reconciledNow(o, false); got != tc.want {
			t.Errorf("reconciledNow(%s, providers busy) = %v, want %v", tc.doc, got, tc.want)
		}
		if got := reconciledNow(o, true); got != tc.wantIdle {
			t.Errorf("reconciledNow(%s, providers idle) = %v, want %v", tc.doc, got, tc.wantIdle)
		}
	}
}

func mustJSON(t *testing.T, doc string) []byte {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestTable renders a measured pair; `go test ./internal/harness/scale -update`
// rewrites the golden file.
func TestTable(t *testing.T) {
	ours := Measurement{Side: Ours, N: 100, Processes: true, Created: 2 * time.Second, Reconciled: 14 * time.Second,
		CreateP50: 4200 * time.Microsecond, CreateP99: 21 * time.Millisecond, AdmissionP99: 2500 * time.Microsecond, Requests: 2100,
		Usage: Usage{PeakRSS: 120 << 20, CPU: 9 * time.Second}, Core: Usage{PeakRSS: 90 << 20, CPU: 20 * time.Second}, CoreRequests: 5000, APIServer: Usage{CPU: 60 * time.Second},
		ResyncWrites: 0, Resync: 3 * time.Second}
	upstream := Measurement{Side: Upstream, N: 100, Processes: true, Created: 1500 * time.Millisecond, Reconciled: 28 * time.Second,
		CreateP50: 3 * time.Millisecond, CreateP99: 12 * time.Millisecond, AdmissionP99: 5 * time.Millisecond,
		Usage: Usage{PeakRSS: 150 << 20, CPU: 40 * time.Second}, Requests: 9000, Core: Usage{PeakRSS: 150 << 20, CPU: 40 * time.Second}, CoreRequests: 9000, APIServer: Usage{CPU: 2 * time.Minute},
		ResyncWrites: 12, Resync: 6 * time.Second, CreateRetries: 3}
	var out bytes.Buffer
	Table(&out, "testdata/parity/in-memory", ours, upstream)
	// Against a user's control plane only the client's figures are known,
	// and a side may be left out.
	ours.Processes = false
	Table(&out, "testdata/parity/in-memory", ours, Measurement{})
	golden := filepath.Join("testdata", "table.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestProvidersIdle checks that idle providers watch only a namespace
// nothing is created in, all but the core manager, keeping their other
// flags, and that the list is left as it is otherwise.
func TestProvidersIdle(t *testing.T) {
	for _, side := range []string{Ours, Upstream} {
		busy := providers(side, false)
		if !reflect.DeepEqual(busy, localcluster.ClusterAPIProviders(side == Upstream)) {
			t.Errorf("%s, not idle: providers changed: %+v", side, busy)
		}
		idle := providers(side, true)
		if len(idle) != len(busy) {
			t.Fatalf("%s: %d providers idle, %d busy", side, len(idle), len(busy))
		}
		for i, p := range idle {
			watchesIdle := slices.Contains(p.Args, "--namespace="+idleNamespace)
			if core := p.Name == localcluster.CoreProviderName; watchesIdle == core {
				t.Errorf("%s: %s watches only %s: %v; want %v", side, p.Name, idleNamespace, watchesIdle, !core)
			}
			if !slices.Equal(p.Args[:len(busy[i].Args)], busy[i].Args) {
				t.Errorf("%s: idle %s args %v lost some of %v", side, p.Name, p.Args, busy[i].Args)
			}
		}
	}
}

// TestWatchUntil follows a watch: a cluster counts once it reports
// reconciled, a later event can take that back, a deletion forgets it, and
// the wait ends when n are reconciled, when the watch closes (the caller
// lists again) or with the error of an error event.
func TestWatchUntil(t *testing.T) {
	obj := func(name string, done bool) *unstructured.Unstructured {
		status := map[bool]string{true: "True", false: "False"}[done]
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(mustJSON(t, `{kind: Topology, apiVersion: v1, metadata: {name: `+name+`, generation: 1}, status: {conditions: [{type: TopologyReconciled, status: "`+status+`", observedGeneration: 1}]}}`)); err != nil {
			t.Fatal(err)
		}
		return o
	}
	run := func(n int, events func(w *watch.FakeWatcher)) (reconciledSet, error) {
		reconciled := reconciledSet{}
		w := watch.NewFakeWithChanSize(10, false)
		events(w)
		err := watchUntil(context.Background(), w, reconciled, n, false, nil, func() {})
		return reconciled, err
	}

	got, err := run(2, func(w *watch.FakeWatcher) {
		w.Add(obj("a", true))
		w.Add(obj("b", false))
		w.Modify(obj("a", false)) // a rollout started again
		w.Modify(obj("b", true))
		w.Modify(obj("a", true))
		w.Add(obj("c", false)) // never read: two are reconciled before it
	})
	if err != nil || !maps.Equal(got, reconciledSet{"a": true, "b": true}) {
		t.Errorf("two reconciled: %v, %v", got, err)
	}

	got, err = run(2, func(w *watch.FakeWatcher) {
		w.Add(obj("a", true))
		w.Delete(obj("a", true))
		w.Add(obj("b", true))
		w.Stop()
	})
	if err != nil || !maps.Equal(got, reconciledSet{"b": true}) {
		t.Errorf("a deleted, then the watch closed: %v, %v", got, err)
	}

	_, err = run(1, func(w *watch.FakeWatcher) {
		w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
	})
	if err == nil || !strings.Contains(err.Error(), "too old resource version") {
		t.Errorf("an error event: %v, want the watch's error", err)
	}
}

// TestByMethod: the resync's requests read sorted by method, and "none"
// when there were none.
func TestByMethod(t *testing.T) {
	if got := countList(map[string]float64{"PATCH": 3, "GET": 41, "LIST": 12}); got != "GET 41, LIST 12, PATCH 3" {
		t.Errorf("countList = %q", got)
	}
	if got := countList(nil); got != "none" {
		t.Errorf("countList of nothing = %q, want none", got)
	}
}

// TestCreateRetrying: a create the API server fails for a while (a webhook
// call that timed out) is tried again and counted, one found stored by a
// try that seemed to fail is created, and a refusal or a failure that
// lasts ends it with the API server's error.
func TestCreateRetrying(t *testing.T) {
	timedOut := apierrors.NewInternalError(errors.New(`failed calling webhook "validation.cluster.cluster.x-k8s.io": context deadline exceeded`))
	refused := apierrors.NewInvalid(schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Cluster"}, "c", nil)
	for _, tc := range []struct {
		name        string
		failures    []error // one per call, nil stores the object
		wantRetries int
		wantErr     error
		wantStored  bool
	}{
		{"stored at once", []error{nil}, 0, nil, true},
		{"a webhook timed out twice", []error{timedOut, timedOut, nil}, 2, nil, true},
		{"stored by the try that timed out", []error{errStoredButTimedOut, nil}, 1, nil, true},
		{"refused", []error{refused}, 0, refused, false},
		{"failing every time", []error{timedOut, timedOut, timedOut}, 2, timedOut, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			k8s := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					failure := tc.failures[min(calls, len(tc.failures)-1)]
					calls++
					if failure == errStoredButTimedOut {
						_ = c.Create(ctx, obj, opts...)
						return timedOut
					}
					if failure != nil {
						return failure
					}
					return c.Create(ctx, obj, opts...)
				},
			}).Build()
			o := &unstructured.Unstructured{}
			o.SetAPIVersion("v1")
			o.SetKind("ConfigMap")
			o.SetNamespace("scale")
			o.SetName("c-0000")
			retries, err := createRetrying(context.Background(), k8s, o, 3, time.Millisecond)
			if retries != tc.wantRetries || !errors.Is(err, tc.wantErr) {
				t.Errorf("retries %d, error %v; want %d, %v", retries, err, tc.wantRetries, tc.wantErr)
			}
			stored := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), o.DeepCopy()) == nil
			if stored != tc.wantStored {
				t.Errorf("stored: %v, want %v", stored, tc.wantStored)
			}
		})
	}
}

// errStoredButTimedOut marks a call that stores the object and reports a
// timeout, as a webhook that answers after the client gave up can.
var errStoredButTimedOut = errors.New("stored, but the client timed out")
