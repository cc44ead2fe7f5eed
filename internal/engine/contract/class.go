package contract

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Ref is a reference to o: its apiVersion, kind, namespace and name.
func Ref(o *unstructured.Unstructured) map[string]any {
	return map[string]any{
		"apiVersion": o.GetAPIVersion(),
		"kind":       o.GetKind(),
		"name":       o.GetName(),
		"namespace":  o.GetNamespace(),
	}
}

// FindMPClass is the MachinePool class of c named name and its index, or -1 and nil.
func FindMPClass(c *v1alpha2.TopologyClass, name string) (int, *v1alpha2.MachinePoolClass) {
	for i := range c.Spec.Workers.MachinePools {
		if c.Spec.Workers.MachinePools[i].Class == name {
			return i, &c.Spec.Workers.MachinePools[i]
		}
	}
	return -1, nil
}

// WorkerClass is a MachineDeployment or MachinePool class seen the same way:
// both have a name, templates, metadata and a naming strategy.
type WorkerClass struct {
	Deployment                bool
	Index                     int
	Name                      string
	Metadata                  v1alpha2.ObjectMeta
	Bootstrap, Infrastructure TemplateSlot
	Naming                    string
	Path                      *field.Path
}

// WorkerClasses lists a class's MachineDeployment classes, then its MachinePool classes.
func WorkerClasses(c *v1alpha2.TopologyClass) []WorkerClass {
	var out []WorkerClass
	for i := range c.Spec.Workers.MachineDeployments {
		w := &c.Spec.Workers.MachineDeployments[i]
		p := field.NewPath("spec", "workers", "machineDeployments").Index(i)
		wc := WorkerClass{Deployment: true, Index: i, Name: w.Class, Metadata: w.Metadata,
			Bootstrap:      NewSlot(c.Name, w.Bootstrap.TemplateRef, w.Bootstrap.Template, p.Child("bootstrap"), "md-"+w.Class+"-bootstrap"),
			Infrastructure: NewSlot(c.Name, w.Infrastructure.TemplateRef, w.Infrastructure.Template, p.Child("infrastructure"), "md-"+w.Class+"-infrastructure"),
			Naming:         w.Naming.Template, Path: p}
		out = append(out, wc)
	}
	for i := range c.Spec.Workers.MachinePools {
		w := &c.Spec.Workers.MachinePools[i]
		p := field.NewPath("spec", "workers", "machinePools").Index(i)
		wc := WorkerClass{Index: i, Name: w.Class, Metadata: w.Metadata,
			Bootstrap:      NewSlot(c.Name, w.Bootstrap.TemplateRef, w.Bootstrap.Template, p.Child("bootstrap"), "mp-"+w.Class+"-bootstrap"),
			Infrastructure: NewSlot(c.Name, w.Infrastructure.TemplateRef, w.Infrastructure.Template, p.Child("infrastructure"), "mp-"+w.Class+"-infrastructure"),
			Naming:         w.Naming.Template, Path: p}
		out = append(out, wc)
	}
	return out
}

// FindMDClass is the MachineDeployment class of c named name and its index, or -1 and nil.
func FindMDClass(c *v1alpha2.TopologyClass, name string) (int, *v1alpha2.MachineDeploymentClass) {
	for i := range c.Spec.Workers.MachineDeployments {
		if c.Spec.Workers.MachineDeployments[i].Class == name {
			return i, &c.Spec.Workers.MachineDeployments[i]
		}
	}
	return -1, nil
}
