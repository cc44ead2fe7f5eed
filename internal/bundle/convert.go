package bundle

import (
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/variables"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// ClassFromUpstream converts a ClusterClass to a TopologyClass. A v1beta2
// spec is the same shape; a v1beta1 spec is first converted the way Cluster
// API converts it. The warnings name each field that conversion dropped and
// each field our type lacks, dropped as the API server prunes it.
func ClassFromUpstream(u *unstructured.Unstructured) (*v1alpha2.TopologyClass, []string, error) {
	return classFromUpstream(u, false)
}

func classFromUpstream(u *unstructured.Unstructured, strict bool) (*v1alpha2.TopologyClass, []string, error) {
	spec := &v1alpha2.TopologyClassSpec{}
	var warnings []string
	if s, found, _ := unstructured.NestedMap(u.Object, "spec"); found {
		object := fmt.Sprintf("ClusterClass %s/%s", u.GetNamespace(), u.GetName())
		if isV1Beta1(u.GetAPIVersion()) {
			conv := &v1beta1Converter{}
			conv.ClassSpec(s)
			warnings = conv.Warnings(object)
		}
		d := &fieldDecoder{strict: strict}
		if err := d.decode(s, spec, "spec"); err != nil {
			return nil, nil, fmt.Errorf("spec: %w", err)
		}
		warnings = append(warnings, d.warnings(object)...)
	}
	return &v1alpha2.TopologyClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: v1alpha2.TopologyClassKind},
		ObjectMeta: carriedMeta(u),
		Spec:       *spec,
	}, warnings, nil
}

// RuntimeAPIGroup is upstream's Runtime SDK API group, of ExtensionConfig.
const RuntimeAPIGroup = "runtime.cluster.x-k8s.io"

// ExtensionFromUpstream converts a runtime.cluster.x-k8s.io ExtensionConfig
// to a TopologyExtension: the spec is the same shape.
func ExtensionFromUpstream(u *unstructured.Unstructured) (*v1alpha2.TopologyExtension, error) {
	e, _, err := extensionFromUpstream(u, false)
	return e, err
}

func extensionFromUpstream(u *unstructured.Unstructured, strict bool) (*v1alpha2.TopologyExtension, []string, error) {
	spec := &v1alpha2.TopologyExtensionSpec{}
	d := &fieldDecoder{strict: strict}
	if s, found, _ := unstructured.NestedMap(u.Object, "spec"); found {
		if err := d.decode(s, spec, "spec"); err != nil {
			return nil, nil, fmt.Errorf("spec: %w", err)
		}
	}
	meta := carriedMeta(u)
	meta.Namespace = "" // cluster-scoped, like ExtensionConfig
	return &v1alpha2.TopologyExtension{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: v1alpha2.TopologyExtensionKind},
		ObjectMeta: meta,
		Spec:       *spec,
	}, d.warnings(fmt.Sprintf("ExtensionConfig %s", u.GetName())), nil
}

// TopologyFromCluster converts a Cluster with spec.topology to a Topology:
// spec.topology flattened into spec, plus clusterNetwork and paused. A v1beta1
// topology is converted as ClassFromUpstream converts a v1beta1 class.
func TopologyFromCluster(u *unstructured.Unstructured) (*v1alpha2.Topology, []string, error) {
	return topologyFromCluster(u, false)
}

func topologyFromCluster(u *unstructured.Unstructured, strict bool) (*v1alpha2.Topology, []string, error) {
	t := &v1alpha2.Topology{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: v1alpha2.TopologyKind},
		ObjectMeta: carriedMeta(u),
	}
	v1beta1 := isV1Beta1(u.GetAPIVersion())
	if topo, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "topology"); ok && v1beta1 {
		normalizeDurations(topo)
	}
	topo, _, _ := unstructured.NestedMap(u.Object, "spec", "topology")
	var warnings []string
	object := fmt.Sprintf("Cluster %s/%s", u.GetNamespace(), u.GetName())
	if v1beta1 {
		conv := &v1beta1Converter{}
		conv.Topology(topo)
		warnings = conv.Warnings(object)
	}
	d := &fieldDecoder{strict: strict}
	if err := d.decode(topo, &t.Spec, "spec.topology"); err != nil {
		return nil, nil, fmt.Errorf("spec.topology: %w", err)
	}
	if n, found, _ := unstructured.NestedMap(u.Object, "spec", "clusterNetwork"); found {
		t.Spec.ClusterNetwork = &v1alpha2.ClusterNetwork{}
		if err := d.decode(n, t.Spec.ClusterNetwork, "spec.clusterNetwork"); err != nil {
			return nil, nil, fmt.Errorf("spec.clusterNetwork: %w", err)
		}
	}
	warnings = append(warnings, d.warnings(object)...)
	if p, found, _ := unstructured.NestedBool(u.Object, "spec", "paused"); found {
		t.Spec.Paused = p
	}
	return t, warnings, nil
}

