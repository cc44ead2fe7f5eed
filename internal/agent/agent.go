// Package agent assembles the in-cluster half of kubectl-topology: a
// controller-runtime manager running the Topology and TopologyClass
// reconcilers and the admission webhooks, after installing its own CRDs,
// serving certificate and webhook registrations.
package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kubectl-topology/kubectl-topology/internal/cachetransform"
	"github.com/kubectl-topology/kubectl-topology/internal/components"
	topologycontroller "github.com/kubectl-topology/kubectl-topology/internal/controller"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/names"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/extension"
	"github.com/kubectl-topology/kubectl-topology/internal/loader"
	"github.com/kubectl-topology/kubectl-topology/internal/selfinstall"
	"github.com/kubectl-topology/kubectl-topology/internal/shard"
	"github.com/kubectl-topology/kubectl-topology/internal/version"
	topologywebhook "github.com/kubectl-topology/kubectl-topology/internal/webhook"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Options configure the agent; cmd/agent fills them from flags.
type Options struct {
	// Shard is what the agent reconciles: its namespaces (all when none)
	// and watch filter, so that several agents divide a management cluster.
	Shard shard.Shard
	// Webhooks registers and serves the admission webhooks, which admit for
	// every shard: one agent of a sharded management cluster does, the
	// others only reconcile (see docs/reliability.md#shards).
	Webhooks bool
	// AgentNamespace is where the agent runs and keeps its certificate Secret.
	AgentNamespace string
	// ServiceName is the Service in front of the webhooks in-cluster.
	ServiceName string
	// LeaderElect enables leader election, for more than one replica.
	LeaderElect bool
	// LeaseDuration, RenewDeadline and RetryPeriod time the election, as
	// upstream's managers' --leader-elect-* flags do: a leader that dies
	// without releasing its Lease is replaced after LeaseDuration at most.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Identity names this replica in the heartbeat Lease that status reads:
	// the Pod's name in cluster, the host and process out of it.
	Identity string
	// MetricsBindAddress serves metrics; "0" disables them.
	MetricsBindAddress string
	// MetricsSecure serves metrics over HTTPS, to clients the API server
	// authenticates and authorizes for GET /metrics.
	MetricsSecure bool
	// HealthProbeBindAddress serves /healthz and /readyz.
	HealthProbeBindAddress string
	// PprofBindAddress serves Go's profiles (/debug/pprof/) for measuring the
	// agent; empty (the default) serves none.
	PprofBindAddress string
	// WebhookPort is the webhook server's port.
	WebhookPort int
	// Concurrency is how many Topologies reconcile at once.
	Concurrency int
	// QPS and Burst limit the agent's requests to the API server.
	QPS   float32
	Burst int
	// Local runs out of cluster: webhooks on 127.0.0.1, registered by URL.
	Local bool
	// CertDir holds the serving certificate the agent writes from its Secret.
	CertDir string
	// NewNames makes the name generator of each reconcile; random when nil.
	NewNames func() *names.Generator
	// HealthCheckInterval is how often the agent checks that the API server
	// answers, for its readiness and liveness.
	HealthCheckInterval time.Duration
	// ExtensionProxy is the HTTP proxy for calls to Runtime SDK extensions;
	// empty calls them directly (the environment's proxy settings are not used).
	ExtensionProxy string
	// SkipNameValidation allows more than one agent in one process, as tests
	// that restart the agent need; controller names are otherwise unique.
	SkipNameValidation bool
}

// Defaults are the flag defaults.
func Defaults() Options {
	host, err := os.Hostname()
	if err != nil {
		host = "kubectl-topology-agent"
	}
	return Options{
		Identity:               host,
		Webhooks:               true,
		AgentNamespace:         components.Namespace,
		ServiceName:            components.ServiceName,
		MetricsBindAddress:     ":8443",
		MetricsSecure:          true,
		HealthProbeBindAddress: ":9440",
		WebhookPort:            9443,
		Concurrency:            10,
		LeaseDuration:          15 * time.Second,
		RenewDeadline:          10 * time.Second,
		RetryPeriod:            2 * time.Second,
		HealthCheckInterval:    10 * time.Second,
		QPS:                    50,
		Burst:                  100,
		CertDir:                os.TempDir() + "/k8s-webhook-server/serving-certs",
	}
}

