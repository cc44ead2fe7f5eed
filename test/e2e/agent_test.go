package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
	"github.com/kubectl-topology/kubectl-topology/pkg/controller"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine/names"
	"github.com/kubectl-topology/kubectl-topology/test/fixture"
)

func TestAgentRefusesBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--local", "--kubeconfig", kubeconfig, "--concurrency", "0"}, "--concurrency must be at least 1"},
		{[]string{"--local", "--kubeconfig", kubeconfig, "--webhook-port", "70000"}, "--webhook-port must be between 1 and 65535"},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig"}, "loading kubeconfig"},
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := exec.Command(agentBin, tc.args...).CombinedOutput()
			if err == nil {
				t.Fatalf("agent %v exited 0", tc.args)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output does not say %q:\n%s", tc.want, out)
			}
		})
	}
}

func waitFor(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil && ctx.Err() == nil {
			last = err // keep the last real state, not the deadline's error
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out waiting until %s (last: %v)", what, last)
	}
}

// TestAgentBinaryConvergesAfterAKill creates a Topology, kills the agent
// binary with SIGKILL while it builds the cluster, starts it again, and
// checks that it converges to exactly what plan predicts, with no duplicates.
func TestAgentBinaryConvergesAfterAKill(t *testing.T) {
	ctx := context.Background()
	ex := exampleClass(t, "e2e")
	ns := ex.Topology.Namespace
	first := startAgentBinary(t)
	if err := k8s.Create(ctx, ex.Topology.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	// Kill it as soon as it has started making objects.
	waitFor(t, "the agent starts creating objects", func(ctx context.Context) (bool, error) {
		objs, err := fixture.Live(ctx, k8s, ns, "dev")
		return len(objs) > 0, err
	})
	first.kill()
	startAgentBinary(t)
	// Even when this test fails, leave no Topology for the ones after it; the
	// agent is still running when this cleanup runs.
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, ex.Topology.DeepCopy())
		_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(ex.Topology), &v1alpha1.Topology{})
			return apierrors.IsNotFound(err), nil
		})
	})
	// Pools the first agent did not get to wait, as upstream's do, until the
	// control plane is provisioned: play the provider once the Cluster exists.
	waitFor(t, "the restarted agent creates the Cluster", func(ctx context.Context) (bool, error) {
		c := &unstructured.Unstructured{}
		c.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Cluster"})
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, c)
		return err == nil, err
	})
	setControlPlaneVersion(t, ns, "v1.33.1")

	plan, err := engine.Compute(ctx, engine.Input{Topology: ex.Topology, Class: ex.Class, Templates: engine.NewTemplateIndex(ex.Templates...), Names: names.NewSeeded(1)})
	if err != nil {
		t.Fatal(err)
	}
	want := fixture.KindCounts(plan.Desired.Objects())
	waitFor(t, "the restarted agent converges", func(ctx context.Context) (bool, error) {
		topo := &v1alpha1.Topology{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, topo); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(topo.Status.Conditions, controller.ReconciledCondition)
		objs, err := fixture.Live(ctx, k8s, ns, "dev")
		if err != nil {
			return false, err
		}
		got := fixture.KindCounts(objs)
		owned := true
		for _, o := range objs {
			if o.GetKind() != "Cluster" && (len(o.GetOwnerReferences()) != 1 || o.GetOwnerReferences()[0].Kind != "Cluster") {
				owned = false
			}
		}
		return c != nil && c.Reason == controller.ReasonSucceeded && got == want && owned,
			fmt.Errorf("condition %v, objects %s (want %s), all owned by the Cluster: %v", c, got, want, owned)
	})

	if err := k8s.Delete(ctx, ex.Topology.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "deleting the Topology removes everything", func(ctx context.Context) (bool, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, &v1alpha1.Topology{})
		objs, lerr := fixture.Live(ctx, k8s, ns, "dev")
		return apierrors.IsNotFound(err) && lerr == nil && len(objs) == 0, fmt.Errorf("left: %s", fixture.KindCounts(objs))
	})
}
