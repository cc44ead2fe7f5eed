// Package core reads Cluster API's own objects as upstream's v1beta2 types,
// whichever core version the management cluster serves them at: a v1beta1
// object goes through upstream's conversion, and the references that
// conversion leaves to upstream's conversion webhook are converted here.
// Provider objects stay unstructured, as upstream's topology controller
// keeps them.
package core

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1" //nolint:staticcheck // an object read at v1beta1 (an older management cluster) is converted from upstream's deprecated type
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// Cluster is u as a v1beta2 Cluster. It is decoded into a new object, so
// that what a caller clears on it is never cleared on u.
func Cluster(u *unstructured.Unstructured) (*clusterv1.Cluster, error) {
	return decode(u, "Cluster", clusterv1beta1.Convert_v1beta1_Cluster_To_v1beta2_Cluster, func(old *clusterv1beta1.Cluster, out *clusterv1.Cluster) error {
		var err error
		if out.Spec.InfrastructureRef, err = reference(old.Spec.InfrastructureRef); err != nil {
			return fmt.Errorf("spec.infrastructureRef: %w", err)
		}
		if out.Spec.ControlPlaneRef, err = reference(old.Spec.ControlPlaneRef); err != nil {
			return fmt.Errorf("spec.controlPlaneRef: %w", err)
		}
		return nil
	})
}

// Machine is u as a v1beta2 Machine, decoded into a new object.
func Machine(u *unstructured.Unstructured) (*clusterv1.Machine, error) {
	return decode(u, "Machine", clusterv1beta1.Convert_v1beta1_Machine_To_v1beta2_Machine, func(old *clusterv1beta1.Machine, out *clusterv1.Machine) error {
		return machineReferences(&old.Spec, &out.Spec, "spec")
	})
}

// MachineDeployment is u as a v1beta2 MachineDeployment, decoded into a new
// object.
func MachineDeployment(u *unstructured.Unstructured) (*clusterv1.MachineDeployment, error) {
	return decode(u, "MachineDeployment", clusterv1beta1.Convert_v1beta1_MachineDeployment_To_v1beta2_MachineDeployment, func(old *clusterv1beta1.MachineDeployment, out *clusterv1.MachineDeployment) error {
		return machineReferences(&old.Spec.Template.Spec, &out.Spec.Template.Spec, "spec.template.spec")
	})
}

// MachineSet is u as a v1beta2 MachineSet, decoded into a new object.
func MachineSet(u *unstructured.Unstructured) (*clusterv1.MachineSet, error) {
	return decode(u, "MachineSet", clusterv1beta1.Convert_v1beta1_MachineSet_To_v1beta2_MachineSet, func(old *clusterv1beta1.MachineSet, out *clusterv1.MachineSet) error {
		return machineReferences(&old.Spec.Template.Spec, &out.Spec.Template.Spec, "spec.template.spec")
	})
}

// MachinePool is u as a v1beta2 MachinePool, decoded into a new object.
func MachinePool(u *unstructured.Unstructured) (*clusterv1.MachinePool, error) {
	return decode(u, "MachinePool", clusterv1beta1.Convert_v1beta1_MachinePool_To_v1beta2_MachinePool, func(old *clusterv1beta1.MachinePool, out *clusterv1.MachinePool) error {
		return machineReferences(&old.Spec.Template.Spec, &out.Spec.Template.Spec, "spec.template.spec")
	})
}

// decode reads u into a new v1beta2 object of kind: directly, or, read at
// v1beta1, through upstream's conversion and then references, which
// converts what that conversion leaves to upstream's webhook.
func decode[Old, New any, NewPtr interface {
	*New
	SetGroupVersionKind(schema.GroupVersionKind)
}](u *unstructured.Unstructured, kind string, convert func(*Old, *New, conversion.Scope) error, references func(*Old, *New) error) (*New, error) {
	out := new(New)
	if !isV1Beta1(u) {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
			return nil, decodeError(u, err)
		}
		return out, nil
	}
	old := new(Old)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, old); err != nil {
		return nil, decodeError(u, err)
	}
	if err := convert(old, out, nil); err != nil {
		return nil, decodeError(u, err)
	}
	if err := references(old, out); err != nil {
		return nil, decodeError(u, err)
	}
	NewPtr(out).SetGroupVersionKind(clusterv1.GroupVersion.WithKind(kind))
	return out, nil
}

// machineReferences converts a v1beta1 Machine spec's two references, at
// path, as upstream's conversion webhook does.
func machineReferences(old *clusterv1beta1.MachineSpec, out *clusterv1.MachineSpec, path string) error {
	var err error
	if out.InfrastructureRef, err = reference(&old.InfrastructureRef); err != nil {
		return fmt.Errorf("%s.infrastructureRef: %w", path, err)
	}
	if out.Bootstrap.ConfigRef, err = reference(old.Bootstrap.ConfigRef); err != nil {
		return fmt.Errorf("%s.bootstrap.configRef: %w", path, err)
	}
	return nil
}

// Machines is each of us as a v1beta2 Machine, in order.
func Machines(us []*unstructured.Unstructured) ([]*clusterv1.Machine, error) {
	out := make([]*clusterv1.Machine, 0, len(us))
	for _, u := range us {
		m, err := Machine(u)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func isV1Beta1(u *unstructured.Unstructured) bool {
	return u.GetAPIVersion() == clusterv1beta1.GroupVersion.String()
}

func decodeError(u *unstructured.Unstructured, err error) error {
	return fmt.Errorf("reading %s %s/%s as Cluster API's %s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), clusterv1.GroupVersion.Version, err)
}

// reference is a v1beta1 reference (an apiVersion) as v1beta2 writes it (a
// group); none for none.
func reference(ref *corev1.ObjectReference) (clusterv1.ContractVersionedObjectReference, error) {
	if ref == nil || ref.Kind == "" {
		return clusterv1.ContractVersionedObjectReference{}, nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return clusterv1.ContractVersionedObjectReference{}, err
	}
	return clusterv1.ContractVersionedObjectReference{APIGroup: gv.Group, Kind: ref.Kind, Name: ref.Name}, nil
}

// conditioned is what upstream's v1beta2 core types offer of their
// conditions: their own, and the v1beta1 ones they keep under
// status.deprecated.
type conditioned interface {
	GetConditions() []metav1.Condition
	GetV1Beta1Conditions() clusterv1.Conditions //nolint:staticcheck // read only where there is nothing newer
}

// Conditions are o's v1beta2 conditions or, from a core older than v1beta2
// conditions, its v1beta1 conditions read the same way: what upstream keeps
// the deprecated ones for.
func Conditions(o conditioned) []metav1.Condition {
	if conds := o.GetConditions(); len(conds) > 0 {
		return conds
	}
	old := o.GetV1Beta1Conditions()
	if len(old) == 0 {
		return nil
	}
	out := make([]metav1.Condition, 0, len(old))
	for _, c := range old {
		out = append(out, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime})
	}
	return out
}
