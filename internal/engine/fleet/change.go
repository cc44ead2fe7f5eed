package fleet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Target is what rollout r sets on cluster c: its own value where the
// rollout sets one per cluster (an undo), else spec.change.
func Target(r *v1alpha2.TopologyRollout, c v1alpha2.RolloutClusterStatus) v1alpha2.RolloutChange {
	if c.To != nil {
		return *c.To
	}
	return r.Spec.Change
}

// Has is what t has now of the fields change sets: its version, its class,
// and the value of each variable change sets or unsets (a variable t does
// not set has no value).
func Has(change v1alpha2.RolloutChange, t *v1alpha2.Topology) v1alpha2.RolloutChange {
	var has v1alpha2.RolloutChange
	if change.Version != "" {
		has.Version = t.Spec.Version
	}
	if change.Class != "" {
		has.Class = t.Spec.ClassRef.Name
	}
	for _, name := range variableNames(change) {
		i := slices.IndexFunc(t.Spec.Variables, func(tv v1alpha2.ClusterVariable) bool { return tv.Name == name })
		if i >= 0 {
			has.Variables = append(has.Variables, t.Spec.Variables[i])
		}
	}
	return has
}

// variableNames are the variables change sets, then those it unsets.
func variableNames(change v1alpha2.RolloutChange) []string {
	names := make([]string, 0, len(change.Variables)+len(change.UnsetVariables))
	for _, v := range change.Variables {
		names = append(names, v.Name)
	}
	return append(names, change.UnsetVariables...)
}

// Matches tells whether has (as Has reads it) already is what change sets:
// every variable it sets has its value, none it unsets is there.
func Matches(change, has v1alpha2.RolloutChange) bool {
	return has.Version == change.Version && has.Class == change.Class && sameVariables(change.Variables, has.Variables)
}

func sameVariables(a, b []v1alpha2.ClusterVariable) bool {
	if len(a) != len(b) {
		return false
	}
	for _, v := range a {
		i := slices.IndexFunc(b, func(w v1alpha2.ClusterVariable) bool { return w.Name == v.Name })
		if i < 0 || !sameJSON(v.Value, b[i].Value) {
			return false
		}
	}
	return true
}

