package desiredstate

import (
	"context"
	"fmt"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
)

// validateDesired checks every generated object as the API server will check
// it (name, label and annotation keys and values, also those of the Machines
// a MachineDeployment, MachinePool or control plane stamps out), so that a
// value no admission check caught, e.g. from a provider template's metadata,
// fails the computation before anything is written rather than each write.
func (c *computation) validateDesired(context.Context) error {
	for _, o := range c.desired.Objects() {
		if errs := rules.ValidateGenerated(o); len(errs) > 0 {
			return &rules.InvalidError{
				Kind:   o.GetKind(),
				Object: fmt.Sprintf("%s %s/%s generated for %s", o.GetKind(), o.GetNamespace(), o.GetName(), rules.Describe(c.topologyKind(), c.topo)),
				Errors: errs,
			}
		}
	}
	return nil
}
