package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/extension"
	"github.com/kubectl-topology/kubectl-topology/internal/loader"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Condition types and reasons on TopologyClass.status.
const (
	ExternalPatchesReadyCondition = "ExternalPatchesReady"
	ReasonExtensionsReady         = "ExtensionsReady"
	ReasonExtensionNotReady       = "ExtensionNotReady"
	VariablesReconciledCondition  = "VariablesReconciled"
	ReasonVariablesReconciled     = "VariablesReconciled"
	ReasonInvalidClass            = "InvalidClass"
	ReasonVariableDiscoveryFail   = "VariableDiscoveryFailed"
	ReasonVariablesConflict       = "VariableDefinitionsConflict"
	RefVersionsUpToDateCondition  = "RefVersionsUpToDate"
	ReasonRefVersionsUpToDate     = "RefVersionsUpToDate"
	ReasonRefVersionsNotUpToDate  = "RefVersionsNotUpToDate"
)

// TopologyClassReconciler reports a class's variables and validity, and makes
// sure changes to its templates reach its topologies.
type TopologyClassReconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Classes is shared with the Topology reconciler, so a class is compiled once.
	Classes *rules.ClassCache
	// TemplateWatches is the Topology controller's: watching a class's template
	// kinds there re-reconciles the class's topologies when a template changes.
	TemplateWatches func() *DynamicWatches
	// Extensions discovers the variables of external patches; nil skips it.
	Extensions *extension.Client
	// CoreVersion is the Cluster API core version the management cluster
	// stores. On v1beta1 (v1.10) outdated template references are moved to the
	// contract's version, as v1.10 did; on v1beta2 they are reported, as v1.14
	// does, since patch selectors name the version the class was written for.
	CoreVersion contract.CoreVersion
}

// Reconcile validates the class and writes status.variables, the
// VariablesReconciled condition and observedGeneration.
func (r *TopologyClassReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	class := &v1alpha2.TopologyClass{}
	if err := r.Client.Get(ctx, req.NamespacedName, class); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	outdated, err := r.outdatedRefs(ctx, class)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !r.CoreVersion.IsV1Beta2() {
		if updated, err := r.updateRefVersions(ctx, class, outdated); err != nil || updated {
			return ctrl.Result{}, err // an update comes back as a new reconcile
		}
	}
	// Owning the templates serves clusterctl move and clean-up, not the
	// Topologies: a failure (an agent role without patch on a provider's
	// kinds) is logged and tried again later, and holds nothing up.
	templateMissing, ownErr := r.ownTemplates(ctx, class)
	if ownErr != nil {
		ctrl.LoggerFrom(ctx).Error(ownErr, "Could not make the class an owner of its templates; clusterctl move will not carry them")
	}
	missingKinds := false
	if w := r.TemplateWatches(); w != nil {
		// What every Topology of the class reads is warmed on every replica
		// by WarmCaches, as each class comes.
		for _, ref := range contract.ClassTemplateRefs(class) {
			err := w.Ensure(ctx, schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind))
			if errors.Is(err, ErrKindNotInstalled) {
				missingKinds = true // looked at again later: providers may come after their classes
				continue
			}
			if err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	before := class.Status.DeepCopy()
	cond := metav1.Condition{Type: VariablesReconciledCondition, Status: metav1.ConditionTrue, Reason: ReasonVariablesReconciled, ObservedGeneration: class.Generation}
	var result ctrl.Result
	if missingKinds || templateMissing || ownErr != nil {
		result.RequeueAfter = rediscoverAfterFailure
	}
	discovered, failed := r.discoverVariables(ctx, class)
	class.Status.Variables = rules.StatusVariables(class, discovered)
	if conflicts := rules.ConflictingVariables(class.Status.Variables); len(conflicts) > 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonVariablesConflict
		cond.Message = fmt.Sprintf("variables %s are defined differently by the class and its extensions; Topologies cannot set them until the definitions agree", strings.Join(conflicts, ", "))
	}
	if failed != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonVariableDiscoveryFail, failed.Error()
		result.RequeueAfter = rediscoverAfterFailure
	}
	_, err = r.Classes.Get(ctx, class)
	var invalid *rules.InvalidError
	switch {
	case errors.As(err, &invalid):
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonInvalidClass, err.Error()
	case err != nil:
		return ctrl.Result{}, err
	}
	class.Status.ObservedGeneration = class.Generation
	meta.SetStatusCondition(&class.Status.Conditions, cond)
	if r.CoreVersion.IsV1Beta2() {
		meta.SetStatusCondition(&class.Status.Conditions, refVersionsCondition(class, outdated))
	}
	if contract.HasExternalPatches(class) {
		meta.SetStatusCondition(&class.Status.Conditions, r.externalPatchesReady(ctx, class))
	} else {
		meta.RemoveStatusCondition(&class.Status.Conditions, ExternalPatchesReadyCondition)
	}
	if equality.Semantic.DeepEqual(before, &class.Status) {
		return result, nil
	}
	orig := class.DeepCopy()
	orig.Status = *before
	if err := r.Client.Status().Patch(ctx, class, client.MergeFrom(orig)); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing status of TopologyClass %s: %w", req, client.IgnoreNotFound(err))
	}
	return result, nil
}

