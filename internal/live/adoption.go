package live

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// UpstreamClass reads the ClusterClass the upstream Cluster t is made from,
// as the server stores it.
func (ca *Cluster) UpstreamClass(ctx context.Context, t *v1alpha2.Topology) (*unstructured.Unstructured, error) {
	raw := &unstructured.Unstructured{}
	raw.SetAPIVersion(ca.Core.APIVersion())
	raw.SetKind("ClusterClass")
	if err := ca.Client.Get(ctx, t.GetClassKey(), raw); err != nil {
		return nil, fmt.Errorf("reading ClusterClass %s of Cluster %s/%s: %w", t.GetClassKey(), t.Namespace, t.Name, Explain(err, ca))
	}
	return raw, nil
}

// TopologyExists tells whether a Topology key exists. An error says when
// the kubectl-topology API is not installed at all.
func (ca *Cluster) TopologyExists(ctx context.Context, key types.NamespacedName) (bool, error) {
	err := ca.Client.Get(ctx, key, &v1alpha2.Topology{})
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err) || IsTopologyAPIMissing(err):
		return false, fmt.Errorf("the kubectl-topology API is not installed (context %q): install the agent first with `kubectl topology install`", ca.Context)
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, Explain(err, ca)
}

// ExistingClass reads the TopologyClass namespace/name as Class does; nil
// when there is none.
func (ca *Cluster) ExistingClass(ctx context.Context, namespace, name string) (*v1alpha2.TopologyClass, error) {
	c, err := ca.Class(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return c, err
}

// MachineUIDs are the names of the Machines of t's cluster, by UID.
func (ca *Cluster) MachineUIDs(ctx context.Context, t *v1alpha2.Topology) (map[types.UID]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(ca.Core.APIVersion())
	list.SetKind("MachineList")
	if err := ca.Client.List(ctx, list, client.InNamespace(t.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: t.Name}); err != nil {
		return nil, Explain(err, ca)
	}
	out := map[types.UID]string{}
	for _, m := range list.Items {
		out[m.GetUID()] = m.GetName()
	}
	return out, nil
}
