package live

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Rollout reads the fleet rollout name.
func (ca *Cluster) Rollout(ctx context.Context, name string) (*v1alpha2.TopologyRollout, error) {
	ro := &v1alpha2.TopologyRollout{}
	if err := ca.Client.Get(ctx, client.ObjectKey{Name: name}, ro); err != nil {
		return nil, fmt.Errorf("reading TopologyRollout %s: %w", name, Explain(err, ca))
	}
	return ro, nil
}

// Rollouts lists every fleet rollout, oldest first.
func (ca *Cluster) Rollouts(ctx context.Context) ([]v1alpha2.TopologyRollout, error) {
	list := &v1alpha2.TopologyRolloutList{}
	if err := ca.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing TopologyRollouts: %w", Explain(err, ca))
	}
	slices.SortFunc(list.Items, func(a, b v1alpha2.TopologyRollout) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	return list.Items, nil
}

// CreateRollout creates ro; its admission is the agent's webhook.
func (ca *Cluster) CreateRollout(ctx context.Context, ro *v1alpha2.TopologyRollout) error {
	if err := ca.Client.Create(ctx, ro); err != nil {
		return fmt.Errorf("creating TopologyRollout %s: %w", ro.Name, Explain(err, ca))
	}
	return nil
}

// EditRollout reads the rollout name, edits it and writes it guarded by the
// version read, again from a newer version after a conflict (the agent
// writes its status often). An edit that leaves the spec as it was writes
// nothing.
func (ca *Cluster) EditRollout(ctx context.Context, name string, edit func(*v1alpha2.TopologyRollout) error) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ro, err := ca.Rollout(ctx, name)
		if err != nil {
			return err
		}
		before := ro.Spec.DeepCopy()
		if err := edit(ro); err != nil || apiequality.Semantic.DeepEqual(*before, ro.Spec) {
			return err
		}
		return ca.Client.Update(ctx, ro)
	})
	if apierrors.IsConflict(err) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
		return fmt.Errorf("updating TopologyRollout %s; nothing was changed: %w", name, Explain(err, ca))
	}
	return err
}

// WhoAmI is the user the API server authenticates this client as, as
// `kubectl auth whoami` asks it.
func (ca *Cluster) WhoAmI(ctx context.Context) (string, error) {
	review := &authenticationv1.SelfSubjectReview{}
	if err := ca.Client.Create(ctx, review); err != nil {
		return "", fmt.Errorf("asking the API server who you are (a SelfSubjectReview, as kubectl auth whoami does): %w", Explain(err, ca))
	}
	if review.Status.UserInfo.Username == "" {
		return "", errors.New("the API server did not say who you are: an approval needs a user name")
	}
	return review.Status.UserInfo.Username, nil
}
