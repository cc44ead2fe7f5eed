package live

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/draft"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/extension"
	"github.com/kubectl-topology/kubectl-topology/internal/loader"
	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Cluster is what a live command needs: a client, the namespace the
// flags or kubeconfig name, and how to describe the cluster in errors.
type Cluster struct {
	Client    client.Client
	Config    *rest.Config
	Namespace string
	Context   string
	// Core is the Cluster API Core version the server stores, once asked.
	Core contract.CoreVersion
	// extensions are the handlers the agent discovered, once read; mu
	// guards them for the rollout dry run's plans, which run side by side.
	mu         sync.Mutex
	extensions *extension.Client
}

// Scheme holds only the kinds the plugin reads typed, built on first use:
// registering all of client-go's kinds cost every command, offline plan
// included, about a millisecond at start.
var Scheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(coordinationv1.AddToScheme(s))
	utilruntime.Must(appsv1.AddToScheme(s))
	utilruntime.Must(admissionregistrationv1.AddToScheme(s))
	utilruntime.Must(authenticationv1.AddToScheme(s))
	utilruntime.Must(v1alpha2.AddToScheme(s))
	return s
})

// WarnTo has the API server's warnings (a deprecated API version, a field
// the server dropped) printed to w once each, as kubectl prints them. Left to
// controller-runtime they go to its logger, which the plugin never sets, and
// the first one printed a stack trace instead.
func WarnTo(cfg *rest.Config, w io.Writer) {
	cfg.WarningHandler = rest.NewWarningWriter(w, rest.WarningWriterOptions{Deduplicate: true})
	cfg.WarningHandlerWithContext = nil
}

// Explain turns API errors into what a user can act on.
func Explain(err error, ca *Cluster) error {
	if err == nil {
		return nil
	}
	var urlErr *url.Error
	var netErr net.Error
	switch {
	case meta.IsNoMatchError(err) || IsTopologyAPIMissing(err):
		return fmt.Errorf("the kubectl-topology API is not installed on this cluster (context %q): run `kubectl topology install`", ca.Context)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("forbidden: %v; ask for RBAC that allows it in context %q", apiMessage(err), ca.Context)
	case (errors.As(err, &urlErr) || errors.As(err, &netErr)) && ca.Config != nil:
		return fmt.Errorf("cannot reach the cluster of context %q at %s: %w", ca.Context, ca.Config.Host, err)
	}
	return err
}

// IsTopologyAPIMissing tells a 404 for our API group itself (not installed)
// from one for a single missing object.
func IsTopologyAPIMissing(err error) bool {
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

// Topology reads one Topology, with an error that says what to do when it is missing.
func (ca *Cluster) Topology(ctx context.Context, namespace, name string) (*v1alpha2.Topology, error) {
	t := &v1alpha2.Topology{}
	if err := ca.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, t); err != nil {
		if apierrors.IsNotFound(err) && !IsTopologyAPIMissing(err) {
			return nil, fmt.Errorf("Topology %s/%s not found; list them with `kubectl topology get -n %s`", namespace, name, namespace)
		}
		return nil, Explain(err, ca)
	}
	return t, nil
}

// ListScope is the List options of a listing: the flags' namespace, or all.
func (ca *Cluster) ListScope(allNamespaces bool) []client.ListOption {
	if allNamespaces {
		return nil
	}
	return []client.ListOption{client.InNamespace(ca.Namespace)}
}

// NoTopologies says on w that a listing found none, and where it looked.
func (ca *Cluster) NoTopologies(w io.Writer, allNamespaces bool) {
	where := "namespace " + ca.Namespace
	if allNamespaces {
		where = "any namespace"
	}
	fmt.Fprintf(w, "No Topologies found in %s.\n", where)
}

// CoreVersion is the Cluster API core version the server stores, asked once.
func (ca *Cluster) CoreVersion() (contract.CoreVersion, error) {
	if ca.Core != "" {
		return ca.Core, nil
	}
	dc, err := discovery.NewDiscoveryClientForConfig(ca.Config)
	if err != nil {
		return "", err
	}
	core, err := loader.DetectCoreVersion(dc)
	if err != nil {
		return "", Explain(err, ca)
	}
	ca.Core = core
	return core, nil
}

// Store is where an edit of t is written: the Topology, or the upstream
// Cluster's spec.topology.
func (ca *Cluster) Store(t *v1alpha2.Topology) draft.Store {
	return upstream.StoreFor(ca.Client, ca.Core, t)
}

// Kinds a reference can name, as kubectl spells them.
var (
	topologyKinds = []string{"topology", "topologies", "topology.topology.kubectl-topology.io", "topologies.topology.kubectl-topology.io"}
	clusterKinds  = []string{"cluster", "clusters", "cluster.cluster.x-k8s.io", "clusters.cluster.x-k8s.io"}
)

// KindOf is the kind a reference's KIND/ part names, as kubectl spells
// it: Topology or Cluster (an upstream Cluster with spec.topology), or
// false for anything else.
func KindOf(kind string) (string, bool) {
	switch k := strings.ToLower(kind); {
	case slices.Contains(topologyKinds, k):
		return v1alpha2.TopologyKind, true
	case slices.Contains(clusterKinds, k):
		return contract.UpstreamClusterKind, true
	}
	return "", false
}

