package apply

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
