package names

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzTemplate renders arbitrary naming templates over arbitrary names:
// the result is an error or a name the API server accepts, never a panic
// and never a name that fails every write later.
func FuzzTemplate(f *testing.F) {
	f.Add(DefaultMachineDeploymentTemplate, "dev", "md-a")
	f.Add("{{ .cluster.name }}-{{ .machineDeployment.topologyName }}", "a-very-long-cluster-name-that-goes-on-and-on", "and-a-pool-name-as-long-as-it-gets")
	f.Add("c08-t_X", "c", "m")
	f.Add("{{ .nope }}", "c", "m")
	f.Add("{{ .cluster.name | printf \"%s.\" }}", "c", "m")
	f.Add("", "c", "m")
	f.Fuzz(func(t *testing.T, tpl, cluster, pool string) {
		name, err := NewSeeded(1).Template(tpl, Vars{Cluster: cluster, MachineDeployment: pool})
		if err != nil {
			return
		}
		if len(name) > MaxLength {
			t.Fatalf("template %q rendered %d characters: %q", tpl, len(name), name)
		}
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			t.Fatalf("template %q rendered %q, not an object name: %v", tpl, name, msgs)
		}
	})
}