// Resolve reads what ref names: topology/NAME, cluster/NAME (an upstream
// Cluster with spec.topology), or a bare NAME that only one of the two has.
func (ca *Cluster) Resolve(ctx context.Context, namespace, ref string) (*v1alpha2.Topology, error) {
	kind, name, found := strings.Cut(ref, "/")
	if !found {
		return ca.FindByName(ctx, namespace, ref)
	}
	known, _ := KindOf(kind)
	switch {
	case name == "" || strings.Contains(name, "/"):
		return nil, fmt.Errorf("%q is not a reference: give NAME, topology/NAME or cluster/NAME", ref)
	case known == v1alpha2.TopologyKind:
		return ca.Topology(ctx, namespace, name)
	case known == contract.UpstreamClusterKind:
		return ca.UpstreamCluster(ctx, namespace, name)
	default:
		return nil, fmt.Errorf("%q: kubectl topology works on topology/NAME and cluster/NAME (a Cluster with spec.topology), not %q", ref, kind)
	}
}

// FindByName looks for name among Topologies and Clusters with
// spec.topology, and refuses to guess when both have it.
func (ca *Cluster) FindByName(ctx context.Context, namespace, name string) (*v1alpha2.Topology, error) {
	t := &v1alpha2.Topology{}
	topoErr := ca.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, t)
	if err := upstream.IgnoreMissing(topoErr); err != nil && !IsTopologyAPIMissing(err) {
		return nil, Explain(err, ca)
	}
	haveTopology := topoErr == nil
	var cluster *v1alpha2.Topology
	core, err := ca.CoreVersion()
	if err != nil && !haveTopology {
		return nil, err
	}
	u := upstream.NewCluster(core)
	clusterErr := ca.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
	switch {
	case err != nil, clusterErr != nil && upstream.IgnoreMissing(clusterErr) == nil, apierrors.IsForbidden(clusterErr):
		// No Cluster API, no such Cluster, or no right to read it: only a
		// Topology can be meant.
	case clusterErr != nil:
		return nil, Explain(clusterErr, ca)
	case upstream.HasTopology(u):
		if cluster, err = upstream.FromCluster(u); err != nil {
			return nil, err
		}
	}
	switch {
	case haveTopology && cluster != nil:
		return nil, fmt.Errorf("%[1]q names both topology/%[1]s (managed by the kubectl-topology agent) and cluster/%[1]s (a ClusterClass Cluster managed by Cluster API's topology controller) in namespace %[2]s: name one, e.g. `topology/%[1]s` or `cluster/%[1]s`", name, namespace)
	case haveTopology:
		return t, nil
	case cluster != nil:
		return cluster, nil
	case clusterErr == nil:
		return nil, fmt.Errorf("Topology %s/%s not found, and Cluster %s/%s has no spec.topology: kubectl topology works on Topologies and on Clusters made from a ClusterClass", namespace, name, namespace, name)
	case IsTopologyAPIMissing(topoErr) || meta.IsNoMatchError(topoErr):
		return nil, fmt.Errorf("Cluster %s/%s with spec.topology not found, and the kubectl-topology API is not installed (context %q): list Clusters with `kubectl get clusters -n %s`", namespace, name, ca.Context, namespace)
	}
	return nil, fmt.Errorf("Topology %s/%s not found, nor a Cluster with spec.topology of that name; list them with `kubectl topology get -n %s`", namespace, name, namespace)
}

// UpstreamCluster reads the Cluster named, which must have spec.topology.
func (ca *Cluster) UpstreamCluster(ctx context.Context, namespace, name string) (*v1alpha2.Topology, error) {
	core, err := ca.CoreVersion()
	if err != nil {
		return nil, err
	}
	u := upstream.NewCluster(core)
	if err := ca.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("Cluster %s/%s not found; list Clusters with `kubectl get clusters -n %s`", namespace, name, namespace)
		}
		if meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("Cluster API is not installed on this cluster (context %q): there is no Cluster kind", ca.Context)
		}
		return nil, Explain(err, ca)
	}
	return upstream.FromCluster(u)
}

// Summarize fills the rollout summary of an upstream Cluster seen as a
// Topology from the objects upstream's controller made.
func (ca *Cluster) Summarize(ctx context.Context, t *v1alpha2.Topology) error {
	l, err := ca.Load(ctx, t)
	if err != nil {
		return fmt.Errorf("reading the rollout of Cluster %s/%s: %w", t.Namespace, t.Name, err)
	}
	if err := upstream.Summarize(ctx, t, l); err != nil {
		return fmt.Errorf("summarising the rollout of Cluster %s/%s: %w", t.Namespace, t.Name, err)
	}
	return nil
}

