package agent

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubectl-topology/kubectl-topology/internal/freeport"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/localcluster"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The suite runs the whole agent in-process — controllers, webhooks,
// self-installed CRDs and certificates — against a real kube-apiserver,
// etcd and kube-controller-manager. Provider controllers do not run: tests
// set status the way a provider would.
var (
	suiteCluster *localcluster.Cluster
	k8s          client.Client // the test's own, uncached client
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if fixture.SkipWithoutBinaries(false) {
		return m.Run()
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
	ctx := context.Background()
	c, err := localcluster.StartForTests(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = c.Cleanup() }()
	suiteCluster = c
	if k8s, err = client.New(c.Config, client.Options{Scheme: Scheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// zapLevel keeps agent logs quiet unless TOPOLOGY_TEST_VERBOSE is set.
func zapLevel() zapcore.Level {
	if os.Getenv("TOPOLOGY_TEST_VERBOSE") != "" {
		return -2
	}
	return 2
}

// runningAgent is an agent started for a test, with its write-request counter.
type runningAgent struct {
	*Agent
	writes *writeCounter
	cancel context.CancelFunc
	done   chan error
}

// startAgent runs an agent until the test ends (or stop is called) and waits
// until it reports ready, which means its webhooks answer.
func startAgent(t *testing.T) *runningAgent {
	t.Helper()
	return startAgentWith(t, nil)
}

// startAgentWith is startAgent with options changed by change.
func startAgentWith(t *testing.T, change func(*Options)) *runningAgent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	counter := &writeCounter{}
	cfg := rest.CopyConfig(suiteCluster.Config)
	cfg.Wrap(counter.wrap)
	probe := freePort(t)
	opts := Defaults()
	opts.Local = true
	opts.WebhookPort = freePort(t)
	opts.HealthProbeBindAddress = fmt.Sprintf("127.0.0.1:%d", probe)
	opts.MetricsBindAddress = "0"
	opts.CertDir = t.TempDir()
	opts.SkipNameValidation = true
	if change != nil {
		change(&opts)
	}
	a, err := New(ctx, cfg, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ra := &runningAgent{Agent: a, writes: counter, cancel: cancel, done: make(chan error, 1)}
	go func() { ra.done <- a.Run(ctx) }()
	t.Cleanup(ra.stop)
	eventually(t, "the agent reports ready", func() (bool, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", probe))
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	return ra
}

func (ra *runningAgent) stop() {
	if ra.cancel == nil {
		return
	}
	ra.cancel()
	if err := <-ra.done; err != nil {
		fmt.Fprintln(os.Stderr, "the agent stopped with:", err)
	}
	ra.cancel = nil
}

func freePort(t *testing.T) int {
	t.Helper()
	ports, err := freeport.New().Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// writeCounter counts the agent's write requests to Cluster API and
// kubectl-topology objects, by path.
type writeCounter struct {
	mu    sync.Mutex
	n     atomic.Int64
	paths []string
	// watched are the resources the agent opened a watch on, by plural name.
	watched map[string]bool
}

func (w *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return promhttp.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet && req.URL.Query().Get("watch") == "true" {
			w.mu.Lock()
			if w.watched == nil {
				w.watched = map[string]bool{}
			}
			w.watched[req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:]] = true
			w.mu.Unlock()
		}
		group := strings.SplitN(strings.TrimPrefix(req.URL.Path, "/apis/"), "/", 2)[0]
		if req.Method != http.MethodGet && (strings.HasSuffix(group, "cluster.x-k8s.io") || group == v1alpha2.GroupVersion.Group) {
			w.n.Add(1)
			w.mu.Lock()
			w.paths = append(w.paths, req.Method+" "+req.URL.Path)
			w.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// watching says whether the agent opened a watch on resource (a plural name).
func (w *writeCounter) watching(resource string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watched[resource]
}

// watchedResources are the resources watched so far, sorted.
func (w *writeCounter) watchedResources() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.watched))
}

func (w *writeCounter) seen() (int64, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n.Load(), append([]string(nil), w.paths...)
}

// eventually is fixture.EventuallyEvery with this suite's pace; the bound is
// generous because it is not a speed assertion, only a guard against hanging.
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	fixture.EventuallyEvery(t, 50*time.Millisecond, 60*time.Second, what, func(context.Context) (bool, error) { return cond() })
}

type example = fixture.Example

func loadExample(t *testing.T, namespace string) example {
	t.Helper()
	ex, err := fixture.LoadExample(namespace)
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// createClass creates the example's templates and class.
func createClass(t *testing.T, ex example) {
	t.Helper()
	if err := ex.CreateClass(context.Background(), k8s); err != nil {
		t.Fatal(err)
	}
}

// waitIdle waits until the agent's Topology queue has drained after the
// latest change: nothing queued or being reconciled, and nothing added, over
// three polls in a row, so that events still on their way count too.
func waitIdle(t *testing.T, _ *runningAgent) {
	t.Helper()
	lastAdds, quiet := -1.0, 0
	eventually(t, "the topology queue is empty", func() (bool, error) {
		depth, err := gauge("workqueue_depth", "topology")
		if err != nil {
			return false, err
		}
		active, err := gauge("controller_runtime_active_workers", "topology")
		if err != nil {
			return false, err
		}
		adds, err := counter("workqueue_adds_total", "topology")
		if err != nil {
			return false, err
		}
		if depth == 0 && active == 0 && adds == lastAdds {
			quiet++
		} else {
			quiet = 0
		}
		lastAdds = adds
		return quiet >= 3, nil
	})
}

// gauge reads a controller-runtime gauge for one controller.
func gauge(name, controllerName string) (float64, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if (l.GetName() == "name" || l.GetName() == "controller") && l.GetValue() == controllerName {
					return m.GetGauge().GetValue(), nil
				}
			}
		}
	}
	return 0, fmt.Errorf("metric %s for %s not found", name, controllerName)
}

// counter sums a controller-runtime counter over all label values of one controller.
func counter(name, controllerName string) (float64, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if (l.GetName() == "name" || l.GetName() == "controller") && l.GetValue() == controllerName {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum, nil
}
