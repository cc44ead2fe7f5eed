package controller

import (
	"context"
	"errors"
	"fmt"

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
func (r *TopologyReconciler) WarmCaches(ctx context.Context, c cache.Cache) error {
	var errs []error
	for _, obj := range []client.Object{&v1alpha2.Topology{}, &v1alpha2.TopologyExtension{}, &v1alpha2.TopologyRollout{}} {
		if _, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			errs = append(errs, fmt.Errorf("warming the cache of %T: %w", obj, err))
		}
	}
	watched := []schema.GroupVersionKind{r.capiGVK(clusterKind), r.capiGVK("MachineDeployment"), r.capiGVK("MachineHealthCheck"), r.capiGVK(machineKind), r.capiGVK(machineSetKind)}
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