// ownTemplates makes the class an owner (not the controller) of each
// template it references, as upstream's ClusterClass controller does:
// clusterctl move carries a class's templates with it through that
// ownership, and deleting the class lets the garbage collector remove them.
// It reports whether a template is not there yet (to be owned once it is)
// and what could not be patched; it goes on past both.
func (r *TopologyClassReconciler) ownTemplates(ctx context.Context, class *v1alpha2.TopologyClass) (missing bool, err error) {
	owner := metav1.OwnerReference{APIVersion: v1alpha2.GroupVersion.String(), Kind: v1alpha2.TopologyClassKind, Name: class.Name, UID: class.UID}
	var errs []error
	for _, ref := range contract.ClassTemplateRefs(class) {
		tmpl := &unstructured.Unstructured{}
		tmpl.SetAPIVersion(ref.APIVersion)
		tmpl.SetKind(ref.Kind)
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, tmpl)
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			missing = true
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("reading %s %s/%s of TopologyClass %s (%s): %w", ref.Kind, ref.Namespace, ref.Name, class.Name, ref.Field, err))
			continue
		}
		if desiredstate.OwnedBy(tmpl, class.UID) {
			continue
		}
		// Without a lock, as upstream patches its owner in: the cache's copy
		// may lag a write of another field, which would only make a conflict.
		patch := client.MergeFrom(tmpl.DeepCopy())
		tmpl.SetOwnerReferences(append(tmpl.GetOwnerReferences(), owner))
		if err := r.Client.Patch(ctx, tmpl, patch); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("making TopologyClass %s an owner of %s %s/%s (%s): %w", class.Name, ref.Kind, ref.Namespace, ref.Name, ref.Field, err))
		}
	}
	return missing, errors.Join(errs...)
}

// refChange is a template reference at an older API version than the one its
// provider's CRD names for the newest Cluster API contract.
type refChange struct {
	field, kind, name, from, to string
	ref                         *v1alpha2.ClusterClassTemplateReference
}

// outdatedRefs finds the template references whose provider's CRD names a
// newer version for the Cluster API contract, as upstream picks it.
func (r *TopologyClassReconciler) outdatedRefs(ctx context.Context, class *v1alpha2.TopologyClass) ([]refChange, error) {
	var out []refChange
	var errs []error
	contract.VisitTemplateRefs(class, func(ref *v1alpha2.ClusterClassTemplateReference, field string) {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return // the class webhook reports it
		}
		crd, err := loader.CRDOf(ctx, r.Client, r.Client.RESTMapper(), schema.GroupKind{Group: gv.Group, Kind: ref.Kind})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", field, err))
			return
		}
		if crd == nil {
			return // not installed: reconciling a Topology names the missing kind
		}
		v, ok := contract.ContractVersion(crd.Labels)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: CRD %s carries neither the cluster.x-k8s.io/v1beta2 nor the cluster.x-k8s.io/v1beta1 contract label, so no version of %s can be picked: label the CRD as its provider's manifests do", field, crd.Name, ref.Kind))
			return
		}
		if v != gv.Version {
			out = append(out, refChange{field: field, kind: ref.Kind, name: ref.Name, from: gv.Version, to: v, ref: ref})
		}
	})
	return out, errors.Join(errs...)
}

// updateRefVersions moves each outdated template reference to the API version
// its provider's CRD names for the contract, as upstream v1.10's ClusterClass
// controller did. It reports whether it updated the class.
func (r *TopologyClassReconciler) updateRefVersions(ctx context.Context, class *v1alpha2.TopologyClass, outdated []refChange) (bool, error) {
	if len(outdated) == 0 {
		return false, nil
	}
	orig := class.DeepCopy()
	var changed []string
	for _, c := range outdated {
		gv, _ := schema.ParseGroupVersion(c.ref.APIVersion)
		c.ref.APIVersion = schema.GroupVersion{Group: gv.Group, Version: c.to}.String()
		changed = append(changed, fmt.Sprintf("%s %s -> %s", c.field, c.from, c.to))
	}
	if err := r.Client.Patch(ctx, class, client.MergeFrom(orig)); err != nil {
		return false, fmt.Errorf("updating the template versions of TopologyClass %s/%s (%s): %w", class.Namespace, class.Name, strings.Join(changed, "; "), err)
	}
	ctrl.LoggerFrom(ctx).Info("Moved template references to the contract's API version", "changes", changed)
	return true, nil
}

