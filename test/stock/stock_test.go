package stock

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/localcluster"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// controlPlaneGroup is the API group of the kubeadm control plane provider.
const controlPlaneGroup = "controlplane.cluster.x-k8s.io"

// The providers are stock: they refuse a KubeadmControlPlaneTemplate as a
// default install does. A class that references one is refused at
// admission, naming the provider, the kind and the fix, and nothing is
// created; the same class with the template inline is admitted.
func TestClassReferencingARefusedKind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := suite.NewNamespace(t, "refused")
	tmpl := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"kubeadmConfigSpec": map[string]any{"format": "cloud-config"}}}}}}
	tmpl.SetAPIVersion(controlPlaneGroup + "/v1beta2")
	tmpl.SetKind("KubeadmControlPlaneTemplate")
	tmpl.SetNamespace(ns)
	tmpl.SetName("cp")
	if err := suite.K8s.Create(ctx, tmpl); err == nil || !strings.Contains(err.Error(), "can be set only if the ClusterTopology feature flag is enabled") {
		t.Fatalf("creating a KubeadmControlPlaneTemplate: %v; want the stock provider's refusal", err)
	}

	ex, err := fixture.LoadExampleDir("in-memory", ns)
	if err != nil {
		t.Fatal(err)
	}
	referencing := ex.Class.DeepCopy()
	referencing.Spec.ControlPlane.Template = nil
	referencing.Spec.ControlPlane.TemplateRef = v1alpha2.ClusterClassTemplateReference{APIVersion: tmpl.GetAPIVersion(), Kind: tmpl.GetKind(), Name: "cp"}
	err = suite.K8s.Create(ctx, referencing)
	for _, want := range []string{
		"spec.controlPlane.templateRef",
		"KubeadmControlPlaneTemplate is refused by this cluster's provider control-plane-kubeadm",
		"can be set only if the ClusterTopology feature flag is enabled",
		"write the template into the class as spec.controlPlane.template",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("creating a class that references a refused kind: %v; want it refused saying %q", err, want)
		}
	}
	if err := suite.K8s.Get(ctx, client.ObjectKeyFromObject(referencing), &v1alpha2.TopologyClass{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused class exists (%v)", err)
	}
	if err := ex.CreateClass(ctx, suite.K8s); err != nil {
		t.Fatalf("the class with the template inline: %v", err)
	}
}

// On stock providers, the example class (its control plane and cluster
// templates inline) makes a cluster whose machines run, is upgraded control
// plane first, and deleted with everything it made.
func TestInlineClassLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ex, err := fixture.ClassInNewNamespace(ctx, suite.K8s, "in-memory", "lifecycle")
	if err != nil {
		t.Fatal(err)
	}
	ns, topo := ex.Class.Namespace, ex.Topology.DeepCopy()
	fixture.OneMachineEach(topo)
	if err := suite.K8s.Create(ctx, topo); err != nil {
		t.Fatal(err)
	}
	suite.MustTopology(t, "status", "dev", "-n", ns, "--watch", "--interval", "1s", "--timeout", fixture.SettleTimeout.String())
	kcps, err := suite.List(ctx, ns, "KubeadmControlPlane")
	if err != nil || len(kcps) != 1 {
		t.Fatalf("%d KubeadmControlPlanes (%v), want the one made from the inline template", len(kcps), err)
	}
	if sans, _, _ := unstructured.NestedStringSlice(kcps[0].Object, "spec", "kubeadmConfigSpec", "clusterConfiguration", "apiServer", "certSANs"); strings.Join(sans, ",") != "localhost,127.0.0.1" {
		t.Errorf("the control plane's certSANs are %v, want the inline template's", sans)
	}

	out := suite.MustTopology(t, "upgrade", "dev", "-n", ns, "--version", "v1.34.0", "--yes")
	if !strings.Contains(out, "Preflight passed") {
		t.Fatalf("upgrade said:\n%s", out)
	}
	suite.MustTopology(t, "status", "dev", "-n", ns, "--watch", "--interval", "1s", "--timeout", fixture.SettleTimeout.String())
	ms, err := suite.List(ctx, ns, "Machine")
	if err != nil {
		t.Fatal(err)
	}
	var cpReady, workerCreated time.Time
	for _, m := range ms {
		if v, _, _ := unstructured.NestedString(m.Object, "spec", "version"); v != "v1.34.0" {
			t.Errorf("Machine %s runs %s after the upgrade settled, want v1.34.0", m.GetName(), v)
		}
		if _, cp := m.GetLabels()["cluster.x-k8s.io/control-plane"]; cp {
			cpReady = m.GetCreationTimestamp().Time
		} else {
			workerCreated = m.GetCreationTimestamp().Time
		}
	}
	if len(ms) != 2 || workerCreated.Before(cpReady) {
		t.Errorf("%d Machines; the upgraded worker was created %s, the control plane machine %s: want 2, control plane first", len(ms), workerCreated, cpReady)
	}

	if err := suite.K8s.Delete(ctx, topo); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, fixture.SettleTimeout, "every Machine, the Cluster and the Topology are gone", func(ctx context.Context) (bool, error) {
		ms, err := suite.List(ctx, ns, "Machine")
		if err != nil {
			return false, err
		}
		clusters, err := suite.List(ctx, ns, "Cluster")
		if err != nil {
			return false, err
		}
		err = suite.K8s.Get(ctx, client.ObjectKeyFromObject(topo), &v1alpha2.Topology{})
		return len(ms) == 0 && len(clusters) == 0 && apierrors.IsNotFound(err), nil
	})
}

