package rules

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/patches"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/variables"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// validateSelector checks that a patch selector selects something, and that
// what it selects exists in the class: a selector naming a worker class the
// class lacks, or a kind none of the selected templates has, is a patch that
// silently never applies.
func validateSelector(c *v1alpha2.TopologyClass, s v1alpha2.PatchSelector, p *field.Path) field.ErrorList {
	m := s.MatchResources
	mp := p.Child("matchResources")
	if !m.ControlPlane && !m.InfrastructureCluster && m.MachineDeploymentClass == nil && m.MachinePoolClass == nil {
		return field.ErrorList{field.Invalid(mp, "", "select at least one of controlPlane, infrastructureCluster, machineDeploymentClass, machinePoolClass")}
	}
	gv, err := schema.ParseGroupVersion(s.APIVersion)
	if err != nil || s.APIVersion == "" || s.Kind == "" {
		return field.ErrorList{field.Invalid(p.Child("apiVersion"), s.APIVersion, "apiVersion and kind must name the kind of template to patch")}
	}
	matches := func(t contract.TemplateSlot) bool {
		if !t.Defined() {
			return false
		}
		rgv, err := schema.ParseGroupVersion(t.APIVersion())
		return err == nil && rgv.Group == gv.Group && t.Kind() == s.Kind
	}
	infra, controlPlane, cpMachine := contract.ClassSlots(c)
	var errs field.ErrorList
	if m.InfrastructureCluster && !matches(infra) {
		errs = append(errs, field.Invalid(mp.Child("infrastructureCluster"), true, fmt.Sprintf("selects %s %s, but the class's infrastructure template is not of that kind", s.APIVersion, s.Kind)))
	}
	if m.ControlPlane {
		if !matches(controlPlane) && !matches(cpMachine) {
			errs = append(errs, field.Invalid(mp.Child("controlPlane"), true, fmt.Sprintf("selects %s %s, but neither the control plane template nor its machine infrastructure template is of that kind", s.APIVersion, s.Kind)))
		}
	}
	workers := func(sel []string, deployment bool, np *field.Path, what string) {
		for i, name := range sel {
			if msg := selectorNameError(name); msg != "" {
				errs = append(errs, field.Invalid(np.Index(i), name, msg))
				continue
			}
			found, kindFound := false, false
			for _, wc := range contract.WorkerClasses(c) {
				if wc.Deployment != deployment || !patches.ClassMatches([]string{name}, wc.Name) {
					continue
				}
				found = true
				kindFound = kindFound || matches(wc.Bootstrap) || matches(wc.Infrastructure)
			}
			switch {
			case !found:
				errs = append(errs, field.Invalid(np.Index(i), name, fmt.Sprintf("matches no %s class of this class", what)))
			case !kindFound:
				errs = append(errs, field.Invalid(np.Index(i), name, fmt.Sprintf("selects %s %s, but no matching %s class has a bootstrap or infrastructure template of that kind", s.APIVersion, s.Kind, what)))
			}
		}
	}
	if md := m.MachineDeploymentClass; md != nil {
		workers(md.Names, true, mp.Child("machineDeploymentClass", "names"), "MachineDeployment")
	}
	if mpc := m.MachinePoolClass; mpc != nil {
		workers(mpc.Names, false, mp.Child("machinePoolClass", "names"), "MachinePool")
	}
	return errs
}

// selectorNameError says why a worker class selector is not usable: at most
// one "*", at its start or end, and otherwise a qualified name.
func selectorNameError(name string) string {
	switch n := strings.Count(name, "*"); {
	case name == "":
		return "must not be empty"
	case n > 1:
		return `may contain at most one "*"`
	case n == 1 && !strings.HasPrefix(name, "*") && !strings.HasSuffix(name, "*"):
		return `"*" may only be the first or the last character`
	}
	if name == "*" {
		return ""
	}
	if msgs := validation.IsQualifiedName(strings.ReplaceAll(name, "*", "a")); len(msgs) > 0 {
		return "is not a class name or a pattern of one: " + strings.Join(msgs, "; ")
	}
	return ""
}

// validPointerSegment reports whether a JSON pointer segment escapes "~"
// correctly (RFC 6901: only "~0" and "~1").
func validPointerSegment(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '~' && (i+1 == len(s) || (s[i+1] != '0' && s[i+1] != '1')) {
			return false
		}
	}
	return true
}

// validateVariableRef checks that valueFrom.variable names a variable the
// class defines (or one its extensions discovered) or a builtin that exists.
func validateVariableRef(c *v1alpha2.TopologyClass, op v1alpha2.JSONPatch, p *field.Path) field.ErrorList {
	if op.ValueFrom == nil || op.ValueFrom.Variable == nil {
		return nil
	}
	ref := *op.ValueFrom.Variable
	vp := p.Child("valueFrom", "variable")
	if ref == "" {
		return field.ErrorList{field.Required(vp, "name a variable, e.g. imageRepository or builtin.cluster.name")}
	}
	root := strings.FieldsFunc(ref, func(r rune) bool { return r == '.' || r == '[' })
	if len(root) == 0 {
		return field.ErrorList{field.Invalid(vp, ref, "not a variable path")}
	}
	if root[0] == variables.BuiltinsName {
		if err := patches.CheckBuiltinPath(ref); err != nil {
			return field.ErrorList{field.Invalid(vp, ref, err.Error())}
		}
		return nil
	}
	for _, v := range c.Spec.Variables {
		if v.Name == root[0] {
			return nil
		}
	}
	for _, v := range DiscoveredVariables(c) {
		if v.Name == root[0] {
			return nil
		}
	}
	return field.ErrorList{field.Invalid(vp, ref, fmt.Sprintf("the class defines no variable %q", root[0]))}
}
