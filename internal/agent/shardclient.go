package agent

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/shard"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// shardClient reads through the cache what it holds, and from the API
// server what lies outside the shard's namespaces: the webhooks admit for
// every shard, and a rollout there selects Clusters this cache never saw.
// Topologies and classes are cached everywhere on an agent that admits, and
// rollouts are cluster-scoped, so they always come from the cache (its
// indexes included).
type shardClient struct {
	client.Client
	uncached client.Reader
	shard    shard.Shard
}

func (c *shardClient) reader(namespace string, obj any) client.Reader {
	if namespace == "" || c.shard.Watches(namespace) || cachedEverywhere(obj) {
		return c.Client
	}
	return c.uncached
}

// Get implements client.Reader.
func (c *shardClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reader(key.Namespace, obj).Get(ctx, key, obj, opts...)
}

// List implements client.Reader.
func (c *shardClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	return c.reader(lo.Namespace, list).List(ctx, list, opts...)
}

func cachedEverywhere(obj any) bool {
	switch obj.(type) {
	case *v1alpha2.Topology, *v1alpha2.TopologyClass, *v1alpha2.TopologyRollout,
		*v1alpha2.TopologyList, *v1alpha2.TopologyClassList, *v1alpha2.TopologyRolloutList:
		return true
	}
	return false
}
