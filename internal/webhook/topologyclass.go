package webhook

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/templateprobe"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TopologyClass validates classes, and that a change keeps every Topology
// using the class valid.
type TopologyClass struct {
	// Client lists the topologies of a class; it must index them by
	// v1alpha2.ClassKeyField, as the agent's cache does.
	Client client.Reader
	// Templates asks the cluster whether it stores a referenced template
	// kind; nil skips the question.
	Templates *TemplateStore
}

// TemplateStore reads referenced templates from the API server (Reader) and,
// for one that is not there, asks with a dry-run create (Writer) whether the
// cluster's providers refuse to store its kind.
type TemplateStore struct {
	Reader client.Reader
	Writer client.Client
}

var _ admission.Validator[*v1alpha2.TopologyClass] = &TopologyClass{}

// ValidateCreate checks the class on its own.
func (w *TopologyClass) ValidateCreate(ctx context.Context, c *v1alpha2.TopologyClass) (admission.Warnings, error) {
	if errs := rules.ValidateClass(ctx, c); len(errs) > 0 {
		return nil, invalidClass(c, errs)
	}
	if errs := w.Templates.refused(ctx, c); len(errs) > 0 {
		return nil, invalidClass(c, errs)
	}
	return nil, nil
}

// refused names each template the class references that is not there and
// whose kind the cluster's providers refuse to store, with the fix: a stock
// cluster refuses KubeadmControlPlaneTemplate, and a class referencing one
// would never get its cluster made.
func (s *TemplateStore) refused(ctx context.Context, c *v1alpha2.TopologyClass) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	for _, ref := range contract.ClassTemplateRefs(c) {
		there := &unstructured.Unstructured{}
		there.SetAPIVersion(ref.APIVersion)
		there.SetKind(ref.Kind)
		if err := s.Reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, there); !apierrors.IsNotFound(err) {
			continue // there, or unknown: the class's conditions say which
		}
		probe := templateprobe.Minimal(ctx, s.Writer, ref.APIVersion, ref.Kind, ref.Namespace, ref.Name)
		refusal, err := templateprobe.Probe(ctx, s.Writer, probe)
		if err != nil || refusal == nil {
			continue
		}
		errs = append(errs, field.Forbidden(ref.Slot.Child("templateRef"), fmt.Sprintf("%s; write the template into the class as %s instead (kubectl topology convert --inline=refused does it for the cluster in the current context)", refusal.Error(), ref.Slot.Child("template"))))
	}
	return errs
}

// ValidateUpdate checks the class, that it keeps its providers, then every
// Topology using it against the new class: a class change must not strand
// its clusters.
func (w *TopologyClass) ValidateUpdate(ctx context.Context, old, c *v1alpha2.TopologyClass) (admission.Warnings, error) {
	if errs := rules.ClassesCompatible(old, c); len(errs) > 0 {
		return nil, invalidClass(c, errs)
	}
	if errs := w.Templates.refused(ctx, c); len(errs) > 0 {
		return nil, invalidClass(c, errs)
	}
	cat, err := rules.CompileClass(ctx, c)
	if err != nil {
		if ie, ok := err.(*rules.InvalidError); ok {
			return nil, invalidClass(c, ie.Errors)
		}
		return nil, err
	}
	users, err := w.users(ctx, c)
	if err != nil {
		return nil, err
	}
	var errs field.ErrorList
	for i := range users {
		t := users[i].DeepCopy()
		spec := desiredstate.SpecPath(contract.DialectTopology)
		found := rules.DefaultTopology(t, cat, spec)
		found = append(found, rules.ValidateTopology(ctx, t, nil, c, cat, spec)...)
		for _, fe := range found {
			errs = append(errs, field.Forbidden(field.NewPath("spec"), fmt.Sprintf("Topology %s/%s would become invalid: %s", t.Namespace, t.Name, fe.Error())))
		}
	}
	if len(errs) > 0 {
		return nil, invalidClass(c, errs)
	}
	return nil, nil
}

// ValidateDelete refuses to delete a class that Topologies still use, but
// for clusterctl move's deletion of the source's copy: it moves a class and
// its Topologies alike and deletes them in no order between them.
func (w *TopologyClass) ValidateDelete(ctx context.Context, c *v1alpha2.TopologyClass) (admission.Warnings, error) {
	if _, moved := c.Annotations[contract.DeleteForMoveAnnotation]; moved {
		return nil, nil
	}
	users, err := w.users(ctx, c)
	if err != nil {
		return nil, err
	}
	if len(users) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(users))
	for _, t := range users {
		names = append(names, t.Namespace+"/"+t.Name)
	}
	sort.Strings(names)
	return nil, apierrors.NewForbidden(v1alpha2.GroupVersion.WithResource("topologyclasses").GroupResource(), c.Name,
		fmt.Errorf("TopologyClass is used by Topology %v: delete or move them first", names))
}

// users lists the Topologies of class c, in any namespace, from the cache's
// index of Topologies by class: a class of a thousand Topologies reads none
// it does not need.
func (w *TopologyClass) users(ctx context.Context, c *v1alpha2.TopologyClass) ([]v1alpha2.Topology, error) {
	list := &v1alpha2.TopologyList{}
	if err := w.Client.List(ctx, list, client.MatchingFields{v1alpha2.ClassKeyField: v1alpha2.ClassKeyValue(client.ObjectKeyFromObject(c))}); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("listing the Topologies of TopologyClass %s/%s: %w", c.Namespace, c.Name, err))
	}
	return list.Items, nil
}

func invalidClass(c *v1alpha2.TopologyClass, errs field.ErrorList) error {
	return apierrors.NewInvalid(v1alpha2.GroupVersion.WithKind("TopologyClass").GroupKind(), c.Name, errs)
}