// Names of what the agent creates for itself.
const (
	CertSecretName = "topology-webhook-server-cert"
	leaderElectID  = "kubectl-topology-agent.topology.kubectl-topology.io"
)

// rotatorInstances numbers certificate rotators when several agents share a process.
var rotatorInstances atomic.Int64

// Scheme is what the agent reads and writes typed.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(v1alpha2.AddToScheme(s))
	return s
}

// Agent is a configured, not yet started agent.
type Agent struct {
	opts Options
	mgr  manager.Manager
	// direct reads and writes without the cache: before the manager starts,
	// and for the agent's own Secret, which the cache does not watch.
	direct  client.Client
	webhook webhook.Server
	ready   atomic.Bool
	certs   chan struct{}
	// cfg and crds are what the agent installs itself with, kept to install
	// again what someone deletes.
	cfg  *rest.Config
	crds []*apiextensionsv1.CustomResourceDefinition
}

// New installs the CRDs and builds the manager with its controllers.
func New(ctx context.Context, cfg *rest.Config, opts Options) (*Agent, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	crds, err := readCRDs()
	if err != nil {
		return nil, err
	}
	if err := selfinstall.ApplyCRDs(ctx, cfg, crds); err != nil {
		return nil, fmt.Errorf("installing kubectl-topology CRDs: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	// The API server warns on every request for a deprecated version (a class's
	// v1beta1 templates): once per message is enough, or the log is only that.
	cfg.WarningHandlerWithContext = ctrllog.NewKubeAPIWarningLogger(ctrllog.KubeAPIWarningLoggerOptions{Deduplicate: true})
	host := ""
	if opts.Local {
		host = "127.0.0.1"
	}
	a := &Agent{opts: opts, certs: make(chan struct{}), cfg: cfg, crds: crds}
	a.webhook = webhook.NewServer(webhook.Options{Host: host, Port: opts.WebhookPort, CertDir: opts.CertDir})
	mopts := ctrl.Options{
		Scheme:                  Scheme(),
		Metrics:                 metricsOptions(opts),
		HealthProbeBindAddress:  opts.HealthProbeBindAddress,
		PprofBindAddress:        opts.PprofBindAddress,
		LeaderElection:          opts.LeaderElect,
		LeaderElectionID:        leaderElectID,
		LeaderElectionNamespace: opts.AgentNamespace,
		LeaseDuration:           &opts.LeaseDuration,
		RenewDeadline:           &opts.RenewDeadline,
		RetryPeriod:             &opts.RetryPeriod,
		// A leader stopped on purpose (a rolling update, a drain) hands over at
		// once instead of making the standby wait out the Lease: the process
		// ends right after the manager does, so nothing runs unled.
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 a.webhook,
		// Unstructured reads come from the cache too: a steady state then costs
		// no requests at all, which matters at a thousand Topologies.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	}
	// The cache keeps unstructured objects compact (cachetransform.Compact):
	// read them through the client, whose copy decodes them, never with
	// UnsafeDisableDeepCopy, which would hand out the compact form.
	mopts.Cache = cache.Options{DefaultTransform: cachetransform.New(topologycontroller.FieldManager)}
	if !opts.Shard.AllNamespaces() {
		mopts.Cache.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range opts.Shard.Namespaces {
			mopts.Cache.DefaultNamespaces[ns] = cache.Config{}
		}
		// A Topology may take its class from another namespace (spec.classRef.namespace).
		everywhere := cache.ByObject{Namespaces: map[string]cache.Config{cache.AllNamespaces: {}}}
		mopts.Cache.ByObject = map[client.Object]cache.ByObject{&v1alpha2.TopologyClass{}: everywhere}
		if opts.Webhooks {
			// The webhooks admit for every shard and this agent drives the
			// (cluster-scoped) rollouts: what they read of Topologies (a
			// class's users, a rollout's members) must be all of them. The
			// Topology controller takes its shard's alone.
			mopts.Cache.ByObject[&v1alpha2.Topology{}] = everywhere
		}
	}
	if a.mgr, err = ctrl.NewManager(cfg, mopts); err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if a.direct, err = client.New(cfg, client.Options{Scheme: a.mgr.GetScheme()}); err != nil {
		return nil, err
	}
	if err := a.setupControllers(ctx); err != nil {
		return nil, err
	}
	if err := a.setupHealth(); err != nil {
		return nil, err
	}
	if opts.Webhooks {
		if err := a.setupWebhooks(); err != nil {
			return nil, err
		}
	}
	if err := a.setupSelfHeal(); err != nil {
		return nil, err
	}
	beat := &heartbeat{client: a.direct, namespace: opts.AgentNamespace, holder: opts.Identity, shard: opts.Shard, interval: components.HeartbeatInterval, now: time.Now}
	if err := a.mgr.Add(beat); err != nil {
		return nil, err
	}
	return a, nil
}

// metricsOptions serves metrics behind authentication and authorization
// (the API server decides who may GET /metrics), unless MetricsSecure is off.
func metricsOptions(o Options) metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsBindAddress}
	if o.MetricsSecure {
		m.SecureServing = true
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return m
}

func (o Options) validate() error {
	if o.Concurrency < 1 {
		return fmt.Errorf("--concurrency must be at least 1, got %d", o.Concurrency)
	}
	if o.WebhookPort < 1 || o.WebhookPort > 65535 {
		return fmt.Errorf("--webhook-port must be between 1 and 65535, got %d", o.WebhookPort)
	}
	if o.QPS <= 0 || o.Burst < 1 {
		return fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, got %v and %d", o.QPS, o.Burst)
	}
	if o.HealthCheckInterval <= 0 {
		return fmt.Errorf("the API server check interval must be positive, got %s", o.HealthCheckInterval)
	}
	if o.LeaderElect && (o.RetryPeriod <= 0 || o.RetryPeriod >= o.RenewDeadline || o.RenewDeadline >= o.LeaseDuration) {
		return fmt.Errorf("leader election needs 0 < --leader-elect-retry-period (%s) < --leader-elect-renew-deadline (%s) < --leader-elect-lease-duration (%s)", o.RetryPeriod, o.RenewDeadline, o.LeaseDuration)
	}
	if o.Identity == "" {
		return errors.New("the agent's identity must be set (its Pod's name in cluster)")
	}
	if o.AgentNamespace == "" {
		return errors.New("the agent namespace must be set (POD_NAMESPACE or --agent-namespace)")
	}
	return nil
}

// Manager is the underlying manager, for tests that read through its cache.
func (a *Agent) Manager() manager.Manager { return a.mgr }

func (a *Agent) setupControllers(ctx context.Context) error {
	classes := rules.NewClassCache()
	registry := extension.NewRegistry()
	if a.opts.ExtensionProxy != "" {
		proxy, err := url.Parse(a.opts.ExtensionProxy)
		if err != nil || proxy.Host == "" {
			return fmt.Errorf("--extension-proxy %q is not a URL such as http://proxy.example:3128", a.opts.ExtensionProxy)
		}
		registry.Proxy = proxy
	}
	// Half the workers at most wait on any one extension: the rest keep
	// reconciling Topologies that do not use it.
	extensions := &extension.Client{Registry: registry, MaxInFlight: max(1, a.opts.Concurrency/2)}
	dc, err := discovery.NewDiscoveryClientForConfig(a.cfg)
	if err != nil {
		return fmt.Errorf("building a discovery client: %w", err)
	}
	core, err := loader.DetectCoreVersion(dc)
	if err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Writing Cluster API objects", "apiVersion", core.APIVersion())
	tr := &topologycontroller.TopologyReconciler{
		CoreVersion:  core,
		Client:       a.mgr.GetClient(),
		APIReader:    a.mgr.GetAPIReader(),
		Shard:        a.opts.Shard,
		Recorder:     a.mgr.GetEventRecorderFor("kubectl-topology"), //nolint:staticcheck // the events API recorder needs a newer cluster role
		NewNames:     a.opts.NewNames,
		Classes:      classes,
		Extensions:   extensions,
		UpgradePlans: extension.NewUpgradePlanner(extensions, nil),
		// Uncached: only extensions with a namespace selector ask, and the
		// agent keeps no cache of namespaces.
		Hooks: extension.NewLifecycle(extensions, extension.NamespaceLabelsFrom(a.mgr.GetAPIReader()), nil),
	}
	copts := controller.Options{MaxConcurrentReconciles: a.opts.Concurrency, SkipNameValidation: &a.opts.SkipNameValidation}
	if err := tr.SetupWithManager(ctx, a.mgr, copts); err != nil {
		return err
	}
	// A standby keeps what the controllers read warm, so that taking the lead
	// does not start with a full list of every kind; a failure only costs that.
	warm := everyReplica(func(ctx context.Context) error {
		if err := tr.WarmCaches(ctx, a.mgr.GetCache(), a.opts.Webhooks); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Could not start reading some kinds ahead; they are read when first needed")
		}
		return nil
	})
	if err := a.mgr.Add(warm); err != nil {
		return err
	}
	cr := &topologycontroller.TopologyClassReconciler{
		CoreVersion:     core,
		Client:          a.mgr.GetClient(),
		Classes:         classes,
		TemplateWatches: func() *topologycontroller.DynamicWatches { return tr.Watches },
		Extensions:      extensions,
	}
	if err := cr.SetupWithManager(a.mgr, copts); err != nil {
		return err
	}
	er := &topologycontroller.TopologyExtensionReconciler{Client: a.mgr.GetClient(), APIReader: a.mgr.GetAPIReader(), Extensions: extensions}
	if err := er.SetupWithManager(a.mgr, copts); err != nil {
		return err
	}
	if !a.opts.Webhooks {
		return nil
	}
	// The agent that admits for every shard also drives every rollout:
	// rollouts are cluster-scoped and span namespaces, and one has one
	// driver. Both read objects outside this agent's namespaces (a rollout's
	// Clusters) from the API server.
	reads := &shardClient{Client: a.mgr.GetClient(), uncached: a.mgr.GetAPIReader(), shard: a.opts.Shard}
	rr := &topologycontroller.TopologyRolloutReconciler{
		Client:      reads,
		CoreVersion: core,
		Recorder:    a.mgr.GetEventRecorderFor("kubectl-topology"), //nolint:staticcheck // as the Topology controller's
	}
	if err := rr.SetupWithManager(ctx, a.mgr, copts); err != nil {
		return err
	}
	topologywebhook.Register(a.webhook, a.mgr.GetScheme(), reads, a.mgr.GetAPIReader(), reads, classes, core)
	return nil
}

// setupHealth checks that the API server answers and trusts its
// certificate, for readiness and liveness.
func (a *Agent) setupHealth() error {
	dc, err := discovery.NewDiscoveryClientForConfig(a.cfg)
	if err != nil {
		return err
	}
	health := &apiServerHealth{rest: dc.RESTClient(), interval: a.opts.HealthCheckInterval, certGrace: 6 * a.opts.HealthCheckInterval}
	if err := a.mgr.Add(health); err != nil {
		return err
	}
	if err := a.mgr.AddHealthzCheck("apiserver-certificate", health.LiveCheck); err != nil {
		return err
	}
	return a.mgr.AddReadyzCheck("apiserver", health.ReadyCheck)
}

// setupWebhooks registers the webhook configurations and the certificate
// rotator; the webhook server starts once its certificate is on disk.
func (a *Agent) setupWebhooks() error {
	dnsName := fmt.Sprintf("%s.%s.svc", a.opts.ServiceName, a.opts.AgentNamespace)
	if a.opts.Local {
		dnsName = "localhost"
	}
	cr := &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: a.opts.AgentNamespace, Name: CertSecretName},
		CertDir:        a.opts.CertDir,
		CAName:         "kubectl-topology-ca",
		CAOrganization: "kubectl-topology",
		DNSName:        dnsName,
		IsReady:        a.certs,
		Webhooks: []rotator.WebhookInfo{
			{Name: topologywebhook.MutatingConfigurationName, Type: rotator.Mutating},
			{Name: topologywebhook.ValidatingConfigurationName, Type: rotator.Validating},
		},
		FieldOwner:             topologycontroller.FieldManager,
		RequireLeaderElection:  false,
		RestartOnSecretRefresh: false,
	}
	if a.opts.SkipNameValidation {
		cr.ControllerName = fmt.Sprintf("cert-rotator-%d", rotatorInstances.Add(1))
	}
	if err := rotator.AddRotator(rotatorManager{a.mgr}, cr); err != nil {
		return fmt.Errorf("adding the certificate rotator: %w", err)
	}
	if err := a.mgr.Add(everyReplica(a.syncCertFiles)); err != nil {
		return err
	}
	if err := a.mgr.AddReadyzCheck("webhook-registrations", webhooksRegistered(a.mgr.GetCache())); err != nil {
		return err
	}
	return a.mgr.AddReadyzCheck("webhook-server", func(req *http.Request) error {
		if !a.ready.Load() {
			return errors.New("webhook certificate not ready")
		}
		return a.webhook.StartedChecker()(req)
	})
}

