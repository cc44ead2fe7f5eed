package main

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const components = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: capi-controller-manager, namespace: capi-system}
spec:
  template:
    spec:
      containers:
      - name: manager
        image: gcr.io/k8s-staging-cluster-api/cluster-api-controller:main
        imagePullPolicy: Always
        args: ["--feature-gates=ClusterTopology=${CLUSTER_TOPOLOGY:=false},RuntimeSDK=${EXP_RUNTIME_SDK:=false}", "--diagnostics-address=${CAPI_DIAGNOSTICS_ADDRESS:=:8443}"]
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: capi-serving-cert, namespace: capi-system, labels: {cluster.x-k8s.io/provider: cluster-api}}
spec:
  dnsNames: [capi-webhook-service.capi-system.svc, capi-webhook-service.capi-system.svc.cluster.local]
  secretName: capi-webhook-service-cert
---
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: capi-selfsigned-issuer, namespace: capi-system}
spec: {selfSigned: {}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: capi-validating-webhook-configuration
  annotations: {cert-manager.io/inject-ca-from: capi-system/capi-serving-cert}
webhooks:
- name: validation.cluster.cluster.x-k8s.io
  clientConfig: {service: {name: capi-webhook-service, namespace: capi-system}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clusters.cluster.x-k8s.io
  annotations: {cert-manager.io/inject-ca-from: capi-system/capi-serving-cert}
spec:
  conversion:
    strategy: Webhook
    webhook: {clientConfig: {service: {name: capi-webhook-service, namespace: capi-system}}}
`

func TestComponentsWithoutCertManager(t *testing.T) {
	// A value given wins over the default; the gates keep their defaults.
	text, err := substitute(components, map[string]string{"CAPI_DIAGNOSTICS_ADDRESS": ":9443"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "ClusterTopology=false,RuntimeSDK=false") || !strings.Contains(text, "--diagnostics-address=:9443") {
		t.Errorf("variables not filled in by value, then default:\n%s", text)
	}
	objs, err := decode(text)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	if err := writeComponents(&out, objs, "kubectl-topology-kind/capi-core:v1.14.2", now); err != nil {
		t.Fatal(err)
	}
	got, err := decode(out.String())
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string]*unstructured.Unstructured{}
	for _, o := range got {
		if strings.HasPrefix(o.GetAPIVersion(), "cert-manager.io/") {
			t.Errorf("cert-manager's %s is still there", o.GetKind())
		}
		if _, ok := o.GetAnnotations()["cert-manager.io/inject-ca-from"]; ok {
			t.Errorf("%s still asks cert-manager for its CA", o.GetKind())
		}
		byKind[o.GetKind()] = o
	}
	secret := byKind["Secret"]
	if secret == nil || secret.GetName() != "capi-webhook-service-cert" || secret.GetNamespace() != "capi-system" {
		t.Fatalf("no serving Secret where the Certificate said: %v", secret)
	}
	caB64, _, _ := unstructured.NestedString(secret.Object, "data", "ca.crt")
	crtB64, _, _ := unstructured.NestedString(secret.Object, "data", "tls.crt")
	hooks, _, _ := unstructured.NestedSlice(byKind["ValidatingWebhookConfiguration"].Object, "webhooks")
	hookCA, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "caBundle")
	crdCA, _, _ := unstructured.NestedString(byKind["CustomResourceDefinition"].Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	if hookCA != caB64 || crdCA != caB64 {
		t.Fatalf("the webhook and the CRD do not trust the Secret's CA")
	}
	// The serving certificate verifies against the injected CA for the Service's name.
	pool := x509.NewCertPool()
	caPEM, _ := base64.StdEncoding.DecodeString(caB64)
	pool.AppendCertsFromPEM(caPEM)
	crtPEM, _ := base64.StdEncoding.DecodeString(crtB64)
	block, _ := pem.Decode(crtPEM)
	crt, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crt.Verify(x509.VerifyOptions{Roots: pool, DNSName: "capi-webhook-service.capi-system.svc", CurrentTime: now}); err != nil {
		t.Errorf("the serving certificate does not verify: %v", err)
	}
	containers, _, _ := unstructured.NestedSlice(byKind["Deployment"].Object, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]any)
	if c["image"] != "kubectl-topology-kind/capi-core:v1.14.2" || c["imagePullPolicy"] != "Never" {
		t.Errorf("manager container %v, want the local image, never pulled", c)
	}
}

func TestAVariableWithoutValueOrDefaultIsNamed(t *testing.T) {
	if _, err := substitute("image: ${REGISTRY}/x", nil); err == nil || !strings.Contains(err.Error(), "REGISTRY") {
		t.Errorf("got %v, want REGISTRY named", err)
	}
}

// TestClusterctlRepositoryNames: each provider's config directory maps to
// the name, type and components file clusterctl expects of a repository,
// and its metadata names the release series of the version.
func TestClusterctlRepositoryNames(t *testing.T) {
	for dir, want := range map[string]string{
		"/mod/cluster-api@v1.14.2/core/config/default":                       "cluster-api CoreProvider cluster-api/core-components.yaml",
		"/mod/cluster-api@v1.14.2/bootstrap/kubeadm/config/default":          "kubeadm BootstrapProvider bootstrap-kubeadm/bootstrap-components.yaml",
		"/mod/cluster-api@v1.14.2/controlplane/kubeadm/config/default/":      "kubeadm ControlPlaneProvider control-plane-kubeadm/control-plane-components.yaml",
		"/mod/cluster-api/test@v1.14.2/infrastructure/docker/config/default": "docker InfrastructureProvider infrastructure-docker/infrastructure-components.yaml",
	} {
		p, err := clusterctlProviderOf(dir)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if got := p.name + " " + p.kind + " " + p.label + "/" + p.file; got != want {
			t.Errorf("%s: got %s, want %s", dir, got, want)
		}
	}
	if _, err := clusterctlProviderOf("/mod/cluster-api@v1.14.2/exp/addons/config/default"); err == nil {
		t.Error("a config directory of no provider clusterctl knows here was taken")
	}
	if got := metadataFor("v1.14.2"); !strings.Contains(got, "- major: 1\n  minor: 14\n  contract: v1beta2\n") {
		t.Errorf("metadata of v1.14.2:\n%s", got)
	}
}
