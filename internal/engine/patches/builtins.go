package patches

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Builtins are the values every patch can read under "builtin", in the shape
// of Cluster API v1beta1's builtin variables so that existing classes work.
type Builtins struct {
	// Cluster holds the builtin.cluster.* values.
	Cluster *ClusterBuiltins `json:"cluster,omitempty"`
	// ControlPlane holds the builtin.controlPlane.* values, for control plane templates.
	ControlPlane *ControlPlaneBuiltins `json:"controlPlane,omitempty"`
	// MachineDeployment holds the builtin.machineDeployment.* values, for its templates.
	MachineDeployment *WorkerBuiltins `json:"machineDeployment,omitempty"`
	// MachinePool holds the builtin.machinePool.* values, for its templates.
	MachinePool *WorkerBuiltins `json:"machinePool,omitempty"`
}

// ClusterBuiltins describe the cluster.
type ClusterBuiltins struct {
	Name      string               `json:"name,omitempty"`
	Namespace string               `json:"namespace,omitempty"`
	UID       string               `json:"uid,omitempty"`
	Metadata  *v1alpha2.ObjectMeta `json:"metadata,omitempty"`
	Topology  *ClusterTopology     `json:"topology,omitempty"`
	Network   *ClusterNetwork      `json:"network,omitempty"`
}

// ClusterTopology describes the topology of the cluster.
type ClusterTopology struct {
	Version        string `json:"version,omitempty"`
	Class          string `json:"class,omitempty"`
	ClassNamespace string `json:"classNamespace,omitempty"`
}

// ClusterNetwork describes the network of the cluster.
type ClusterNetwork struct {
	ServiceDomain *string  `json:"serviceDomain,omitempty"`
	Services      []string `json:"services,omitempty"`
	Pods          []string `json:"pods,omitempty"`
	IPFamily      string   `json:"ipFamily,omitempty"`
}

// ControlPlaneBuiltins describe the control plane.
type ControlPlaneBuiltins struct {
	Version         string                `json:"version,omitempty"`
	Metadata        *v1alpha2.ObjectMeta  `json:"metadata,omitempty"`
	Name            string                `json:"name,omitempty"`
	Replicas        *int64                `json:"replicas,omitempty"`
	MachineTemplate *ControlPlaneMachines `json:"machineTemplate,omitempty"`
}

// ControlPlaneMachines describes the machine template of the control plane.
type ControlPlaneMachines struct {
	InfrastructureRef NameRef `json:"infrastructureRef,omitempty"`
}

// NameRef is a reference by name.
type NameRef struct {
	Name string `json:"name,omitempty"`
}

// BootstrapRef describes the bootstrap config reference of a pool.
type BootstrapRef struct {
	ConfigRef *NameRef `json:"configRef,omitempty"`
}

// WorkerBuiltins describe one MachineDeployment or MachinePool; both kinds
// offer the same values, under builtin.machineDeployment or builtin.machinePool.
type WorkerBuiltins struct {
	Version           string               `json:"version,omitempty"`
	Metadata          *v1alpha2.ObjectMeta `json:"metadata,omitempty"`
	Class             string               `json:"class,omitempty"`
	Name              string               `json:"name,omitempty"`
	TopologyName      string               `json:"topologyName,omitempty"`
	Replicas          *int64               `json:"replicas,omitempty"`
	Bootstrap         *BootstrapRef        `json:"bootstrap,omitempty"`
	InfrastructureRef *NameRef             `json:"infrastructureRef,omitempty"`
}

// CheckBuiltinPath says whether a valueFrom.variable path under "builtin"
// names a value the builtins have, such as builtin.cluster.name or
// builtin.cluster.network.pods[0]; the Builtins type is the one list of them.
func CheckBuiltinPath(path string) error {
	segments := strings.Split(path, ".")
	t := reflect.TypeOf(Builtins{})
	for i, seg := range segments[1:] {
		name, index, err := parseSegment(seg)
		if err != nil {
			return fmt.Errorf("variable path %q: %w", path, err)
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Map:
			return nil // labels and annotations: any key
		case reflect.Struct:
		default:
			return fmt.Errorf("builtin %q has no field %q", strings.Join(segments[:i+1], "."), name)
		}
		field, ok := jsonField(t, name)
		if !ok {
			return fmt.Errorf("builtin %q has no field %q", strings.Join(segments[:i+1], "."), name)
		}
		t = field
		if index >= 0 {
			if t.Kind() != reflect.Slice {
				return fmt.Errorf("builtin %q is not a list", strings.Join(segments[:i+2], "."))
			}
			t = t.Elem()
		}
	}
	return nil
}

// jsonField finds the type of the field of struct t whose JSON name is name;
// inline (embedded) fields are searched too.
func jsonField(t reflect.Type, name string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name {
			return f.Type, true
		}
		if tag == "" && f.Anonymous {
			if ft, ok := jsonField(f.Type, name); ok {
				return ft, true
			}
		}
	}
	return nil, false
}
