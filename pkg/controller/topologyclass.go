package controller

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine"
)

// Condition type and reasons on TopologyClass.status.
const (
	VariablesReconciledCondition = "VariablesReconciled"
	ReasonVariablesReconciled    = "VariablesReconciled"
	ReasonInvalidClass           = "InvalidClass"
)

// TopologyClassReconciler reports a class's variables and validity, and makes
// sure changes to its templates reach its topologies.
type TopologyClassReconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Classes is shared with the Topology reconciler, so a class is compiled once.
	Classes *ClassCache
	// TemplateWatches is the Topology controller's: watching a class's template
	// kinds there re-reconciles the class's topologies when a template changes.
	TemplateWatches func() *DynamicWatches
}

// Reconcile validates the class and writes status.variables, the
// VariablesReconciled condition and observedGeneration.
func (r *TopologyClassReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	class := &v1alpha1.TopologyClass{}
	if err := r.Client.Get(ctx, req.NamespacedName, class); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if w := r.TemplateWatches(); w != nil {
		for _, ref := range engine.ClassTemplateRefs(class) {
			if err := w.Ensure(ctx, schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	before := class.Status.DeepCopy()
	cond := metav1.Condition{Type: VariablesReconciledCondition, Status: metav1.ConditionTrue, Reason: ReasonVariablesReconciled, ObservedGeneration: class.Generation}
	_, err := r.Classes.Get(ctx, class)
	var invalid *engine.InvalidError
	switch {
	case errors.As(err, &invalid):
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonInvalidClass, err.Error()
	case err != nil:
		return ctrl.Result{}, err
	}
	class.Status.Variables = statusVariables(class)
	class.Status.ObservedGeneration = class.Generation
	meta.SetStatusCondition(&class.Status.Conditions, cond)
	if equality.Semantic.DeepEqual(before, &class.Status) {
		return ctrl.Result{}, nil
	}
	orig := class.DeepCopy()
	orig.Status = *before
	if err := r.Client.Status().Patch(ctx, class, client.MergeFrom(orig)); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing status of TopologyClass %s: %w", req, client.IgnoreNotFound(err))
	}
	return ctrl.Result{}, nil
}

// statusVariables lists the class's inline variables as status does, with
// where each definition comes from.
func statusVariables(c *v1alpha1.TopologyClass) []v1alpha1.ClusterClassStatusVariable {
	out := make([]v1alpha1.ClusterClassStatusVariable, 0, len(c.Spec.Variables))
	for _, v := range c.Spec.Variables {
		out = append(out, v1alpha1.ClusterClassStatusVariable{
			Name: v.Name,
			Definitions: []v1alpha1.ClusterClassStatusVariableDefinition{{
				From: v1alpha1.VariableDefinitionFromInline, Required: v.Required, Metadata: v.Metadata, Schema: v.Schema,
			}},
		})
	}
	return out
}

// SetupWithManager registers the TopologyClass controller.
func (r *TopologyClassReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.TopologyClass{}).
		WithOptions(opts).
		Named("topologyclass").
		Complete(r)
}
