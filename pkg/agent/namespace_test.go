package agent

import (
	"context"
	"testing"

	"github.com/kubectl-topology/kubectl-topology/pkg/controller"
)

// TestOneNamespaceWithAClassElsewhere runs the agent for one namespace
// (--namespace) with a Topology whose class and templates live in another
// (spec.classNamespace), as a platform team shares classes with teams.
func TestOneNamespaceWithAClassElsewhere(t *testing.T) {
	ctx := context.Background()
	team, platform := newNamespace(t, "team"), newNamespace(t, "platform")
	startAgentWith(t, func(o *Options) { o.Namespace = team })
	classes := loadExample(t, platform)
	createClass(t, classes)
	topo := loadExample(t, team).Topology.DeepCopy()
	topo.Spec.ClassNamespace = platform
	if err := k8s.Create(ctx, topo); err != nil {
		t.Fatal(err)
	}
	stored := reconciled(t, team, "dev", controller.ReasonSucceeded)
	objs := live(t, team, "dev")
	want := expectedFromLive(t, classes, stored, objs)
	if got, want := kindCounts(objs), kindCounts(want.Desired.Objects()); got != want {
		t.Fatalf("generated in %s: %s, want %s", team, got, want)
	}
	for _, o := range objs {
		if o.GetNamespace() != team {
			t.Errorf("%s %s was generated in %s, not the Topology's namespace", o.GetKind(), o.GetName(), o.GetNamespace())
		}
	}
}
