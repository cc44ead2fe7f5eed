package bundle

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestV1Beta1ClassConvertsAsClusterAPIDoes: every v1beta1 field that moved in
// v1beta2 lands where upstream's conversion puts it, and what v1beta2 cannot
// hold is a warning naming the field.
func TestV1Beta1ClassConvertsAsClusterAPIDoes(t *testing.T) {
	b, err := read(t, `
apiVersion: cluster.x-k8s.io/v1beta1
kind: ClusterClass
metadata:
  name: qs
spec:
  infrastructure:
    ref: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: DockerClusterTemplate, name: c, namespace: elsewhere}
  infrastructureNamingStrategy: {template: "{{ .cluster.name }}-infra"}
  controlPlane:
    ref: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: KubeadmControlPlaneTemplate, name: cp}
    machineInfrastructure:
      ref: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: DockerMachineTemplate, name: cpm}
    machineHealthCheck:
      maxUnhealthy: 33%
      unhealthyRange: "[1-3]"
      nodeStartupTimeout: 10m
      unhealthyConditions: [{type: Ready, status: "False", timeout: 90s}]
      remediationTemplate: {apiVersion: remediation.example/v1, kind: RebootTemplate, name: reboot}
    namingStrategy: {template: "{{ .cluster.name }}-cp"}
    nodeDrainTimeout: 1m30s
  workers:
    machineDeployments:
    - class: general
      template:
        metadata: {labels: {pool: general}}
        bootstrap: {ref: {apiVersion: bootstrap.cluster.x-k8s.io/v1beta1, kind: KubeadmConfigTemplate, name: b}}
        infrastructure: {ref: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: DockerMachineTemplate, name: i}}
      strategy:
        type: RollingUpdate
        rollingUpdate: {maxSurge: 1, maxUnavailable: 0, deletePolicy: Oldest}
        remediation: {maxInFlight: 2}
      nodeDeletionTimeout: 1500ms
      namingStrategy: {template: "{{ .cluster.name }}-{{ .machineDeployment.topologyName }}"}
  variables:
  - name: region
    required: true
    metadata: {labels: {team: a}}
    schema: {openAPIV3Schema: {type: string}}
  patches:
  - name: ext
    external: {generateExtension: gen.ext, validateExtension: val.ext}
`)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(b.Classes["team-a/qs"].Spec)
	for _, want := range []string{
		`"infrastructure":{"templateRef":{"kind":"DockerClusterTemplate","name":"c","apiVersion":"infrastructure.cluster.x-k8s.io/v1beta1"},"naming":{"template":"{{ .cluster.name }}-infra"}}`,
		`"machineInfrastructure":{"templateRef":{"kind":"DockerMachineTemplate","name":"cpm"`,
		`"healthCheck":{"checks":{"nodeStartupTimeoutSeconds":600,"unhealthyNodeConditions":[{"type":"Ready","status":"False","timeoutSeconds":90}]},"remediation":{"triggerIf":{"unhealthyLessThanOrEqualTo":"33%","unhealthyInRange":"[1-3]"},"templateRef":{"kind":"RebootTemplate","name":"reboot","apiVersion":"remediation.example/v1"}}}`,
		`"naming":{"template":"{{ .cluster.name }}-cp"},"deletion":{"nodeDrainTimeoutSeconds":90}`,
		`"metadata":{"labels":{"pool":"general"}},"class":"general","bootstrap":{"templateRef":{"kind":"KubeadmConfigTemplate"`,
		`"healthCheck":{"remediation":{"maxInFlight":2}}`,
		`"deletion":{"order":"Oldest","nodeDeletionTimeoutSeconds":1}`,
		`"rollout":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":0,"maxSurge":1}}}`,
		`"required":true,"deprecatedV1Beta1Metadata":{"labels":{"team":"a"}}`,
		`"external":{"generatePatchesExtension":"gen.ext","validateTopologyExtension":"val.ext"}`,
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("converted spec lacks %s\n%s", want, raw)
		}
	}
	warnings := strings.Join(b.Warnings, "\n")
	for _, want := range []string{
		"ClusterClass team-a/qs: v1beta1 field spec.infrastructure.ref.namespace is dropped",
		"ClusterClass team-a/qs: v1beta1 field spec.workers.machineDeployments[0].nodeDeletionTimeout: 1500ms is cut to whole seconds (1s)",
	} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings lack %q:\n%s", want, warnings)
		}
	}
	if len(b.Warnings) != 2 {
		t.Errorf("%d warnings, want 2:\n%s", len(b.Warnings), warnings)
	}
}

