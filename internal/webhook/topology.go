// Package webhook holds the agent's admission webhooks: defaulting and
// validation of Topologies, validation of TopologyClasses. Every rule is in
// internal/engine/rules, so `plan`, the TUI and the API server agree.
package webhook

import (
	"context"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Topology defaults and validates Topologies against their class.
type Topology struct {
	// classes reads TopologyClasses.
	classes classReader
	// Classes compiles each class generation once; shared with the controllers.
	Classes *rules.ClassCache
}

var (
	_ admission.Defaulter[*v1alpha2.Topology] = &Topology{}
	_ admission.Validator[*v1alpha2.Topology] = &Topology{}
)

// class finds and compiles the topology's class; nil without error when it
// does not exist yet, which GitOps tools create in any order.
func (w *Topology) class(ctx context.Context, t *v1alpha2.Topology) (*rules.CompiledClass, error) {
	key := t.GetClassKey()
	c := &v1alpha2.TopologyClass{}
	if err := w.classes.get(ctx, key, c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, apierrors.NewInternalError(fmt.Errorf("reading TopologyClass %s: %w", key, err))
	}
	compiled, err := w.Classes.Get(ctx, c)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.classRef: TopologyClass %s is invalid, fix it first: %v", key, err))
	}
	return compiled, nil
}

// Default fills in variable defaults from the class's schemas. It never
// refuses: values it cannot default are left for validation to report, and an
// object being deleted is left alone, so that removing a finalizer always works.
func (w *Topology) Default(ctx context.Context, t *v1alpha2.Topology) error {
	if !t.DeletionTimestamp.IsZero() || t.Spec.ClassRef.Name == "" || specUnchanged(ctx, t) {
		return nil
	}
	c, err := w.class(ctx, t)
	if err != nil || c == nil {
		return nil // validation reports a class it cannot read
	}
	defaulted := t.DeepCopy()
	if errs := rules.DefaultTopology(defaulted, c.Catalog, desiredstate.SpecPath(contract.DialectTopology)); len(errs) == 0 {
		t.Spec = defaulted.Spec
	}
	return nil
}

// specUnchanged reports whether the admission request t comes from is an
// update that leaves the spec as it was: metadata only, which defaulting
// must not turn into a spec change that validation would then refuse.
func specUnchanged(ctx context.Context, t *v1alpha2.Topology) bool {
	req, err := admission.RequestFromContext(ctx)
	if err != nil || req.Operation != admissionv1.Update || len(req.OldObject.Raw) == 0 {
		return false
	}
	old := &v1alpha2.Topology{}
	if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
		return false
	}
	return equality.Semantic.DeepEqual(old.Spec, t.Spec)
}

// ValidateCreate checks the topology against its class.
func (w *Topology) ValidateCreate(ctx context.Context, t *v1alpha2.Topology) (admission.Warnings, error) {
	return w.validate(ctx, nil, t)
}

// ValidateUpdate checks the topology against its class, and the version
// change against the rollout in flight.
func (w *Topology) ValidateUpdate(ctx context.Context, old, t *v1alpha2.Topology) (admission.Warnings, error) {
	return w.validate(ctx, old, t)
}

// ValidateDelete allows every deletion: the agent's finalizer cleans up.
func (w *Topology) ValidateDelete(context.Context, *v1alpha2.Topology) (admission.Warnings, error) {
	return nil, nil
}

