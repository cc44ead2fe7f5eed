// Command providers renders Cluster API's provider components for the kind
// path, offline, the way a user installs them but without cert-manager or a
// registry: each provider's config/default kustomization (from the module
// cache, rendered by kubectl's built-in kustomize), its ${VAR:=default}
// variables filled in, its manager image replaced by the locally built one,
// and cert-manager's Certificate and Issuer replaced by a CA and serving
// certificate made here, whose Secret it writes and whose CA it injects
// where cert-manager would (webhook configurations, CRD conversion).
//
//	go run ./hack/kind/providers -kubectl bin/kubectl -image core=IMAGE ... DIR... > providers.yaml
//	go run ./hack/kind/providers -repo REPO -version v1.14.2 ... DIR...   # clusterctl local repositories
package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func main() {
	kubectl := flag.String("kubectl", "kubectl", "kubectl, whose built-in kustomize renders the kustomizations")
	images := map[string]string{}
	flag.Func("image", "NAME=IMAGE: the manager image of the provider whose config dir ends in NAME (repeatable)", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("want NAME=IMAGE, got %q", s)
		}
		images[k] = v
		return nil
	})
	vars := map[string]string{}
	flag.Func("var", "NAME=VALUE for a ${NAME} of the components (repeatable); others take their defaults", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("want NAME=VALUE, got %q", s)
		}
		vars[k] = v
		return nil
	})
	repo := flag.String("repo", "", "write each provider as a clusterctl local repository here (DIR/PROVIDER/VERSION/), and its providers entry of a clusterctl configuration to standard output")
	version := flag.String("version", "", "with -repo: the providers' release, e.g. v1.14.2")
	flag.Parse()
	if flag.NArg() == 0 || (*repo != "") != (*version != "") {
		fmt.Fprintln(os.Stderr, "providers: give the providers' config/default directories, and -repo with -version or neither")
		os.Exit(2)
	}
	for _, dir := range flag.Args() {
		if err := renderTo(*repo, *version, *kubectl, dir, images, vars); err != nil {
			fmt.Fprintf(os.Stderr, "providers: %s: %v\n", dir, err)
			os.Exit(1)
		}
	}
}

// renderTo writes one provider's components to standard output, or into
// the clusterctl repository repo.
func renderTo(repo, version, kubectl, dir string, images, vars map[string]string) error {
	if repo == "" {
		return render(os.Stdout, kubectl, dir, images, vars, time.Now())
	}
	p, err := clusterctlProviderOf(dir)
	if err != nil {
		return err
	}
	out := filepath.Join(repo, p.label, version)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var components bytes.Buffer
	if err := render(&components, kubectl, dir, images, vars, time.Now()); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, p.file), components.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "metadata.yaml"), []byte(metadataFor(version)), 0o644); err != nil {
		return err
	}
	abs, err := filepath.Abs(filepath.Join(out, p.file))
	if err != nil {
		return err
	}
	// The entry of a clusterctl configuration's providers list.
	_, err = fmt.Printf("- name: %s\n  type: %s\n  url: file://%s\n", p.name, p.kind, abs)
	return err
}

// clusterctlProvider is how clusterctl names a provider and its components file.
type clusterctlProvider struct{ name, kind, label, file string }

// clusterctlProviders are Cluster API's providers by the end of their config directory.
var clusterctlProviders = map[string]clusterctlProvider{
	"core":                  {"cluster-api", "CoreProvider", "cluster-api", "core-components.yaml"},
	"bootstrap/kubeadm":     {"kubeadm", "BootstrapProvider", "bootstrap-kubeadm", "bootstrap-components.yaml"},
	"controlplane/kubeadm":  {"kubeadm", "ControlPlaneProvider", "control-plane-kubeadm", "control-plane-components.yaml"},
	"infrastructure/docker": {"docker", "InfrastructureProvider", "infrastructure-docker", "infrastructure-components.yaml"},
}

func clusterctlProviderOf(dir string) (clusterctlProvider, error) {
	for end, p := range clusterctlProviders {
		if strings.HasSuffix(strings.TrimSuffix(filepath.Clean(dir), "/config/default"), end) {
			return p, nil
		}
	}
	return clusterctlProvider{}, fmt.Errorf("not the config/default of a provider clusterctl knows here (core, bootstrap/kubeadm, controlplane/kubeadm, infrastructure/docker)")
}

// metadataFor is a provider repository's metadata.yaml: the release series
// of version, on Cluster API's v1beta2 contract.
func metadataFor(version string) string {
	var major, minor int
	_, _ = fmt.Sscanf(version, "v%d.%d", &major, &minor)
	return fmt.Sprintf("apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n- major: %d\n  minor: %d\n  contract: v1beta2\n", major, minor)
}

