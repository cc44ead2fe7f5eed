package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/names"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/patches"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/variables"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// ValidateClass checks a TopologyClass on its own: template references set,
// worker class names unique, variables usable, patches well formed.
func ValidateClass(ctx context.Context, c *v1alpha2.TopologyClass) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	infra, controlPlane, cpMachine := contract.ClassSlots(c)
	requireRef := func(s contract.TemplateSlot) {
		errs = append(errs, validateSlot(s)...)
	}
	requireRef(infra)
	requireRef(controlPlane)
	if cpMachine.Defined() {
		requireRef(cpMachine)
	} else if c.Spec.ControlPlane.HealthCheck.IsDefined() {
		errs = append(errs, field.Forbidden(spec.Child("controlPlane", "healthCheck"), "a health check needs control plane Machines: set controlPlane.machineInfrastructure"))
	}
	errs = append(errs, validateNamingTemplate(c.Spec.Infrastructure.Naming.Template, spec.Child("infrastructure", "naming", "template"))...)
	errs = append(errs, validateNamingTemplate(c.Spec.ControlPlane.Naming.Template, spec.Child("controlPlane", "naming", "template"))...)
	// Both kinds of worker class need unique names, both templates and a usable naming template.
	seen := map[bool]map[string]bool{true: {}, false: {}}
	for _, wc := range contract.WorkerClasses(c) {
		if seen[wc.Deployment][wc.Name] {
			errs = append(errs, field.Duplicate(wc.Path.Child("class"), wc.Name))
		}
		seen[wc.Deployment][wc.Name] = true
		requireRef(wc.Bootstrap)
		requireRef(wc.Infrastructure)
		errs = append(errs, validateNamingTemplate(wc.Naming, wc.Path.Child("naming", "template"))...)
	}
	errs = append(errs, validateInlineNames(contract.AllSlots(c))...)
	errs = append(errs, validateClassFields(c)...)
	errs = append(errs, variables.ValidateDefinitions(ctx, c.Spec.Variables, spec.Child("variables"))...)
	errs = append(errs, validatePatches(c, spec.Child("patches"))...)
	return errs
}

// validateSlot checks a slot holds one template: a reference naming
// apiVersion, kind and name, or an inline template with a template spec.
func validateSlot(s contract.TemplateSlot) field.ErrorList {
	t, in := s.Ref, s.Inline
	switch {
	case !t.IsDefined() && in == nil:
		return field.ErrorList{field.Required(s.Path.Child("templateRef"), "template reference must be set, or the template written inline in template")}
	case t.IsDefined() && in != nil:
		return field.ErrorList{field.Forbidden(s.Path, "set templateRef or template, not both")}
	case in != nil:
		var errs field.ErrorList
		if _, err := schema.ParseGroupVersion(in.APIVersion); err != nil || in.APIVersion == "" || in.Kind == "" {
			errs = append(errs, field.Invalid(s.Path.Child("template"), fmt.Sprintf("%s %s", in.APIVersion, in.Kind), "apiVersion (group/version) and kind must both be set"))
		}
		var spec map[string]any
		if err := json.Unmarshal(in.Spec.Raw, &spec); err != nil || spec == nil {
			errs = append(errs, field.Required(s.Path.Child("template", "spec"), "the template's spec must be an object, e.g. {template: {spec: {...}}}"))
		}
		return errs
	case t.APIVersion == "" || t.Kind == "" || t.Name == "":
		return field.ErrorList{field.Invalid(s.Path.Child("templateRef"), fmt.Sprintf("%s/%s %s", t.APIVersion, t.Kind, t.Name), "apiVersion, kind and name must all be set")}
	}
	return nil
}

