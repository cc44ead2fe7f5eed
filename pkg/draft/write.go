package draft

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// ConflictError is a write refused because the Topology changed on the server
// after it was read. Nothing was written; the user's edit is kept, laid on
// top of the server's version.
type ConflictError struct {
	// Latest is the Topology as the server has it now.
	Latest *v1alpha2.Topology
	// Rebased is the user's edit on top of Latest, setting by setting.
	Rebased *v1alpha2.Topology
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
func DryRun(ctx context.Context, c client.Client, edited *v1alpha2.Topology) error {
	return c.Update(ctx, edited.DeepCopy(), client.DryRunAll)
}

// Write writes edited, an edit of orig, guarded by the resourceVersion orig
// was read at: a change made on the server since is never overwritten. On
// such a conflict it writes nothing and returns a *ConflictError.
//
// A conflict with a change of status only (the agent reports progress all
// the time) is no conflict with the user's edit: the edit is written again
// on the server's version, a few times at most, without asking.
func Write(ctx context.Context, c client.Client, orig, edited *v1alpha2.Topology) (*v1alpha2.Topology, error) {
	const statusOnlyRetries = 5
	for attempt := 0; ; attempt++ {
		out := edited.DeepCopy()
		out.ResourceVersion = orig.ResourceVersion
		err := c.Update(ctx, out)
		if err == nil {
			return out, nil
		}
		if !apierrors.IsConflict(err) {
			return nil, err
		}
		latest := &v1alpha2.Topology{}
		if gerr := c.Get(ctx, client.ObjectKeyFromObject(orig), latest); gerr != nil {
			return nil, fmt.Errorf("Topology %s/%s changed on the server after it was read, and reading it again failed; nothing was written: %w", orig.Namespace, orig.Name, gerr)
		}
		if attempt < statusOnlyRetries && onlyStatusChanged(orig, latest) {
			carried := edited.DeepCopy()
			carried.Status = latest.Status
			orig, edited = latest, carried
			continue
		}
		rebased, server, both := Rebase(orig, edited, latest)
		return nil, &ConflictError{Latest: latest, Rebased: rebased, ServerChanged: server, Both: both}
	}
}

// onlyStatusChanged tells whether latest differs from orig in its status
// alone: same spec, labels, annotations, owners and finalizers.
func onlyStatusChanged(orig, latest *v1alpha2.Topology) bool {
	return equality.Semantic.DeepEqual(orig.Spec, latest.Spec) &&
		equality.Semantic.DeepEqual(orig.Labels, latest.Labels) &&
		equality.Semantic.DeepEqual(orig.Annotations, latest.Annotations) &&
		equality.Semantic.DeepEqual(orig.OwnerReferences, latest.OwnerReferences) &&
		equality.Semantic.DeepEqual(orig.Finalizers, latest.Finalizers) &&
		orig.DeletionTimestamp.Equal(latest.DeletionTimestamp)
}

// Changes lists what edited changes in orig, setting by setting.
func Changes(orig, edited *v1alpha2.Topology) []Change {
	return Diff(Settings(orig), Settings(edited))
}
