package live

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestEditRolloutWritesOnlyAChangeAndRetriesAConflict: an edit that leaves
// the spec as it was sends no write; one that changes it is written, read
// again and redone after a conflict; a refusal says nothing was changed.
func TestEditRolloutWritesOnlyAChangeAndRetriesAConflict(t *testing.T) {
	ctx := context.Background()
	ro := &v1alpha2.TopologyRollout{ObjectMeta: metav1.ObjectMeta{Name: "to-134"}, Spec: v1alpha2.TopologyRolloutSpec{Change: v1alpha2.RolloutChange{Version: "v1.34.0"}}}
	updates, conflicts := 0, 1
	var refuse error
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(ro).WithInterceptorFuncs(interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			updates++
			if refuse != nil {
				return refuse
			}
			if conflicts > 0 {
				conflicts--
				return apierrors.NewConflict(schema.GroupResource{Group: v1alpha2.GroupVersion.Group, Resource: "topologyrollouts"}, obj.GetName(), errors.New("the object has been modified"))
			}
			return c.Update(ctx, obj, opts...)
		},
	}).Build()
	ca := &Cluster{Client: c, Context: "test"}

	if err := ca.EditRollout(ctx, "to-134", func(*v1alpha2.TopologyRollout) error { return nil }); err != nil || updates != 0 {
		t.Fatalf("an edit that changes nothing: %v, %d writes; want none", err, updates)
	}
	if err := ca.EditRollout(ctx, "to-134", func(ro *v1alpha2.TopologyRollout) error { ro.Spec.Paused = true; return nil }); err != nil || updates != 2 {
		t.Fatalf("pausing: %v after %d writes; want it written on the second try", err, updates)
	}
	if got, err := ca.Rollout(ctx, "to-134"); err != nil || !got.Spec.Paused {
		t.Fatalf("the rollout read back %+v, %v; want it paused", got, err)
	}
	refuse = apierrors.NewForbidden(schema.GroupResource{Group: v1alpha2.GroupVersion.Group, Resource: "topologyrollouts"}, "to-134", errors.New("denied"))
	err := ca.EditRollout(ctx, "to-134", func(ro *v1alpha2.TopologyRollout) error { ro.Spec.Paused = false; return nil })
	if err == nil || !strings.Contains(err.Error(), "TopologyRollout to-134; nothing was changed") {
		t.Errorf("a refused write: %v; want it to say nothing was changed", err)
	}
}

// TestExistingClassIsNilOnlyWhenThereIsNone: a missing class is nil with no
// error; one that exists is read; another error is said.
func TestExistingClassIsNilOnlyWhenThereIsNone(t *testing.T) {
	ctx := context.Background()
	class := &v1alpha2.TopologyClass{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "quick-start"}}
	denied := false
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(class).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if denied {
				return apierrors.NewForbidden(schema.GroupResource{Group: v1alpha2.GroupVersion.Group, Resource: "topologyclasses"}, key.Name, errors.New("denied"))
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	ca := &Cluster{Client: c, Context: "test"}
	if got, err := ca.ExistingClass(ctx, "default", "none"); got != nil || err != nil {
		t.Errorf("a missing class: %v, %v; want nil and no error", got, err)
	}
	if got, err := ca.ExistingClass(ctx, "default", "quick-start"); err != nil || got == nil || got.Name != "quick-start" {
		t.Errorf("an existing class: %v, %v; want it read", got, err)
	}
	denied = true
	if got, err := ca.ExistingClass(ctx, "default", "quick-start"); got != nil || err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("a forbidden read: %v, %v; want the refusal said", got, err)
	}
}
