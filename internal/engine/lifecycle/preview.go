package lifecycle

import (
	"fmt"
	"strings"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
)

// PreviewCalls lists, in the order the agent will make them, the lifecycle
// hook calls the upgrade p makes to the handlers served names for each hook
// (the extensions registered for the topology's namespace): BeforeClusterUpgrade
// first, then for each control plane step BeforeControlPlaneUpgrade and
// AfterControlPlaneUpgrade, and around the workers' steps BeforeWorkersUpgrade
// and AfterWorkersUpgrade, and AfterClusterUpgrade at the end. A hook no
// handler serves is left out; nil when none is served.
func PreviewCalls(p *upgrade.UpgradePlan, served map[string][]string) []string {
	if p == nil {
		return nil
	}
	var out []string
	add := func(hook, versions string) {
		if hs := served[hook]; len(hs) > 0 {
			out = append(out, fmt.Sprintf("%s %s (%s)", hook, versions, strings.Join(hs, ", ")))
		}
	}
	add(BeforeClusterUpgrade, p.From+" → "+p.To)
	for i, s := range p.Steps {
		cp := len(s.Parts) == 1 && s.Parts[0].Kind == "ControlPlane"
		firstOfWorkers := !cp && (i == 0 || isControlPlaneStep(p.Steps[i-1]) || p.Steps[i-1].To != s.To)
		lastOfWorkers := !cp && (i == len(p.Steps)-1 || isControlPlaneStep(p.Steps[i+1]) || p.Steps[i+1].To != s.To)
		switch {
		case cp:
			add(BeforeControlPlaneUpgrade, s.From+" → "+s.To)
			add(AfterControlPlaneUpgrade, s.To)
		case firstOfWorkers:
			add(BeforeWorkersUpgrade, s.From+" → "+s.To)
		}
		if lastOfWorkers {
			add(AfterWorkersUpgrade, s.To)
		}
	}
	add(AfterClusterUpgrade, p.To)
	return out
}

func isControlPlaneStep(s upgrade.UpgradeStep) bool {
	return len(s.Parts) == 1 && s.Parts[0].Kind == "ControlPlane"
}

// PreviewLines are PreviewCalls numbered under a heading, for `upgrade
// --dry-run`, `plan` and the editor; nil when no hook is served.
func PreviewLines(p *upgrade.UpgradePlan, served map[string][]string) []string {
	calls := PreviewCalls(p, served)
	if len(calls) == 0 {
		return nil
	}
	out := []string{"lifecycle hooks called, in order (each may hold what follows it):"}
	for i, c := range calls {
		out = append(out, fmt.Sprintf("  %c. %s", 'a'+rune(i%26), c))
	}
	return out
}
