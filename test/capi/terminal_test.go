package capi

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestEditAndFollowInTerminal runs `kubectl topology edit` on a real
// pseudo-terminal, as a user at a keyboard would: change the version, read
// the rollout preview, apply, confirm, quit — the Topology on the server has
// changed. Then `status --watch` follows the upgrade Cluster API carries out
// and, with a timeout shorter than the rollout, gives up saying why.
func TestEditAndFollowInTerminal(t *testing.T) {
	t.Parallel()
	ns := suite.InMemoryCluster(t, "terminal", func(topo *v1alpha2.Topology) {
		fixture.OneMachineEach(topo)
	})
	suite.Settle(t, ns, "dev")

	edit := suite.Terminal(t, 100, nil, "edit", "dev", "-n", ns)
	edit.EditVersion("Edit Topology "+ns+"/dev", "v1.33.1", "v1.34.0", ns)
	if v := topologyVersion(t, ns); v != "v1.34.0" {
		t.Errorf("the Topology on the server has version %s after the edit, want v1.34.0", v)
	}
	edit.WaitFor(fmt.Sprintf("Topology %s/dev updated.", ns))
	if !colour.Match(edit.Bytes()) {
		t.Error("the editor drew no colour on a 256-colour terminal; the NO_COLOR check below would prove nothing")
	}

	// The watch below lasts 2 s; on a loaded machine the agent may take longer
	// than that to take the edit up, and then there is no rollout to show yet.
	fixture.Eventually(t, 2*time.Minute, "the agent reconciles the edited generation", func(ctx context.Context) (bool, error) {
		topo := &v1alpha2.Topology{}
		if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dev"}, topo); err != nil {
			return false, err
		}
		c, current := fixture.Reconciled(topo)
		return current, fmt.Errorf("generation %d, condition %+v", topo.Generation, c)
	})
	status := suite.Terminal(t, 120, nil, "status", "dev", "-n", ns, "--watch", "--interval", "200ms", "--timeout", "2s")
	status.WaitFor("v1.33.1 → v1.34.0")
	status.WaitFor("Topology " + ns + "/dev did not settle within 2s")
	status.WaitFor("The rollout goes on")
	var exit *exec.ExitError
	if err := status.Exit(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("status --watch --timeout exited with %v, want exit status 1", err)
	}

	// NO_COLOR: the same editor, opened and quit, draws no colour at all.
	plain := suite.Terminal(t, 100, []string{"NO_COLOR=1"}, "edit", "dev", "-n", ns)
	plain.WaitFor("Edit Topology " + ns + "/dev")
	plain.Keys(fixture.KeyCtrlC)
	if err := plain.Exit(); err != nil {
		t.Fatalf("edit with NO_COLOR exited with %v", err)
	}
	if m := colour.Find(plain.Bytes()); m != nil {
		t.Errorf("with NO_COLOR the editor still drew colour: %q", m)
	}
	suite.Settle(t, ns, "dev")
}

// colour matches an SGR sequence that sets a foreground or background colour.
var colour = regexp.MustCompile(`\x1b\[[0-9;]*?(3[0-7]|9[0-7]|4[0-7]|10[0-7]|[34]8;[25];[0-9;]+)m`)
