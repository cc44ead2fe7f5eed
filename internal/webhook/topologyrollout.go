package webhook

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/internal/membership"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TopologyRollout refuses a rollout that cannot be carried out, and changes
// to a rollout that would make its status lie.
type TopologyRollout struct {
	// Members reads the fleet: the agent's cache.
	Members membership.Reader
}

var _ admission.Validator[*v1alpha2.TopologyRollout] = &TopologyRollout{}

// ValidateCreate checks the rollout against the fleet it selects; a
// restored one only for what it says itself.
func (w *TopologyRollout) ValidateCreate(ctx context.Context, ro *v1alpha2.TopologyRollout) (admission.Warnings, error) {
	if fleet.Restoring(ro) {
		return restored(ro)
	}
	errs := approvers(ctx, nil, ro)
	if _, _, admitErrs := w.Members.Admit(ctx, ro, w.Members.Classes()); len(admitErrs) > 0 {
		errs = append(errs, admitErrs...)
	}
	if len(errs) > 0 {
		return nil, invalidRollout(ro, errs)
	}
	return nil, nil
}

// restored admits a rollout that clusterctl move (or a backup read back)
// creates: the source admitted it and its approvers there. Its clusters
// arrive after it, so the fleet is not checked; the agent pauses it until
// they are here. Its strategy and carried status must still be sound.
func restored(ro *v1alpha2.TopologyRollout) (admission.Warnings, error) {
	errs := append(fleet.ValidateStrategy(ro.Spec.Strategy), membership.ValidateGates(ro)...)
	if _, _, err := fleet.Carried(ro); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations").Key(v1alpha2.RolloutStatusAnnotation), "(the carried status)", err.Error()))
	}
	if len(errs) > 0 {
		return nil, invalidRollout(ro, errs)
	}
	return admission.Warnings{fmt.Sprintf("TopologyRollout %s is restored with the status and approvals its annotation %s carries; the agent pauses it until its clusters are here", ro.Name, v1alpha2.RolloutStatusAnnotation)}, nil
}

// ValidateUpdate keeps the change, targets, started waves and approvals as
// they were.
func (w *TopologyRollout) ValidateUpdate(ctx context.Context, old, ro *v1alpha2.TopologyRollout) (admission.Warnings, error) {
	errs := append(membership.AdmitUpdate(old, ro), approvers(ctx, old, ro)...)
	if len(errs) > 0 {
		return nil, invalidRollout(ro, errs)
	}
	return nil, nil
}

// approvers refuses an approval that ro adds (to old's, nil on create) in
// the name of anyone but the user sending it, so that spec.approvals says
// who approved as the API server authenticated them.
func approvers(ctx context.Context, old, ro *v1alpha2.TopologyRollout) field.ErrorList {
	var errs field.ErrorList
	req, err := admission.RequestFromContext(ctx)
	for i, a := range ro.Spec.Approvals {
		if old != nil && slices.ContainsFunc(old.Spec.Approvals, func(b v1alpha2.RolloutApproval) bool { return b.Wave == a.Wave && b.By == a.By }) {
			continue
		}
		path := field.NewPath("spec", "approvals").Index(i).Child("by")
		switch {
		case err != nil:
			errs = append(errs, field.InternalError(path, fmt.Errorf("the request's user is unknown: %w", err)))
		case a.By != req.UserInfo.Username:
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("an approval is given by the user who sends it (%s), not %s: run `kubectl topology rollout approve %s --wave %d` as that user", req.UserInfo.Username, a.By, ro.Name, a.Wave)))
		}
	}
	return errs
}

// ValidateDelete allows every deletion: clusters stay as they are.
func (w *TopologyRollout) ValidateDelete(context.Context, *v1alpha2.TopologyRollout) (admission.Warnings, error) {
	return nil, nil
}

func invalidRollout(ro *v1alpha2.TopologyRollout, errs field.ErrorList) error {
	return apierrors.NewInvalid(v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyRolloutKind).GroupKind(), ro.Name, errs)
}
