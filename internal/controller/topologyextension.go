package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubectl-topology/kubectl-topology/internal/extension"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Conditions on TopologyExtension.status, with their reasons.
const (
	DiscoveredCondition    = "Discovered"
	ReasonDiscovered       = "Discovered"
	ReasonDiscoveryFailed  = "DiscoveryFailed"
	RespondingCondition    = "Responding"
	ReasonResponding       = "Responding"
	ReasonNotResponding    = "NotResponding"
	rediscoverAfterFailure = 30 * time.Second
	rediscoverAfterSuccess = 10 * time.Minute
)

// TopologyExtensionReconciler discovers the handlers of each registered
// Runtime SDK extension server and keeps the agent's registry of them
// current, so that external patches can call them.
type TopologyExtensionReconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Extensions calls extension servers and holds the registry.
	Extensions *extension.Client
	// APIReader lists the TopologyExtensions at start, before the cache
	// may have them; nil reads through Client.
	APIReader client.Reader
}

// Reconcile runs discovery and writes status.handlers and the Discovered
// condition. A server that cannot be discovered is taken out of the
// registry, so that its handlers fail with a reason instead of a stale call.
func (r *TopologyExtensionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ext := &v1alpha2.TopologyExtension{}
	if err := r.Client.Get(ctx, req.NamespacedName, ext); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.Extensions.Registry.Remove(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ext.DeletionTimestamp.IsZero() {
		r.Extensions.Registry.Remove(ext.Name)
		return ctrl.Result{}, nil
	}
	before := ext.Status.DeepCopy()
	cond := metav1.Condition{Type: DiscoveredCondition, Status: metav1.ConditionTrue, Reason: ReasonDiscovered, ObservedGeneration: ext.Generation}
	result := ctrl.Result{RequeueAfter: rediscoverAfterSuccess}
	handlers, err := r.discover(ctx, ext)
	if err != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonDiscoveryFailed
		cond.Message = err.Error() + "; check spec.clientConfig and that the extension server is running"
		result.RequeueAfter = rediscoverAfterFailure
	}
	ext.Status.Handlers = statusHandlers(ext.Name, handlers)
	meta.SetStatusCondition(&ext.Status.Conditions, cond)
	meta.SetStatusCondition(&ext.Status.Conditions, r.responding(ext))
	if equality.Semantic.DeepEqual(before, &ext.Status) {
		return result, nil
	}
	orig := ext.DeepCopy()
	orig.Status = *before
	if err := r.Client.Status().Patch(ctx, ext, client.MergeFrom(orig)); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing status of TopologyExtension %s: %w", ext.Name, client.IgnoreNotFound(err))
	}
	return result, nil
}

// discover asks the extension for its handlers and registers them. When it
// cannot be discovered, the handlers last known (registered, or named in its
// status by an earlier agent) stay registered, as upstream keeps them: a
// lifecycle hook of a server that is down then fails and holds what it
// guards, rather than being skipped as if nobody served it. It returns the
// handlers registered.
func (r *TopologyExtensionReconciler) discover(ctx context.Context, ext *v1alpha2.TopologyExtension) ([]v1alpha2.ExtensionHandler, error) {
	handlers, err := r.Extensions.Discover(ctx, ext.Name, ext.Spec.ClientConfig)
	if err == nil {
		if err = r.Extensions.Registry.Set(ext.Name, ext.Spec, handlers); err == nil {
			return handlers, nil
		}
	}
	known, ok := r.Extensions.Registry.Handlers(ext.Name)
	if !ok {
		for _, h := range ext.Status.Handlers {
			h.Name, _, _ = extension.SplitName(h.Name)
			known = append(known, h)
		}
	}
	if len(known) == 0 || r.Extensions.Registry.Set(ext.Name, ext.Spec, known) != nil {
		r.Extensions.Registry.Remove(ext.Name)
		return nil, err
	}
	return known, err
}

