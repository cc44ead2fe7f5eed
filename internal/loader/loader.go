// Package loader reads from the API server what the engine needs for one
// Topology: its class, the class's templates, the objects generated for it
// (adopting those made before its Cluster existed) and the rollout state,
// refined by its Machines. The agent, `plan NAME`, `edit`, `status`, `scale`,
// `set` and `upgrade` all read through it, so that what they preview is what
// the agent does.
package loader

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/bundle"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/core"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// NotFoundError is a reference to something that does not exist (yet): the
// Topology's class, or one of the class's templates. Its message names the
// field that refers to it and what to do.
type NotFoundError struct{ msg string }

func (e *NotFoundError) Error() string { return e.msg }

// Loader reads through Reader.
type Loader struct {
	// Reader reads everything by default: the agent's cache, or the
	// plugin's direct client.
	Reader client.Reader
	// TemplateReader, when set, reads the class's templates in namespaces
	// Reader cannot (an agent that watches one namespace).
	TemplateReader func(namespace string) client.Reader
	// ByCluster, when set, names a field index of Reader on the cluster-name
	// label, making sure the kind is indexed first: a cache lists one
	// cluster's objects by it without scanning the whole namespace. Unset,
	// objects are listed by label, as the API server does well.
	ByCluster func(ctx context.Context, gvk schema.GroupVersionKind) (string, error)
	// CoreVersion is the Cluster API core version to read Clusters,
	// MachineDeployments, Machines and the like in; v1beta1 when unset.
	CoreVersion contract.CoreVersion
	// GivenClass, when set, is the class to use instead of reading the
	// Topology's: one not created yet, as adopt previews.
	GivenClass *v1alpha2.TopologyClass
	// Mapper, when set, finds the CRDs of the class's provider kinds, whose
	// labels say which Cluster API contract each implements. Unset, every
	// provider is taken to follow CoreVersion's contract.
	Mapper meta.RESTMapper
}

// Loaded is everything the engine needs for one Topology, as it is now.
type Loaded struct {
	// Class is the Topology's TopologyClass.
	Class *v1alpha2.TopologyClass
	// Templates are the templates the class references.
	Templates *clusterstate.TemplateIndex
	// Objects are the Cluster and every object labelled for it.
	Objects []*unstructured.Unstructured
	// Current is the Topology's state, found among Objects.
	Current *clusterstate.State
	// Observed is the rollout state of its parts.
	Observed *upgrade.Observed
	// Contracts are the Cluster API contracts of the class's provider kinds.
	Contracts contract.Contracts
	// CoreVersion is the Cluster API core version the objects were read in.
	CoreVersion contract.CoreVersion
}

// Load reads all of it.
func (l *Loader) Load(ctx context.Context, t *v1alpha2.Topology) (*Loaded, error) {
	class, err := l.Class(ctx, t)
	if err != nil {
		return nil, err
	}
	templates, err := l.Templates(ctx, class)
	if err != nil {
		return nil, err
	}
	objs, err := l.Objects(ctx, t, class)
	if err != nil {
		return nil, err
	}
	current := State(t, class, objs)
	observed, err := l.Observe(ctx, t, current)
	if err != nil {
		return nil, err
	}
	contracts, err := l.Contracts(ctx, class)
	if err != nil {
		return nil, err
	}
	return &Loaded{Class: class, Templates: templates, Objects: objs, Current: current, Observed: observed, Contracts: contracts, CoreVersion: l.CoreVersion}, nil
}

// Contracts reads which Cluster API contract each provider kind of the class
// implements at the version the class names, from the kind's CRD labels.
// A kind without a CRD to read, or a version no label lists, is left out: it
// follows CoreVersion's contract.
func (l *Loader) Contracts(ctx context.Context, class *v1alpha2.TopologyClass) (contract.Contracts, error) {
	out := contract.Contracts{}
	if l.Mapper == nil {
		return out, nil
	}
	for _, gvk := range contract.GeneratedKinds(class, l.CoreVersion) {
		if gvk.Group == clusterv1.GroupVersion.Group {
			continue
		}
		crd, err := CRDOf(ctx, l.Reader, l.Mapper, gvk.GroupKind())
		// A user who may not read CRDs still plans, by the version's name.
		if apierrors.IsForbidden(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if crd == nil {
			continue // not installed: reading its objects says so
		}
		if c, ok := contract.ContractOfVersion(crd.Labels, gvk.Version); ok {
			out[gvk.GroupKind()] = c
		}
	}
	return out, nil
}

// CRDOf reads the metadata of the CRD serving gk — its labels say which Cluster
// API contract each version implements. It is nil when gk is not installed.
func CRDOf(ctx context.Context, r client.Reader, mapper meta.RESTMapper, gk schema.GroupKind) (*metav1.PartialObjectMetadata, error) {
	mapping, err := mapper.RESTMapping(gk)
	if err != nil {
		return nil, nil //nolint:nilerr // not installed is an answer, not a failure
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := r.Get(ctx, types.NamespacedName{Name: mapping.Resource.Resource + "." + gk.Group}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the CRD of %s: %w", gk.Kind, err)
	}
	return crd, nil
}

// Class reads the Topology's class: a TopologyClass, or for an upstream
// Cluster seen as a Topology its ClusterClass, converted.
func (l *Loader) Class(ctx context.Context, t *v1alpha2.Topology) (*v1alpha2.TopologyClass, error) {
	if l.GivenClass != nil {
		return l.GivenClass, nil
	}
	key := t.GetClassKey()
	if contract.KindOf(t) == contract.UpstreamClusterKind {
		return l.clusterClass(ctx, t, key)
	}
	class := &v1alpha2.TopologyClass{}
	if err := l.Reader.Get(ctx, key, class); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &NotFoundError{fmt.Sprintf("spec.classRef: TopologyClass %s not found: create it or point spec.classRef at an existing class", key)}
		}
		return nil, fmt.Errorf("reading TopologyClass %s: %w", key, err)
	}
	return class, nil
}

