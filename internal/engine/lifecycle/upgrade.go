package lifecycle

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// UpgradeInput is what the upgrade hooks of one reconcile are decided from.
type UpgradeInput struct {
	// Caller calls the hooks.
	Caller Caller
	// Topology is the cluster's Topology; Cluster its Cluster, once made.
	Topology *v1alpha2.Topology
	Cluster  *unstructured.Unstructured
	// Pending are the hooks owed before this reconcile.
	Pending Pending
	// Observed and Plan are the rollout state and the versions still ahead.
	Observed *upgrade.Observed
	Plan     upgrade.VersionPlan
}

// Upgrade is what the upgrade hooks decided in one reconcile.
type Upgrade struct {
	// Gate holds back what a hook's answer holds.
	Gate upgrade.Gate
	// Pending are the hooks owed from now on: the agent writes them before
	// it writes anything else, so that an upgrade it starts is never
	// without the hooks owed at its end.
	Pending Pending
	// AfterControlPlane are owed once the control plane has taken the
	// version it is given now, and only then (Cluster API #14171): written
	// after the control plane, so that a failed write owes nothing.
	AfterControlPlane []string
}

// DecideUpgrade calls the upgrade hooks due now, in upstream's order: after
// the control plane's last step AfterControlPlaneUpgrade, then
// BeforeWorkersUpgrade where the workers take that step; once the workers
// are done AfterWorkersUpgrade; then, before the control plane takes a new
// version, BeforeClusterUpgrade (only at the start of an upgrade) and
// BeforeControlPlaneUpgrade. A blocking answer stops the sequence there.
func DecideUpgrade(ctx context.Context, in UpgradeInput, answers *Answers) (Upgrade, error) {
	out := Upgrade{Pending: in.Pending}
	t, obs := in.Topology, in.Observed
	if obs == nil {
		return out, nil
	}
	desired, cp := t.Spec.Version, obs.ControlPlane
	mds, mps := upgrade.PoolsUpgrading(t, obs)
	stage := upgrade.ControlPlaneStageOf(desired, cp, append(mds, mps...), in.Plan)
	switch stage {
	case upgrade.StageCreating, upgrade.StageProvisioning:
		return out, nil
	case upgrade.StageUpgrading:
		// The control plane took a version but the hooks owed after it were
		// not written (the agent stopped between the two): owe them now.
		if !out.Pending.Has(AfterControlPlaneUpgrade) {
			out.Pending = out.Pending.With(owedAfterStep(in.Plan, cp.SpecVersion)...)
		}
		return out, nil
	}
	// ask calls hook with the versions fill sets; held says its answer
	// holds, and out.Gate then holds what it guards.
	ask := func(hook string, fill func(*Request)) (held bool, err error) {
		r := Request{Hook: hook, Topology: t, Cluster: in.Cluster, ControlPlaneSteps: in.Plan.ControlPlane, WorkersSteps: in.Plan.Workers}
		fill(&r)
		a, err := call(ctx, in.Caller, answers, r)
		if err != nil || !a.Blocking() {
			return false, err
		}
		out.Gate = gateOf(a)
		return true, nil
	}
	// discharge asks an owed hook; answered, it is owed no longer. stop
	// says the sequence ends here, held or failed.
	discharge := func(hook string, fill func(*Request)) (stop bool, err error) {
		if !out.Pending.Has(hook) {
			return false, nil
		}
		held, err := ask(hook, fill)
		if err == nil && !held {
			out.Pending = out.Pending.Without(hook)
		}
		return held || err != nil, err
	}
	atControlPlane := func(r *Request) { r.Version = cp.SpecVersion }

	if stop, err := discharge(AfterControlPlaneUpgrade, atControlPlane); stop {
		return out, err
	}
	if stop, err := discharge(BeforeWorkersUpgrade, func(r *Request) {
		r.From, r.To = upgrade.MinWorkersVersion(upgrade.Unpinned(t, obs)), cp.SpecVersion
	}); stop {
		return out, err
	}
	// The workers' step is not over while they still have to take the
	// control plane's version or are rolling, whether or not the control
	// plane is at the topology's version already.
	if (len(in.Plan.Workers) > 0 && in.Plan.Workers[0] == cp.SpecVersion) || len(mds)+len(mps) > 0 {
		return out, nil
	}
	if stop, err := discharge(AfterWorkersUpgrade, atControlPlane); stop {
		return out, err
	}
	if stage == upgrade.StageUpToDate {
		return out, nil
	}

	// The control plane is free to take its next version.
	if !out.Pending.Has(AfterClusterUpgrade) {
		if keys := BeforeUpgradeAnnotations(mergedAnnotations(t, in.Cluster)); len(keys) > 0 {
			a := annotationHold(keys)
			answers.Add(a)
			out.Gate = gateOf(a)
			return out, nil
		}
		if held, err := ask(BeforeClusterUpgrade, func(r *Request) { r.From, r.To = cp.SpecVersion, desired }); held || err != nil {
			return out, err
		}
		// The upgrade has started: AfterClusterUpgrade is owed at its end,
		// and BeforeClusterUpgrade is not asked again until then.
		out.Pending = out.Pending.With(AfterClusterUpgrade)
	}
	next := desired
	if len(in.Plan.ControlPlane) > 0 {
		next = in.Plan.ControlPlane[0]
	}
	if held, err := ask(BeforeControlPlaneUpgrade, func(r *Request) { r.From, r.To = cp.SpecVersion, next }); held || err != nil {
		return out, err
	}
	out.AfterControlPlane = owedAfterStep(in.Plan, next)
	return out, nil
}

