package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// WarmCaches starts, on every replica, the informers the controllers read
// once they lead: the agent's own kinds, the Cluster API kinds the Topology
// controller watches and the kinds each class generates, kept up as classes
// come. A standby that takes the lead then reconciles from a synced cache
// instead of listing everything while the management cluster waits.
// TopologyRollouts are warmed only where rollouts says this agent drives them.
func (r *TopologyReconciler) WarmCaches(ctx context.Context, c cache.Cache, rollouts bool) error {
	var errs []error
	// Typed kinds, and MachineSets, whose watch is of metadata only.
	own := map[string]client.Object{"Topology": &v1alpha2.Topology{}, "TopologyExtension": &v1alpha2.TopologyExtension{}, machineSetKind: machineSetMetadata(r.capiGVK(machineSetKind))}
	if rollouts {
		own["TopologyRollout"] = &v1alpha2.TopologyRollout{}
	}
	for _, kind := range slices.Sorted(maps.Keys(own)) {
		informer, err := c.GetInformer(ctx, own[kind], cache.BlockUntilSynced(false))
		if err != nil {
			errs = append(errs, fmt.Errorf("warming the cache of %s: %w", kind, err))
			continue
		}
		go logSynced(ctx, kind, informer)
	}
	watched := []schema.GroupVersionKind{r.capiGVK(clusterKind), r.capiGVK("MachineDeployment"), r.capiGVK("MachineHealthCheck"), r.capiGVK(machineKind)}
	if err := r.Watches.Warm(ctx, watched...); err != nil {
		errs = append(errs, err)
	}
	classes, err := c.GetInformer(ctx, &v1alpha2.TopologyClass{}, cache.BlockUntilSynced(false))
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("warming the cache of TopologyClasses: %w", err))...)
	}
	warmClass := func(obj any) {
		class, ok := obj.(*v1alpha2.TopologyClass)
		if !ok {
			return
		}
		if err := r.Watches.Warm(ctx, contract.GeneratedKinds(class, r.CoreVersion)...); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Could not start reading a class's kinds ahead; they are read when first needed", "topologyClass", client.ObjectKeyFromObject(class))
		}
	}
	if _, err := classes.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    warmClass,
		UpdateFunc: func(_, obj any) { warmClass(obj) },
	}); err != nil {
		errs = append(errs, fmt.Errorf("following TopologyClasses to warm their kinds: %w", err))
	}
	return errors.Join(errs...)
}

// logSynced says, once, how long the informer took to list what it caches:
// a failover or restart reconciles only from synced caches, so this is where
// its time goes.
func logSynced(ctx context.Context, kind string, informer cache.Informer) {
	if informer == nil {
		return // a cache that does not hand out its informers (a test's)
	}
	started := time.Now()
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return
	}
	ctrl.LoggerFrom(ctx).Info("Cache synced", "kind", kind, "after", time.Since(started).Round(time.Millisecond).String())
}
