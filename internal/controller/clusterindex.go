package controller

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// clusterNameField is the cache's index of generated objects by the cluster
// they belong to (their cluster-name label).
const clusterNameField = "topology.kubectl-topology.io/cluster-name"

// ClusterIndex indexes the agent's cache by the cluster-name label, kind by
// kind as the agent meets them. Listing a cluster's objects through it costs
// the objects of that cluster; a label selector on the cache scans every
// object of the namespace, which made each reconcile grow with the number of
// Topologies beside it.
type ClusterIndex struct {
	indexer client.FieldIndexer
	mu      sync.Mutex
	done    map[schema.GroupVersionKind]bool
}

// NewClusterIndex indexes through indexer (the manager's).
func NewClusterIndex(indexer client.FieldIndexer) *ClusterIndex {
	return &ClusterIndex{indexer: indexer, done: map[schema.GroupVersionKind]bool{}}
}

// Field makes sure gvk is indexed and returns the field to list it by.
// A kind that is not installed is left to the List, which says so.
func (i *ClusterIndex) Field(ctx context.Context, gvk schema.GroupVersionKind) (string, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.done[gvk] {
		return clusterNameField, nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := i.indexer.IndexField(ctx, u, clusterNameField, func(o client.Object) []string {
		if name := o.GetLabels()[clusterv1.ClusterNameLabel]; name != "" {
			return []string{name}
		}
		return nil
	})
	if err != nil {
		if meta.IsNoMatchError(err) {
			return "", err
		}
		return "", fmt.Errorf("indexing %s by cluster: %w", gvk, err)
	}
	i.done[gvk] = true
	return clusterNameField, nil
}
