package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
	"github.com/kubectl-topology/kubectl-topology/pkg/controller"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine"
	"github.com/kubectl-topology/kubectl-topology/test/fixture"
)

// changeTopology reads Topology dev, changes it and writes it, again on a
// conflict with the agent's own writes.
func changeTopology(t *testing.T, ns string, change func(*v1alpha1.Topology)) {
	t.Helper()
	if err := fixture.ChangeTopology(context.Background(), k8s, client.ObjectKey{Namespace: ns, Name: "dev"}, change); err != nil {
		t.Fatalf("changing Topology %s/dev: %v", ns, err)
	}
}

// pool is the MachineDeployment the agent made for a pool, or nil.
func pool(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	objs, err := fixture.Live(ctx, k8s, ns, "dev")
	for _, o := range objs {
		if o.GetKind() == "MachineDeployment" && o.GetLabels()[engine.MachineDeploymentNameLabel] == name {
			return o, err
		}
	}
	return nil, err
}

// editorPreview opens `kubectl topology edit`, changes the control plane's
// replicas to 5, and returns what the editor previews once its checks ran.
func editorPreview(t *testing.T, ns, waitForText string) string {
	t.Helper()
	edit := runInTerminal(t, 160, nil, "edit", "dev", "-n", ns)
	edit.waitFor(t, "Edit Topology "+ns+"/dev")
	edit.keys("\x1b[B") // down: the control plane's replicas
	edit.keys("\x7f")
	edit.keys("5")
	edit.waitFor(t, waitForText)
	edit.keys("\x03")
	if err := edit.exit(); err != nil {
		t.Fatalf("edit exited with %v", err)
	}
	return string(edit.bytes())
}

// TestPlanEditorAndAgentAgree: plan NAME and the editor read the live state
// and decide what to write the way the agent does. A pool added while the
// control plane is provisioned waits in all three, and a held
// MachineDeployment stays at its version in all three.
func TestPlanEditorAndAgentAgree(t *testing.T) {
	startAgentBinary(t)
	ex := exampleClass(t, "agree")
	ns := ex.Topology.Namespace
	gpu := ex.Topology.Spec.Workers.MachineDeployments[1]
	ex.Topology.Spec.Workers.MachineDeployments = ex.Topology.Spec.Workers.MachineDeployments[:1]
	createTopology(t, ex)
	waitFor(t, "the agent builds the cluster", func(ctx context.Context) (bool, error) {
		md, err := pool(ctx, ns, "md-a")
		return md != nil, err
	})

	// The control plane is still being provisioned: a new pool waits.
	changeTopology(t, ns, func(topo *v1alpha1.Topology) {
		topo.Spec.Workers.MachineDeployments = append(topo.Spec.Workers.MachineDeployments, gpu)
	})
	waitFor(t, "the agent holds the new pool back", func(ctx context.Context) (bool, error) {
		topo := &v1alpha1.Topology{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, topo); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(topo.Status.Conditions, controller.ReconciledCondition)
		md, err := pool(ctx, ns, "md-gpu")
		return c != nil && c.ObservedGeneration == topo.Generation && c.Reason == controller.ReasonMachineDeploymentsCreate && md == nil, fmt.Errorf("condition %+v, md-gpu %v (%v)", c, md != nil, err)
	})
	out := mustPlugin(t, "plan", "dev", "-n", ns)
	if !strings.Contains(out, "pending (MachineDeployment md-gpu: waiting for the control plane") || strings.Contains(out, "created") {
		t.Errorf("plan does not show md-gpu pending as the agent holds it:\n%s", out)
	}
	editorPreview(t, ns, "(MachineDeployment md-gpu: waiting for the control plane")

	// The control plane is provisioned: the pool is made; then md-gpu is
	// held and the cluster upgraded.
	setControlPlaneVersion(t, ns, "v1.33.1")
	waitFor(t, "the agent creates md-gpu", func(ctx context.Context) (bool, error) {
		md, err := pool(ctx, ns, "md-gpu")
		return md != nil, err
	})
	changeTopology(t, ns, func(topo *v1alpha1.Topology) {
		md := topo.MachineDeployment("md-gpu")
		if md.Metadata.Annotations == nil {
			md.Metadata.Annotations = map[string]string{}
		}
		md.Metadata.Annotations[engine.HoldUpgradeSequenceAnnotation] = ""
		topo.Spec.Version = "v1.34.0"
	})
	waitFor(t, "the agent upgrades the control plane", func(ctx context.Context) (bool, error) {
		objs, err := fixture.Live(ctx, k8s, ns, "dev")
		for _, o := range objs {
			if v, _, _ := unstructured.NestedString(o.Object, "spec", "version"); o.GetKind() == "KubeadmControlPlane" && v == "v1.34.0" {
				return true, err
			}
		}
		return false, err
	})
	setControlPlaneVersion(t, ns, "v1.34.0")
	var gpuName string
	waitFor(t, "md-a upgrades and md-gpu is held", func(ctx context.Context) (bool, error) {
		a, err := pool(ctx, ns, "md-a")
		if err != nil || a == nil {
			return false, err
		}
		g, err := pool(ctx, ns, "md-gpu")
		if err != nil || g == nil {
			return false, err
		}
		gpuName = g.GetName()
		av, _, _ := unstructured.NestedString(a.Object, "spec", "template", "spec", "version")
		gv, _, _ := unstructured.NestedString(g.Object, "spec", "template", "spec", "version")
		return av == "v1.34.0" && gv == "v1.33.1", fmt.Errorf("md-a %s, md-gpu %s", av, gv)
	})
	if out := mustPlugin(t, "plan", "dev", "-n", ns); strings.Contains(out, gpuName) {
		t.Errorf("plan would change the held md-gpu:\n%s", out)
	}
	if screen := editorPreview(t, ns, "modified KubeadmControlPlane"); strings.Contains(screen, "MachineDeployment "+gpuName) {
		t.Error("the editor previews a change of the held md-gpu")
	}
}
