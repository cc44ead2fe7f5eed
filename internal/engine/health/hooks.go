package health

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// HookLines say, for a human, which lifecycle hook holds what, with the
// handlers asked, their message and when they are asked again, then the
// hooks still owed; none when no hook holds or is owed. now is the clock
// the "in …" is read against; zero leaves it out, for stable output.
func HookLines(h *v1alpha2.HooksStatus, now time.Time) []string {
	if h == nil {
		return nil
	}
	var out []string
	for _, hold := range h.Holding {
		line := fmt.Sprintf("HELD: hook %s (%s) holds %s", hold.Hook, strings.Join(hold.Handlers, ", "), hold.Holds)
		if hold.Message != "" {
			line += " — " + hold.Message
		}
		if hold.NextCall != nil && !now.IsZero() {
			line += fmt.Sprintf("; asked again in %s", HumanDuration(max(0, hold.NextCall.Sub(now))))
		} else if hold.NextCall != nil {
			line += "; asked again at " + hold.NextCall.UTC().Format(time.RFC3339)
		}
		out = append(out, line)
	}
	if len(h.Pending) > 0 {
		out = append(out, "hooks owed: "+strings.Join(h.Pending, ", "))
	}
	return out
}

// NoParts says why a Topology's status has no parts yet: a lifecycle hook
// holding the cluster before its parts are created (BeforeClusterCreate),
// or the agent not having reconciled it.
func NoParts(t *v1alpha2.Topology) string {
	if hook, held := CreationHold(t); held {
		return fmt.Sprintf("no parts yet: hook %s holds the cluster before they are created", hook)
	}
	return "no parts reported yet: the agent has not reconciled it yet"
}

// CreationHold names the hook holding a Topology that has no parts yet.
func CreationHold(t *v1alpha2.Topology) (hook string, held bool) {
	if h := t.Status.Hooks; h != nil && len(h.Holding) > 0 {
		return h.Holding[0].Hook, true
	}
	return "", false
}
