package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// proxy stands between the plugin and the suite's API server and answers
// some reads of one object itself, as a failing API server would.
type proxy struct {
	kubeconfig string
	// reads counts the GETs of the object.
	reads atomic.Int32
}

// answer is what the proxy does with one read: with a zero code it passes
// the read on after the delay; 504 it answers bare, as a gateway does; any
// other code as the API server's own Status.
type answer struct {
	code  int
	delay time.Duration
}

// answeringProxy passes every request to the API server, and the reads of
// path as answerRead says. The kubeconfig it returns reaches the API server
// through it, with the suite's credentials.
func answeringProxy(t *testing.T, path string, answerRead func(read int) answer) *proxy {
	t.Helper()
	target, err := url.Parse(restConfig.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{}
	forward := httputil.NewSingleHostReverseProxy(target)
	forward.Transport = transport
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != path {
			forward.ServeHTTP(w, r)
			return
		}
		a := answerRead(int(p.reads.Add(1)))
		switch code := a.code; code {
		case 0:
			select {
			case <-time.After(a.delay):
			case <-r.Context().Done():
			}
			forward.ServeHTTP(w, r)
		case http.StatusGatewayTimeout:
			http.Error(w, "upstream request timeout", code)
		default:
			status := apierrors.NewForbidden(schema.GroupResource{Group: v1alpha2.GroupVersion.Group, Resource: "topologies"}, filepath.Base(path), nil).ErrStatus
			status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
			status.Code = int32(code)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(status)
		}
	}))
	t.Cleanup(srv.Close)

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: srv.URL}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	p.kubeconfig = filepath.Join(t.TempDir(), "proxy.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return p
}
