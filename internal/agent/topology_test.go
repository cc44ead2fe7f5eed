package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/controller"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/apply"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/names"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func live(t *testing.T, ns, name string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := fixture.Live(context.Background(), k8s, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func kindCounts(objs []*unstructured.Unstructured) string { return fixture.KindCounts(objs) }

func getTopology(t *testing.T, ns, name string) *v1alpha2.Topology {
	t.Helper()
	topo := &v1alpha2.Topology{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, topo); err != nil {
		t.Fatal(err)
	}
	return topo
}

// reconciled waits until the Topology's current generation is reconciled
// with the given reason.
func reconciled(t *testing.T, ns, name, reason string) *v1alpha2.Topology {
	t.Helper()
	return reconciledSaying(t, ns, name, reason, "")
}

// reconciledSaying is reconciled with a condition message that contains says.
func reconciledSaying(t *testing.T, ns, name, reason, says string) *v1alpha2.Topology {
	t.Helper()
	var topo *v1alpha2.Topology
	eventually(t, fmt.Sprintf("Topology %s/%s is reconciled with reason %s", ns, name, reason), func() (bool, error) {
		topo = getTopology(t, ns, name)
		c, current := fixture.Reconciled(topo)
		if c == nil {
			return false, fmt.Errorf("no condition yet")
		}
		if !current || c.Reason != reason || !strings.Contains(c.Message, says) {
			return false, fmt.Errorf("condition %s %s: %s", c.Status, c.Reason, c.Message)
		}
		return true, nil
	})
	return topo
}

