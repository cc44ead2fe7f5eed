package controller

import (
	"context"
	"fmt"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kubectl-topology/kubectl-topology/internal/cachetransform"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// capiGVK is a Cluster API core kind in the version the agent reads and writes.
func (r *TopologyReconciler) capiGVK(kind string) schema.GroupVersionKind {
	return r.CoreVersion.GroupVersion().WithKind(kind)
}

// machineSetMetadata is the object of the MachineSet watch, which is of
// metadata only: the informer SetupWithManager's watch and WarmCaches share.
func machineSetMetadata(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}

func unstructuredOf(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// topologyChanged passes the Topology changes the agent acts on: spec
// (generation), labels, annotations, finalizers and deletion. Its own status
// writes would otherwise bring a failing Topology straight back, past the
// rate limiter's backoff, in a loop as fast as the API server answers.
var topologyChanged = predicate.Or[client.Object](
	predicate.GenerationChangedPredicate{},
	predicate.LabelChangedPredicate{},
	predicate.AnnotationChangedPredicate{},
	predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !e.ObjectOld.GetDeletionTimestamp().Equal(e.ObjectNew.GetDeletionTimestamp()) ||
			!slices.Equal(e.ObjectOld.GetFinalizers(), e.ObjectNew.GetFinalizers())
	}},
)

// machineSetGone passes a MachineSet's deletion only: the template clones it
// used may then be deleted, and a rotation's old MachineSet often goes after
// its last Machine, with no other event to bring the Topology back. The
// watch is of metadata only (machineSetMetadata): which templates are in use
// is read from the API server when a clone may go, so the cache need not hold
// thousands of MachineSets' specs, nor list them at every start.
var machineSetGone = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// keptChanged drops an update of a generated object that changed nothing the
// cache keeps (cachetransform.Unchanged): Cluster API's controllers rewrite
// the status of Clusters, pools and Machines far more often than they change
// what the agent reads, and each such update was a reconcile that read what
// the previous one had read.
var keptChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	if cachetransform.Unchanged(e.ObjectOld, e.ObjectNew) {
		ignoredUpdates.WithLabelValues(e.ObjectNew.GetObjectKind().GroupVersionKind().Kind).Inc()
		return false
	}
	return true
}}

// ignoredUpdates counts the updates keptChanged dropped, by kind: how much
// of Cluster API's churn the agent does not reconcile on.
var ignoredUpdates = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "kubectl_topology_ignored_updates_total",
	Help: "Updates of watched Cluster API and provider objects that changed nothing the agent reads, by kind; no reconcile is queued for them.",
}, []string{"kind"})

func init() {
	ctrlmetrics.Registry.MustRegister(ignoredUpdates)
}

// SetupWithManager registers the Topology controller: it watches Topologies,
// the Clusters they own, the Cluster API objects labelled for them, their
// classes, and — added as they are met — provider kinds and class templates.
// The manager's client must read unstructured objects from its cache (as the
// agent's does): a cluster's objects are listed by the cache's cluster index.
func (r *TopologyReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha2.Topology{}, v1alpha2.ClassKeyField, topologyClassKeys); err != nil {
		return fmt.Errorf("indexing Topologies by class: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha2.TopologyClass{}, indexClassTemplate, classTemplateKeys); err != nil {
		return fmt.Errorf("indexing TopologyClasses by template: %w", err)
	}
	byLabel := handler.EnqueueRequestsFromMapFunc(topologyOfLabelledObject)
	known := []schema.GroupVersionKind{r.capiGVK(clusterKind), r.capiGVK("MachineDeployment"), r.capiGVK("MachineHealthCheck"), r.capiGVK(machineKind)}
	ctl, err := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha2.Topology{}, builder.WithPredicates(topologyChanged, r.Shard.Predicate())).
		Owns(unstructuredOf(r.capiGVK(clusterKind)), builder.WithPredicates(keptChanged)).
		Watches(&v1alpha2.TopologyClass{}, handler.EnqueueRequestsFromMapFunc(topologiesOfClass(mgr.GetClient()))).
		Watches(&v1alpha2.TopologyExtension{}, handler.EnqueueRequestsFromMapFunc(topologiesOfExtension(mgr.GetClient()))).
		Watches(unstructuredOf(r.capiGVK("MachineDeployment")), byLabel, builder.WithPredicates(keptChanged)).
		Watches(unstructuredOf(r.capiGVK("MachineHealthCheck")), byLabel, builder.WithPredicates(keptChanged)).
		Watches(unstructuredOf(r.capiGVK(machineKind)), byLabel, builder.WithPredicates(keptChanged)).
		Watches(machineSetMetadata(r.capiGVK(machineSetKind)), byLabel, builder.WithPredicates(machineSetGone)).
		WithOptions(opts).
		Named("topology").
		Build(r)
	if err != nil {
		return fmt.Errorf("creating the Topology controller: %w", err)
	}
	r.Watches = NewDynamicWatches(ctl, mgr.GetCache(), mgr.GetRESTMapper(), handler.EnqueueRequestsFromMapFunc(topologiesOfTemplate(mgr.GetClient())), known...)
	if r.ByCluster == nil {
		r.ByCluster = NewClusterIndex(mgr.GetFieldIndexer())
	}
	if r.Classes == nil {
		r.Classes = rules.NewClassCache()
	}
	return nil
}
