package plugin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// clusterAccess is what a live command needs: a client, the namespace the
// flags or kubeconfig name, and how to describe the cluster in errors.
type clusterAccess struct {
	client    client.Client
	config    *rest.Config
	namespace string
	context   string
}

// scheme holds only the kinds the plugin reads typed, built on first use:
// registering all of client-go's kinds cost every command, offline plan
// included, about a millisecond at start.
var scheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(coordinationv1.AddToScheme(s))
	utilruntime.Must(appsv1.AddToScheme(s))
	utilruntime.Must(admissionregistrationv1.AddToScheme(s))
	utilruntime.Must(v1alpha2.AddToScheme(s))
	return s
})

// connect builds a client from kubectl's flags (--kubeconfig, --context, -n, --as ...).
func connect(flags *genericclioptions.ConfigFlags) (*clusterAccess, error) {
	if err := kubeconfigEnvExists(flags); err != nil {
		return nil, err
	}
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w; set --kubeconfig or KUBECONFIG", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	raw, _ := flags.ToRawKubeConfigLoader().RawConfig()
	ctxName := raw.CurrentContext
	if flags.Context != nil && *flags.Context != "" {
		ctxName = *flags.Context
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		return nil, explain(err, &clusterAccess{config: cfg, context: ctxName})
	}
	return &clusterAccess{client: c, config: cfg, namespace: ns, context: ctxName}, nil
}

// kubeconfigEnvExists refuses a KUBECONFIG whose files are all missing:
// client-go skips missing files there and would talk to localhost:8080, where
// --kubeconfig with the same path says the file is missing.
func kubeconfigEnvExists(flags *genericclioptions.ConfigFlags) error {
	if flags.KubeConfig != nil && *flags.KubeConfig != "" {
		return nil
	}
	env := os.Getenv("KUBECONFIG")
	if env == "" {
		return nil
	}
	for _, path := range filepath.SplitList(env) {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
	}
	return fmt.Errorf("KUBECONFIG=%s: no such file; point KUBECONFIG or --kubeconfig at an existing kubeconfig", env)
}

// explain turns API errors into what a user can act on.
func explain(err error, ca *clusterAccess) error {
	if err == nil {
		return nil
	}
	var urlErr *url.Error
	var netErr net.Error
	switch {
	case meta.IsNoMatchError(err) || isTopologyAPIMissing(err):
		return fmt.Errorf("the kubectl-topology API is not installed on this cluster (context %q): run `kubectl topology install`", ca.context)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("forbidden: %v; ask for RBAC that allows it in context %q", apiMessage(err), ca.context)
	case errors.As(err, &urlErr), errors.As(err, &netErr):
		return fmt.Errorf("cannot reach the cluster of context %q at %s: %v", ca.context, ca.config.Host, err)
	}
	return err
}

func isTopologyAPIMissing(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) && apierrors.IsNotFound(err) {
		d := status.Status().Details
		return d != nil && d.Group == v1alpha2.GroupVersion.Group && d.Name == ""
	}
	return false
}

func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}

// clock lets tests fix "now" for ages.
type clock func() time.Time

func (c clock) now() time.Time {
	if c == nil {
		return time.Now()
	}
	return c()
}

// topologyGetter reads one Topology with a user-facing error when it is missing.
func (ca *clusterAccess) topology(ctx context.Context, namespace, name string) (*v1alpha2.Topology, error) {
	t := &v1alpha2.Topology{}
	if err := ca.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, t); err != nil {
		if apierrors.IsNotFound(err) && !isTopologyAPIMissing(err) {
			return nil, fmt.Errorf("Topology %s/%s not found; list them with `kubectl topology get -n %s`", namespace, name, namespace)
		}
		return nil, explain(err, ca)
	}
	return t, nil
}

func isNoMatch(err error) bool { return meta.IsNoMatchError(err) }

// probeReady asks the local agent's /readyz.
func probeReady(port int) bool {
	return readiness(fmt.Sprintf("127.0.0.1:%d", port)) == nil
}

// readiness asks an agent's probe endpoint whether it is ready; the error
// carries the checks that fail.
func readiness(addr string) error {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/readyz?verbose")
	if err != nil {
		return fmt.Errorf("its probe endpoint %s does not answer: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var failing []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "[-]") {
			failing = append(failing, strings.TrimPrefix(line, "[-]"))
		}
	}
	return fmt.Errorf("not ready: %s", strings.Join(failing, "; "))
}

// liveFlags are what every live command holds: kubectl's flags and, once
// connected, the cluster.
type liveFlags struct {
	configFlags *genericclioptions.ConfigFlags
	access      *clusterAccess
}

// connectOnce reaches the cluster once the flags are known to be good.
func (l *liveFlags) connectOnce() error {
	if l.access != nil {
		return nil
	}
	var err error
	l.access, err = connect(l.configFlags)
	return err
}

// listScope is the List options of a listing: the flags' namespace, or all.
func (ca *clusterAccess) listScope(allNamespaces bool) []client.ListOption {
	if allNamespaces {
		return nil
	}
	return []client.ListOption{client.InNamespace(ca.namespace)}
}

// listTopologies lists the Topologies in scope, by namespace and name.
func (ca *clusterAccess) listTopologies(ctx context.Context, allNamespaces bool) ([]v1alpha2.Topology, error) {
	list := &v1alpha2.TopologyList{}
	if err := ca.client.List(ctx, list, ca.listScope(allNamespaces)...); err != nil {
		return nil, explain(err, ca)
	}
	slices.SortFunc(list.Items, func(a, b v1alpha2.Topology) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return list.Items, nil
}

// noTopologies says on w that a listing found none, and where it looked.
func (ca *clusterAccess) noTopologies(w io.Writer, allNamespaces bool) {
	where := "namespace " + ca.namespace
	if allNamespaces {
		where = "any namespace"
	}
	fmt.Fprintf(w, "No Topologies found in %s.\n", where)
}

// readTopology connects once and reads the named Topology in the flags' namespace.
func (l *liveFlags) readTopology(ctx context.Context, name string) (*v1alpha2.Topology, error) {
	if err := l.connectOnce(); err != nil {
		return nil, err
	}
	return l.access.topology(ctx, l.access.namespace, name)
}