// clusterClass reads and converts the ClusterClass of an upstream Cluster.
func (l *Loader) clusterClass(ctx context.Context, t *v1alpha2.Topology, key types.NamespacedName) (*v1alpha2.TopologyClass, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(l.CoreVersion.APIVersion())
	u.SetKind("ClusterClass")
	if err := l.Reader.Get(ctx, key, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &NotFoundError{fmt.Sprintf("Cluster %s/%s spec.topology.classRef: ClusterClass %s not found", t.Namespace, t.Name, key)}
		}
		return nil, fmt.Errorf("reading ClusterClass %s of Cluster %s/%s: %w", key, t.Namespace, t.Name, err)
	}
	class, _, err := bundle.ClassFromUpstream(u)
	if err != nil {
		return nil, fmt.Errorf("ClusterClass %s: %w", key, err)
	}
	return class, nil
}

// Templates reads every template the class references.
func (l *Loader) Templates(ctx context.Context, class *v1alpha2.TopologyClass) (*clusterstate.TemplateIndex, error) {
	ix := clusterstate.NewTemplateIndex()
	for _, ref := range contract.ClassTemplateRefs(class) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(ref.APIVersion)
		u.SetKind(ref.Kind)
		reader := l.Reader
		if l.TemplateReader != nil {
			reader = l.TemplateReader(ref.Namespace)
		}
		if err := reader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
			if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				return nil, &NotFoundError{fmt.Sprintf("TopologyClass %s/%s %s: %s %s/%s not found: create the template or fix the reference", class.Namespace, class.Name, ref.Field, ref.Kind, ref.Namespace, ref.Name)}
			}
			return nil, fmt.Errorf("reading %s %s/%s of TopologyClass %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, class.Namespace, class.Name, err)
		}
		ix.Add(u)
	}
	return ix, nil
}

// Objects reads the Topology's Cluster and every object of the class's kinds
// labelled for it, less those Cluster API made for Machines. The agent prunes
// and the live plan lists deletions from these.
func (l *Loader) Objects(ctx context.Context, t *v1alpha2.Topology, class *v1alpha2.TopologyClass) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	cluster := &unstructured.Unstructured{}
	cluster.SetAPIVersion(l.CoreVersion.APIVersion())
	cluster.SetKind("Cluster")
	switch err := l.Reader.Get(ctx, client.ObjectKeyFromObject(t), cluster); {
	case err == nil:
		out = append(out, cluster)
	case !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err):
		return nil, fmt.Errorf("reading Cluster %s/%s: %w", t.Namespace, t.Name, err)
	}
	poolKinds := contract.MachinePoolKinds(class)
	for _, gvk := range contract.GeneratedKinds(class, l.CoreVersion) {
		items, err := l.Labelled(ctx, t, gvk)
		if err != nil {
			return nil, err
		}
		for _, o := range items {
			if !contract.MadeForMachine(poolKinds, o) {
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// Labelled lists the objects of kind gvk labelled for Topology t's cluster;
// a kind that is not installed has none.
func (l *Loader) Labelled(ctx context.Context, t *v1alpha2.Topology, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	opts := []client.ListOption{client.InNamespace(t.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: t.Name}}
	if l.ByCluster != nil {
		field, err := l.ByCluster(ctx, gvk)
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		opts = []client.ListOption{client.InNamespace(t.Namespace), client.MatchingFields{field: t.Name}}
	}
	if err := l.Reader.List(ctx, list, opts...); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil // e.g. no MachinePool CRD installed: nothing of that kind exists
		}
		return nil, fmt.Errorf("listing %s of Cluster %s/%s: %w", gvk.Kind, t.Namespace, t.Name, err)
	}
	out := make([]*unstructured.Unstructured, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// State finds the Topology's state among objs, adopting what was made
// before its Cluster.
func State(t *v1alpha2.Topology, class *v1alpha2.TopologyClass, objs []*unstructured.Unstructured) *clusterstate.State {
	s := desiredstate.StateFromObjects(t.Name, t.Namespace, objs)
	desiredstate.Adopt(s, class, t.UID, desiredstate.HandedOver(t), objs)
	return s
}

// Observe reads the rollout state per the contracts, refined by the
// Machines of its MachineDeployments.
func (l *Loader) Observe(ctx context.Context, t *v1alpha2.Topology, s *clusterstate.State) (*upgrade.Observed, error) {
	obs, err := health.ObserveState(s)
	if err != nil {
		return nil, err
	}
	if s.ControlPlane.Object == nil && len(s.MachineDeployments) == 0 {
		return obs, nil
	}
	listed, err := l.Labelled(ctx, t, l.CoreVersion.GroupVersion().WithKind("Machine"))
	if err != nil {
		return nil, err
	}
	machines, err := core.Machines(listed)
	if err != nil {
		return nil, err
	}
	return health.WithMachines(obs, s, machines), nil
}
