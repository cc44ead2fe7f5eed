package e2e

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/localcluster"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestUpstreamV1Beta2ClassesAreAdmitted: Cluster API v1.14.2's own e2e
// classes, written in v1beta2, convert with the plugin binary and pass the
// agent's webhooks unchanged; so does a v1beta2 Cluster of the quick-start
// class, converted to a Topology. A class a user wrote for v1.14 is usable here.
func TestUpstreamV1Beta2ClassesAreAdmitted(t *testing.T) {
	startAgentBinary(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "upstream-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, ns) })
	mod, err := localcluster.ModuleDir(ctx, "sigs.k8s.io/cluster-api/test@"+localcluster.ProvidersVersion)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(mod, "e2e", "data", "infrastructure-docker", "main")
	for _, file := range []string{"clusterclass-quick-start.yaml", "clusterclass-in-memory.yaml", "clusterclass-quick-start-runtimesdk.yaml"} {
		t.Run(file, func(t *testing.T) {
			classes := convertedOfKind(t, v1alpha2.TopologyClassKind, "convert", "-n", ns.Name, "-f", filepath.Join(data, file))
			if len(classes) != 1 {
				t.Fatalf("convert gave %d TopologyClasses, want 1", len(classes))
			}
			if err := k8s.Create(ctx, classes[0]); err != nil {
				t.Fatalf("the agent's webhooks refused the converted %s: %v", file, err)
			}
		})
	}
	t.Run("a v1beta2 Cluster of the quick-start class", func(t *testing.T) {
		topos := convertedOfKind(t, v1alpha2.TopologyKind, "convert", "-n", ns.Name,
			"-f", filepath.Join(data, "clusterclass-quick-start.yaml"), "-f", "../../testdata/upstream-v1beta2/quick-start-cluster.yaml")
		if len(topos) != 1 {
			t.Fatalf("convert gave %d Topologies, want 1", len(topos))
		}
		topo := topos[0]
		topo.SetNamespace(ns.Name)
		if err := k8s.Create(ctx, topo, client.DryRunAll); err != nil {
			t.Fatalf("the agent's webhooks refused the converted Topology: %v", err)
		}
		// The same route refuses what the class forbids, naming the field.
		_ = unstructured.SetNestedSlice(topo.Object, []any{map[string]any{"name": "kubeadmControlPlaneMaxSurge", "value": int64(3)}}, "spec", "variables")
		if err := k8s.Create(ctx, topo, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "spec.variables[kubeadmControlPlaneMaxSurge].value") {
			t.Errorf("a number for a string variable: got %v, want it refused naming the variable", err)
		}
	})
}

// convertedOfKind runs the plugin and returns the objects of kind it printed.
func convertedOfKind(t *testing.T, kind string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out := mustPlugin(t, args...)
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("kubectl topology %s printed what is not YAML: %v\n%s", strings.Join(args, " "), err, out)
		}
		if u.GetKind() == kind {
			objs = append(objs, u)
		}
	}
	return objs
}
