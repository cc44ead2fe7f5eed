package agent

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topologywebhook "github.com/kubectl-topology/kubectl-topology/internal/webhook"
)

// apiServerHealth checks, on every replica, that the API server answers, so
// that readiness says when the agent cannot do its work (an outage, or a CA
// it no longer trusts) instead of staying green while every request fails.
type apiServerHealth struct {
	rest     rest.Interface
	interval time.Duration
	// certGrace is how long the API server's certificate may stay untrusted
	// before liveness fails too: restarting is what picks up a rotated CA.
	certGrace time.Duration

	mu sync.Mutex
	// failingSince is when the current run of failed checks began; zero when
	// the last check succeeded.
	failingSince time.Time
	lastErr      error
	certErr      bool
	// livenessFailed is set once the certificate stayed untrusted past certGrace.
	livenessFailed bool
}

// Start checks every interval until ctx ends. It runs on every replica.
func (h *apiServerHealth) Start(ctx context.Context) error {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		h.check(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (h *apiServerHealth) NeedLeaderElection() bool { return false }

func (h *apiServerHealth) check(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := h.rest.Get().AbsPath("/readyz").Do(ctx).Error()
	if ctx.Err() != nil && err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return // shutting down
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	log := ctrl.Log.WithName("health")
	if err == nil {
		if h.lastErr != nil {
			log.Info("the API server answers again")
		}
		h.failingSince, h.lastErr, h.certErr, h.livenessFailed = time.Time{}, nil, false, false
		return
	}
	if h.failingSince.IsZero() {
		h.failingSince = time.Now()
		// Once per outage: the probes' answers withhold the reason.
		log.Error(err, "the API server does not answer; the agent reports not ready until it does")
	}
	h.lastErr, h.certErr = err, isCertificateError(err)
	if h.certErr && !h.livenessFailed && time.Since(h.failingSince) > h.certGrace {
		h.livenessFailed = true
		log.Error(err, "the API server's certificate is still not trusted (its CA changed?): liveness fails so that the agent is restarted; out of cluster, restart the agent with the current kubeconfig")
	}
}

func isCertificateError(err error) bool {
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	return errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &hostname) ||
		strings.Contains(err.Error(), "certificate signed by unknown authority")
}

// ReadyCheck fails while the API server does not answer.
func (h *apiServerHealth) ReadyCheck(*http.Request) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lastErr == nil {
		return nil
	}
	return fmt.Errorf("the API server has not answered since %s: %w", h.failingSince.UTC().Format(time.RFC3339), h.lastErr)
}

// LiveCheck fails once the API server's certificate has been untrusted for
// longer than certGrace: its CA changed, and only a restart reloads it.
func (h *apiServerHealth) LiveCheck(*http.Request) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.livenessFailed {
		return fmt.Errorf("the API server's certificate has not been trusted since %s (its CA changed?); restart the agent with the current CA: %w", h.failingSince.UTC().Format(time.RFC3339), h.lastErr)
	}
	return nil
}

// webhooksRegistered is a readiness check: the agent is not ready while its
// webhook configurations are missing or lack the CA bundle, since admission
// of Topologies and classes is not in force then.
func webhooksRegistered(reader client.Reader) func(*http.Request) error {
	return func(req *http.Request) error {
		ctx := req.Context()
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := reader.Get(ctx, client.ObjectKey{Name: topologywebhook.MutatingConfigurationName}, m); err != nil {
			return fmt.Errorf("MutatingWebhookConfiguration %s: %w", topologywebhook.MutatingConfigurationName, err)
		}
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := reader.Get(ctx, client.ObjectKey{Name: topologywebhook.ValidatingConfigurationName}, v); err != nil {
			return fmt.Errorf("ValidatingWebhookConfiguration %s: %w", topologywebhook.ValidatingConfigurationName, err)
		}
		for _, w := range m.Webhooks {
			if len(w.ClientConfig.CABundle) == 0 {
				return fmt.Errorf("webhook %s has no CA bundle yet", w.Name)
			}
		}
		for _, w := range v.Webhooks {
			if len(w.ClientConfig.CABundle) == 0 {
				return fmt.Errorf("webhook %s has no CA bundle yet", w.Name)
			}
		}
		return nil
	}
}
