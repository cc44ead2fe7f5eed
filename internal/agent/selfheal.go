package agent

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubectl-topology/kubectl-topology/internal/selfinstall"
	topologywebhook "github.com/kubectl-topology/kubectl-topology/internal/webhook"
	"github.com/kubectl-topology/kubectl-topology/manifests"
)

// selfInstallKey is the one request the self-install controller works on:
// whatever changed, everything the agent installs is checked again.
var selfInstallKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "self-install"}}

// setupSelfHeal watches what the agent installed for itself at start — its
// CRDs and webhook configurations — and installs it again when someone
// deletes or changes it: without the webhooks, invalid Topologies are
// admitted. CRDs are watched as metadata only, so the cache holds no schemas.
func (a *Agent) setupSelfHeal() error {
	crdNames := map[string]bool{}
	for _, crd := range a.crds {
		crdNames[crd.Name] = true
	}
	ours := func(names map[string]bool) builder.Predicates {
		return builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return names[o.GetName()] }))
	}
	toKey := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{selfInstallKey}
	})
	b := ctrl.NewControllerManagedBy(a.mgr).
		Named("selfinstall").
		WithOptions(controller.Options{SkipNameValidation: &a.opts.SkipNameValidation}).
		WatchesMetadata(&apiextensionsv1.CustomResourceDefinition{}, toKey, ours(crdNames))
	if a.opts.Webhooks {
		webhooks := map[string]bool{topologywebhook.MutatingConfigurationName: true, topologywebhook.ValidatingConfigurationName: true}
		b = b.Watches(&admissionregistrationv1.MutatingWebhookConfiguration{}, toKey, ours(webhooks)).
			Watches(&admissionregistrationv1.ValidatingWebhookConfiguration{}, toKey, ours(webhooks))
	}
	return b.Complete(reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
		if err := selfinstall.ApplyCRDs(ctx, a.cfg, a.crds); err != nil {
			return reconcile.Result{}, fmt.Errorf("re-installing CRDs: %w", err)
		}
		if !a.opts.Webhooks {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, a.registerWebhooks(ctx)
	}))
}

// readCRDs returns fresh copies of the embedded CRDs: applying them stamps
// annotations on what it is given.
func readCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return selfinstall.ReadCRDsFS(manifests.CRDs)
}
