package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestEditInATerminal runs the real plugin on an 80x24 terminal, read as
// its screen shows, against the local control plane and the agent, and uses
// the nested form: override a variable for one pool, add an item to a list
// variable, apply — and reads both back from the Topology on the server.
func TestEditInATerminal(t *testing.T) {
	startAgentBinary(t)
	ex := exampleClass(t, "terminal")
	createTopology(t, ex)
	ns := ex.Topology.Namespace
	waitFor(t, "the agent builds the cluster", func(ctx context.Context) (bool, error) {
		objs, err := fixture.Live(ctx, k8s, ns, "dev")
		return len(objs) > 10, err
	})
	s := fixture.StartTerminal(t, pluginBin, kubeconfig, 80, 24, nil, "edit", "dev", "-n", ns)

	s.WaitForScreen("Edit Topology " + ns + "/dev")
	s.GoTo("md-a (general) replicas")
	s.Keys(fixture.KeyCtrlO)
	s.WaitForScreen("Override a variable for md-a")
	s.PressUntil(fixture.KeyDown, "> maxPods") // the picker's choice: the fifth variable of the class
	s.Keys(fixture.KeyEnter)
	s.WaitForRow(">", "override maxPods")
	s.Keys(strings.Repeat(fixture.KeyBackspace, 3) + "64")
	s.WaitForRow(">", "override maxPods", "64")
	s.GoTo("[1]")
	s.Keys(fixture.KeyCtrlN)
	s.WaitForRow(">", "[2]")
	s.Keys("10.0.0.9")
	s.WaitForScreen("2 setting(s) changed")
	s.Keys(fixture.KeyCtrlS)
	s.WaitForScreen("y/n")
	s.Keys("y")
	s.WaitForScreen("Applied to " + ns + "/dev")
	s.Keys(fixture.KeyCtrlC)
	if err := s.Exit(); err != nil {
		t.Errorf("edit exited with %v", err)
	}

	got := &v1alpha2.Topology{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "dev"}, got); err != nil {
		t.Fatal(err)
	}
	md := got.Spec.Workers.MachineDeployments[0]
	if md.Name != "md-a" || md.Variables == nil || len(md.Variables.Overrides) != 1 || string(md.Variables.Overrides[0].Value.Raw) != "64" {
		t.Errorf("md-a on the server: %+v; want maxPods overridden to 64", md.Variables)
	}
	var sans []string
	for _, v := range got.Spec.Variables {
		if v.Name == "apiServerCertSANs" {
			if err := json.Unmarshal(v.Value.Raw, &sans); err != nil {
				t.Fatal(err)
			}
		}
	}
	if fmt.Sprint(sans) != "[localhost 127.0.0.1 10.0.0.9]" {
		t.Errorf("apiServerCertSANs on the server: %v", sans)
	}
}