// Run installs the webhook configurations and runs the manager until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	if !a.opts.Webhooks {
		// Another agent admits for this shard; this one only reconciles,
		// with its Leases in its own namespace.
		if a.opts.Local {
			if err := ensureNamespace(ctx, a.direct, a.opts.AgentNamespace); err != nil {
				return err
			}
		}
		return a.mgr.Start(ctx)
	}
	if err := a.registerWebhooks(ctx); err != nil {
		return err
	}
	if a.opts.Local && a.opts.LeaderElect {
		// Out of cluster no Service spreads admission over the replicas: each
		// registers its own URL as it starts, and the one that takes the lead
		// does again, so admission follows a live agent after a failover.
		if err := a.mgr.Add(manager.RunnableFunc(a.registerWebhooks)); err != nil {
			return err
		}
	}
	go func() {
		select {
		case <-a.certs:
		case <-ctx.Done():
			return
		}
		if err := a.mgr.Add(a.webhook); err != nil {
			ctrl.Log.Error(err, "starting the webhook server")
			return
		}
		a.ready.Store(true)
	}()
	return a.mgr.Start(ctx)
}

// registerWebhooks applies the webhook configurations, pointed at the Service
// in-cluster or at 127.0.0.1 by URL when local. The CA bundle already
// injected is kept, so a restart does not open a window without one.
func (a *Agent) registerWebhooks(ctx context.Context) error {
	c := a.direct
	if a.opts.Local {
		// In-cluster the Deployment's namespace exists; locally it may not.
		if err := ensureNamespace(ctx, c, a.opts.AgentNamespace); err != nil {
			return err
		}
	}
	// The rotator fills in an existing Secret; it does not create one.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.opts.AgentNamespace, Name: CertSecretName}}
	err := c.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{})
	if apierrors.IsNotFound(err) {
		err = c.Create(ctx, secret)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Secret %s/%s for the webhook certificate: %w", a.opts.AgentNamespace, CertSecretName, err)
	}
	clientConfig := func(path string) admissionregistrationv1.WebhookClientConfig {
		if a.opts.Local {
			url := "https://" + net.JoinHostPort("localhost", strconv.Itoa(a.opts.WebhookPort)) + path
			return admissionregistrationv1.WebhookClientConfig{URL: &url}
		}
		port := int32(443)
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: a.opts.AgentNamespace, Name: a.opts.ServiceName, Path: &path, Port: &port}}
	}
	mutating, validating := topologywebhook.Configurations(clientConfig)
	if !a.opts.Local {
		role := &rbacv1.ClusterRole{}
		switch err := c.Get(ctx, client.ObjectKey{Name: components.ManagerRole(a.opts.AgentNamespace)}, role); {
		case apierrors.IsNotFound(err):
			// Being removed: registering now would leave webhooks nobody serves.
			ctrl.LoggerFrom(ctx).Info("not registering webhooks: the agent's ClusterRole is gone, so it is being removed", "clusterRole", components.ManagerRole(a.opts.AgentNamespace))
			return nil
		case err != nil:
			return fmt.Errorf("reading the agent's ClusterRole %s, the owner of its webhook configurations: %w", components.ManagerRole(a.opts.AgentNamespace), err)
		}
		owner := []metav1.OwnerReference{{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: role.Name, UID: role.UID}}
		mutating.OwnerReferences, validating.OwnerReferences = owner, owner
	}
	for _, obj := range []client.Object{mutating, validating} {
		if err := applyKeepingCABundle(ctx, c, obj, a.opts.AgentNamespace); err != nil {
			return err
		}
	}
	return nil
}