// TestV1Beta1ClusterDropsWhatV1Beta2Lacks: rolloutAfter and definitionFrom have
// no v1beta2 place; both are dropped with a warning, the rest converted.
func TestV1Beta1ClusterDropsWhatV1Beta2Lacks(t *testing.T) {
	b, err := read(t, upstreamCluster+`
    classNamespace: shared
    rolloutAfter: "2026-01-01T00:00:00Z"
    controlPlane:
      machineHealthCheck: {enable: false}
    workers:
      machineDeployments:
      - class: general
        name: md-0
        strategy: {type: OnDelete}
        variables:
          overrides:
          - {name: region, value: eu, definitionFrom: inline}
    variables:
    - {name: region, value: us, definitionFrom: inline}
`)
	if err != nil {
		t.Fatal(err)
	}
	topo := b.Topologies[0]
	if topo.Spec.ClassRef.Name != "qs" || topo.Spec.ClassRef.Namespace != "shared" {
		t.Errorf("classRef is %+v, want qs in shared", topo.Spec.ClassRef)
	}
	if e := topo.Spec.ControlPlane.HealthCheck.Enabled; e == nil || *e {
		t.Errorf("control plane health check enabled = %v, want false", e)
	}
	if s := topo.Spec.Workers.MachineDeployments[0].Rollout.Strategy.Type; s != "OnDelete" {
		t.Errorf("rollout strategy %q, want OnDelete", s)
	}
	warnings := strings.Join(b.Warnings, "\n")
	for _, want := range []string{
		"Cluster team-a/one: v1beta1 field spec.topology.rolloutAfter is dropped",
		"Cluster team-a/one: v1beta1 field spec.topology.variables[0].definitionFrom is dropped",
		"Cluster team-a/one: v1beta1 field spec.topology.workers.machineDeployments[0].variables.overrides[0].definitionFrom is dropped",
	} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings lack %q:\n%s", want, warnings)
		}
	}
}

// TestUnsupportedVersionsNameTheSupportedOnes: an upstream kind at a version
// not read, and our retired v1alpha1, are refused saying what to use.
func TestUnsupportedVersionsNameTheSupportedOnes(t *testing.T) {
	for doc, want := range map[string]string{
		"apiVersion: cluster.x-k8s.io/v1alpha4\nkind: ClusterClass\nmetadata: {name: qs}\n":          "ClusterClass cluster.x-k8s.io/v1alpha4 is not supported: use one of cluster.x-k8s.io/v1beta2, cluster.x-k8s.io/v1beta1",
		"apiVersion: cluster.x-k8s.io/v1alpha3\nkind: Cluster\nmetadata: {name: c}\n":                "Cluster cluster.x-k8s.io/v1alpha3 is not supported",
		"apiVersion: runtime.cluster.x-k8s.io/v1beta1\nkind: ExtensionConfig\nmetadata: {name: e}\n": "use one of runtime.cluster.x-k8s.io/v1beta2, runtime.cluster.x-k8s.io/v1alpha1",
		"apiVersion: topology.kubectl-topology.io/v1alpha1\nkind: Topology\nmetadata: {name: t}\n":   "topology.kubectl-topology.io/v1alpha1 is no longer served: write it as topology.kubectl-topology.io/v1alpha2",
	} {
		_, err := read(t, doc)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", doc, err, want)
		}
	}
}
