package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/process"
	"github.com/kubectl-topology/kubectl-topology/internal/selfinstall"
)

// ProvidersVersion is the Cluster API release whose managers the local
// control plane runs, built by hack/capi (make capi-bins).
const ProvidersVersion = "v1.14.2"

// Provider is one Cluster API manager the local control plane runs as a
// process, with its CRDs, conversion and admission webhooks served on
// 127.0.0.1 with a certificate of the local CA.
type Provider struct {
	// Name is its binary in BinDir; it also names its log and pid file.
	Name string
	// Label is the clusterctl provider name its CRDs are labelled with.
	Label string
	// Module and Path locate its config/ (CRDs, webhooks) in the module cache.
	Module, Path string
	// Args are extra flags, e.g. feature gates.
	Args []string
	// Env are extra environment variables.
	Env []string
	// WebhookPort, HealthPort and DiagnosticsPort are its loopback ports; 0 picks a free one.
	WebhookPort, HealthPort, DiagnosticsPort int
	// FixedPorts are ports it listens on that no flag moves.
	FixedPorts []int
	// config is its config/ directory, found once by Start.
	config string
}

// inMemoryMuxPort is where the Docker provider's in-memory backend listens
// for the workload clusters it fakes, on every interface; v1.14.2 has no
// flag for it, so one such provider runs per machine.
const inMemoryMuxPort = 19000

// fixedPortError says a provider's unmovable port is taken, most likely by
// another local control plane with providers.
func fixedPortError(p Provider, port int) error {
	return fmt.Errorf("port %d, which %s always listens on (Cluster API %s has no flag to move it), is in use: another local control plane with Cluster API's providers is probably running (`make local-down` or `make demo-down` stops it; a test run's is under /tmp/kubectl-topology-local-*)", port, p.Name, ProvidersVersion)
}

// CoreProviderName is the binary and name of Cluster API's core manager.
const CoreProviderName = "capi-core"

// ClusterAPIProviders are the managers of Cluster API ProvidersVersion: core,
// kubeadm bootstrap and control plane, and the Docker provider, whose
// in-memory backend fakes machines and serves a fake API server for each
// workload cluster on 127.0.0.1.
//
// Without topologyGate they run stock, as `clusterctl init` installs them:
// no feature gate changed, so the agent is the only topology controller and
// the providers refuse the template kinds only a ClusterClass uses (a class
// holds those inline). topologyGate turns ClusterTopology on in every one of
// them, and RuntimeSDK in core, for the upstream side of a comparison:
// upstream's own topology controller, the lifecycle hooks it calls, and the
// webhooks that then store those template kinds.
func ClusterAPIProviders(topologyGate bool) []Provider {
	var gates, coreGates []string
	if topologyGate {
		gates = []string{FeatureGatesFlag + "=ClusterTopology=true"}
		// RuntimeSDK too in core, whose topology controller then calls the
		// lifecycle hooks, for the hooks' comparison.
		coreGates = []string{FeatureGatesFlag + "=ClusterTopology=true,RuntimeSDK=true"}
	}
	return []Provider{
		{Name: CoreProviderName, Label: "cluster-api", Module: "sigs.k8s.io/cluster-api", Path: "core", Args: coreGates},
		{Name: "capi-kubeadm-bootstrap", Label: "bootstrap-kubeadm", Module: "sigs.k8s.io/cluster-api", Path: "bootstrap/kubeadm", Args: gates},
		{Name: "capi-kubeadm-control-plane", Label: "control-plane-kubeadm", Module: "sigs.k8s.io/cluster-api", Path: "controlplane/kubeadm", Args: gates},
		{Name: "capi-docker", Label: "infrastructure-docker", Module: "sigs.k8s.io/cluster-api/test", Path: "infrastructure/docker",
			Args: gates, Env: []string{"POD_IP=127.0.0.1"}, FixedPorts: []int{inMemoryMuxPort}},
	}
}

// FeatureGatesFlag is the managers' flag for feature gates.
const FeatureGatesFlag = "--feature-gates"

// Stock tells whether providers run as `clusterctl init` installs them: no
// feature gate flag on any; otherwise it names the first that has one.
func Stock(providers []Provider) (bool, string) {
	for _, p := range providers {
		for _, a := range p.Args {
			if strings.HasPrefix(a, FeatureGatesFlag) {
				return false, p.Name + " " + a
			}
		}
	}
	return true, ""
}

