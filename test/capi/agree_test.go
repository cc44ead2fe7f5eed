package capi

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// pool is the MachineDeployment the agent made for a pool, or nil.
func pool(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	mds, err := suite.List(ctx, ns, "MachineDeployment")
	for i := range mds {
		if mds[i].GetLabels()[clusterv1.ClusterTopologyMachineDeploymentNameLabel] == name {
			return &mds[i], err
		}
	}
	return nil, err
}

// editorPreview opens `kubectl topology edit`, changes the control plane's
// replicas to 5, and returns what the editor previews once its checks ran.
func editorPreview(t *testing.T, ns, waitForText string) string {
	t.Helper()
	edit := suite.Terminal(t, 160, nil, "edit", "dev", "-n", ns)
	edit.WaitFor("Edit Topology " + ns + "/dev")
	edit.Keys(fixture.KeyDown) // the control plane's replicas
	edit.Keys(fixture.KeyBackspace)
	edit.Keys("5")
	edit.WaitFor(waitForText)
	edit.Keys(fixture.KeyCtrlC)
	if err := edit.Exit(); err != nil {
		t.Fatalf("edit exited with %v", err)
	}
	return string(edit.Bytes())
}

// TestPlanEditorAndAgentAgree: plan NAME and the editor read the live state
// and decide what to write the way the agent does. A pool added while
// Cluster API upgrades the control plane waits in all three (upstream makes
// it wait too, and only then: once a control plane reports a version it
// counts as provisioned), and a held MachineDeployment stays at its version
// in all three while the others are upgraded.
func TestPlanEditorAndAgentAgree(t *testing.T) {
	t.Parallel()
	ns := suite.InMemoryCluster(t, "agree", func(topo *v1alpha2.Topology) {
		topo.Spec.ControlPlane.Replicas = ptr.To[int32](1)
		topo.Spec.Workers.MachineDeployments = []v1alpha2.MachineDeploymentTopology{
			{Class: "default-worker", Name: "md-a", Replicas: ptr.To[int32](1)},
			{Class: "default-worker", Name: "md-c", Replicas: ptr.To[int32](1),
				Metadata: v1alpha2.ObjectMeta{Annotations: map[string]string{clusterv1.ClusterTopologyHoldUpgradeSequenceAnnotation: ""}}},
		}
	}, slowControlPlane)
	suite.Settle(t, ns, "dev")
	held, err := pool(context.Background(), ns, "md-c")
	if err != nil || held == nil {
		t.Fatalf("no MachineDeployment for md-c (%v)", err)
	}

	// The control plane upgrades (its new machine takes 30 s to start): a
	// pool added meanwhile waits.
	suite.ChangeTopology(t, ns, func(topo *v1alpha2.Topology) { topo.Spec.Version = "v1.34.0" })
	fixture.Eventually(t, time.Minute, "Cluster API starts replacing the control plane's machine", func(ctx context.Context) (bool, error) {
		ms, err := suite.Machines(ctx, ns)
		_, all := fixture.Count(ms, "", "v1.34.0")
		return err == nil && all == 2, fmt.Errorf("%d control plane machines (%v)", all, err)
	})
	suite.ChangeTopology(t, ns, func(topo *v1alpha2.Topology) {
		topo.Spec.Workers.MachineDeployments = append(topo.Spec.Workers.MachineDeployments,
			v1alpha2.MachineDeploymentTopology{Class: "default-worker", Name: "md-b", Replicas: ptr.To[int32](1)})
	})
	fixture.Eventually(t, time.Minute, "the agent holds the new pool back", func(ctx context.Context) (bool, error) {
		topo := &v1alpha2.Topology{}
		if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, topo); err != nil {
			return false, err
		}
		c, current := fixture.Reconciled(topo)
		md, err := pool(ctx, ns, "md-b")
		// The agent has reconciled the generation that added md-b and did not make it.
		return current && md == nil, fmt.Errorf("condition %+v, md-b %v (%v)", c, md != nil, err)
	})
	out := suite.MustTopology(t, "plan", "dev", "-n", ns)
	if !strings.Contains(out, "pending (MachineDeployment md-b: waiting for the control plane") || strings.Contains(out, "created") {
		t.Errorf("plan does not show md-b pending as the agent holds it:\n%s", out)
	}
	editorPreview(t, ns, "(MachineDeployment md-b: waiting for the control plane")

	// Cluster API finishes the control plane: md-b is made, md-a upgraded,
	// md-c held at its version.
	fixture.Eventually(t, fixture.SettleTimeout, "md-b is made, md-a upgrades and md-c is held", func(ctx context.Context) (bool, error) {
		a, err := pool(ctx, ns, "md-a")
		if err != nil || a == nil {
			return false, err
		}
		b, err := pool(ctx, ns, "md-b")
		if err != nil || b == nil {
			return false, fmt.Errorf("no md-b yet (%v)", err)
		}
		c, err := pool(ctx, ns, "md-c")
		if err != nil || c == nil {
			return false, err
		}
		av, _, _ := unstructured.NestedString(a.Object, "spec", "template", "spec", "version")
		bv, _, _ := unstructured.NestedString(b.Object, "spec", "template", "spec", "version")
		cv, _, _ := unstructured.NestedString(c.Object, "spec", "template", "spec", "version")
		return av == "v1.34.0" && bv == "v1.34.0" && cv == "v1.33.1", fmt.Errorf("md-a %s, md-b %s, md-c %s", av, bv, cv)
	})
	if out := suite.MustTopology(t, "plan", "dev", "-n", ns); strings.Contains(out, held.GetName()) {
		t.Errorf("plan would change the held md-c:\n%s", out)
	}
	if screen := editorPreview(t, ns, "modified KubeadmControlPlane"); strings.Contains(screen, "MachineDeployment "+held.GetName()) {
		t.Error("the editor previews a change of the held md-c")
	}
}

// slowControlPlane makes the class's control plane machines take 30 s to
// start, so that a test can act while Cluster API provisions them.
func slowControlPlane(ex *fixture.Example) {
	for _, tpl := range ex.Templates {
		if tpl.GetKind() == "DevMachineTemplate" && tpl.GetName() == "in-memory-control-plane" {
			_ = unstructured.SetNestedField(tpl.Object, "30s", "spec", "template", "spec", "backend", "inMemory", "vm", "provisioning", "startupDuration")
		}
	}
}
