package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// DynamicWatches adds a watch the first time the agent meets a kind: provider
// kinds (DockerCluster, KubeadmControlPlane, templates) are only known from
// the classes, so they cannot be watched up front.
type DynamicWatches struct {
	mu         sync.Mutex
	seen       map[schema.GroupVersionKind]bool
	warm       map[schema.GroupVersionKind]bool
	controller controller.Controller
	cache      cache.Cache
	mapper     meta.RESTMapper
	handler    handler.EventHandler
}

// ErrKindNotInstalled is what Ensure returns for a kind the API server does
// not serve (yet): watching it would fail and retry, logging, every 10 s.
var ErrKindNotInstalled = errors.New("the API server does not serve this kind; install its provider")

// NewDynamicWatches watches new kinds on ctl, mapping events with h; mapper
// tells installed kinds from others.
func NewDynamicWatches(ctl controller.Controller, c cache.Cache, mapper meta.RESTMapper, h handler.EventHandler, known ...schema.GroupVersionKind) *DynamicWatches {
	w := &DynamicWatches{seen: map[schema.GroupVersionKind]bool{}, warm: map[schema.GroupVersionKind]bool{}, controller: ctl, cache: c, mapper: mapper, handler: h}
	for _, gvk := range known {
		w.seen[gvk] = true
	}
	return w
}

// Ensure watches gvk unless it is watched already.
func (w *DynamicWatches) Ensure(_ context.Context, gvk schema.GroupVersionKind) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ensureLocked(gvk)
}

// ensureLocked is Ensure with w.mu held.
func (w *DynamicWatches) ensureLocked(gvk schema.GroupVersionKind) error {
	if w.seen[gvk] || w.controller == nil {
		return nil
	}
	if _, err := w.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return fmt.Errorf("watching %s: %w", gvk, ErrKindNotInstalled)
		}
		return fmt.Errorf("watching %s: %w", gvk, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := w.controller.Watch(source.Kind[client.Object](w.cache, u, w.handler, keptChanged)); err != nil {
		return fmt.Errorf("watching %s: %w", gvk, err)
	}
	w.seen[gvk] = true
	return nil
}

// Warm starts the cache's informers of the installed kinds among gvks,
// without waiting for them to sync, and watches each. Otherwise the first
// reconciles start them one after another, each as a read first needs it,
// every worker waiting on each list; at a thousand clusters read through
// conversion webhooks that was seven seconds of a restart. A watch added
// before the controller starts delivers the objects its cache already
// holds before the first worker runs, where they join the Topologies
// already queued; added by a reconcile, each one queued again a Topology
// that had just been reconciled.
func (w *DynamicWatches) Warm(ctx context.Context, gvks ...schema.GroupVersionKind) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cache == nil {
		return nil
	}
	var errs []error
	for _, gvk := range gvks {
		if w.warm[gvk] {
			continue
		}
		if _, err := w.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			if !meta.IsNoMatchError(err) {
				errs = append(errs, fmt.Errorf("warming the cache of %s: %w", gvk, err))
			}
			continue // not installed: its first read says so
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		informer, err := w.cache.GetInformer(ctx, u, cache.BlockUntilSynced(false))
		if err != nil {
			errs = append(errs, fmt.Errorf("warming the cache of %s: %w", gvk, err))
			continue
		}
		w.warm[gvk] = true
		go logSynced(ctx, gvk.Kind, informer)
		if err := w.ensureLocked(gvk); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// topologyOfLabelledObject maps a generated object to its Topology: the one
// named by its cluster-name label, in its namespace.
func topologyOfLabelledObject(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[clusterv1.ClusterNameLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// Field indexes that let a class change find its topologies, and a template
// change find its classes.
const indexClassTemplate = "spec.templateKeys"

func topologyClassKeys(o client.Object) []string {
	return v1alpha2.ClassKeyOf(o.(*v1alpha2.Topology))
}

func templateKey(gk schema.GroupKind, namespace, name string) string {
	return gk.String() + "/" + namespace + "/" + name
}

func classTemplateKeys(o client.Object) []string {
	c := o.(*v1alpha2.TopologyClass)
	var keys []string
	for _, ref := range contract.ClassTemplateRefs(c) {
		gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
		keys = append(keys, templateKey(gvk.GroupKind(), ref.Namespace, ref.Name))
	}
	return keys
}

// topologiesOfClass maps a TopologyClass to every Topology that uses it.
func topologiesOfClass(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &v1alpha2.TopologyList{}
		if err := c.List(ctx, list, client.MatchingFields{v1alpha2.ClassKeyField: v1alpha2.ClassKeyValue(client.ObjectKeyFromObject(o))}); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for _, t := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: t.Namespace, Name: t.Name}})
		}
		return out
	}
}

// topologiesOfTemplate maps a class template to every Topology of every class
// that references it, or, for a generated object, to its own Topology.
func topologiesOfTemplate(c client.Reader) handler.MapFunc {
	byClass := topologiesOfClass(c)
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		if _, generated := o.GetLabels()[clusterv1.ClusterNameLabel]; generated {
			return topologyOfLabelledObject(ctx, o)
		}
		gvk := o.GetObjectKind().GroupVersionKind()
		classes := &v1alpha2.TopologyClassList{}
		if err := c.List(ctx, classes, client.MatchingFields{indexClassTemplate: templateKey(gvk.GroupKind(), o.GetNamespace(), o.GetName())}); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range classes.Items {
			out = append(out, byClass(ctx, &classes.Items[i])...)
		}
		return out
	}
}
