package draft

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha1"
)

// ConflictError is a write refused because the Topology changed on the server
// after it was read. Nothing was written; the user's edit is kept, laid on
// top of the server's version.
type ConflictError struct {
	// Latest is the Topology as the server has it now.
	Latest *v1alpha1.Topology
	// Rebased is the user's edit on top of Latest, setting by setting.
	Rebased *v1alpha1.Topology
	// ServerChanged is what changed on the server since the read.
	ServerChanged []Change
	// Both names the settings the server and the user both changed; the
	// user's values are the ones in Rebased.
	Both []string
}

func (e *ConflictError) Error() string {
	what := "only its metadata or status changed"
	if len(e.ServerChanged) > 0 {
		parts := make([]string, 0, len(e.ServerChanged))
		for _, c := range e.ServerChanged {
			parts = append(parts, c.String())
		}
		what = strings.Join(parts, "; ")
	}
	msg := fmt.Sprintf("Topology %s/%s changed on the server after it was read (%s); nothing was written", e.Latest.Namespace, e.Latest.Name, what)
	if len(e.Both) > 0 {
		msg += fmt.Sprintf("; you and the server both changed %s, and your values are kept", strings.Join(e.Both, ", "))
	}
	return msg + "; your change is kept on top of the server's version: check it and apply again"
}

// DryRun asks the API server, the agent's webhooks included, whether it would
// accept edited; nothing is written.
func DryRun(ctx context.Context, c client.Client, edited *v1alpha1.Topology) error {
	return c.Update(ctx, edited.DeepCopy(), client.DryRunAll)
}

// Write writes edited, an edit of orig, guarded by the resourceVersion orig
// was read at: a change made on the server since is never overwritten. On
// such a conflict it writes nothing and returns a *ConflictError.
func Write(ctx context.Context, c client.Client, orig, edited *v1alpha1.Topology) (*v1alpha1.Topology, error) {
	out := edited.DeepCopy()
	out.ResourceVersion = orig.ResourceVersion
	err := c.Update(ctx, out)
	if err == nil {
		return out, nil
	}
	if !apierrors.IsConflict(err) {
		return nil, err
	}
	latest := &v1alpha1.Topology{}
	if gerr := c.Get(ctx, client.ObjectKeyFromObject(orig), latest); gerr != nil {
		return nil, fmt.Errorf("Topology %s/%s changed on the server after it was read, and reading it again failed; nothing was written: %w", orig.Namespace, orig.Name, gerr)
	}
	rebased, server, both := Rebase(orig, edited, latest)
	return nil, &ConflictError{Latest: latest, Rebased: rebased, ServerChanged: server, Both: both}
}

// Changes lists what edited changes in orig, setting by setting.
func Changes(orig, edited *v1alpha1.Topology) []Change {
	return Diff(Settings(orig), Settings(edited))
}
