package fleet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Has is what t has now of the fields change sets: its version, its class,
// and each variable's value (a variable t does not set has no value).
func Has(change v1alpha2.RolloutChange, t *v1alpha2.Topology) v1alpha2.RolloutChange {
	var has v1alpha2.RolloutChange
	if change.Version != "" {
		has.Version = t.Spec.Version
	}
	if change.Class != "" {
		has.Class = t.Spec.ClassRef.Name
	}
	for _, v := range change.Variables {
		i := slices.IndexFunc(t.Spec.Variables, func(tv v1alpha2.ClusterVariable) bool { return tv.Name == v.Name })
		if i >= 0 {
			has.Variables = append(has.Variables, t.Spec.Variables[i])
		}
	}
	return has
}

// Matches tells whether has (as Has reads it) already is what change sets.
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
// current class) and each variable's value.
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
	return change.Version == "" && change.Class == "" && len(change.Variables) == 0
}
