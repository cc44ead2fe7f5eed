package upstream

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
)

// TestEditUpstreamClusterInTerminal edits a gate-on upstream Cluster's
// topology in the editor on a pseudo-terminal — the version changed, the
// rollout previewed, applied, confirmed — and Cluster API's own topology
// controller then rolls every machine to the new version.
func TestEditUpstreamClusterInTerminal(t *testing.T) {
	t.Parallel()
	ns := upstreamCluster(t, "edit-upstream", func(topo map[string]any) {
		topo["version"] = "v1.32.3"
		topo["controlPlane"] = map[string]any{"replicas": int64(1)}
		workers := topo["workers"].(map[string]any)
		md := workers["machineDeployments"].([]any)[0].(map[string]any)
		md["replicas"] = int64(1)
		workers["machineDeployments"] = []any{md}
	})
	suite.MustTopology(t, "status", "cluster/dev", "-n", ns, "--watch", "--interval", "1s", "--timeout", fixture.SettleTimeout.String())

	edit := suite.Terminal(t, 100, nil, "edit", "cluster/dev", "-n", ns)
	edit.EditVersion("Edit Cluster "+ns+"/dev", "v1.32.3", "v1.33.1", ns)
	edit.WaitFor(fmt.Sprintf("Cluster %s/dev updated. Follow it with: kubectl topology status cluster/dev", ns))
	if v, _, _ := unstructured.NestedString(onlyCluster(t, ns).Object, "spec", "topology", "version"); v != "v1.33.1" {
		t.Fatalf("the Cluster's spec.topology.version is %s after the edit, want v1.33.1", v)
	}
	fixture.Eventually(t, fixture.SettleTimeout, "upstream rolls every machine to v1.33.1", func(ctx context.Context) (bool, error) {
		ms, err := suite.Machines(ctx, ns)
		if err != nil {
			return false, err
		}
		cp, cpAll := fixture.Count(ms, "", "v1.33.1")
		md, mdAll := fixture.Count(ms, "md-a", "v1.33.1")
		return cp == 1 && cpAll == 1 && md == 1 && mdAll == 1, fmt.Errorf("control plane %d/%d, md-a %d/%d at v1.33.1", cp, cpAll, md, mdAll)
	})
}

// TestEditUpstreamClusterAfterAConflict: the Cluster's metadata changes on
// the server between the editor's read and its apply, so the apply writes
// nothing and the edit is kept on the server's version. Its checks must see
// that version's control plane as the first read did, so that applying
// again writes the edit, keeping the server's change.
func TestEditUpstreamClusterAfterAConflict(t *testing.T) {
	t.Parallel()
	ns := upstreamCluster(t, "edit-conflict", func(topo map[string]any) {
		topo["version"] = "v1.32.3"
		topo["controlPlane"] = map[string]any{"replicas": int64(1)}
		workers := topo["workers"].(map[string]any)
		md := workers["machineDeployments"].([]any)[0].(map[string]any)
		md["replicas"] = int64(1)
		workers["machineDeployments"] = []any{md}
	})
	suite.MustTopology(t, "status", "cluster/dev", "-n", ns, "--watch", "--interval", "1s", "--timeout", fixture.SettleTimeout.String())

	edit := suite.Terminal(t, 100, nil, "edit", "cluster/dev", "-n", ns)
	edit.WaitFor("Edit Cluster " + ns + "/dev")
	for range len("v1.32.3") {
		edit.Keys(fixture.KeyBackspace)
	}
	edit.Keys("v1.33.1")
	edit.WaitFor("1. control plane")
	cluster := onlyCluster(t, ns)
	patch := []byte(`{"metadata":{"annotations":{"example.com/owner":"team-a"}}}`)
	if err := suite.K8s.Patch(context.Background(), cluster, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	edit.Keys(fixture.KeyCtrlS)
	edit.WaitFor("y/n")
	edit.Keys("y")
	edit.WaitFor("changed on the server after it was read")
	edit.PressUntil(fixture.KeyCtrlS, "y/n")
	edit.Keys("y")
	edit.WaitForScreen("Applied to " + ns + "/dev")
	edit.Keys(fixture.KeyCtrlC)
	if err := edit.Exit(); err != nil {
		t.Fatalf("edit exited with %v", err)
	}
	got := onlyCluster(t, ns)
	if v, _, _ := unstructured.NestedString(got.Object, "spec", "topology", "version"); v != "v1.33.1" {
		t.Errorf("the Cluster's spec.topology.version is %s after applying again, want v1.33.1", v)
	}
	if a := got.GetAnnotations()["example.com/owner"]; a != "team-a" {
		// Who wrote the Cluster's metadata last says which write dropped it.
		var writers []string
		for _, mf := range got.GetManagedFields() {
			writers = append(writers, fmt.Sprintf("%s %s %s %s at %s: %s", mf.Manager, mf.Operation, mf.APIVersion, mf.Subresource, mf.Time, mf.FieldsV1.String()))
		}
		t.Errorf("the server's annotation is %q after the edit, want it kept (team-a); the Cluster's annotations %v, its writers:\n%s", a, got.GetAnnotations(), strings.Join(writers, "\n"))
	}
}