// validateInlineNames refuses two inline templates of one kind and name that
// differ. Each stands for a template object of that name, as a referenced one
// would, so both would be one object to patches, clones and the
// cloned-from-name annotation; slots sharing one template (as convert makes
// of two classes referring to one object) hold equal copies and pass.
func validateInlineNames(slots []contract.TemplateSlot) field.ErrorList {
	var errs field.ErrorList
	first := map[string]contract.TemplateSlot{}
	for _, s := range slots {
		if s.Inline == nil {
			continue
		}
		key := s.Inline.APIVersion + "/" + s.Inline.Kind + "/" + s.InlineName
		prev, seen := first[key]
		if !seen {
			first[key] = s
			continue
		}
		if !equality.Semantic.DeepEqual(prev.Inline, s.Inline) {
			errs = append(errs, field.Invalid(s.Path.Child("template", "name"), s.InlineName,
				fmt.Sprintf("%s %s differs from the one at %s of that kind and name: give one its own name, or make them equal", s.Inline.Kind, s.InlineName, prev.Path.Child("template"))))
		}
	}
	return errs
}

// validateClassFields checks the values a class passes on to generated
// objects: metadata, health checks, rollout strategies, timeouts and gates.
func validateClassFields(c *v1alpha2.TopologyClass) field.ErrorList {
	spec := field.NewPath("spec")
	cp := c.Spec.ControlPlane
	cpp := spec.Child("controlPlane")
	errs := validateMetadata(cp.Metadata, cpp.Child("metadata"))
	errs = append(errs, validateHealthCheck(cp.HealthCheck.Checks, cp.HealthCheck.Remediation.TriggerIf, cpp.Child("healthCheck"))...)
	errs = append(errs, validateDeletion(cp.Deletion, cpp.Child("deletion"))...)
	errs = append(errs, validateReadinessGates(cp.ReadinessGates, cpp.Child("readinessGates"))...)
	errs = append(errs, validateKubernetesVersions(c.Spec.KubernetesVersions, spec.Child("kubernetesVersions"))...)
	for i, g := range c.Spec.AvailabilityGates {
		for _, msg := range validation.IsQualifiedName(g.ConditionType) {
			errs = append(errs, field.Invalid(spec.Child("availabilityGates").Index(i).Child("conditionType"), g.ConditionType, msg))
		}
	}
	for i := range c.Spec.Workers.MachineDeployments {
		md := &c.Spec.Workers.MachineDeployments[i]
		p := spec.Child("workers", "machineDeployments").Index(i)
		errs = append(errs, validateMetadata(md.Metadata, p.Child("metadata"))...)
		errs = append(errs, validateHealthCheck(md.HealthCheck.Checks, md.HealthCheck.Remediation.TriggerIf, p.Child("healthCheck"))...)
		errs = append(errs, validateIntOrPercent(md.HealthCheck.Remediation.MaxInFlight, p.Child("healthCheck", "remediation", "maxInFlight"))...)
		errs = append(errs, validateStrategy(md.Rollout.Strategy, p.Child("rollout", "strategy"))...)
		errs = append(errs, validateDeletion(md.Deletion.MachineDeletion, p.Child("deletion"))...)
		errs = append(errs, validateReadinessGates(md.ReadinessGates, p.Child("readinessGates"))...)
	}
	for i := range c.Spec.Workers.MachinePools {
		mp := &c.Spec.Workers.MachinePools[i]
		p := spec.Child("workers", "machinePools").Index(i)
		errs = append(errs, validateMetadata(mp.Metadata, p.Child("metadata"))...)
		errs = append(errs, validateDeletion(mp.Deletion, p.Child("deletion"))...)
	}
	return errs
}

// validateNamingTemplate renders the template with sample values, so that a
// broken template or one yielding an invalid name is caught at class time.
func validateNamingTemplate(tpl string, p *field.Path) field.ErrorList {
	if tpl == "" {
		return nil
	}
	if _, err := names.Parse(tpl); err != nil {
		return field.ErrorList{field.Invalid(p, tpl, err.Error())}
	}
	if _, err := names.NewSeeded(1).Template(tpl, names.Vars{Cluster: "cluster", MachineDeployment: "md", MachinePool: "mp"}); err != nil {
		return field.ErrorList{field.Invalid(p, tpl, err.Error())}
	}
	return nil
}

var validOps = map[string]bool{"add": true, "replace": true, "remove": true}

