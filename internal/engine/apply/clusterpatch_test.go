package apply

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/yaml"
)

func clusterFromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestClusterMergePatch: the Cluster is written as upstream v1.14 writes
// it, by merge patch, and only with what changed; fields others own or the
// API server defaulted stay, and what the agent wrote earlier and no
// longer wants goes.
func TestClusterMergePatch(t *testing.T) {
	// The agent created the Cluster by apply and later patched the
	// upgrade-step annotation; the cluster controller set the endpoint; the
	// API server defaulted serviceDomain; a user labelled it.
	current := clusterFromYAML(t, `
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: dev
  namespace: team-a
  labels: {cluster.x-k8s.io/cluster-name: dev, topology.cluster.x-k8s.io/owned: "", team: a, by-hand: "yes"}
  annotations: {topology.internal.cluster.x-k8s.io/upgrade-step: v1.34.0}
  ownerReferences: [{apiVersion: topology.kubectl-topology.io/v1alpha2, kind: Topology, name: dev, uid: t1, controller: true}]
spec:
  paused: true
  clusterNetwork: {pods: {cidrBlocks: [192.168.0.0/16]}, serviceDomain: cluster.local}
  controlPlaneEndpoint: {host: 10.0.0.1, port: 6443}
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerCluster, name: dev-abcde}
  controlPlaneRef: {apiGroup: controlplane.cluster.x-k8s.io, kind: KubeadmControlPlane, name: dev-fghij}
status: {phase: Provisioned}
`)
	current.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: FieldManager, Operation: "Apply", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(
			`{"f:metadata":{"f:labels":{"f:cluster.x-k8s.io/cluster-name":{},"f:topology.cluster.x-k8s.io/owned":{},"f:team":{}},"f:ownerReferences":{"k:{\"uid\":\"t1\"}":{}}},` +
				`"f:spec":{"f:paused":{},"f:clusterNetwork":{"f:pods":{"f:cidrBlocks":{}}},"f:infrastructureRef":{"f:apiGroup":{},"f:kind":{},"f:name":{}},"f:controlPlaneRef":{"f:apiGroup":{},"f:kind":{},"f:name":{}}}}`)},
		{Manager: FieldManager, Operation: "Update", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(
			`{"f:metadata":{"f:annotations":{"f:topology.internal.cluster.x-k8s.io/upgrade-step":{}}}}`)},
		{Manager: "cluster-controller", Operation: "Update", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(
			`{"f:spec":{"f:controlPlaneEndpoint":{"f:host":{},"f:port":{}}}}`)},
		{Manager: "kubectl", Operation: "Update", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(
			`{"f:metadata":{"f:labels":{"f:by-hand":{}}}}`)},
	})
	desired := func(doc string) *unstructured.Unstructured {
		d := clusterFromYAML(t, `
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: dev
  namespace: team-a
  ownerReferences: [{apiVersion: topology.kubectl-topology.io/v1alpha2, kind: Topology, name: dev, uid: t1, controller: true}]
`+doc)
		return d
	}
	cases := []struct {
		name, desired, want string
	}{
		{"nothing changed", `
  labels: {cluster.x-k8s.io/cluster-name: dev, topology.cluster.x-k8s.io/owned: "", team: a}
  annotations: {topology.internal.cluster.x-k8s.io/upgrade-step: v1.34.0}
spec:
  paused: true
  clusterNetwork: {pods: {cidrBlocks: [192.168.0.0/16]}}
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerCluster, name: dev-abcde}
  controlPlaneRef: {apiGroup: controlplane.cluster.x-k8s.io, kind: KubeadmControlPlane, name: dev-fghij}
`, ``},
		{"the upgrade ends, the Topology is resumed and relabelled, the control plane rotated", `
  labels: {cluster.x-k8s.io/cluster-name: dev, topology.cluster.x-k8s.io/owned: "", tier: gold}
spec:
  clusterNetwork: {pods: {cidrBlocks: [192.168.0.0/16]}}
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerCluster, name: dev-abcde}
  controlPlaneRef: {apiGroup: controlplane.cluster.x-k8s.io, kind: KubeadmControlPlane, name: dev-klmno}
`, `{"metadata":{"annotations":{"topology.internal.cluster.x-k8s.io/upgrade-step":null},"labels":{"team":null,"tier":"gold"}},"spec":{"controlPlaneRef":{"name":"dev-klmno"},"paused":null}}`},
		{"a new pod range replaces the list", `
  labels: {cluster.x-k8s.io/cluster-name: dev, topology.cluster.x-k8s.io/owned: "", team: a}
  annotations: {topology.internal.cluster.x-k8s.io/upgrade-step: v1.34.0}
spec:
  paused: true
  clusterNetwork: {pods: {cidrBlocks: [10.10.0.0/16]}}
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerCluster, name: dev-abcde}
  controlPlaneRef: {apiGroup: controlplane.cluster.x-k8s.io, kind: KubeadmControlPlane, name: dev-fghij}
`, `{"spec":{"clusterNetwork":{"pods":{"cidrBlocks":["10.10.0.0/16"]}}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := current.DeepCopy()
			patch, err := ClusterMergePatch(current, desired(tc.desired), FieldManager)
			if err != nil {
				t.Fatal(err)
			}
			if string(patch) != tc.want {
				t.Errorf("patch\n%s\nwant\n%s", patch, tc.want)
			}
			if !equalObjects(before, current) {
				t.Error("computing the patch changed the current Cluster")
			}
			cut, err := ClusterMergePatch(withOwnedFieldNames(t, current), desired(tc.desired), FieldManager)
			if err != nil {
				t.Fatal(err)
			}
			if string(cut) != tc.want {
				t.Errorf("patch with the managed fields cut to OwnedFieldNames\n%s\nwant\n%s", cut, tc.want)
			}
		})
	}
}

func equalObjects(a, b *unstructured.Unstructured) bool {
	ja, _ := a.MarshalJSON()
	jb, _ := b.MarshalJSON()
	return string(ja) == string(jb)
}

// removeDroppedByFieldSet is what ClusterMergePatch removed before it walked
// the trees: each owned leaf under the labels, the annotations or the spec
// that desired lacks, removed up to its first list element.
func removeDroppedByFieldSet(t *testing.T, current, desired, target *unstructured.Unstructured, fieldManager string) {
	t.Helper()
	owned, err := ownedFields(current, fieldManager, true)
	if err != nil {
		t.Fatal(err)
	}
	owned.Leaves().Iterate(func(p fieldpath.Path) {
		if !under(p, "metadata", "labels") && !under(p, "metadata", "annotations") && !under(p, "spec") {
			return
		}
		if missingIn(desired.Object, p) {
			unstructured.RemoveNestedField(target.Object, fieldNames(p)...)
		}
	})
}

// TestRemoveDroppedAsFieldSetsDo: the walk over the managedFields trees
// removes what the field-set reading removed, for every pair of an applied
// and a patched tree against Clusters that drop a label, the labels, a
// nested field beside one another manager set, a list, the spec, or set a
// scalar where a map was owned.
func TestRemoveDroppedAsFieldSetsDo(t *testing.T) {
	current := clusterFromYAML(t, `
metadata:
  labels: {a: "1", b: "2", theirs: "3"}
  annotations: {ax: "1", ay: "2"}
spec:
  replicas: 2
  nested: {kept: k, gone: g, theirs: t, deeper: {one: 1, two: 2}}
  list: [{name: x, v: "1"}]
  otherList: [{name: other}]
  scalar: s
`)
	trees := map[string]string{
		"labels":              `{"f:metadata":{"f:labels":{".":{},"f:a":{},"f:b":{}}}}`,
		"annotations":         `{"f:metadata":{"f:annotations":{"f:ax":{},"f:ay":{}}}}`,
		"nested":              `{"f:spec":{"f:nested":{".":{},"f:kept":{},"f:gone":{},"f:deeper":{"f:one":{},"f:two":{}}}}}`,
		"lists":               `{"f:spec":{"f:list":{"k:{\"name\":\"x\"}":{".":{},"f:name":{},"f:v":{}}},"f:otherList":{}}}`,
		"a scalar, and below": `{"f:spec":{"f:scalar":{},"f:replicas":{}},"f:status":{"f:phase":{}}}`,
		"the whole spec":      `{"f:spec":{}}`,
		"nothing":             `{}`,
	}
	desireds := map[string]string{
		"all kept":                  `{metadata: {labels: {a: "1", b: "2"}, annotations: {ax: "1", ay: "2"}}, spec: {replicas: 2, nested: {kept: k, gone: g, deeper: {one: 1, two: 2}}, list: [{name: x}], otherList: [], scalar: s}}`,
		"a label and a nested leaf": `{metadata: {labels: {a: "1"}, annotations: {ax: "1", ay: "2"}}, spec: {replicas: 2, nested: {kept: k, deeper: {one: 1}}, list: [{name: x}], otherList: [], scalar: s}}`,
		"no labels, no nested map":  `{metadata: {annotations: {ay: "2"}}, spec: {replicas: 2, list: [{name: x}], scalar: s}}`,
		"no lists, no scalar":       `{metadata: {labels: {a: "1", b: "2"}}, spec: {nested: {kept: k}}}`,
		"a scalar for a map":        `{metadata: {labels: {a: "1", b: "2"}}, spec: {nested: {kept: k, gone: g, deeper: 3}, scalar: {deeper: d}}}`,
		"no spec":                   `{metadata: {labels: {a: "1"}}}`,
		"no metadata":               `{spec: {replicas: 2}}`,
	}
	sorted := func(m map[string]string) []string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return keys
	}
	removed := 0
	for _, d := range sorted(desireds) {
		desired := clusterFromYAML(t, desireds[d])
		for _, a := range sorted(trees) {
			for _, b := range sorted(trees) {
				c := current.DeepCopy()
				c.SetManagedFields([]metav1.ManagedFieldsEntry{
					{Manager: "m", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(trees[a])},
					{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(trees[b])},
					{Manager: "other", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:theirs":{}}},"f:spec":{"f:nested":{"f:theirs":{}}}}`)},
				})
				want, got := c.DeepCopy(), c.DeepCopy()
				removeDroppedByFieldSet(t, c, desired, want, "m")
				removeDropped(c, desired, got, "m")
				if !equalObjects(got, want) {
					gj, _ := got.MarshalJSON()
					wj, _ := want.MarshalJSON()
					t.Errorf("desired %q, apply %q, update %q:\n%s\nthe field sets say\n%s", d, a, b, gj, wj)
				}
				cut := c.DeepCopy()
				removeDropped(withOwnedFieldNames(t, c), desired, cut, "m")
				cut.SetManagedFields(c.GetManagedFields())
				if !equalObjects(cut, want) {
					t.Errorf("desired %q, apply %q, update %q, trimmed as cached: removed other than the field sets", d, a, b)
				}
				if !equalObjects(want, c) {
					removed++
				}
			}
		}
	}
	if removed == 0 {
		t.Error("no case removes a field: the comparison proves nothing")
	}
}