// refVersionsCondition reports outdated template references, as upstream
// v1.14 does instead of moving them: the class's patch selectors name the
// version the class was written for, and would stop matching.
func refVersionsCondition(class *v1alpha2.TopologyClass, outdated []refChange) metav1.Condition {
	c := metav1.Condition{Type: RefVersionsUpToDateCondition, Status: metav1.ConditionTrue, Reason: ReasonRefVersionsUpToDate, ObservedGeneration: class.Generation}
	if len(outdated) == 0 {
		return c
	}
	lines := []string{"these templateRefs are not at the newest version their provider offers; move each, with the patch selectors naming it:"}
	for _, o := range outdated {
		lines = append(lines, fmt.Sprintf("* %s %s (%s): %s, newest %s", o.kind, o.name, o.field, o.from, o.to))
	}
	c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonRefVersionsNotUpToDate, strings.Join(lines, "\n")
	return c
}

// discoverVariables asks the extension of every external patch that has a
// discoverVariablesExtension for its variables. When one cannot be asked,
// what status last recorded for that patch stands, and the error says why.
func (r *TopologyClassReconciler) discoverVariables(ctx context.Context, class *v1alpha2.TopologyClass) ([]rules.PatchVariables, error) {
	if r.Extensions == nil {
		var out []rules.PatchVariables
		for _, p := range class.Spec.Patches {
			if p.External != nil && p.External.DiscoverVariablesExtension != nil {
				out = append(out, rules.PatchVariables{Patch: p.Name, Variables: recorded(class, p.Name)})
			}
		}
		return out, nil
	}
	out := r.Extensions.DiscoverVariables(ctx, class)
	var errs []string
	for i, d := range out {
		if d.Err != nil {
			errs = append(errs, fmt.Sprintf("patch %q: %v", d.Patch, d.Err))
			out[i] = rules.PatchVariables{Patch: d.Patch, Variables: recorded(class, d.Patch)}
		}
	}
	if len(errs) > 0 {
		return out, errors.New(strings.Join(errs, "; "))
	}
	return out, nil
}

// recorded is what status holds of the variables a patch's extension defined.
func recorded(class *v1alpha2.TopologyClass, patch string) []v1alpha2.ClusterClassVariable {
	var out []v1alpha2.ClusterClassVariable
	for _, v := range class.Status.Variables {
		for _, d := range v.Definitions {
			if d.From == patch {
				out = append(out, v1alpha2.ClusterClassVariable{Name: v.Name, Required: d.Required, DeprecatedV1Beta1Metadata: d.DeprecatedV1Beta1Metadata, Schema: d.Schema})
			}
		}
	}
	return out
}

// externalPatchesReady says whether every extension the class's external
// patches use is discovered and answering, from the TopologyExtensions'
// own conditions, naming the first that is not.
func (r *TopologyClassReconciler) externalPatchesReady(ctx context.Context, class *v1alpha2.TopologyClass) metav1.Condition {
	cond := metav1.Condition{Type: ExternalPatchesReadyCondition, Status: metav1.ConditionTrue, Reason: ReasonExtensionsReady, ObservedGeneration: class.Generation}
	for _, use := range extension.UsedBy(class) {
		ext := &v1alpha2.TopologyExtension{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: use.Extension}, ext); err != nil {
			cond.Status, cond.Reason = metav1.ConditionFalse, ReasonExtensionNotReady
			cond.Message = fmt.Sprintf("patch %s uses TopologyExtension %s, which cannot be read: %v", use.Patch, use.Extension, client.IgnoreNotFound(err))
			if apierrors.IsNotFound(err) {
				cond.Message = fmt.Sprintf("patch %s uses TopologyExtension %s, which does not exist: create it", use.Patch, use.Extension)
			}
			return cond
		}
		for _, t := range []string{DiscoveredCondition, RespondingCondition} {
			if c := meta.FindStatusCondition(ext.Status.Conditions, t); c != nil && c.Status == metav1.ConditionFalse {
				cond.Status, cond.Reason = metav1.ConditionFalse, ReasonExtensionNotReady
				cond.Message = fmt.Sprintf("patch %s uses TopologyExtension %s: %s: %s", use.Patch, use.Extension, c.Reason, c.Message)
				return cond
			}
		}
	}
	return cond
}

// SetupWithManager registers the TopologyClass controller.
func (r *TopologyClassReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha2.TopologyClass{}).
		Watches(&v1alpha2.TopologyExtension{}, handler.EnqueueRequestsFromMapFunc(classesOfExtension(mgr.GetClient()))).
		WithOptions(opts).
		Named("topologyclass").
		Complete(r)
}

// classesOfExtension maps a TopologyExtension to the classes with an
// external patch it serves, so their variables are discovered once it is.
func classesOfExtension(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var out []reconcile.Request
		for _, class := range classesUsingExtension(ctx, c, o.GetName()) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(class)})
		}
		return out
	}
}