func validatePatches(c *v1alpha2.TopologyClass, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, patch := range c.Spec.Patches {
		pp := p.Index(i)
		if patch.Name == "" {
			errs = append(errs, field.Required(pp.Child("name"), "patch name must be set"))
		} else if seen[patch.Name] {
			errs = append(errs, field.Duplicate(pp.Child("name"), patch.Name))
		}
		seen[patch.Name] = true
		switch {
		case len(patch.Definitions) > 0 && patch.External != nil:
			errs = append(errs, field.Invalid(pp, patch.Name, "set either definitions or external, not both"))
		case len(patch.Definitions) == 0 && patch.External == nil:
			errs = append(errs, field.Required(pp, "set definitions or external"))
		}
		if patch.EnabledIf != nil {
			if _, err := patches.Parse(*patch.EnabledIf); err != nil {
				errs = append(errs, field.Invalid(pp.Child("enabledIf"), *patch.EnabledIf, err.Error()))
			}
		}
		for di, def := range patch.Definitions {
			dp := pp.Child("definitions").Index(di)
			errs = append(errs, validateSelector(c, def.Selector, dp.Child("selector"))...)
			for oi, op := range def.JSONPatches {
				errs = append(errs, validateOp(op, dp.Child("jsonPatches").Index(oi))...)
				errs = append(errs, validateVariableRef(c, op, dp.Child("jsonPatches").Index(oi))...)
			}
		}
	}
	return errs
}

