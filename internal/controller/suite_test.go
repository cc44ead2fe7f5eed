package controller

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/extension"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/localcluster"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// The suite runs this package's three reconcilers in one manager against a
// real kube-apiserver and etcd, without the agent's webhooks: it is what the
// reconcilers do with whatever the API server holds, including objects that
// arrive in an order the webhooks let through (a Topology before its class).
var k8s client.WithWatch // the test's own, uncached client

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if fixture.SkipWithoutBinaries(false) {
		return m.Run()
	}
	if os.Getenv("TOPOLOGY_TEST_VERBOSE") != "" {
		ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := localcluster.StartForTests(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = c.Cleanup() }()
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha2.AddToScheme(scheme))
	if k8s, err = client.NewWithWatch(c.Config, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mgr, err := ctrl.NewManager(c.Config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// As the agent: unstructured reads from the cache, which the
		// reconciler lists by its cluster index.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := setupReconcilers(ctx, mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	return code
}

// setupReconcilers wires the reconcilers as the agent does, minus webhooks.
func setupReconcilers(ctx context.Context, mgr ctrl.Manager) error {
	classes := rules.NewClassCache()
	extensions := &extension.Client{Registry: extension.NewRegistry()}
	tr := &TopologyReconciler{
		Client:     mgr.GetClient(),
		APIReader:  mgr.GetAPIReader(),
		Recorder:   mgr.GetEventRecorderFor("kubectl-topology"), //nolint:staticcheck // as the agent: the events API recorder needs a wider role
		Classes:    classes,
		Extensions: extensions,
		Hooks:      extension.NewLifecycle(extensions, nil, nil),
	}
	opts := controller.Options{MaxConcurrentReconciles: 2}
	if err := tr.SetupWithManager(ctx, mgr, opts); err != nil {
		return err
	}
	cr := &TopologyClassReconciler{
		Client:          mgr.GetClient(),
		Classes:         classes,
		TemplateWatches: func() *DynamicWatches { return tr.Watches },
		Extensions:      extensions,
	}
	if err := cr.SetupWithManager(mgr, opts); err != nil {
		return err
	}
	er := &TopologyExtensionReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Extensions: extensions}
	return er.SetupWithManager(mgr, opts)
}

// namespaceWithExample creates a namespace for one test and loads the
// example class and topology into it, without creating them.
func namespaceWithExample(t *testing.T) fixture.Example {
	t.Helper()
	ex, err := fixture.ExampleInNewNamespace(context.Background(), k8s, "docker", "controller")
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// create creates obj, failing the test on error.
func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// reconciledCondition waits until the Topology's TopologyReconciled condition
// has status and reason for its latest generation, and a message holding
// every one of says.
func reconciledCondition(t *testing.T, topo *v1alpha2.Topology, status metav1.ConditionStatus, reason string, says ...string) {
	t.Helper()
	var last metav1.Condition
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		got := &v1alpha2.Topology{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(topo), got); err != nil {
			return false, nil
		}
		c, current := fixture.Reconciled(got)
		if !current {
			return false, nil
		}
		last = *c
		for _, s := range says {
			if !strings.Contains(c.Message, s) {
				return false, nil
			}
		}
		return c.Status == status && c.Reason == reason, nil
	})
	if err != nil {
		t.Fatalf("Topology %s never reported %s=%s %s saying %q; last: %s=%s %s: %s", topo.Name, ReconciledCondition, status, reason, says, last.Type, last.Status, last.Reason, last.Message)
	}
}