// ensureNamespace makes the agent's namespace when it runs out of cluster.
// A namespace still being deleted (an uninstall returns before the namespace
// controller is done) is waited out and made again: taken as existing, it
// would vanish under the agent with its certificate Secret and heartbeat.
func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	err := components.EnsureNamespace(ctx, c, name, 2*time.Minute)
	if apierrors.IsForbidden(err) {
		return nil // running with the agent's own role, which installed the namespace
	}
	if err != nil {
		return fmt.Errorf("making the agent's namespace: %w", err)
	}
	return nil
}

// applyKeepingCABundle creates or restores a webhook configuration. The CA
// bundle the rotator injected is kept, so a restart does not open a window
// without one; anything else that differs from what the agent wants (a
// webhook removed, its failure policy relaxed) is put back.
func applyKeepingCABundle(ctx context.Context, c client.Client, obj client.Object, agentNamespace string) error {
	hash, err := selfinstall.Hash(obj)
	if err != nil {
		return err
	}
	want := map[string]string{selfinstall.HashAnnotation: hash, components.AgentVersionAnnotation: version.Get(), components.AgentNamespaceAnnotation: agentNamespace}
	obj.SetAnnotations(want)
	existing := obj.DeepCopyObject().(client.Object)
	switch err := c.Get(ctx, client.ObjectKeyFromObject(obj), existing); {
	case apierrors.IsNotFound(err):
		return c.Create(ctx, obj)
	case err != nil:
		return fmt.Errorf("reading %s: %w", obj.GetName(), err)
	}
	same := false
	switch o := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		e := existing.(*admissionregistrationv1.MutatingWebhookConfiguration)
		for i := range o.Webhooks {
			if i < len(e.Webhooks) && e.Webhooks[i].Name == o.Webhooks[i].Name {
				o.Webhooks[i].ClientConfig.CABundle = e.Webhooks[i].ClientConfig.CABundle
			}
		}
		same = equality.Semantic.DeepEqual(o.Webhooks, e.Webhooks)
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		e := existing.(*admissionregistrationv1.ValidatingWebhookConfiguration)
		for i := range o.Webhooks {
			if i < len(e.Webhooks) && e.Webhooks[i].Name == o.Webhooks[i].Name {
				o.Webhooks[i].ClientConfig.CABundle = e.Webhooks[i].ClientConfig.CABundle
			}
		}
		same = equality.Semantic.DeepEqual(o.Webhooks, e.Webhooks)
	}
	has := existing.GetAnnotations()
	if same && has[selfinstall.HashAnnotation] == hash && has[components.AgentVersionAnnotation] == version.Get() && has[components.AgentNamespaceAnnotation] == agentNamespace {
		return nil // registered as wanted already: a restart writes nothing
	}
	obj.SetResourceVersion(existing.GetResourceVersion())
	if err := c.Update(ctx, obj); err != nil {
		return fmt.Errorf("registering webhook configuration %s: %w", obj.GetName(), err)
	}
	return nil
}