// durationFields are the fields of a Cluster's topology that Cluster API
// types as metav1.Duration.
var durationFields = map[string]bool{"nodeDrainTimeout": true, "nodeVolumeDetachTimeout": true, "nodeDeletionTimeout": true, "nodeStartupTimeout": true, "timeout": true}

// normalizeDurations writes durations as Cluster API's typed client reads
// them back ("120s" becomes "2m0s"), in place, so that the Cluster in a plan
// reads as upstream's does.
func normalizeDurations(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && durationFields[k] {
				if d, err := time.ParseDuration(s); err == nil {
					v[k] = d.String()
				}
				continue
			}
			normalizeDurations(x)
		}
	case []any:
		for _, x := range v {
			normalizeDurations(x)
		}
	}
}

// carriedMeta keeps what identifies and describes an object, not what the
// server manages.
func carriedMeta(u *unstructured.Unstructured) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        u.GetName(),
		Namespace:   u.GetNamespace(),
		UID:         u.GetUID(),
		Labels:      u.GetLabels(),
		Annotations: u.GetAnnotations(),
	}
}

// Default fills in variable defaults as the defaulting webhook does when the
// object is stored. For an upstream Cluster the defaulted values are written
// back into its spec.topology, so plans show the Cluster as it is stored.
func (t *Topology) Default(cat *variables.Catalog) error {
	if errs := rules.DefaultTopology(t.Topology, cat, desiredstate.SpecPath(t.Dialect())); len(errs) > 0 {
		kind := "Topology"
		if t.Upstream != nil {
			kind = "Cluster"
		}
		return &rules.InvalidError{Kind: kind, Object: kind + " " + t.Namespace + "/" + t.Name, Errors: errs}
	}
	if t.Upstream == nil {
		return nil
	}
	if err := setList(t.Upstream, t.Spec.Variables, "spec", "topology", "variables"); err != nil {
		return err
	}
	if v := t.Spec.ControlPlane.Variables; v != nil {
		if err := setList(t.Upstream, v.Overrides, "spec", "topology", "controlPlane", "variables", "overrides"); err != nil {
			return err
		}
	}
	if w := t.Spec.Workers; w != nil {
		if err := setPoolOverrides(t.Upstream, "machineDeployments", len(w.MachineDeployments), func(i int) []v1alpha2.ClusterVariable {
			if v := w.MachineDeployments[i].Variables; v != nil {
				return v.Overrides
			}
			return nil
		}); err != nil {
			return err
		}
		return setPoolOverrides(t.Upstream, "machinePools", len(w.MachinePools), func(i int) []v1alpha2.ClusterVariable {
			if v := w.MachinePools[i].Variables; v != nil {
				return v.Overrides
			}
			return nil
		})
	}
	return nil
}

func setPoolOverrides(u *unstructured.Unstructured, list string, n int, overrides func(int) []v1alpha2.ClusterVariable) error {
	if n == 0 {
		return nil
	}
	pools, _, _ := unstructured.NestedSlice(u.Object, "spec", "topology", "workers", list)
	for i := 0; i < n && i < len(pools); i++ {
		o := overrides(i)
		pool, ok := pools[i].(map[string]any)
		if !ok || o == nil {
			continue
		}
		if err := setList(&unstructured.Unstructured{Object: pool}, o, "variables", "overrides"); err != nil {
			return err
		}
	}
	return unstructured.SetNestedSlice(u.Object, pools, "spec", "topology", "workers", list)
}

// setList writes typed values as a JSON list at path.
func setList(u *unstructured.Unstructured, v any, path ...string) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var list []any
	if err := json.Unmarshal(raw, &list); err != nil {
		return err
	}
	return unstructured.SetNestedSlice(u.Object, list, path...)
}