// FetchProviderModules downloads into the module cache, if needed, the
// modules whose config/ the providers' CRDs and webhooks are read from:
// for a suite that then runs where there is no network.
func FetchProviderModules(ctx context.Context) error {
	fetched := map[string]bool{}
	for _, p := range ClusterAPIProviders(false) { // gates change flags, not modules
		if fetched[p.Module] {
			continue
		}
		fetched[p.Module] = true
		if _, err := moduleDir(ctx, p.Module+"@"+ProvidersVersion); err != nil {
			return err
		}
	}
	return nil
}

// providerConfig is where a provider's config/ is in the module cache.
func providerConfig(ctx context.Context, p Provider) (string, error) {
	dir, err := moduleDir(ctx, p.Module+"@"+ProvidersVersion)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, p.Path, "config"), nil
}

// providerCRDs reads a provider's CRDs with the labels its kustomization
// adds (the contract labels) and the provider label, served through its
// conversion webhook on 127.0.0.1 when they have more than one version.
func providerCRDs(config string, p Provider, caBundle []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	crds, err := readCRDFiles(filepath.Join(config, "crd", "bases"))
	if err != nil {
		return nil, err
	}
	labels, err := kustomizeLabels(filepath.Join(config, "crd", "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/convert", p.WebhookPort)
	for _, crd := range crds {
		delete(crd.Annotations, sourceDirAnnotation)
		if crd.Labels == nil {
			crd.Labels = map[string]string{}
		}
		for k, v := range labels {
			crd.Labels[k] = v
		}
		crd.Labels[ProviderLabel] = p.Label
		crd.Labels[ClusterctlLabel] = ""
		if len(crd.Spec.Versions) > 1 {
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
					ConversionReviewVersions: []string{"v1", "v1beta1"},
				},
			}
		}
	}
	return crds, nil
}