// convert asks the stock cluster which templates it refuses and writes only
// those into the class; what it prints applies as it is and provisions.
func TestConvertInlinesWhatTheClusterRefuses(t *testing.T) {
	t.Parallel()
	ns := suite.NewNamespace(t, "convert")
	root, err := localcluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, errOut := suite.MustTopologyOutput(t, "convert", "-n", ns, "-f", filepath.Join(root, "testdata", "parity", "in-memory"))
	inlined := strings.Count(errOut, "Inlined: ")
	if inlined != 2 || !strings.Contains(errOut, "KubeadmControlPlaneTemplate") || !strings.Contains(errOut, "DevClusterTemplate") {
		t.Errorf("convert inlined:\n%s\nwant the KubeadmControlPlaneTemplate and the DevClusterTemplate, the two kinds the cluster refuses", errOut)
	}
	for _, kept := range []string{"kind: DevMachineTemplate", "kind: KubeadmConfigTemplate"} {
		if !strings.Contains(out, kept) {
			t.Errorf("convert dropped the %s the cluster stores", strings.TrimPrefix(kept, "kind: "))
		}
	}
	// The case names its namespace; here it goes to a namespace of its own.
	file := filepath.Join(t.TempDir(), "converted.yaml")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(out, "namespace: default", "namespace: "+ns)), 0o600); err != nil {
		t.Fatal(err)
	}
	apply := exec.Command(suite.Kubectl, "--kubeconfig", suite.Kubeconfig, "apply", "--server-side", "-n", ns, "-f", file)
	if got, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("applying what convert printed: %v\n%s", err, got)
	}
	suite.MustTopology(t, "status", "dev", "-n", ns, "--watch", "--interval", "1s", "--timeout", fixture.SettleTimeout.String())
	t.Cleanup(func() {
		_ = suite.K8s.Delete(context.Background(), &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev"}})
	})
}

// version says what the cluster's providers are and which template kinds
// they refuse, and what the product does about it.
func TestVersionReportsRefusedKinds(t *testing.T) {
	t.Parallel()
	out := suite.MustTopology(t, "version")
	for _, want := range []string{
		"Cluster API providers:",
		"control-plane-kubeadm (no Deployment in this cluster): refuses KubeadmControlPlaneTemplate (spec: Forbidden: can be set only if the ClusterTopology feature flag is enabled)",
		"infrastructure-docker (no Deployment in this cluster): refuses DevClusterTemplate, DockerClusterTemplate",
		"bootstrap-kubeadm (no Deployment in this cluster): stores its template kinds (KubeadmConfigTemplate)",
		"A class holds a refused kind inline",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("version says:\n%s\nwant it to say %q", out, want)
		}
	}
}

// A template the cluster refuses for a reason other than a feature gate is
// not inlined (that would not make it valid): convert keeps it referenced,
// says why, and still converts.
func TestConvertKeepsAnInvalidTemplateReferenced(t *testing.T) {
	t.Parallel()
	ns := suite.NewNamespace(t, "invalid")
	root, err := localcluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	class, err := os.ReadFile(filepath.Join(root, "testdata", "parity", "in-memory", "class.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// A number where the DevMachineTemplate's schema wants a duration string.
	invalid := strings.Replace(string(class), "startupDuration: 3s", "startupDuration: 3", 1)
	if invalid == string(class) {
		t.Fatal("the case has no startupDuration to make invalid")
	}
	file := filepath.Join(t.TempDir(), "class.yaml")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(invalid, "namespace: default", "namespace: "+ns)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut := suite.MustTopologyOutput(t, "convert", "-f", file)
	if !strings.Contains(errOut, "Warning: the cluster would refuse DevMachineTemplate "+ns+"/") || !strings.Contains(errOut, "not for a feature gate, so it stays referenced") {
		t.Errorf("convert said:\n%s\nwant a warning naming the invalid DevMachineTemplate", errOut)
	}
	if strings.Count(errOut, "Inlined: ") != 2 || !strings.Contains(out, "kind: TopologyClass") {
		t.Errorf("convert printed %d bytes and said:\n%s\nwant the class with the two refused kinds inlined all the same", len(out), errOut)
	}
}
