package bundle

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// v1beta1Converter rewrites Cluster API v1beta1 ClusterClass and Cluster
// topology fields into their v1beta2 places, as upstream's conversion does,
// and records every field v1beta2 has no place for: upstream drops those
// silently, a user reading a plan should know.
type v1beta1Converter struct {
	dropped []string
}

// Warnings are the fields the conversion dropped, one message each, sorted.
func (c *v1beta1Converter) Warnings(object string) []string {
	sort.Strings(c.dropped)
	out := make([]string, 0, len(c.dropped))
	for _, d := range c.dropped {
		out = append(out, fmt.Sprintf("%s: %s", object, d))
	}
	return out
}

func (c *v1beta1Converter) drop(m map[string]any, path, key, why string) {
	if _, ok := m[key]; ok {
		delete(m, key)
		c.dropped = append(c.dropped, fmt.Sprintf("v1beta1 field %s%s is dropped: %s", path, key, why))
	}
}

// ClassSpec converts a v1beta1 ClusterClass spec in place.
func (c *v1beta1Converter) ClassSpec(spec map[string]any) {
	if infra, ok := spec["infrastructure"].(map[string]any); ok {
		c.templateRef(infra, "spec.infrastructure.")
	}
	if ns, ok := spec["infrastructureNamingStrategy"].(map[string]any); ok {
		infra := child(spec, "infrastructure")
		infra["naming"] = ns
		delete(spec, "infrastructureNamingStrategy")
	}
	if cp, ok := spec["controlPlane"].(map[string]any); ok {
		c.templateRef(cp, "spec.controlPlane.")
		if mi, ok := cp["machineInfrastructure"].(map[string]any); ok {
			c.templateRef(mi, "spec.controlPlane.machineInfrastructure.")
		}
		c.healthCheck(cp, "spec.controlPlane.", false)
		rename(cp, "namingStrategy", "naming")
		c.deletion(cp, "spec.controlPlane.")
	}
	workers, _ := spec["workers"].(map[string]any)
	for i, md := range maps(workers["machineDeployments"]) {
		path := fmt.Sprintf("spec.workers.machineDeployments[%d].", i)
		c.workerTemplate(md, path)
		c.healthCheck(md, path, false)
		rename(md, "namingStrategy", "naming")
		c.strategy(md, path)
		c.deletion(md, path)
	}
	for i, mp := range maps(workers["machinePools"]) {
		path := fmt.Sprintf("spec.workers.machinePools[%d].", i)
		c.workerTemplate(mp, path)
		rename(mp, "namingStrategy", "naming")
		c.deletion(mp, path)
	}
	for _, v := range maps(spec["variables"]) {
		rename(v, "metadata", "deprecatedV1Beta1Metadata")
	}
	for _, p := range maps(spec["patches"]) {
		if ext, ok := p["external"].(map[string]any); ok {
			rename(ext, "generateExtension", "generatePatchesExtension")
			rename(ext, "validateExtension", "validateTopologyExtension")
		}
	}
}

// Topology converts a v1beta1 Cluster's spec.topology in place.
func (c *v1beta1Converter) Topology(topo map[string]any) {
	ref := map[string]any{}
	if name, ok := topo["class"]; ok {
		ref["name"] = name
		delete(topo, "class")
	}
	if ns, ok := topo["classNamespace"]; ok {
		ref["namespace"] = ns
		delete(topo, "classNamespace")
	}
	if len(ref) > 0 {
		topo["classRef"] = ref
	}
	c.drop(topo, "spec.topology.", "rolloutAfter", "v1beta2 has no cluster-wide rollout time; set controlPlane.rollout.after or a MachineDeployment's rollout.after")
	c.variables(topo["variables"], "spec.topology.variables")
	if cp, ok := topo["controlPlane"].(map[string]any); ok {
		c.healthCheck(cp, "spec.topology.controlPlane.", true)
		c.deletion(cp, "spec.topology.controlPlane.")
		c.overrides(cp, "spec.topology.controlPlane.variables.overrides")
	}
	workers, _ := topo["workers"].(map[string]any)
	for i, md := range maps(workers["machineDeployments"]) {
		path := fmt.Sprintf("spec.topology.workers.machineDeployments[%d].", i)
		c.healthCheck(md, path, true)
		c.strategy(md, path)
		c.deletion(md, path)
		c.overrides(md, path+"variables.overrides")
	}
	for i, mp := range maps(workers["machinePools"]) {
		path := fmt.Sprintf("spec.topology.workers.machinePools[%d].", i)
		c.deletion(mp, path)
		c.overrides(mp, path+"variables.overrides")
	}
}

