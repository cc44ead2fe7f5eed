package extension

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Registry is what the agent knows of its TopologyExtensions: where each
// server is and the handlers its discovery returned. The TopologyExtension
// reconciler keeps it current; external patches look handlers up in it.
type Registry struct {
	mu         sync.RWMutex
	extensions map[string]*server
	ready      bool
	// Proxy is the HTTP proxy extension calls go through; nil calls them
	// directly, whatever HTTPS_PROXY says: an agent does not send cluster
	// data to a proxy it was not told to use.
	Proxy *url.URL
}

// server is one registered extension server.
type server struct {
	config   v1alpha2.ClientConfig
	handlers []v1alpha2.ExtensionHandler
	http     *http.Client
	// namespaces selects the namespaces whose clusters the lifecycle hooks
	// are called for; nil selects all.
	namespaces labels.Selector
	// settings go with every lifecycle hook call.
	settings map[string]string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{extensions: map[string]*server{}}
}

// Set registers (or replaces) the extension name, as spec describes it,
// with its handlers.
func (r *Registry) Set(name string, spec v1alpha2.TopologyExtensionSpec, handlers []v1alpha2.ExtensionHandler) error {
	c, err := r.httpFor(name, spec.ClientConfig)
	if err != nil {
		return fmt.Errorf("TopologyExtension %s: %w", name, err)
	}
	var namespaces labels.Selector
	if spec.NamespaceSelector != nil {
		if namespaces, err = metav1.LabelSelectorAsSelector(spec.NamespaceSelector); err != nil {
			return fmt.Errorf("TopologyExtension %s: spec.namespaceSelector: %w", name, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.extensions[name]; ok && old.http != c {
		old.http.CloseIdleConnections()
	}
	r.extensions[name] = &server{config: spec.ClientConfig, handlers: handlers, http: c, namespaces: namespaces, settings: spec.Settings}
	return nil
}

// Handlers are the handlers registered for the extension name, if any.
func (r *Registry) Handlers(name string) ([]v1alpha2.ExtensionHandler, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.extensions[name]
	if !ok {
		return nil, false
	}
	return slices.Clone(s.handlers), true
}

// MarkReady says every extension that existed when the agent started has
// been discovered, or registered with the handlers its status last named:
// from then on, no handler registered for a hook means none serves it.
func (r *Registry) MarkReady() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ready = true
}

// Ready reports whether MarkReady was called.
func (r *Registry) Ready() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.ready
}

// httpFor is the registered server's HTTP client when its configuration is
// unchanged, so that re-discovery every few minutes reuses its connections,
// or a new one.
func (r *Registry) httpFor(name string, config v1alpha2.ClientConfig) (*http.Client, error) {
	r.mu.RLock()
	old, ok := r.extensions[name]
	r.mu.RUnlock()
	if ok && equality.Semantic.DeepEqual(old.config, config) {
		return old.http, nil
	}
	return r.httpClient(config)
}

// Remove forgets the extension name.
func (r *Registry) Remove(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.extensions[name]; ok {
		old.http.CloseIdleConnections()
	}
	delete(r.extensions, name)
}

// FullName is how classes and status name a handler: HANDLER.EXTENSION.
func FullName(handler, extension string) string { return handler + "." + extension }

// SplitName parses a full handler name; ok is false when it is not
// HANDLER.EXTENSION.
func SplitName(fullName string) (handler, extension string, ok bool) {
	handler, extension, ok = strings.Cut(fullName, ".")
	return handler, extension, ok && handler != "" && extension != "" && !strings.Contains(extension, ".")
}

// lookup finds a handler by its full name, HANDLER.EXTENSION, as classes
// name it, and checks that it serves hook.
func (r *Registry) lookup(fullName, hook string) (*server, v1alpha2.ExtensionHandler, error) {
	handlerName, extName, ok := SplitName(fullName)
	if !ok {
		return nil, v1alpha2.ExtensionHandler{}, fmt.Errorf("handler %q is not named HANDLER.EXTENSION", fullName)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.extensions[extName]
	if !ok {
		return nil, v1alpha2.ExtensionHandler{}, fmt.Errorf("handler %q: no TopologyExtension %s is registered; create it, or check its status for why discovery failed", fullName, extName)
	}
	for _, h := range s.handlers {
		if h.Name == handlerName {
			if h.RequestHook.Hook != hook {
				return nil, v1alpha2.ExtensionHandler{}, fmt.Errorf("handler %q serves %s, not %s", fullName, h.RequestHook.Hook, hook)
			}
			return s, h, nil
		}
	}
	return nil, v1alpha2.ExtensionHandler{}, fmt.Errorf("handler %q: TopologyExtension %s has no handler %s (its discovery found %d)", fullName, extName, handlerName, len(s.handlers))
}

// FromStatus registers what a TopologyExtension's status says the agent
// discovered, without calling the server: for the plugin, which reads the
// cluster's extensions rather than discovering them again.
func (r *Registry) FromStatus(ext *v1alpha2.TopologyExtension) error {
	handlers := make([]v1alpha2.ExtensionHandler, 0, len(ext.Status.Handlers))
	for _, h := range ext.Status.Handlers {
		h.Name, _, _ = SplitName(h.Name)
		handlers = append(handlers, h)
	}
	return r.Set(ext.Name, ext.Spec, handlers)
}

// httpClient trusts the extension's CA bundle, or the system's roots when it
// has none. It follows no redirect: an extension answers where it was
// registered, or the call fails.
func (r *Registry) httpClient(config v1alpha2.ClientConfig) (*http.Client, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(config.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(config.CABundle) {
			return nil, errors.New("clientConfig.caBundle holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	transport := &http.Transport{TLSClientConfig: tlsConfig, IdleConnTimeout: 90 * time.Second}
	if r.Proxy != nil {
		transport.Proxy = http.ProxyURL(r.Proxy)
	}
	return &http.Client{
		Transport: transport,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			return fmt.Errorf("the extension redirected to %s; redirects are not followed: register the extension at its final URL", req.URL.Redacted())
		},
	}, nil
}

// hookURL is where a hook is served: the server's URL or Service, then
// /<group>/<version>/<hook>[/<handler>], lower case, as upstream builds it.
func hookURL(config v1alpha2.ClientConfig, hook, handler string) (*url.URL, error) {
	var u *url.URL
	switch {
	case config.Service != nil:
		svc := config.Service
		host := svc.Name + "." + svc.Namespace + ".svc"
		if svc.Port != nil {
			host = net.JoinHostPort(host, strconv.Itoa(int(*svc.Port)))
		}
		u = &url.URL{Scheme: "https", Host: host}
		if svc.Path != nil {
			u.Path = *svc.Path
		}
	case config.URL != nil:
		var err error
		if u, err = url.Parse(*config.URL); err != nil {
			return nil, fmt.Errorf("clientConfig.url: %w", err)
		}
		if u.Scheme != "https" {
			return nil, fmt.Errorf("clientConfig.url %q: extensions are called over https", *config.URL)
		}
	default:
		return nil, errors.New("clientConfig sets neither url nor service")
	}
	u.Path = path.Join(u.Path, runtimecatalog.GVHToPath(gvh(hook), handler))
	return u, nil
}

// Client calls extension servers.
type Client struct {
	// Registry holds the servers and their handlers.
	Registry *Registry
	// BestEffort turns a handler that cannot be reached into a skipped call
	// instead of an error: previews outside the cluster (plan NAME, edit)
	// often cannot reach a Service. A handler's Failure answer still fails.
	BestEffort bool
	// MaxInFlight bounds the calls to one extension that may be under way at
	// once; 0 is no bound. The agent sets it below its worker count, so that
	// one slow extension cannot take every worker and stall Topologies that
	// do not use it: a call over the bound fails at once and is retried.
	MaxInFlight int
	// OnHealthChange, when set, is told the name of an extension whose calls
	// started or stopped failing.
	OnHealthChange func(extension string)

	mu       sync.Mutex
	skipped  []Skip
	inFlight map[string]int
	failing  map[string]Failure
}

// Failure is an extension's calls failing since a time, with the last error.
type Failure struct {
	Since time.Time
	Err   error
}

// ErrBusy is the error of a call not made because MaxInFlight calls to the
// same extension are under way.
var ErrBusy = errors.New("too many calls to this extension are under way; the call is retried later")

// Failing reports whether calls to the extension are failing, since when and why.
func (c *Client) Failing(extension string) (Failure, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.failing[extension]
	return f, ok
}

// acquire takes one of the extension's call slots; false when none is free.
func (c *Client) acquire(extension string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inFlight == nil {
		c.inFlight = map[string]int{}
	}
	if c.MaxInFlight > 0 && c.inFlight[extension] >= c.MaxInFlight {
		return false
	}
	c.inFlight[extension]++
	return true
}

// release gives the slot back and records whether the call got an answer.
func (c *Client) release(extension string, unreachable error) {
	c.mu.Lock()
	c.inFlight[extension]--
	if c.failing == nil {
		c.failing = map[string]Failure{}
	}
	_, was := c.failing[extension]
	switch {
	case unreachable != nil && !was:
		c.failing[extension] = Failure{Since: time.Now(), Err: unreachable}
	case unreachable != nil:
		f := c.failing[extension]
		f.Err = unreachable
		c.failing[extension] = f
	default:
		delete(c.failing, extension)
	}
	notify := c.OnHealthChange
	c.mu.Unlock()
	if changed := was != (unreachable != nil); changed && notify != nil {
		notify(extension)
	}
}

// Skip is a handler a best-effort client did not call, and why.
type Skip struct {
	Handler string
	Reason  error
}

// String is the warning a preview shows for it.
func (s Skip) String() string {
	return fmt.Sprintf("external patch handler %s was not run from here, so the preview lacks its changes (the agent runs it in the cluster): %v", s.Handler, s.Reason)
}

// Skipped lists, since the last call of Skipped, the handlers BestEffort
// skipped and why; each is named once.
func (c *Client) Skipped() []Skip {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.skipped
	c.skipped = nil
	return out
}

func (c *Client) skip(handler string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.skipped {
		if s.Handler == handler && s.Reason.Error() == err.Error() {
			return
		}
	}
	c.skipped = append(c.skipped, Skip{Handler: handler, Reason: err})
}

// Discover asks the server of an extension for its handlers.
func (c *Client) Discover(ctx context.Context, name string, config v1alpha2.ClientConfig) ([]v1alpha2.ExtensionHandler, error) {
	hc, err := c.Registry.httpFor(name, config)
	if err != nil {
		return nil, err
	}
	u, err := hookURL(config, HookDiscovery, "")
	if err != nil {
		return nil, err
	}
	resp := &runtimehooksv1.DiscoveryResponse{}
	if err := post(ctx, hc, u, DefaultTimeoutSeconds*time.Second, &runtimehooksv1.DiscoveryRequest{}, resp); err != nil {
		return nil, fmt.Errorf("discovery of TopologyExtension %s: %w", name, err)
	}
	seen := map[string]bool{}
	handlers := make([]v1alpha2.ExtensionHandler, 0, len(resp.Handlers))
	for _, h := range resp.Handlers {
		switch {
		case h.TimeoutSeconds != nil && (*h.TimeoutSeconds < 0 || *h.TimeoutSeconds > MaxTimeoutSeconds):
			return nil, fmt.Errorf("discovery of TopologyExtension %s: handler %q asks for timeoutSeconds %d; it must be between 0 and %d", name, h.Name, *h.TimeoutSeconds, MaxTimeoutSeconds)
		case h.Name == "" || strings.Contains(h.Name, "."):
			return nil, fmt.Errorf("discovery of TopologyExtension %s: handler name %q must be set and contain no dot", name, h.Name)
		case seen[h.Name]:
			return nil, fmt.Errorf("discovery of TopologyExtension %s: handler %q is listed twice", name, h.Name)
		case h.RequestHook.APIVersion != APIVersion:
			return nil, fmt.Errorf("discovery of TopologyExtension %s: handler %q serves %s, this agent speaks %s", name, h.Name, h.RequestHook.APIVersion, APIVersion)
		}
		seen[h.Name] = true
		handlers = append(handlers, handlerOf(h))
	}
	return handlers, nil
}

// handlerOf is a discovered handler as TopologyExtension status records it.
func handlerOf(h runtimehooksv1.ExtensionHandler) v1alpha2.ExtensionHandler {
	out := v1alpha2.ExtensionHandler{
		Name:           h.Name,
		RequestHook:    v1alpha2.GroupVersionHook{APIVersion: h.RequestHook.APIVersion, Hook: h.RequestHook.Hook},
		TimeoutSeconds: h.TimeoutSeconds,
	}
	if h.FailurePolicy != nil {
		policy := string(*h.FailurePolicy)
		out.FailurePolicy = &policy
	}
	return out
}

// Call sends req to the handler fullName (HANDLER.EXTENSION) of hook and
// decodes its answer into resp. A Failure status is an error with the
// extension's message; so is a handler that cannot be reached, unless its
// failure policy is Ignore, in which case resp is left as it was.
func (c *Client) Call(ctx context.Context, hook, fullName string, req runtimehooksv1.RequestObject, resp runtimehooksv1.ResponseObject) error {
	s, h, err := c.Registry.lookup(fullName, hook)
	if err != nil {
		if c.BestEffort {
			c.skip(fullName, err)
			return nil
		}
		return err
	}
	u, err := hookURL(s.config, hook, h.Name)
	if err != nil {
		return err
	}
	_, extName, _ := SplitName(fullName)
	if !c.acquire(extName) {
		return fmt.Errorf("%s handler %s: %w", hook, fullName, ErrBusy)
	}
	err = post(ctx, s.http, u, handlerTimeout(h), req, resp)
	var unreachable *unreachableError
	if errors.As(err, &unreachable) {
		c.release(extName, unreachable)
	} else {
		c.release(extName, nil)
	}
	if errors.As(err, &unreachable) && h.FailurePolicy != nil && *h.FailurePolicy == string(runtimehooksv1.FailurePolicyIgnore) {
		return nil
	}
	if errors.As(err, &unreachable) && c.BestEffort {
		c.skip(fullName, err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s handler %s: %w", hook, fullName, err)
	}
	return nil
}

// unreachableError is a call that got no answer: the failure policy applies to it.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

// handlerTimeout is the handler's own timeout, DefaultTimeoutSeconds when
// it gives none, and never more than MaxTimeoutSeconds, as upstream bounds it.
func handlerTimeout(h v1alpha2.ExtensionHandler) time.Duration {
	seconds := int32(DefaultTimeoutSeconds)
	if h.TimeoutSeconds != nil && *h.TimeoutSeconds > 0 {
		seconds = min(*h.TimeoutSeconds, MaxTimeoutSeconds)
	}
	return time.Duration(seconds) * time.Second
}

// post sends req, its kind set from upstream's catalog, and decodes the
// answer into resp; a Failure status is an error with the extension's message.
func post(ctx context.Context, hc *http.Client, u *url.URL, timeout time.Duration, req runtime.Object, resp runtimehooksv1.ResponseObject) error {
	if err := withKind(req); err != nil {
		return err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(r)
	if err != nil {
		return &unreachableError{err}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, MaxResponseBytes+1))
	if err != nil {
		return &unreachableError{err}
	}
	if len(raw) > MaxResponseBytes {
		return &unreachableError{fmt.Errorf("%s answered with more than %d bytes; an answer that large is not read", u, MaxResponseBytes)}
	}
	if res.StatusCode != http.StatusOK {
		return &unreachableError{fmt.Errorf("%s answered %s: %s", u, res.Status, truncate(raw))}
	}
	if err := json.Unmarshal(raw, resp); err != nil {
		return fmt.Errorf("%s answered something that is not a response: %w", u, err)
	}
	if resp.GetStatus() == runtimehooksv1.ResponseStatusFailure {
		return fmt.Errorf("the extension reported a failure: %s", resp.GetMessage())
	}
	return nil
}

func truncate(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Use is an extension one of a class's external patches names.
type Use struct {
	// Extension is the extension's name (the TopologyExtension's).
	Extension string
	// PatchIndex and Patch are the first external patch naming it.
	PatchIndex int
	Patch      string
}

// UsedBy lists the extensions a class's external patches name, each once,
// in patch order. A malformed handler name is left out: the class's
// validation reports it.
func UsedBy(c *v1alpha2.TopologyClass) []Use {
	var out []Use
	seen := map[string]bool{}
	for i, p := range c.Spec.Patches {
		if p.External == nil {
			continue
		}
		for _, h := range []*string{p.External.GeneratePatchesExtension, p.External.ValidateTopologyExtension, p.External.DiscoverVariablesExtension} {
			if h == nil {
				continue
			}
			if _, ext, ok := SplitName(*h); ok && !seen[ext] {
				seen[ext] = true
				out = append(out, Use{Extension: ext, PatchIndex: i, Patch: p.Name})
			}
		}
	}
	return out
}