// kustomizeLabels reads the labels a kustomization adds to what it lists
// (labels[].pairs, or the older commonLabels).
func kustomizeLabels(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var k struct {
		Labels       []struct{ Pairs map[string]string } `json:"labels"`
		CommonLabels map[string]string                   `json:"commonLabels"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	out := map[string]string{}
	for k, v := range k.CommonLabels {
		out[k] = v
	}
	for _, l := range k.Labels {
		for k, v := range l.Pairs {
			out[k] = v
		}
	}
	return out, nil
}

// providerWebhooks reads a provider's webhook configurations and points them
// at its webhook server on 127.0.0.1.
func providerWebhooks(config string, p Provider, caBundle []byte) ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	path := filepath.Join(config, "webhook", "manifests.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	clientConfig := func(c *admissionregistrationv1.WebhookClientConfig) {
		route := "/"
		if c.Service != nil && c.Service.Path != nil {
			route = *c.Service.Path
		}
		url := fmt.Sprintf("https://127.0.0.1:%d%s", p.WebhookPort, route)
		c.Service, c.URL, c.CABundle = nil, &url, caBundle
	}
	var mutating []*admissionregistrationv1.MutatingWebhookConfiguration
	var validating []*admissionregistrationv1.ValidatingWebhookConfiguration
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", path, err)
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			m := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, m); err != nil {
				return nil, nil, fmt.Errorf("reading %s: %w", path, err)
			}
			m.Name = p.Name + "-" + m.Name
			for i := range m.Webhooks {
				clientConfig(&m.Webhooks[i].ClientConfig)
			}
			mutating = append(mutating, m)
		case "ValidatingWebhookConfiguration":
			v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := yaml.Unmarshal(doc, v); err != nil {
				return nil, nil, fmt.Errorf("reading %s: %w", path, err)
			}
			v.Name = p.Name + "-" + v.Name
			for i := range v.Webhooks {
				clientConfig(&v.Webhooks[i].ClientConfig)
			}
			validating = append(validating, v)
		}
	}
	return mutating, validating, nil
}

// installProviderCRDs installs every provider's CRDs.
func (c *Cluster) installProviderCRDs(ctx context.Context, caBundle []byte) error {
	var all []*apiextensionsv1.CustomResourceDefinition
	for _, p := range c.opts.Providers {
		crds, err := providerCRDs(p.config, p, caBundle)
		if err != nil {
			return fmt.Errorf("reading the CRDs of %s: %w", p.Name, err)
		}
		all = append(all, crds...)
	}
	if err := selfinstall.ApplyCRDs(ctx, c.Config, all); err != nil {
		return fmt.Errorf("installing the Cluster API %s CRDs: %w", ProvidersVersion, err)
	}
	return nil
}

// startProviders starts every provider's manager and waits until each is
// ready, then registers their admission webhooks.
func (c *Cluster) startProviders(ctx context.Context, pkiDir string, caBundle []byte) error {
	certDir := filepath.Join(c.opts.Dir, "webhook-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	for src, dst := range map[string]string{"apiserver.crt": "tls.crt", "apiserver.key": "tls.key"} {
		data, err := os.ReadFile(filepath.Join(pkiDir, src))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(certDir, dst), data, 0o600); err != nil {
			return err
		}
	}
	for _, p := range c.opts.Providers {
		if err := c.startProvider(ctx, p); err != nil {
			return err
		}
	}
	return c.registerProviderWebhooks(ctx, caBundle)
}

// startProvider starts one manager and waits until it is ready.
func (c *Cluster) startProvider(ctx context.Context, p Provider) error {
	args := append([]string{
		"--webhook-port=" + strconv.Itoa(p.WebhookPort),
		"--webhook-cert-dir=" + filepath.Join(c.opts.Dir, "webhook-certs"),
		"--health-addr=127.0.0.1:" + strconv.Itoa(p.HealthPort),
		"--diagnostics-address=127.0.0.1:" + strconv.Itoa(p.DiagnosticsPort),
		"--insecure-diagnostics",
		"--leader-elect=false",
		"--v=1",
	}, p.Args...)
	proc, err := c.startWithEnv(p.Name, append([]string{"KUBECONFIG=" + c.Kubeconfig}, p.Env...), args...)
	if err != nil {
		return err
	}
	return proc.waitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", p.HealthPort), nil, c.opts.StartTimeout)
}

// Provider is the running manager called name, with the ports it was
// given, e.g. for its metrics at DiagnosticsPort.
func (c *Cluster) Provider(name string) (Provider, bool) {
	for _, p := range c.opts.Providers {
		if p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

// PID is the process id of a component or provider called name.
func (c *Cluster) PID(name string) (int, error) {
	rec, ok := process.ReadPID(filepath.Join(c.opts.Dir, name+".pid"))
	if !ok {
		return 0, fmt.Errorf("%s is not running in %s", name, c.opts.Dir)
	}
	return rec.PID, nil
}

// RestartProvider stops the manager called name and starts it again with
// the same flags and ports, as a rollout of its Deployment would: its
// caches start cold, which is what a resync after a restart measures.
func (c *Cluster) RestartProvider(ctx context.Context, name string) error {
	p, ok := c.Provider(name)
	if !ok {
		return fmt.Errorf("no provider %s runs beside this control plane", name)
	}
	if err := process.Stop(filepath.Join(c.opts.Dir, name+".pid")); err != nil {
		return fmt.Errorf("stopping %s: %w", name, err)
	}
	return c.startProvider(ctx, p)
}

func (c *Cluster) registerProviderWebhooks(ctx context.Context, caBundle []byte) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	api := cs.AdmissionregistrationV1()
	for _, p := range c.opts.Providers {
		mutating, validating, err := providerWebhooks(p.config, p, caBundle)
		if err != nil {
			return err
		}
		for _, m := range mutating {
			if err := createOrReplace(ctx, api.MutatingWebhookConfigurations(), m); err != nil {
				return fmt.Errorf("registering the webhooks of %s: %w", p.Name, err)
			}
		}
		for _, v := range validating {
			if err := createOrReplace(ctx, api.ValidatingWebhookConfigurations(), v); err != nil {
				return fmt.Errorf("registering the webhooks of %s: %w", p.Name, err)
			}
		}
	}
	return nil
}

// objectAPI is what createOrReplace needs of a typed client.
type objectAPI[T metav1.Object] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Get(context.Context, string, metav1.GetOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
}

// createOrReplace creates obj, or replaces the object of its name: a restart
// of the local control plane registers webhooks that may already be there.
func createOrReplace[T metav1.Object](ctx context.Context, api objectAPI[T], obj T) error {
	_, err := api.Create(ctx, obj, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing, err := api.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	obj.SetResourceVersion(existing.GetResourceVersion())
	_, err = api.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}

// processNames are the pid files of dir, providers first: the order they stop in.
func processNames(dir string) []string {
	pids, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
	core := []string{ControllerManager, APIServer, Etcd}
	var names []string
	for _, p := range pids {
		name := strings.TrimSuffix(filepath.Base(p), ".pid")
		if !slices.Contains(core, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return append(names, core...)
}

// LogDir is where every component's log is: NAME.log.
func (c *Cluster) LogDir() string { return filepath.Join(c.opts.Dir, "logs") }

// Binary is the path of a binary among the control plane's, e.g. kubectl.
func (c *Cluster) Binary(name string) string { return filepath.Join(c.opts.BinDir, name) }