// ListClusters lists the Clusters with spec.topology in scope, each seen as
// a Topology, its rollout summarised when summarize. No Cluster API, or no
// right to list Clusters, is none. A rollout that cannot be summarised (its
// ClusterClass missing, say) leaves that Cluster without a summary and is
// said in the warnings: one broken Cluster does not hide the others.
func (ca *Cluster) ListClusters(ctx context.Context, allNamespaces, summarize bool) ([]v1alpha2.Topology, []string, error) {
	core, err := ca.CoreVersion()
	if err != nil {
		return nil, nil, nil //nolint:nilerr // no Cluster API: no upstream Clusters to list
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(core.APIVersion())
	list.SetKind("ClusterList")
	if err := ca.Client.List(ctx, list, ca.ListScope(allNamespaces)...); err != nil {
		if upstream.IgnoreMissing(err) == nil || apierrors.IsForbidden(err) {
			return nil, nil, nil
		}
		return nil, nil, Explain(err, ca)
	}
	var out []v1alpha2.Topology
	var warnings []string
	for i := range list.Items {
		if !upstream.HasTopology(&list.Items[i]) {
			continue
		}
		t, err := upstream.FromCluster(&list.Items[i])
		if err != nil {
			warnings = append(warnings, err.Error())
			continue
		}
		if summarize {
			if err := ca.Summarize(ctx, t); err != nil {
				warnings = append(warnings, err.Error())
			}
		}
		out = append(out, *t)
	}
	return out, warnings, nil
}

// ListAll lists Topologies and Clusters with spec.topology in scope, by
// namespace and name, and says on w what could not be read of a Cluster.
// Without the kubectl-topology API, only the Clusters.
func (ca *Cluster) ListAll(ctx context.Context, allNamespaces bool, w io.Writer) ([]v1alpha2.Topology, error) {
	list := &v1alpha2.TopologyList{}
	err := ca.Client.List(ctx, list, ca.ListScope(allNamespaces)...)
	apiMissing := meta.IsNoMatchError(err) || IsTopologyAPIMissing(err)
	if err != nil && !apiMissing {
		return nil, Explain(err, ca)
	}
	clusters, warnings, cerr := ca.ListClusters(ctx, allNamespaces, true)
	if cerr != nil {
		return nil, cerr
	}
	for _, warning := range warnings {
		fmt.Fprintf(w, "Warning: %s\n", warning)
	}
	if apiMissing && len(clusters) == 0 {
		return nil, Explain(err, ca)
	}
	items := append(list.Items, clusters...)
	slices.SortStableFunc(items, func(a, b v1alpha2.Topology) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return items, nil
}

// RawCluster reads an upstream Cluster as it is stored, for printing.
func (ca *Cluster) RawCluster(ctx context.Context, t *v1alpha2.Topology) (*unstructured.Unstructured, error) {
	u := upstream.NewCluster(ca.Core)
	if err := ca.Client.Get(ctx, client.ObjectKeyFromObject(t), u); err != nil {
		return nil, Explain(err, ca)
	}
	return u, nil
}

// WebhooksRegistered reports whether both webhook configurations carry a CA bundle.
func WebhooksRegistered(ctx context.Context, c client.Client) bool {
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if c.Get(ctx, client.ObjectKey{Name: components.ValidatingWebhookName}, v) != nil || c.Get(ctx, client.ObjectKey{Name: components.MutatingWebhookName}, m) != nil {
		return false
	}
	return len(v.Webhooks) > 0 && len(v.Webhooks[0].ClientConfig.CABundle) > 0 && len(m.Webhooks) > 0 && len(m.Webhooks[0].ClientConfig.CABundle) > 0
}

// WebhookOwner is the namespace of the agent whose webhooks are registered
// (the one that admits for every shard), and whether any are.
func WebhookOwner(ctx context.Context, c client.Reader) (string, bool) {
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if c.Get(ctx, client.ObjectKey{Name: components.ValidatingWebhookName}, v) != nil {
		return "", false
	}
	if ns := v.Annotations[components.AgentNamespaceAnnotation]; ns != "" {
		return ns, true
	}
	return components.Namespace, true
}

// Class reads the TopologyClass namespace/name.
func (ca *Cluster) Class(ctx context.Context, namespace, name string) (*v1alpha2.TopologyClass, error) {
	c := &v1alpha2.TopologyClass{}
	if err := ca.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, c); err != nil {
		return nil, fmt.Errorf("reading TopologyClass %s/%s: %w", namespace, name, Explain(err, ca))
	}
	return c, nil
}

// TopologyNames are the names of the Topologies of namespace, for shell
// completion.
func (ca *Cluster) TopologyNames(ctx context.Context, namespace string) ([]string, error) {
	list := &v1alpha2.TopologyList{}
	if err := ca.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, Explain(err, ca)
	}
	names := make([]string, 0, len(list.Items))
	for _, t := range list.Items {
		names = append(names, t.Name)
	}
	return names, nil
}

// NamespaceNames are the names of the cluster's namespaces, for shell
// completion.
func (ca *Cluster) NamespaceNames(ctx context.Context) ([]string, error) {
	list := &corev1.NamespaceList{}
	if err := ca.Client.List(ctx, list); err != nil {
		return nil, Explain(err, ca)
	}
	names := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	return names, nil
}
