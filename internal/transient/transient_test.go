package transient_test

import (
	"errors"
	"fmt"
	"net/url"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/transient"
)

func TestIsTellsPassingTroubleFromARefusal(t *testing.T) {
	topologies := schema.GroupResource{Group: "topology.kubectl-topology.io", Resource: "topologies"}
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api", Err: syscall.ECONNREFUSED}
	ca := &live.Cluster{Context: "kind-dev", Config: &rest.Config{Host: "https://127.0.0.1:6443"}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"a gateway's bare 504", apierrors.NewGenericServerResponse(504, "get", topologies, "dev", "upstream request timeout", 0, true), true},
		{"the API server's own timeout", apierrors.NewTimeoutError("request did not complete within 60s", 0), true},
		{"a server timeout", apierrors.NewServerTimeout(topologies, "get", 1), true},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), true},
		{"unavailable", apierrors.NewServiceUnavailable("restarting"), true},
		{"an internal error", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), true},
		{"a refused connection, as Explain says it", live.Explain(refused, ca), true},
		{"wrapped by a command", fmt.Errorf("reading Topology default/dev: %w", apierrors.NewServerTimeout(topologies, "get", 1)), true},
		{"forbidden", apierrors.NewForbidden(topologies, "dev", errors.New("no RBAC")), false},
		{"not found", apierrors.NewNotFound(topologies, "dev"), false},
		{"invalid", apierrors.NewBadRequest("spec.version: invalid"), false},
		{"a plain error", errors.New("no such context"), false},
		{"none", nil, false},
	} {
		if got := transient.Is(tc.err); got != tc.want {
			t.Errorf("Is(%s: %v) = %t, want %t", tc.name, tc.err, got, tc.want)
		}
	}
}