// render writes one provider's components.
func render(w io.Writer, kubectl, dir string, images, vars map[string]string, now time.Time) error {
	var out, errOut bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl kustomize: %v: %s", err, errOut.String())
	}
	text, err := substitute(out.String(), vars)
	if err != nil {
		return err
	}
	objs, err := decode(text)
	if err != nil {
		return err
	}
	image := ""
	for name, img := range images {
		if strings.HasSuffix(strings.TrimSuffix(dir, "/config/default"), name) {
			image = img
		}
	}
	return writeComponents(w, objs, image, now)
}

// variable is ${NAME} or ${NAME:=default}, as clusterctl substitutes them.
var variable = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:=([^}]*))?\}`)

// substitute fills in each variable from vars, else its default; one with
// neither is an error naming it.
func substitute(text string, vars map[string]string) (string, error) {
	var missing []string
	out := variable.ReplaceAllStringFunc(text, func(m string) string {
		g := variable.FindStringSubmatch(m)
		if v, ok := vars[g[1]]; ok {
			return v
		}
		if g[2] != "" {
			return g[3]
		}
		missing = append(missing, g[1])
		return m
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("no value for %s: pass -var NAME=VALUE", strings.Join(missing, ", "))
	}
	return out, nil
}

func decode(text string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := r.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// writeComponents replaces cert-manager's objects with a Secret made here,
// injects its CA, sets the manager image, and writes the rest as they are.
func writeComponents(w io.Writer, objs []*unstructured.Unstructured, image string, now time.Time) error {
	certs := map[string]*servingCert{} // by "namespace/name" of the Certificate
	var kept []*unstructured.Unstructured
	for _, o := range objs {
		if strings.HasPrefix(o.GetAPIVersion(), "cert-manager.io/") {
			if o.GetKind() == "Certificate" {
				c, err := newServingCert(o, now)
				if err != nil {
					return err
				}
				certs[o.GetNamespace()+"/"+o.GetName()] = c
				kept = append(kept, c.secret)
			}
			continue
		}
		kept = append(kept, o)
	}
	for _, o := range kept {
		if from, ok := o.GetAnnotations()["cert-manager.io/inject-ca-from"]; ok {
			c := certs[from]
			if c == nil {
				return fmt.Errorf("%s %s injects the CA of Certificate %s, which the components lack", o.GetKind(), o.GetName(), from)
			}
			if err := injectCA(o, c.caPEM); err != nil {
				return err
			}
			annotations := o.GetAnnotations()
			delete(annotations, "cert-manager.io/inject-ca-from")
			o.SetAnnotations(annotations)
		}
		if o.GetKind() == "Deployment" && image != "" {
			if err := setManagerImage(o, image); err != nil {
				return err
			}
		}
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", data); err != nil {
			return err
		}
	}
	return nil
}

// injectCA sets caBundle where cert-manager's cainjector would: each webhook
// of a webhook configuration, or a CRD's conversion webhook.
func injectCA(o *unstructured.Unstructured, caPEM []byte) error {
	bundle := base64.StdEncoding.EncodeToString(caPEM)
	switch o.GetKind() {
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, h := range hooks {
			if m, ok := h.(map[string]any); ok {
				if err := unstructured.SetNestedField(m, bundle, "clientConfig", "caBundle"); err != nil {
					return err
				}
			}
		}
		return unstructured.SetNestedSlice(o.Object, hooks, "webhooks")
	case "CustomResourceDefinition":
		return unstructured.SetNestedField(o.Object, bundle, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	}
	return fmt.Errorf("%s %s asks for a CA, which is injected only into webhook configurations and CRDs", o.GetKind(), o.GetName())
}

// setManagerImage runs the locally built image, never pulling it.
func setManagerImage(o *unstructured.Unstructured, image string) error {
	containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		if m, ok := c.(map[string]any); ok && m["name"] == "manager" {
			m["image"] = image
			m["imagePullPolicy"] = "Never"
		}
	}
	return unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers")
}

// servingCert is a CA and the serving certificate it signed for one
// Certificate, as the TLS Secret the provider mounts.
type servingCert struct {
	caPEM  []byte
	secret *unstructured.Unstructured
}

func newServingCert(cert *unstructured.Unstructured, now time.Time) (*servingCert, error) {
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	if len(dnsNames) == 0 || secretName == "" {
		return nil, fmt.Errorf("Certificate %s/%s has no dnsNames or secretName", cert.GetNamespace(), cert.GetName())
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	// A subject's CN is at most 64 characters.
	cn := cert.GetName()
	if len(cn) > 64 {
		cn = cn[:64]
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn + "-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsNames[0][:min(len(dnsNames[0]), 64)]},
		DNSNames: dnsNames, NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
		"metadata": map[string]any{"name": secretName, "namespace": cert.GetNamespace(), "labels": cert.GetLabels()},
		"data": map[string]any{
			"tls.crt": base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
			"tls.key": base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})),
			"ca.crt":  base64.StdEncoding.EncodeToString(caPEM),
		},
	}}
	return &servingCert{caPEM: caPEM, secret: secret}, nil
}
