package parity

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
)

// hookCall is one lifecycle hook call as it crossed the recorder: who
// asked (by the request's Cluster), with which versions and steps, and
// whether the answer held.
type hookCall struct {
	at                    time.Time
	namespace, cluster    string
	hook                  string
	from, to, version     string
	controlPlane, workers []string
	retryAfterSeconds     int32
}

// key names the call as upstream's test extension does: the hook and its
// versions.
func (c hookCall) key() string {
	parts := []string{c.hook}
	for _, v := range []string{c.from, c.to, c.version} {
		if v != "" {
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, "-")
}

// request is what of the call must be the same on both sides.
func (c hookCall) request() string {
	return fmt.Sprintf("cluster %s, from %q to %q, version %q, control plane steps %v, workers steps %v", c.cluster, c.from, c.to, c.version, c.controlPlane, c.workers)
}

// recorder sits between both sides' topology controllers and upstream's
// test extension: it forwards every call and keeps, in arrival order, each
// lifecycle hook call with its answer.
type recorder struct {
	*httptest.Server
	target *url.URL
	client *http.Client

	mu    sync.Mutex
	calls []hookCall
}

// newRecorder starts a recorder in front of the extension at target, whose
// certificate caBundle signs. Its own certificate is its CA (CABundle).
func newRecorder(target string, caBundle []byte) (*recorder, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) {
		return nil, fmt.Errorf("the test extension's CA bundle holds no certificate")
	}
	r := &recorder{target: u, client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(r.forward))
	return r, nil
}

// CABundle is the PEM certificate both sides must trust to call the recorder.
func (r *recorder) CABundle() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate().Raw})
}

func (r *recorder) forward(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out := *r.target
	out.Path = req.URL.Path
	fwd, err := http.NewRequestWithContext(req.Context(), req.Method, out.String(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	fwd.Header = req.Header.Clone()
	resp, err := r.client.Do(fwd)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if c, ok := parseHookCall(req.URL.Path, body, answer); ok {
		c.at = time.Now()
		r.mu.Lock()
		r.calls = append(r.calls, c)
		r.mu.Unlock()
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// parseHookCall reads a lifecycle hook call from its path
// (/hooks.runtime.cluster.x-k8s.io/v1alpha1/<hook>/<handler>), request and
// answer; ok is false for anything else (discovery, patches).
func parseHookCall(urlPath string, request, answer []byte) (hookCall, bool) {
	segments := strings.Split(strings.Trim(path.Clean(urlPath), "/"), "/")
	if len(segments) < 3 {
		return hookCall{}, false
	}
	var hook string
	for _, h := range lifecycle.Hooks {
		if strings.EqualFold(h, segments[2]) {
			hook = h
		}
	}
	if hook == "" {
		return hookCall{}, false
	}
	var req struct {
		Cluster struct {
			Metadata struct{ Namespace, Name string } `json:"metadata"`
		} `json:"cluster"`
		From                 string `json:"fromKubernetesVersion"`
		To                   string `json:"toKubernetesVersion"`
		Version              string `json:"kubernetesVersion"`
		ControlPlaneUpgrades []struct{ Version string }
		WorkersUpgrades      []struct{ Version string }
	}
	var resp struct {
		RetryAfterSeconds int32 `json:"retryAfterSeconds"`
	}
	if json.Unmarshal(request, &req) != nil || json.Unmarshal(answer, &resp) != nil {
		return hookCall{}, false
	}
	c := hookCall{namespace: req.Cluster.Metadata.Namespace, cluster: req.Cluster.Metadata.Name, hook: hook,
		from: req.From, to: req.To, version: req.Version, retryAfterSeconds: resp.RetryAfterSeconds}
	for _, s := range req.ControlPlaneUpgrades {
		c.controlPlane = append(c.controlPlane, s.Version)
	}
	for _, s := range req.WorkersUpgrades {
		c.workers = append(c.workers, s.Version)
	}
	return c, true
}

// of is every call recorded for namespace, in arrival order.
func (r *recorder) of(namespace string) []hookCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hookCall
	for _, c := range r.calls {
		if c.namespace == namespace {
			out = append(out, c)
		}
	}
	return out
}

// holding is the first call key of namespace whose latest answer held and
// that is not in released, or "".
func (r *recorder) holding(namespace string, released map[string]bool) string {
	latest := map[string]hookCall{}
	var order []string
	for _, c := range r.of(namespace) {
		if _, seen := latest[c.key()]; !seen {
			order = append(order, c.key())
		}
		latest[c.key()] = c
	}
	for _, k := range order {
		if latest[k].retryAfterSeconds > 0 && !released[k] {
			return k
		}
	}
	return ""
}

// sequence is the distinct call keys of namespace in the order each was
// first made, and the first request of each.
func (r *recorder) sequence(namespace string) ([]string, map[string]hookCall) {
	first := map[string]hookCall{}
	var order []string
	for _, c := range r.of(namespace) {
		if _, ok := first[c.key()]; !ok {
			first[c.key()] = c
			order = append(order, c.key())
		}
	}
	return order, first
}

// compareCalls says where the two sides' calls differ: the order of the
// distinct calls, and each call's request.
func compareCalls(up, ours []string, upFirst, ourFirst map[string]hookCall) []string {
	var problems []string
	if !slices.Equal(up, ours) {
		problems = append(problems, fmt.Sprintf("hook calls differ:\n  upstream: %s\n  ours:     %s", strings.Join(up, " → "), strings.Join(ours, " → ")))
	}
	for _, k := range up {
		o, ok := ourFirst[k]
		if ok && o.request() != upFirst[k].request() {
			problems = append(problems, fmt.Sprintf("%s asked differently:\n  upstream: %s\n  ours:     %s", k, upFirst[k].request(), o.request()))
		}
	}
	return problems
}
