package kill

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/controller"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/names"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestChaosKillsConverge kills the agent ten times, at random moments, while
// it creates three clusters that Cluster API provisions and while it rotates
// their worker templates, then checks that every cluster settles with
// nothing duplicated, orphaned or leaked. It does not run in parallel: the
// other tests share the agent, and their writes would meet its absence.
func TestChaosKillsConverge(t *testing.T) {
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(17, 23)) // seeded: the same kill moments every run
	ex, err := fixture.ClassInNewNamespace(ctx, suite.K8s, "in-memory", "chaos")
	if err != nil {
		t.Fatal(err)
	}
	ns := ex.Topology.Namespace
	topologies := []string{"chaos-0", "chaos-1", "chaos-2"}
	suite.OneMachineTopologies(t, ex, topologies...)
	const kills = 10
	for i := range kills {
		if i == 5 || i == 7 {
			// A change that rotates the MachineDeployments' machine templates.
			for _, name := range topologies {
				setVariable(t, ns, name, "workerStartup", fmt.Sprintf("%q", fmt.Sprintf("%ds", i)))
			}
		}
		time.Sleep(time.Duration(50+rnd.IntN(700)) * time.Millisecond)
		killAgent(t)
	}
	var total chaosFindings
	for _, name := range topologies {
		suite.Settle(t, ns, name)
		fixture.Eventually(t, fixture.SettleTimeout, name+" converges", func(ctx context.Context) (bool, error) {
			topo := &v1alpha2.Topology{}
			if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, topo); err != nil {
				return false, err
			}
			c, current := fixture.Reconciled(topo)
			f, counts, err := inspect(ctx, fixture.Example{Topology: topo, Class: ex.Class, Templates: ex.Templates})
			if err != nil {
				return false, err
			}
			ok := current && c.Reason == controller.ReasonSucceeded && f == chaosFindings{}
			return ok, fmt.Errorf("condition %+v, objects %s, %+v", c, counts, f)
		})
		topo := &v1alpha2.Topology{}
		if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, topo); err != nil {
			t.Fatal(err)
		}
		f, _, err := inspect(ctx, fixture.Example{Topology: topo, Class: ex.Class, Templates: ex.Templates})
		if err != nil {
			t.Fatal(err)
		}
		total.duplicates, total.orphans, total.leaks = total.duplicates+f.duplicates, total.orphans+f.orphans, total.leaks+f.leaks
		ms, err := suite.Machines(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		var mine []fixture.Machine
		for _, m := range ms {
			if strings.HasPrefix(m.Name, name+"-") {
				mine = append(mine, m)
			}
		}
		if running, all := fixture.Count(mine, "md-a", "v1.33.1"); running != 1 || all != 1 {
			t.Errorf("%s: %d of %d md-a machines running, want 1 of 1", name, running, all)
		}
	}
	t.Logf("chaos: kills %d, duplicates %d, orphans %d, leaks %d", kills, total.duplicates, total.orphans, total.leaks)
}

// chaosFindings is what a Topology's generated objects are checked for
// after chaos: duplicates (more of a kind than the engine computes),
// orphans (not owned by the Cluster) and leaks (templates nothing refers to).
type chaosFindings struct{ duplicates, orphans, leaks int }

// inspect compares the objects the agent made for ex.Topology with what the
// engine computes for it, among the kinds the engine generates (Cluster
// API's own Machines, MachineSets and configs are not the agent's), and
// describes them, each orphan with its owners.
func inspect(ctx context.Context, ex fixture.Example) (chaosFindings, string, error) {
	var f chaosFindings
	want, err := desiredstate.Compute(ctx, desiredstate.Input{Topology: ex.Topology, Class: ex.Class, Templates: clusterstate.NewTemplateIndex(ex.Templates...), Names: names.NewSeeded(1)})
	if err != nil {
		return f, "", err
	}
	wantCounts := map[string]int{}
	var kinds []schema.GroupVersionKind
	for _, o := range want.Desired.Objects() {
		if wantCounts[o.GetKind()] == 0 {
			kinds = append(kinds, o.GroupVersionKind())
		}
		wantCounts[o.GetKind()]++
	}
	objs, err := fixture.LiveOfKinds(ctx, suite.K8s, ex.Topology.Namespace, ex.Topology.Name, kinds)
	if err != nil {
		return f, "", err
	}
	got := map[string]int{}
	referenced := map[string]bool{}
	var orphans []string
	for _, o := range objs {
		got[o.GetKind()]++
		if o.GetKind() != "Cluster" && (len(o.GetOwnerReferences()) != 1 || o.GetOwnerReferences()[0].Kind != "Cluster") {
			f.orphans++
			var owners []string
			for _, r := range o.GetOwnerReferences() {
				owners = append(owners, fmt.Sprintf("%s %s/%s uid %s", r.APIVersion, r.Kind, r.Name, r.UID))
			}
			orphans = append(orphans, fmt.Sprintf("%s %s owned by [%s]", o.GetKind(), o.GetName(), strings.Join(owners, ", ")))
		}
		for _, path := range [][]string{
			{"spec", "machineTemplate", "infrastructureRef"},
			{"spec", "machineTemplate", "spec", "infrastructureRef"}, // a control plane on the v1beta2 contract
			{"spec", "template", "spec", "infrastructureRef"},
			{"spec", "template", "spec", "bootstrap", "configRef"},
		} {
			if ref, found, _ := unstructured.NestedMap(o.Object, path...); found {
				referenced[fmt.Sprint(ref["kind"], "/", ref["name"])] = true
			}
		}
	}
	for kind, n := range got {
		f.duplicates += max(0, n-wantCounts[kind])
	}
	for _, o := range objs {
		if strings.HasSuffix(o.GetKind(), "Template") && !referenced[o.GetKind()+"/"+o.GetName()] {
			f.leaks++
		}
	}
	described := fixture.KindCounts(objs)
	if len(orphans) > 0 {
		described += "; orphans: " + strings.Join(orphans, "; ")
	}
	return f, described, nil
}

// setVariable sets a Topology variable through the API, as a user would.
func setVariable(t *testing.T, ns, name, variable, value string) {
	t.Helper()
	err := fixture.ChangeTopology(context.Background(), suite.K8s, client.ObjectKey{Namespace: ns, Name: name}, func(topo *v1alpha2.Topology) {
		for i := range topo.Spec.Variables {
			if topo.Spec.Variables[i].Name == variable {
				topo.Spec.Variables[i].Value.Raw = []byte(value)
				return
			}
		}
		topo.Spec.Variables = append(topo.Spec.Variables, v1alpha2.ClusterVariable{Name: variable, Value: apiextensionsv1.JSON{Raw: []byte(value)}})
	})
	if err != nil {
		t.Fatalf("setting %s on %s/%s: %v", variable, ns, name, err)
	}
}