func validateOp(op v1alpha2.JSONPatch, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !validOps[op.Op] {
		errs = append(errs, field.NotSupported(p.Child("op"), op.Op, []string{"add", "replace", "remove"}))
	}
	// Upstream's rule is the bare prefix: published classes (CAPV's) add /spec whole.
	if !strings.HasPrefix(op.Path, "/spec") {
		errs = append(errs, field.Invalid(p.Child("path"), op.Path, `a patch may only change the spec: the path must start with "/spec"`))
	}
	segments := strings.Split(op.Path, "/")
	for _, s := range segments {
		if !validPointerSegment(s) {
			errs = append(errs, field.Invalid(p.Child("path"), op.Path, `not a JSON pointer: "~" must be followed by 0 (for "~") or 1 (for "/")`))
			break
		}
	}
	for i, s := range segments {
		if s == "-" && (op.Op != "add" || i != len(segments)-1) {
			errs = append(errs, field.Invalid(p.Child("path"), op.Path, `"-" (append) is only valid as the last segment of an add`))
		}
		// As upstream: list items are reached by index only to prepend, since
		// other indexes depend on the template's current list.
		switch {
		case isIndex(s) && op.Op == "add" && s != "0":
			errs = append(errs, field.Invalid(p.Child("path"), op.Path, "add may only insert at index 0 or append with -; other indexes depend on the template's current list"))
		case isIndex(s) && (op.Op == "replace" || op.Op == "remove"):
			errs = append(errs, field.Invalid(p.Child("path"), op.Path, fmt.Sprintf("%s may not reach into a list by index; replace the whole list instead", op.Op)))
		}
	}
	switch op.Op {
	case "remove":
		if op.Value != nil || op.ValueFrom != nil {
			errs = append(errs, field.Invalid(p, op.Op, "remove takes neither value nor valueFrom"))
		}
	case "add", "replace":
		switch {
		case op.Value == nil && op.ValueFrom == nil:
			errs = append(errs, field.Required(p.Child("value"), "set value or valueFrom"))
		case op.Value != nil && op.ValueFrom != nil:
			errs = append(errs, field.Invalid(p, op.Op, "set value or valueFrom, not both"))
		case op.ValueFrom != nil:
			vf := op.ValueFrom
			switch {
			case vf.Variable == nil && vf.Template == nil:
				errs = append(errs, field.Required(p.Child("valueFrom"), "set variable or template"))
			case vf.Variable != nil && vf.Template != nil:
				errs = append(errs, field.Invalid(p.Child("valueFrom"), "", "set variable or template, not both"))
			case vf.Template != nil:
				if _, err := patches.Parse(*vf.Template); err != nil {
					errs = append(errs, field.Invalid(p.Child("valueFrom", "template"), *vf.Template, err.Error()))
				}
			}
		}
	}
	return errs
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// checkPoolName reports a pool name given twice (seen holds those before it)
// or not usable as a label value.
func checkPoolName(seen map[string]bool, name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if seen[name] {
		errs = append(errs, field.Duplicate(p, name))
	}
	seen[name] = true
	for _, msg := range PoolNameErrors(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// PoolNameErrors says why a MachineDeployment or MachinePool name cannot be
// used: it labels every object of the pool, so it must be a valid label
// value, as upstream requires.
func PoolNameErrors(name string) []string {
	var out []string
	for _, e := range validation.IsValidLabelValue(name) {
		out = append(out, "must be a valid label value: "+e)
	}
	return out
}

// CompileClass validates a class and compiles its variables. Callers that
// recompute often (the agent, the TUI) keep the Catalog and pass it to Compute.
func CompileClass(ctx context.Context, c *v1alpha2.TopologyClass) (*variables.Catalog, error) {
	if errs := ValidateClass(ctx, c); len(errs) > 0 {
		return nil, &InvalidError{Kind: "TopologyClass", Object: Describe("TopologyClass", c), Errors: errs}
	}
	cat, errs := variables.NewCatalog(ClassVariables(c))
	if len(errs) > 0 {
		return nil, &InvalidError{Kind: "TopologyClass", Object: Describe("TopologyClass", c), Errors: errs}
	}
	return cat, nil
}

// UnsetDefaulted says, per variable of names that class gives a default at
// its root, why it cannot be unset: Topology defaulting sets it back on the
// same write, so the change would never hold. What to do instead is to set
// the default. A rollout's admission and undo refuse with it.
func UnsetDefaulted(class *v1alpha2.TopologyClass, names []string) []string {
	if len(names) == 0 {
		return nil
	}
	defaults := map[string]string{}
	for _, v := range ClassVariables(class) {
		if d := v.Schema.OpenAPIV3Schema.Default; d != nil {
			defaults[v.Name] = string(d.Raw)
		}
	}
	var out []string
	for _, name := range names {
		if d, ok := defaults[name]; ok {
			out = append(out, fmt.Sprintf(
				"class %s gives %s the default %s, which defaulting sets back as soon as it is unset; to return clusters to the default, roll out --set %s=%s",
				class.Name, name, d, name, d))
		}
	}
	return out
}

// ClassVariables are every variable c defines: its own, then those its
// extensions discovered.
func ClassVariables(c *v1alpha2.TopologyClass) []v1alpha2.ClusterClassVariable {
	return append(append([]v1alpha2.ClusterClassVariable(nil), c.Spec.Variables...), DiscoveredVariables(c)...)
}

// DiscoveredVariables are the variables external patches' extensions
// defined, as the class's status lists them: those the class does not define
// itself and that every extension defines alike. Topologies may set them
// as they set the class's own.
func DiscoveredVariables(c *v1alpha2.TopologyClass) []v1alpha2.ClusterClassVariable {
	if !contract.HasExternalPatches(c) {
		return nil // what status still lists from patches since removed does not count
	}
	inline := map[string]bool{}
	for _, v := range c.Spec.Variables {
		inline[v.Name] = true
	}
	var out []v1alpha2.ClusterClassVariable
	for _, sv := range c.Status.Variables {
		if inline[sv.Name] || sv.DefinitionsConflict || len(sv.Definitions) == 0 {
			continue
		}
		d := sv.Definitions[0]
		if d.From == v1alpha2.VariableDefinitionFromInline {
			continue // the class no longer defines it
		}
		out = append(out, v1alpha2.ClusterClassVariable{Name: sv.Name, Required: d.Required, DeprecatedV1Beta1Metadata: d.DeprecatedV1Beta1Metadata, Schema: d.Schema})
	}
	return out
}

// DefaultTopology fills in variable defaults in place, as the defaulting
// webhook does: every variable with a root default is added at topology level;
// overrides are defaulted only where they are set. spec is the path of the
// topology's spec (spec, or spec.topology for an upstream Cluster).
func DefaultTopology(t *v1alpha2.Topology, cat *variables.Catalog, spec *field.Path) field.ErrorList {
	vars, errs := cat.Default(t.Spec.Variables, true, spec.Child("variables"))
	if len(errs) > 0 {
		return errs
	}
	t.Spec.Variables = vars
	for _, o := range overrideLists(t, spec) {
		vals, e := cat.Default(*o.values, false, o.path)
		if len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		*o.values = vals
	}
	return errs
}

// overrideList is one list of variable overrides, where it is, and the part
// it belongs to ("controlPlane", "md/NAME", "mp/NAME").
type overrideList struct {
	values *[]v1alpha2.ClusterVariable
	path   *field.Path
	part   string
}

func overrideLists(t *v1alpha2.Topology, spec *field.Path) []overrideList {
	var out []overrideList
	if v := t.Spec.ControlPlane.Variables; v != nil {
		out = append(out, overrideList{&v.Overrides, spec.Child("controlPlane", "variables", "overrides"), "controlPlane"})
	}
	if w := t.Spec.Workers; w != nil {
		for i := range w.MachineDeployments {
			if v := w.MachineDeployments[i].Variables; v != nil {
				out = append(out, overrideList{&v.Overrides, spec.Child("workers", "machineDeployments").Index(i).Child("variables", "overrides"), "md/" + w.MachineDeployments[i].Name})
			}
		}
		for i := range w.MachinePools {
			if v := w.MachinePools[i].Variables; v != nil {
				out = append(out, overrideList{&v.Overrides, spec.Child("workers", "machinePools").Index(i).Child("variables", "overrides"), "mp/" + w.MachinePools[i].Name})
			}
		}
	}
	return out
}

// oldOverrides finds, in the previous version of a topology, the overrides of
// the same part, for CEL transition rules; nil when there is none.
func oldOverrides(old *v1alpha2.Topology, part string) []v1alpha2.ClusterVariable {
	if old == nil {
		return nil
	}
	for _, o := range overrideLists(old, field.NewPath("spec")) {
		if o.part == part {
			return *o.values
		}
	}
	return nil
}

// ValidateTopology checks a Topology against its class (nil skips class checks):
// a semantic version, unique pool names, pool classes the class defines, the
// values it passes on to generated objects, and variables and overrides valid
// for the class's schemas. old is the previous version on an update, whose
// values CEL transition rules compare against; nil otherwise. spec is the path
// of the topology's spec (spec, or spec.topology for an upstream Cluster).
func ValidateTopology(ctx context.Context, t, old *v1alpha2.Topology, c *v1alpha2.TopologyClass, cat *variables.Catalog, spec *field.Path) field.ErrorList {
	errs := ValidateTopologyFields(t, old, spec)
	if w := t.Spec.Workers; w != nil {
		seen := map[string]bool{}
		for i, md := range w.MachineDeployments {
			p := spec.Child("workers", "machineDeployments").Index(i)
			errs = append(errs, checkPoolName(seen, md.Name, p.Child("name"))...)
			if c != nil {
				if _, mdc := contract.FindMDClass(c, md.Class); mdc == nil {
					errs = append(errs, field.Invalid(p.Child("class"), md.Class, fmt.Sprintf("MachineDeployment class %q is not defined in TopologyClass %s", md.Class, c.Name)))
				} else if e := md.HealthCheck.Enabled; e != nil && *e && !mdc.HealthCheck.IsDefined() && !md.HealthCheck.IsDefined() {
					errs = append(errs, field.Forbidden(p.Child("healthCheck", "enabled"), "the class defines no health check for this class; define one here or in the class"))
				}
			}
		}
		seen = map[string]bool{}
		for i, mp := range w.MachinePools {
			p := spec.Child("workers", "machinePools").Index(i)
			errs = append(errs, checkPoolName(seen, mp.Name, p.Child("name"))...)
			if c != nil {
				if _, mpc := contract.FindMPClass(c, mp.Class); mpc == nil {
					errs = append(errs, field.Invalid(p.Child("class"), mp.Class, fmt.Sprintf("MachinePool class %q is not defined in TopologyClass %s", mp.Class, c.Name)))
				}
			}
		}
	}
	// A change of version is ValidateVersionChange's to judge.
	if c != nil && len(c.Spec.KubernetesVersions) > 0 && old == nil && !slices.Contains(c.Spec.KubernetesVersions, t.Spec.Version) {
		errs = append(errs, field.NotSupported(spec.Child("version"), t.Spec.Version, c.Spec.KubernetesVersions))
	}
	// A class that lists its versions builds no other, pinned or not, as
	// upstream's ClusterClass webhook has it.
	if c != nil && len(c.Spec.KubernetesVersions) > 0 {
		for _, p := range upgrade.PinnedPools(t) {
			if !slices.Contains(c.Spec.KubernetesVersions, p.Version) {
				errs = append(errs, field.NotSupported(pinPath(p, spec), p.Version, c.Spec.KubernetesVersions))
			}
		}
	}
	if c != nil && cat != nil {
		var oldVars []v1alpha2.ClusterVariable
		if old != nil {
			oldVars = old.Spec.Variables
		}
		errs = append(errs, cat.Validate(ctx, t.Spec.Variables, oldVars, true, spec.Child("variables"))...)
		for _, o := range overrideLists(t, spec) {
			errs = append(errs, cat.Validate(ctx, *o.values, oldOverrides(old, o.part), false, o.path)...)
		}
	}
	return errs
}

// ValidateTopologyMetadata checks the Topology's own name and the
// annotations of CheckedAnnotations.
func ValidateTopologyMetadata(t *v1alpha2.Topology) field.ErrorList {
	errs := validateObjectName(t.Name, field.NewPath("metadata", "name"))
	return append(errs, validateUpgradeConcurrency(t.Annotations)...)
}

// ValidateTopologyFields checks what a Topology says without its class: its
// name, version and class name, its pools' pins (against old, the version
// before an update; nil on create), and every value it passes on to
// generated objects (metadata, network, health checks, strategies,
// timeouts). The webhook applies it even before the class exists.
func ValidateTopologyFields(t, old *v1alpha2.Topology, spec *field.Path) field.ErrorList {
	errs := ValidateTopologyMetadata(t)
	errs = append(errs, ValidatePins(t, old, spec)...)
	if _, err := upgrade.ParseVersion(t.Spec.Version); err != nil {
		errs = append(errs, field.Invalid(spec.Child("version"), t.Spec.Version, "must be a Kubernetes version such as v1.32.0"))
	}
	if t.Spec.ClassRef.Name == "" {
		errs = append(errs, field.Required(spec.Child("classRef", "name"), "name the TopologyClass to stamp from"))
	}
	cp := t.Spec.ControlPlane
	cpp := spec.Child("controlPlane")
	errs = append(errs, validateMetadata(cp.Metadata, cpp.Child("metadata"))...)
	errs = append(errs, validateHealthCheck(cp.HealthCheck.Checks, cp.HealthCheck.Remediation.TriggerIf, cpp.Child("healthCheck"))...)
	errs = append(errs, validateDeletion(cp.Deletion, cpp.Child("deletion"))...)
	errs = append(errs, validateReadinessGates(cp.ReadinessGates, cpp.Child("readinessGates"))...)
	errs = append(errs, validateClusterNetwork(t.Spec.ClusterNetwork, spec.Child("clusterNetwork"))...)
	if w := t.Spec.Workers; w != nil {
		for i := range w.MachineDeployments {
			md := &w.MachineDeployments[i]
			p := spec.Child("workers", "machineDeployments").Index(i)
			errs = append(errs, validateMetadata(md.Metadata, p.Child("metadata"))...)
			errs = append(errs, validateHealthCheck(md.HealthCheck.Checks, md.HealthCheck.Remediation.TriggerIf, p.Child("healthCheck"))...)
			errs = append(errs, validateIntOrPercent(md.HealthCheck.Remediation.MaxInFlight, p.Child("healthCheck", "remediation", "maxInFlight"))...)
			errs = append(errs, validateStrategy(md.Rollout.Strategy, p.Child("rollout", "strategy"))...)
			errs = append(errs, validateDeletion(md.Deletion.MachineDeletion, p.Child("deletion"))...)
			errs = append(errs, validateReadinessGates(md.ReadinessGates, p.Child("readinessGates"))...)
		}
		for i := range w.MachinePools {
			mp := &w.MachinePools[i]
			p := spec.Child("workers", "machinePools").Index(i)
			errs = append(errs, validateMetadata(mp.Metadata, p.Child("metadata"))...)
			errs = append(errs, validateDeletion(mp.Deletion, p.Child("deletion"))...)
		}
	}
	return errs
}

// VersionChange is what ValidateVersionChange needs besides the two versions.
type VersionChange struct {
	// Old and New are the topology's version before and after.
	Old, New string
	// Sequence is the current sequencing state; nil when unknown.
	Sequence *upgrade.Sequence
	// Unsafe skips the checks: the topology carries UnsafeVersionCheckAnnotation.
	Unsafe bool
	// UpgradeOwed is true while the last upgrade's AfterClusterUpgrade is
	// still owed: upstream's webhook refuses a new version until it answers.
	UpgradeOwed bool
	// ClassVersions are the class's kubernetesVersions: where it lists
	// them, an upgrade may be chained over several minors through them.
	ClassVersions []string
	// PlanExtension is the class's upgrade-plan extension: where it names
	// one, the extension decides how many minors an upgrade may move, as
	// upstream leaves it to the extension's own Cluster webhook.
	PlanExtension string
}

// VersionChangeOf is the change of old's version to version, with what
// old's status and annotations say of the rollout and hooks in flight;
// Unsafe and the class's rules are the caller's to add.
func VersionChangeOf(old *v1alpha2.Topology, version string) VersionChange {
	return VersionChange{
		Old: old.Spec.Version, New: version,
		Sequence:    upgrade.SequenceFromStatus(&old.Status),
		UpgradeOwed: lifecycle.PendingOf(old.Annotations).Has(lifecycle.AfterClusterUpgrade),
	}
}

// ForClass takes the class's rules for chaining into vc; class may be nil.
func (vc VersionChange) ForClass(class *v1alpha2.TopologyClass) VersionChange {
	if class != nil {
		vc.ClassVersions = class.Spec.KubernetesVersions
		vc.PlanExtension = upgrade.UpgradePlanExtension(class)
	}
	return vc
}

// ValidateVersionChange forbids downgrades, skipping a minor version where
// the class lists no versions to chain the upgrade through, and changing the
// version while a previous rollout is still in flight.
func ValidateVersionChange(vc VersionChange) field.ErrorList {
	p := field.NewPath("spec", "version")
	if vc.Old == vc.New || vc.Old == "" {
		return nil
	}
	// A class that lists its versions admits no other, unsafe or not: the
	// agent would refuse to build it.
	if len(vc.ClassVersions) > 0 && !slices.Contains(vc.ClassVersions, vc.New) {
		return field.ErrorList{field.NotSupported(p, vc.New, vc.ClassVersions)}
	}
	if vc.Unsafe {
		return nil
	}
	if vc.UpgradeOwed {
		return field.ErrorList{field.Forbidden(p, fmt.Sprintf("cannot change the version while the %s hook of the upgrade to %s still holds; wait until it answers (`kubectl topology status` names it)", lifecycle.AfterClusterUpgrade, vc.Old))}
	}
	oldV, err1 := upgrade.ParseVersion(vc.Old)
	newV, err2 := upgrade.ParseVersion(vc.New)
	if err1 != nil || err2 != nil {
		return field.ErrorList{field.Invalid(p, vc.New, "must be a Kubernetes version such as v1.32.0")}
	}
	switch {
	case newV.LT(oldV):
		return field.ErrorList{field.Forbidden(p, fmt.Sprintf("downgrading from %s to %s is not supported", vc.Old, vc.New))}
	case newV.Major != oldV.Major:
		return field.ErrorList{field.Forbidden(p, fmt.Sprintf("upgrading from %s to %s changes the major version; upgrade one minor version at a time", vc.Old, vc.New))}
	case newV.Minor > oldV.Minor+1 && vc.PlanExtension != "":
		// The extension is asked for the chain when the upgrade starts.
	case newV.Minor > oldV.Minor+1 && len(vc.ClassVersions) == 0:
		return field.ErrorList{field.Forbidden(p, fmt.Sprintf("upgrading from %s to %s skips a minor version; upgrade to v%d.%d first, or list the versions in between in the class's kubernetesVersions to chain the upgrade", vc.Old, vc.New, oldV.Major, oldV.Minor+1))}
	case newV.Minor > oldV.Minor+1:
		if _, err := upgrade.PlanVersions(vc.ClassVersions, vc.New, vc.Old, ""); err != nil {
			return field.ErrorList{field.Forbidden(p, err.Error())}
		}
	}
	if r := vc.Sequence; r != nil {
		if busy := inFlight(r); busy != "" {
			return field.ErrorList{field.Forbidden(p, fmt.Sprintf("cannot change the version while %s; wait until the rollout to %s completes", busy, vc.Old))}
		}
	}
	return nil
}

// inFlight names the part of a rollout still moving, or "".
func inFlight(r *upgrade.Sequence) string {
	switch r.ControlPlane.Phase {
	case v1alpha2.PhaseUpgrading, v1alpha2.PhasePending:
		return "the control plane is upgrading"
	}
	for _, parts := range [][]upgrade.Decision{r.MachineDeployments, r.MachinePools} {
		for _, d := range parts {
			if d.Pin != "" {
				// On its own schedule: the Topology's version does not move it.
				continue
			}
			if d.Phase == v1alpha2.PhaseUpgrading || (d.Phase == v1alpha2.PhasePending && !d.CreatePending) {
				return fmt.Sprintf("%s is upgrading", d.Name)
			}
		}
	}
	return ""
}

// UpgradePreflight is every reason not to start moving live Topology t to
// version now. errs are the version rules the webhook enforces and that the
// agent has seen the latest change; unhealthy says why the control plane is
// not Ready (ControlPlaneHealth), which `upgrade --force` may override.
// `upgrade` and the editor both ask it, so neither starts a rollout the
// other would refuse. class is t's class, nil where it cannot be read: its
// kubernetesVersions decide whether the upgrade may be chained.
func UpgradePreflight(t *v1alpha2.Topology, class *v1alpha2.TopologyClass, version string, now time.Time) (errs field.ErrorList, unhealthy []string) {
	vc := VersionChangeOf(t, version)
	vc.Unsafe = upgrade.UnsafeVersionChange(t)
	vc = vc.ForClass(class)
	errs = ValidateVersionChange(vc)
	if t.Spec.Version == version {
		return errs, nil
	}
	errs = append(errs, ValidatePinsAt(t, version)...)
	if t.Status.ObservedGeneration != t.Generation {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "version"), fmt.Sprintf("the agent has not reconciled the latest change yet (generation %d, observed %d): is it running? `kubectl topology version` tells", t.Generation, t.Status.ObservedGeneration)))
	}
	return errs, health.ControlPlaneHealth(t, now)
}

// validateKubernetesVersions checks a class's kubernetesVersions: Kubernetes
// versions, each newer than the one before and no minor left out, as
// upstream requires.
func validateKubernetesVersions(versions []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	var prev *semver.Version
	for i, v := range versions {
		parsed, err := upgrade.ParseVersion(v)
		if err != nil {
			errs = append(errs, field.Invalid(p.Index(i), v, "must be a Kubernetes version such as v1.32.0"))
			continue
		}
		if prev != nil && !parsed.GT(*prev) {
			errs = append(errs, field.Invalid(p.Index(i), v, fmt.Sprintf("must be newer than v%s before it: list versions oldest first", prev)))
		}
		// A chained upgrade steps through every minor, so none may be missing.
		if prev != nil && parsed.GT(*prev) && (parsed.Major != prev.Major || parsed.Minor > prev.Minor+1) {
			errs = append(errs, field.Invalid(p.Index(i), v, fmt.Sprintf("skips a minor after v%s: list a v%d.%d.x version in between, for upgrades to step through", prev, prev.Major, prev.Minor+1)))
		}
		prev = &parsed
	}
	return errs
}