// owedAfterStep are the hooks a control plane step to version owes:
// AfterControlPlaneUpgrade, and the workers' two where they take that step.
func owedAfterStep(plan upgrade.VersionPlan, version string) []string {
	owed := []string{AfterControlPlaneUpgrade}
	if len(plan.Workers) > 0 && plan.Workers[0] == version {
		owed = append(owed, BeforeWorkersUpgrade, AfterWorkersUpgrade)
	}
	return owed
}

// gateOf is what a's hold keeps where it is, as upstream keeps it: the
// control plane always; the workers too while AfterControlPlaneUpgrade or
// BeforeWorkersUpgrade holds.
func gateOf(a Answer) upgrade.Gate {
	g := upgrade.Gate{ControlPlane: heldBy(a)}
	if a.Hook == AfterControlPlaneUpgrade || a.Hook == BeforeWorkersUpgrade {
		g.Workers = g.ControlPlane
	}
	return g
}

// Holds says, for humans, what a blocking answer of hook keeps waiting:
// status, Events and the docs say it in these words.
func Holds(hook string) string {
	switch hook {
	case BeforeClusterCreate:
		return "the creation"
	case BeforeClusterUpgrade:
		return "the upgrade"
	case BeforeControlPlaneUpgrade:
		return "the control plane's upgrade"
	case AfterControlPlaneUpgrade, BeforeWorkersUpgrade:
		return "the control plane and the workers"
	case AfterWorkersUpgrade:
		return "the control plane's next step"
	case AfterClusterUpgrade:
		return "the next upgrade"
	case BeforeClusterDelete:
		return "the deletion"
	}
	return "nothing"
}

// heldBy says which hook holds, for the parts' reasons.
func heldBy(a Answer) string {
	s := fmt.Sprintf("hook %s is blocking", a.Hook)
	if a.Message != "" {
		s += ": " + a.Message
	}
	return s
}

// mergedAnnotations are the Topology's annotations, and the Cluster's for
// a cluster adopted from upstream, whose users set them there.
func mergedAnnotations(t *v1alpha2.Topology, cluster *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	if cluster != nil {
		for k, v := range cluster.GetAnnotations() {
			out[k] = v
		}
	}
	for k, v := range t.Annotations {
		out[k] = v
	}
	return out
}

// call asks the handlers of req.Hook and records the answer, when any
// handler serves it. With none, the hook is as good as answered and
// nothing holds.
func call(ctx context.Context, c Caller, answers *Answers, req Request) (Answer, error) {
	a, err := c.Call(ctx, req)
	if err != nil {
		return a, &CallError{Hook: req.Hook, Err: err}
	}
	if len(a.Handlers) > 0 {
		answers.Add(a)
	}
	return a, nil
}

// CallError is a hook that could not be called or answered with a failure:
// what it guards waits, as under upstream's failure policy Fail.
type CallError struct {
	Hook string
	Err  error
}

func (e *CallError) Error() string { return fmt.Sprintf("lifecycle hook %s: %v", e.Hook, e.Err) }
func (e *CallError) Unwrap() error { return e.Err }