// WarmUp discovers every TopologyExtension there is before the registry is
// marked ready, as upstream warms its registry up before calling any hook:
// a Topology reconciled first must not take "not registered yet" for "no
// extension serves this hook". An extension that cannot be discovered is
// registered with the handlers its status names; its calls fail until it
// answers.
func (r *TopologyExtensionReconciler) WarmUp(ctx context.Context) error {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	list := &v1alpha2.TopologyExtensionList{}
	if err := reader.List(ctx, list); err != nil {
		return fmt.Errorf("listing TopologyExtensions to discover them: %w", err)
	}
	for i := range list.Items {
		ext := &list.Items[i]
		if !ext.DeletionTimestamp.IsZero() {
			continue
		}
		if _, err := r.discover(ctx, ext); err != nil {
			ctrl.LoggerFrom(ctx).Info("TopologyExtension could not be discovered; its last known handlers are registered", "extension", ext.Name, "error", err.Error())
		}
	}
	r.Extensions.Registry.MarkReady()
	return nil
}

// responding reports whether the extension's handlers answer the agent's
// calls: a slow or failing extension shows here, and on every class using it,
// not only in the conditions of the Topologies it holds up.
func (r *TopologyExtensionReconciler) responding(ext *v1alpha2.TopologyExtension) metav1.Condition {
	cond := metav1.Condition{Type: RespondingCondition, Status: metav1.ConditionTrue, Reason: ReasonResponding, ObservedGeneration: ext.Generation}
	if f, failing := r.Extensions.Failing(ext.Name); failing {
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonNotResponding
		cond.Message = fmt.Sprintf("calls have failed since %s: %v", f.Since.UTC().Format(time.RFC3339), f.Err)
	}
	return cond
}

// statusHandlers lists handlers by the full names classes use: HANDLER.EXTENSION.
func statusHandlers(ext string, hs []v1alpha2.ExtensionHandler) []v1alpha2.ExtensionHandler {
	out := make([]v1alpha2.ExtensionHandler, 0, len(hs))
	for _, h := range hs {
		h.Name = extension.FullName(h.Name, ext)
		out = append(out, h)
	}
	return out
}

// SetupWithManager registers the TopologyExtension controller. It is also
// woken whenever calls to an extension start or stop failing.
func (r *TopologyExtensionReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	health := make(chan event.TypedGenericEvent[*v1alpha2.TopologyExtension], 64)
	r.Extensions.OnHealthChange = func(name string) {
		ext := &v1alpha2.TopologyExtension{}
		ext.Name = name
		select {
		case health <- event.TypedGenericEvent[*v1alpha2.TopologyExtension]{Object: ext}:
		default: // a full channel already holds a wake-up; the next rediscovery reports it anyway
		}
	}
	warmUp := manager.RunnableFunc(func(ctx context.Context) error {
		return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			if err := r.WarmUp(ctx); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "warming up the extension registry; retrying")
				return false, nil
			}
			return true, nil
		})
	})
	if err := mgr.Add(warmUp); err != nil {
		return fmt.Errorf("adding the extension registry's warm-up: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha2.TopologyExtension{}).
		WatchesRawSource(source.Channel(health, &handler.TypedEnqueueRequestForObject[*v1alpha2.TopologyExtension]{})).
		WithOptions(opts).
		Named("topologyextension").
		Complete(r)
}

// topologiesOfExtension maps a TopologyExtension to the Topologies of every
// class with an external patch served by it: once its handlers are
// discovered (its status changes), they are reconciled with them.
func topologiesOfExtension(c client.Reader) handler.MapFunc {
	byClass := topologiesOfClass(c)
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var out []reconcile.Request
		for _, class := range classesUsingExtension(ctx, c, o.GetName()) {
			out = append(out, byClass(ctx, class)...)
		}
		return out
	}
}

// classesUsingExtension lists the classes with an external patch served by
// the extension; on a read error, none.
func classesUsingExtension(ctx context.Context, c client.Reader, ext string) []*v1alpha2.TopologyClass {
	classes := &v1alpha2.TopologyClassList{}
	if err := c.List(ctx, classes); err != nil {
		return nil
	}
	var out []*v1alpha2.TopologyClass
	for i := range classes.Items {
		if classUsesExtension(&classes.Items[i], ext) {
			out = append(out, &classes.Items[i])
		}
	}
	return out
}

func classUsesExtension(c *v1alpha2.TopologyClass, ext string) bool {
	for _, u := range extension.UsedBy(c) {
		if u.Extension == ext {
			return true
		}
	}
	return false
}