func (w *Topology) validate(ctx context.Context, old, t *v1alpha2.Topology) (admission.Warnings, error) {
	spec := desiredstate.SpecPath(contract.DialectTopology)
	if old != nil && equality.Semantic.DeepEqual(old.Spec, t.Spec) {
		// Metadata only: finalizers, labels, annotations. The spec was admitted
		// before and may have become invalid since (its class arrived later);
		// that must never block removing a finalizer or labelling the object.
		if !t.DeletionTimestamp.IsZero() {
			return nil, nil
		}
		if errs := rules.ValidateTopologyMetadata(t); len(errs) > 0 {
			return nil, invalid(t, errs)
		}
		return nil, nil
	}
	// What needs no class first: a bad name, version or value is reported
	// before anything is looked up, and never as a server error.
	errs := rules.ValidateTopologyFields(t, old, spec)
	if old != nil {
		if oldKey, newKey := old.GetClassKey(), t.GetClassKey(); old.Spec.ClassRef.Name != "" && t.Spec.ClassRef.Name != "" && oldKey != newKey {
			if _, unsafe := t.Annotations[clusterv1.ClusterTopologyUnsafeUpdateClassNameAnnotation]; !unsafe {
				rebaseErrs, err := w.rebase(ctx, old, t)
				if err != nil {
					return nil, err
				}
				errs = append(errs, rebaseErrs...)
			}
		}
	}
	if len(errs) > 0 {
		return nil, invalid(t, errs)
	}
	c, err := w.class(ctx, t)
	if err != nil {
		return nil, err
	}
	// The version rules need the class where there is one: its
	// kubernetesVersions allow an upgrade chained over several minors.
	var class *v1alpha2.TopologyClass
	if c != nil {
		class = c.Class
	}
	if errs := validateVersionChange(old, t, class); len(errs) > 0 {
		return nil, invalid(t, errs)
	}
	if c == nil {
		return admission.Warnings{fmt.Sprintf("TopologyClass %s does not exist yet: variables are checked when the agent reconciles", t.Spec.ClassRef.Name)}, nil
	}
	if errs := rules.ValidateTopology(ctx, t, old, c.Class, c.Catalog, spec); len(errs) > 0 {
		return nil, invalid(t, errs)
	}
	return nil, nil
}

// validateVersionChange applies the version rules to an update; class may
// be nil, and then an upgrade may move one minor only.
func validateVersionChange(old, t *v1alpha2.Topology, class *v1alpha2.TopologyClass) field.ErrorList {
	if old == nil {
		return nil
	}
	vc := rules.VersionChangeOf(old, t.Spec.Version)
	vc.Unsafe = upgrade.UnsafeVersionChange(t)
	return rules.ValidateVersionChange(vc.ForClass(class))
}

// rebase checks a switch of class ("rebase", upstream calls it): both
// classes must exist and be compatible, so the cluster keeps its providers.
// The new class's own rules for the Topology are checked after this, as for
// any update.
func (w *Topology) rebase(ctx context.Context, old, t *v1alpha2.Topology) (field.ErrorList, error) {
	classPath := field.NewPath("spec", "class")
	from, to := &v1alpha2.TopologyClass{}, &v1alpha2.TopologyClass{}
	for _, c := range []struct {
		key types.NamespacedName
		obj *v1alpha2.TopologyClass
	}{{old.GetClassKey(), from}, {t.GetClassKey(), to}} {
		if err := w.classes.get(ctx, c.key, c.obj); err != nil {
			if apierrors.IsNotFound(err) {
				return field.ErrorList{field.Forbidden(classPath, fmt.Sprintf("cannot switch from class %s to %s: TopologyClass %s does not exist", old.GetClassKey(), t.GetClassKey(), c.key))}, nil
			}
			return nil, apierrors.NewInternalError(fmt.Errorf("reading TopologyClass %s: %w", c.key, err))
		}
	}
	var errs field.ErrorList
	for _, e := range rules.ClassesCompatible(from, to) {
		errs = append(errs, field.Forbidden(classPath, fmt.Sprintf("cannot switch from class %s to %s: %s: %s; set the %s annotation to force it",
			old.GetClassKey(), t.GetClassKey(), e.Field, e.Detail, clusterv1.ClusterTopologyUnsafeUpdateClassNameAnnotation)))
	}
	return errs, nil
}

func invalid(t *v1alpha2.Topology, errs field.ErrorList) error {
	return apierrors.NewInvalid(v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyKind).GroupKind(), t.Name, errs)
}