// expectedFromLive computes what `plan` predicts for the topology given the
// live objects: names are reused, so the prediction is exact.
func expectedFromLive(t *testing.T, ex example, topo *v1alpha2.Topology, objs []*unstructured.Unstructured) *desiredstate.Result {
	t.Helper()
	class := &v1alpha2.TopologyClass{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ex.Class), class); err != nil {
		t.Fatal(err)
	}
	var templates []*unstructured.Unstructured
	for _, tpl := range ex.Templates {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(tpl.GroupVersionKind())
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(tpl), u); err != nil {
			t.Fatal(err)
		}
		templates = append(templates, u)
	}
	res, err := desiredstate.Compute(context.Background(), desiredstate.Input{
		Topology: topo, Class: class, Templates: clusterstate.NewTemplateIndex(templates...),
		Current: desiredstate.StateFromObjects(topo.Name, topo.Namespace, objs), Names: names.NewSeeded(1),
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestTopologyBecomesClusterAPIObjects(t *testing.T) {
	ctx := context.Background()
	outer := t
	agent := startAgent(t)
	ns := newNamespace(t, "create")
	ex := loadExample(t, ns)
	createClass(t, ex)
	if err := k8s.Create(ctx, ex.Topology.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	reconciled(t, ns, "dev", controller.ReasonSucceeded)
	waitIdle(t, agent) // the Cluster takes over ownership in a second pass
	topo := getTopology(t, ns, "dev")

	t.Run("exactly the objects plan predicts", func(t *testing.T) {
		objs := live(t, ns, "dev")
		offline, err := desiredstate.Compute(ctx, desiredstate.Input{Topology: ex.Topology, Class: ex.Class, Templates: clusterstate.NewTemplateIndex(ex.Templates...), Names: names.NewSeeded(1)})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := kindCounts(objs), kindCounts(offline.Desired.Objects()); got != want {
			t.Errorf("live objects %s, plan -f predicts %s", got, want)
		}
		exp := expectedFromLive(t, ex, topo, objs)
		byKey := map[clusterstate.Key]*unstructured.Unstructured{}
		for _, o := range objs {
			byKey[clusterstate.KeyOf(o)] = o
		}
		for _, want := range exp.Desired.Objects() {
			got := byKey[clusterstate.KeyOf(want)]
			if got == nil {
				t.Errorf("%s is predicted but does not exist", clusterstate.KeyOf(want))
				continue
			}
			if apply.NeedsApply(got, want, "nobody") {
				t.Errorf("%s differs from the prediction", clusterstate.KeyOf(want))
			}
		}
	})

	t.Run("ownership chain ends at the Topology", func(t *testing.T) {
		for _, o := range live(t, ns, "dev") {
			refs := o.GetOwnerReferences()
			switch {
			case o.GetKind() == "Cluster":
				if len(refs) != 1 || refs[0].Kind != v1alpha2.TopologyKind || refs[0].UID != topo.UID || refs[0].Controller == nil || !*refs[0].Controller {
					t.Errorf("Cluster owners %+v, want the Topology as controller", refs)
				}
			default:
				if len(refs) != 1 || refs[0].Kind != "Cluster" || refs[0].Name != "dev" {
					t.Errorf("%s %s owners %+v, want the Cluster", o.GetKind(), o.GetName(), refs)
				}
			}
		}
	})

	t.Run("status carries the rollout summary", func(t *testing.T) {
		topo := getTopology(t, ns, "dev")
		if topo.Status.ObservedGeneration != topo.Generation || topo.Status.ClusterName != "dev" {
			t.Errorf("observedGeneration %d (generation %d), clusterName %q", topo.Status.ObservedGeneration, topo.Generation, topo.Status.ClusterName)
		}
		cp := topo.Status.ControlPlane
		if cp == nil || cp.Phase != v1alpha2.PhaseCreating || cp.DesiredVersion != "v1.33.1" || cp.ObjectName == "" {
			t.Errorf("control plane status %+v, want Creating towards v1.33.1", cp)
		}
		if len(topo.Status.MachineDeployments) != 2 || topo.Status.MachineDeployments[0].Name != "md-a" {
			t.Errorf("machineDeployments status %+v", topo.Status.MachineDeployments)
		}
		if topo.Status.Infrastructure != v1alpha2.InfrastructureProvisioning {
			t.Errorf("infrastructure %q, want Provisioning while the DockerCluster is not ready", topo.Status.Infrastructure)
		}
	})

	t.Run("events record what was created", func(t *testing.T) {
		events := &corev1.EventList{}
		if err := k8s.List(ctx, events, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		// One Created event a pass, naming each object it made in the
		// order written: "Created Cluster c, DockerCluster c-x, ...".
		var messages []string
		made := map[string]int{}
		for _, e := range events.Items {
			if e.InvolvedObject.Kind != v1alpha2.TopologyKind || e.InvolvedObject.Name != "dev" || e.Reason != "Created" {
				continue
			}
			messages = append(messages, e.Message)
			for _, obj := range strings.Split(strings.TrimPrefix(e.Message, "Created "), ", ") {
				kind, _, _ := strings.Cut(obj, " ")
				made[kind]++
			}
		}
		all := strings.Join(messages, "\n")
		total := 0
		for _, n := range made {
			total += n
		}
		if len(messages) == 0 || len(messages) >= total {
			t.Errorf("%d Created events name %d objects, want one event for each pass that made some:\n%s", len(messages), total, all)
		}
		for _, kind := range []string{"Cluster", "DockerCluster", "KubeadmControlPlane", "MachineDeployment", "MachinePool"} {
			if made[kind] == 0 {
				t.Errorf("no Created event names a %s in:\n%s", kind, all)
			}
		}
		if !slices.ContainsFunc(messages, func(m string) bool { return strings.HasPrefix(m, "Created Cluster ") }) {
			t.Errorf("no Created event names the Cluster first, as it is written:\n%s", all)
		}
	})

	t.Run("a no-op resync writes nothing", func(t *testing.T) {
		// A restarted agent reconciles every Topology; with nothing to change,
		// it must not write a single object.
		agent.stop()
		before, _ := counter("controller_runtime_reconcile_total", "topology")
		again := startAgent(outer) // keeps running for the subtests after this one
		waitIdle(t, again)
		after, _ := counter("controller_runtime_reconcile_total", "topology")
		if after <= before {
			t.Fatalf("no reconcile ran after the restart (%v before, %v after)", before, after)
		}
		if n, paths := again.writes.seen(); n != 0 {
			t.Errorf("a no-op resync wrote %d times: %v", n, paths)
		}
	})

	t.Run("deleting the Topology removes everything it made", func(t *testing.T) {
		if err := k8s.Delete(ctx, getTopology(t, ns, "dev")); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the Topology and every generated object are gone", func() (bool, error) {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, &v1alpha2.Topology{})
			left := live(t, ns, "dev")
			return apierrors.IsNotFound(err) && len(left) == 0, fmt.Errorf("left: %s", kindCounts(left))
		})
	})
	_ = metav1.Now
}