// everyReplica is a runnable that runs on every replica, leader or not:
// serving webhooks is not leader work. A plain RunnableFunc would wait for
// the lease, so a second replica would never write its certificate and never
// become ready.
type everyReplica func(context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (everyReplica) NeedLeaderElection() bool { return false }

// syncCertFiles writes the serving certificate from the rotator's Secret into
// CertDir and keeps it current. The agent does this itself rather than rely on
// a kubelet volume, so it works the same in a Pod and on a laptop.
func (a *Agent) syncCertFiles(ctx context.Context) error {
	if err := os.MkdirAll(a.opts.CertDir, 0o700); err != nil {
		return fmt.Errorf("creating certificate directory %s: %w", a.opts.CertDir, err)
	}
	// Every second until the first certificate is on disk, then once a minute:
	// the rotator renews certificates long before they expire.
	var last string
	interval := time.Second
	for {
		s := &corev1.Secret{}
		if err := a.direct.Get(ctx, types.NamespacedName{Namespace: a.opts.AgentNamespace, Name: CertSecretName}, s); err == nil {
			crt, key := s.Data["tls.crt"], s.Data["tls.key"]
			if len(crt) > 0 && len(key) > 0 && string(crt) != last {
				if err := writeAtomically(a.opts.CertDir+"/tls.key", key); err != nil {
					return err
				}
				if err := writeAtomically(a.opts.CertDir+"/tls.crt", crt); err != nil {
					return err
				}
				last = string(crt)
				interval = time.Minute
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

func writeAtomically(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}