// sameJSON compares two values as JSON, ignoring spacing and key order.
func sameJSON(a, b apiextensionsv1.JSON) bool {
	var x, y any
	if json.Unmarshal(a.Raw, &x) != nil || json.Unmarshal(b.Raw, &y) != nil {
		return bytes.Equal(a.Raw, b.Raw)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return bytes.Equal(xs, ys)
}

// Apply sets change on t: the version, the class (in the namespace of t's
// current class), each variable's value, and removes the variables it
// unsets.
func Apply(change v1alpha2.RolloutChange, t *v1alpha2.Topology) {
	if change.Version != "" {
		t.Spec.Version = change.Version
	}
	if change.Class != "" {
		t.Spec.ClassRef.Name = change.Class
	}
	for _, v := range change.Variables {
		i := slices.IndexFunc(t.Spec.Variables, func(tv v1alpha2.ClusterVariable) bool { return tv.Name == v.Name })
		if i >= 0 {
			t.Spec.Variables[i].Value = *v.Value.DeepCopy()
			continue
		}
		t.Spec.Variables = append(t.Spec.Variables, *v.DeepCopy())
	}
	t.Spec.Variables = slices.DeleteFunc(t.Spec.Variables, func(tv v1alpha2.ClusterVariable) bool {
		return slices.Contains(change.UnsetVariables, tv.Name)
	})
}

// Describe says a change in a few words: "version v1.35.0, class quick-start-v2, variables a, b".
func Describe(change v1alpha2.RolloutChange) string {
	var parts []string
	if change.Version != "" {
		parts = append(parts, "version "+change.Version)
	}
	if change.Class != "" {
		parts = append(parts, "class "+change.Class)
	}
	if len(change.Variables) > 0 {
		names := make([]string, 0, len(change.Variables))
		for _, v := range change.Variables {
			names = append(names, fmt.Sprintf("%s=%s", v.Name, v.Value.Raw))
		}
		parts = append(parts, "variables "+strings.Join(names, ", "))
	}
	if len(change.UnsetVariables) > 0 {
		parts = append(parts, "unset "+strings.Join(change.UnsetVariables, ", "))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// Differences says how has differs from what change sets, one phrase each:
// "version is v1.34.2 (the rollout sets v1.35.0)".
func Differences(change, has v1alpha2.RolloutChange) []string {
	var out []string
	if has.Version != change.Version {
		out = append(out, fmt.Sprintf("version is %s (the rollout sets %s)", orNone(has.Version), change.Version))
	}
	if has.Class != change.Class {
		out = append(out, fmt.Sprintf("class is %s (the rollout sets %s)", orNone(has.Class), change.Class))
	}
	for _, v := range change.Variables {
		i := slices.IndexFunc(has.Variables, func(w v1alpha2.ClusterVariable) bool { return w.Name == v.Name })
		switch {
		case i < 0:
			out = append(out, fmt.Sprintf("variable %s is not set (the rollout sets %s)", v.Name, v.Value.Raw))
		case !sameJSON(v.Value, has.Variables[i].Value):
			out = append(out, fmt.Sprintf("variable %s is %s (the rollout sets %s)", v.Name, has.Variables[i].Value.Raw, v.Value.Raw))
		}
	}
	for _, name := range change.UnsetVariables {
		if i := slices.IndexFunc(has.Variables, func(w v1alpha2.ClusterVariable) bool { return w.Name == name }); i >= 0 {
			out = append(out, fmt.Sprintf("variable %s is %s (the rollout unsets it)", name, has.Variables[i].Value.Raw))
		}
	}
	return out
}

// PinnedStay says, for a change of version, which of t's pools are pinned
// and stay where they are: "md-gpu stays at its pinned v1.33.1".
func PinnedStay(change v1alpha2.RolloutChange, t *v1alpha2.Topology) []string {
	if change.Version == "" || change.Version == t.Spec.Version {
		return nil
	}
	var out []string
	for _, p := range upgrade.PinnedPools(t) {
		out = append(out, fmt.Sprintf("%s stays at its pinned %s", p.Name, p.Version))
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

// Empty tells whether a change sets nothing.
func Empty(change v1alpha2.RolloutChange) bool {
	return change.Version == "" && change.Class == "" && len(change.Variables) == 0 && len(change.UnsetVariables) == 0
}

// Reverse is the change that puts a cluster back to from, what it had (as
// Has read it) before change: its class, the values it had of change's
// variables, and the variables it did not set unset. A version has no
// reverse (Kubernetes cannot downgrade): ok is false then.
func Reverse(change, from v1alpha2.RolloutChange) (v1alpha2.RolloutChange, bool) {
	if change.Version != "" {
		return v1alpha2.RolloutChange{}, false
	}
	var back v1alpha2.RolloutChange
	if change.Class != "" {
		back.Class = from.Class
	}
	for _, name := range variableNames(change) {
		i := slices.IndexFunc(from.Variables, func(w v1alpha2.ClusterVariable) bool { return w.Name == name })
		if i >= 0 {
			back.Variables = append(back.Variables, *from.Variables[i].DeepCopy())
			continue
		}
		back.UnsetVariables = append(back.UnsetVariables, name)
	}
	return back, true
}

// ProgressMark sums how far t's rollout has got, as its status says: each
// part's state, versions and Machine counts, and the generation the agent
// has seen. Two marks differ when a Machine was created, replaced or
// readied, or a part changed state: progress, for the progress deadline.
func ProgressMark(t *v1alpha2.Topology) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|", t.Status.ObservedGeneration)
	for _, p := range t.Status.Parts() {
		fmt.Fprintf(h, "%s|%s|%s|%s|%d|%d|%d|%d|", p.Name, p.State, p.Phase, p.Version, p.Replicas, p.ReadyReplicas, p.UpToDateReplicas, p.AvailableReplicas)
	}
	return strconv.FormatUint(h.Sum64(), 16)
}
