package printer

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	statusv1 "github.com/kubectl-topology/kubectl-topology/pkg/api/status/v1"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Status writes one Topology's report for a human: the state and since
// when, what makes it stale, the parts as a tree, every problem, and recent
// warnings. A zero now leaves out the times, so that a watch prints a new
// block only when something changed.
func Status(w io.Writer, t *v1alpha2.Topology, agent statusv1.AgentReport, r statusv1.TopologyReport, now time.Time) error {
	since := func(ts *metav1.Time) string {
		if now.IsZero() || ts == nil {
			return "-"
		}
		return health.HumanDuration(now.Sub(ts.Time))
	}
	head := fmt.Sprintf("%s %s/%s (class %s) · %s", contract.KindOf(t), t.Namespace, t.Name, t.Spec.ClassRef.Name, r.State)
	if upstream.IsCluster(t) {
		head = fmt.Sprintf("Cluster %s/%s (ClusterClass %s, Cluster API's topology controller) · %s", t.Namespace, t.Name, t.Spec.ClassRef.Name, r.State)
	}
	if !now.IsZero() && r.StateSince != nil {
		head += " for " + since(r.StateSince)
	}
	fmt.Fprintln(w, head)
	fmt.Fprintf(w, "  version %s · rollout phase %s · infrastructure %s\n", t.Spec.Version, dash(string(t.Status.Phase)), dash(string(t.Status.Infrastructure)))
	if p := t.Status.UpgradePlan; p != nil {
		fmt.Fprintf(w, "  upgrade plan: control plane %s · workers %s\n", dash(strings.Join(p.ControlPlane, " → ")), dash(strings.Join(p.Workers, " → ")))
	}
	for _, line := range health.HookLines(t.Status.Hooks, now) {
		fmt.Fprintf(w, "  %s\n", line)
	}
	// Of the two reasons r.Stale gives, only a silent agent is STALE; a change
	// not seen yet is an ordinary line.
	switch {
	case agent.Unwatched:
		fmt.Fprintf(w, "  UNWATCHED: %s\n", agent.Problem)
	case agent.Problem != "":
		fmt.Fprintf(w, "  STALE: %s\n", agent.Problem)
	default:
		if leads := leaderLine(agent, now); leads != "" {
			fmt.Fprintf(w, "  agent: %s\n", leads)
		}
	}
	var lines []string
	if line := health.NotObserved(t); line != "" {
		lines = append(lines, line)
	}
	for _, line := range append(lines, health.ConditionsNotTrue(t)...) {
		fmt.Fprintf(w, "  %s\n", line)
	}
	parts := t.Status.Parts()
	if len(parts) == 0 {
		switch {
		case agent.Unwatched:
			fmt.Fprintln(w, "  no parts reported yet, and no agent watches this namespace (see above)")
		case agent.Problem != "":
			fmt.Fprintln(w, "  no parts reported yet, and the agent is not reporting (see above)")
		default:
			line := health.NoParts(t)
			if _, held := health.CreationHold(t); held {
				line += " (HELD above)"
			}
			fmt.Fprintf(w, "  %s\n", line)
		}
		return nil
	}
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "PART\tOBJECT\tVERSION\tREADY\tUP-TO-DATE\tSTATE\tSINCE\tWHY")
	open := false
	for i, p := range parts {
		branch := "├─"
		if i == len(parts)-1 {
			branch = "└─"
		}
		name := p.Name
		if p.Class != "" {
			name += " (" + p.Class + ")"
		}
		version := dash(p.Version)
		if p.Version != p.DesiredVersion && p.DesiredVersion != "" {
			version = dash(p.Version) + " → " + p.DesiredVersion
		}
		if p.Pinned {
			version += " (pinned)"
		}
		desired := "-"
		if p.DesiredReplicas == nil {
			open = true
		} else {
			desired = fmt.Sprint(*p.DesiredReplicas)
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%d/%s\t%d\t%s\t%s\t%s\n", branch, name, dash(p.ObjectName), version, p.ReadyReplicas, desired, p.UpToDateReplicas, dash(string(p.State)), since(p.StateSince), health.PartWhy(p))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if open {
		fmt.Fprintln(w, "  READY n/-: an autoscaler sets that pool's replicas")
	}
	var problems []string
	for _, p := range parts {
		for _, pr := range p.Problems {
			line := p.Name + ": " + pr.Object + " " + pr.Reason
			if pr.Message != "" {
				line += ": " + pr.Message
			}
			if !now.IsZero() && pr.Since != nil {
				line += " (for " + since(pr.Since) + ")"
			}
			problems = append(problems, line)
		}
	}
	if len(problems) > 0 {
		fmt.Fprintln(w, "Problems:")
		for _, line := range problems {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	if len(r.Events) > 0 {
		fmt.Fprintf(w, "Warning events (last %s):\n", health.HumanDuration(health.EventWindow))
		for _, e := range r.Events {
			count := ""
			if e.Count > 1 {
				count = fmt.Sprintf(" (x%d)", e.Count)
			}
			fmt.Fprintf(w, "  %s ago  %s  %s: %s%s\n", since(&e.Time), e.Object, e.Reason, e.Message, count)
		}
	}
	return nil
}

// ShardLines writes one line per agent of a sharded management cluster:
// what it watches, where it runs, and who leads it or why it is stale.
func ShardLines(w io.Writer, shards []statusv1.AgentReport, now time.Time) {
	for _, a := range shards {
		line := leaderLine(a, now)
		if a.Problem != "" {
			line = "STALE: " + a.Problem
		}
		fmt.Fprintf(w, "shard %s (agent in %s): %s\n", a.Watches, a.Namespace, line)
	}
}

// StatusList writes one line per Topology, in the report's order; items are
// the Topologies the report was made from.
func StatusList(w io.Writer, report statusv1.StatusReport, items []v1alpha2.Topology, now time.Time) error {
	if report.Agent.Problem != "" {
		fmt.Fprintf(w, "STALE: %s\n", report.Agent.Problem)
	} else if leads := leaderLine(report.Agent, now); leads != "" {
		fmt.Fprintln(w, "agent: "+leads)
	}
	ShardLines(w, report.Shards, now)
	byKey := map[string]*v1alpha2.Topology{}
	for i := range items {
		byKey[items[i].Namespace+"/"+items[i].Name] = &items[i]
	}
	unwatched := map[string]string{}
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tCLASS\tVERSION\tSTATE\tSINCE\tCONTROL PLANE\tWORKERS\tPROBLEMS")
	for _, r := range report.Items {
		t, ok := byKey[r.Namespace+"/"+r.Name]
		if !ok {
			return fmt.Errorf("the status report names %s/%s, which is not among the Topologies given", r.Namespace, r.Name)
		}
		since := "-"
		if r.StateSince != nil {
			since = health.HumanDuration(now.Sub(r.StateSince.Time))
		}
		problems := strings.Join(r.Problems, ", ")
		switch {
		case r.Unwatched:
			problems = strings.TrimPrefix(problems+", Unwatched", ", ")
			unwatched[r.Namespace] = r.Stale[0]
		case len(r.Stale) > 0 && report.Agent.Problem == "":
			problems = strings.TrimPrefix(problems+", Stale", ", ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Namespace, upstream.Ref(t), r.Class, r.Version, r.State, since, controlPlaneReplicas(t), workerReplicas(t), dash(problems))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, ns := range slices.Sorted(maps.Keys(unwatched)) {
		fmt.Fprintf(w, "UNWATCHED: %s\n", unwatched[ns])
	}
	return nil
}

// StatusReport writes the report as the versioned document of `status -o
// json|yaml`: format is "json" or "yaml".
func StatusReport(w io.Writer, format string, report statusv1.StatusReport) error {
	report.APIVersion, report.Kind = statusv1.APIVersion, statusv1.Kind
	var data []byte
	var err error
	switch format {
	case "yaml":
		data, err = yaml.Marshal(report)
	case "json":
		data, err = json.MarshalIndent(report, "", "  ")
		data = append(data, '\n')
	default:
		return fmt.Errorf("status report: unknown output format %q: use json or yaml", format)
	}
	if err != nil {
		return fmt.Errorf("encoding the status report: %w", err)
	}
	_, err = w.Write(data)
	return err
}

// leaderLine names the agent replica that leads and, outside a watch (now
// zero), how long ago it renewed its heartbeat; "" when the heartbeat names
// none. Callers say whose agent it is.
func leaderLine(agent statusv1.AgentReport, now time.Time) string {
	if agent.Leader == "" {
		return ""
	}
	line := agent.Leader + " leads"
	if !now.IsZero() && agent.LastHeartbeat != nil {
		line += ", renewed " + health.HumanDuration(now.Sub(agent.LastHeartbeat.Time)) + " ago"
	}
	return line
}