func (c *v1beta1Converter) overrides(part map[string]any, path string) {
	if vars, ok := part["variables"].(map[string]any); ok {
		c.variables(vars["overrides"], path)
	}
}

// variables drops definitionFrom, which v1beta1 already refused to set.
func (c *v1beta1Converter) variables(list any, path string) {
	for i, v := range maps(list) {
		c.drop(v, fmt.Sprintf("%s[%d].", path, i), "definitionFrom", "variables have one definition in v1beta2")
	}
}

// templateRef turns {ref: {apiVersion, kind, name, namespace}} into
// {templateRef: {apiVersion, kind, name}}: v1beta2 templates are always in
// the class's namespace.
func (c *v1beta1Converter) templateRef(holder map[string]any, path string) {
	r, ok := holder["ref"].(map[string]any)
	if !ok {
		return
	}
	delete(holder, "ref")
	out := map[string]any{}
	for _, k := range []string{"apiVersion", "kind", "name"} {
		if v, ok := r[k]; ok {
			out[k] = v
		}
	}
	for _, k := range []string{"namespace", "uid", "resourceVersion", "fieldPath"} {
		if _, ok := r[k]; ok {
			c.dropped = append(c.dropped, fmt.Sprintf("v1beta1 field %sref.%s is dropped: a v1beta2 template reference names apiVersion, kind and name only", path, k))
		}
	}
	holder["templateRef"] = out
}

// workerTemplate lifts a worker class's template.{metadata,bootstrap,infrastructure} one level up.
func (c *v1beta1Converter) workerTemplate(w map[string]any, path string) {
	t, ok := w["template"].(map[string]any)
	if !ok {
		return
	}
	delete(w, "template")
	if m, ok := t["metadata"]; ok {
		w["metadata"] = m
	}
	for _, k := range []string{"bootstrap", "infrastructure"} {
		if h, ok := t[k].(map[string]any); ok {
			c.templateRef(h, path+"template."+k+".")
			w[k] = h
		}
	}
}

// healthCheck turns machineHealthCheck into healthCheck.{enabled,checks,remediation}.
func (c *v1beta1Converter) healthCheck(part map[string]any, path string, topology bool) {
	m, ok := part["machineHealthCheck"].(map[string]any)
	if !ok {
		return
	}
	delete(part, "machineHealthCheck")
	hc := child(part, "healthCheck")
	if e, ok := m["enable"]; ok && topology {
		hc["enabled"] = e
	}
	checks := map[string]any{}
	if v, ok := m["nodeStartupTimeout"]; ok {
		checks["nodeStartupTimeoutSeconds"] = c.seconds(v, path+"machineHealthCheck.nodeStartupTimeout")
	}
	for _, list := range []struct{ from, to string }{{"unhealthyConditions", "unhealthyNodeConditions"}, {"unhealthyMachineConditions", "unhealthyMachineConditions"}} {
		var out []any
		for i, u := range maps(m[list.from]) {
			cond := map[string]any{"type": u["type"], "status": u["status"]}
			if t, ok := u["timeout"]; ok {
				cond["timeoutSeconds"] = c.seconds(t, fmt.Sprintf("%smachineHealthCheck.%s[%d].timeout", path, list.from, i))
			}
			out = append(out, cond)
		}
		if out != nil {
			checks[list.to] = out
		}
	}
	if len(checks) > 0 {
		hc["checks"] = checks
	}
	remediation := child(hc, "remediation")
	trigger := map[string]any{}
	if v, ok := m["maxUnhealthy"]; ok {
		trigger["unhealthyLessThanOrEqualTo"] = v
	}
	if v, ok := m["unhealthyRange"]; ok {
		trigger["unhealthyInRange"] = v
	}
	if len(trigger) > 0 {
		remediation["triggerIf"] = trigger
	}
	if r, ok := m["remediationTemplate"].(map[string]any); ok {
		holder := map[string]any{"ref": r}
		c.templateRef(holder, path+"machineHealthCheck.remediationTemplate.")
		remediation["templateRef"] = holder["templateRef"]
	}
	if len(remediation) == 0 {
		delete(hc, "remediation")
	}
	if len(hc) == 0 {
		delete(part, "healthCheck")
	}
}

