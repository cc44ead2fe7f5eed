package webhook

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

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

// ValidateCreate checks the rollout against the fleet it selects.
func (w *TopologyRollout) ValidateCreate(ctx context.Context, ro *v1alpha2.TopologyRollout) (admission.Warnings, error) {
	if _, errs := w.Members.Admit(ctx, ro, w.Members.Classes()); len(errs) > 0 {
		return nil, invalidRollout(ro, errs)
	}
	return nil, nil
}

// ValidateUpdate keeps the change, targets and started waves as they were.
func (w *TopologyRollout) ValidateUpdate(_ context.Context, old, ro *v1alpha2.TopologyRollout) (admission.Warnings, error) {
	if errs := membership.AdmitUpdate(old, ro); len(errs) > 0 {
		return nil, invalidRollout(ro, errs)
	}
	return nil, nil
}

// ValidateDelete allows every deletion: clusters stay as they are.
func (w *TopologyRollout) ValidateDelete(context.Context, *v1alpha2.TopologyRollout) (admission.Warnings, error) {
	return nil, nil
}

func invalidRollout(ro *v1alpha2.TopologyRollout, errs field.ErrorList) error {
	return apierrors.NewInvalid(v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyRolloutKind).GroupKind(), ro.Name, errs)
}