// strategy splits a MachineDeployment strategy into rollout.strategy,
// deletion.order and healthCheck.remediation.maxInFlight.
func (c *v1beta1Converter) strategy(md map[string]any, path string) {
	s, ok := md["strategy"].(map[string]any)
	if !ok {
		return
	}
	delete(md, "strategy")
	rs := map[string]any{}
	if t, ok := s["type"]; ok {
		rs["type"] = t
	}
	if ru, ok := s["rollingUpdate"].(map[string]any); ok {
		out := map[string]any{}
		for _, k := range []string{"maxUnavailable", "maxSurge"} {
			if v, ok := ru[k]; ok {
				out[k] = v
			}
		}
		if len(out) > 0 {
			rs["rollingUpdate"] = out
		}
		if d, ok := ru["deletePolicy"]; ok {
			child(md, "deletion")["order"] = d
		}
	}
	if len(rs) > 0 {
		child(md, "rollout")["strategy"] = rs
	}
	if r, ok := s["remediation"].(map[string]any); ok {
		if v, ok := r["maxInFlight"]; ok {
			child(child(md, "healthCheck"), "remediation")["maxInFlight"] = v
		}
	}
}

// deletion moves the node timeouts into deletion.*Seconds.
func (c *v1beta1Converter) deletion(part map[string]any, path string) {
	for _, k := range []string{"nodeDrainTimeout", "nodeVolumeDetachTimeout", "nodeDeletionTimeout"} {
		v, ok := part[k]
		if !ok {
			continue
		}
		delete(part, k)
		child(part, "deletion")[k+"Seconds"] = c.seconds(v, path+k)
	}
}

// seconds converts a duration to whole seconds as upstream does (truncated,
// capped at MaxInt32). A value that is not a duration is kept, so decoding
// names the field.
func (c *v1beta1Converter) seconds(v any, field string) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		c.dropped = append(c.dropped, fmt.Sprintf("v1beta1 field %s: %q is not a duration such as 90s and is dropped", field, s))
		return nil
	}
	secs := math.Trunc(d.Seconds())
	if secs > math.MaxInt32 {
		secs = math.MaxInt32
	}
	if d%time.Second != 0 {
		c.dropped = append(c.dropped, fmt.Sprintf("v1beta1 field %s: %s is cut to whole seconds (%ds)", field, s, int64(secs)))
	}
	return int64(secs)
}

// child is m[key] as a map, created when missing.
func child(m map[string]any, key string) map[string]any {
	if c, ok := m[key].(map[string]any); ok {
		return c
	}
	c := map[string]any{}
	m[key] = c
	return c
}

func rename(m map[string]any, from, to string) {
	if v, ok := m[from]; ok {
		delete(m, from)
		m[to] = v
	}
}

// maps is the map items of a list.
func maps(v any) []map[string]any {
	list, _ := v.([]any)
	out := make([]map[string]any, 0, len(list))
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// isV1Beta1 reports whether apiVersion is group/v1beta1.
func isV1Beta1(apiVersion string) bool { return strings.HasSuffix(apiVersion, "/v1beta1") }
