package draft

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
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
	msg := fmt.Sprintf("%s %s/%s changed on the server after it was read (%s); nothing was written", contract.KindOf(e.Latest), e.Latest.Namespace, e.Latest.Name, what)
	if len(e.Both) > 0 {
		msg += fmt.Sprintf("; you and the server both changed %s, and your values are kept", strings.Join(e.Both, ", "))
	}
	return msg + "; your change is kept on top of the server's version: check it and apply again"
}

// Store is where an edit is written: a Topology itself, or for an upstream
// Cluster its spec.topology.
type Store interface {
	// Get reads the object named by key, as a Topology.
	Get(ctx context.Context, key types.NamespacedName) (*v1alpha2.Topology, error)
	// Update writes edited, an edit of orig, guarded by orig's
	// resourceVersion: a change on the server since is a Conflict error.
	// With dryRun the API server, its admission included, only checks it.
	Update(ctx context.Context, orig, edited *v1alpha2.Topology, dryRun bool) (*v1alpha2.Topology, error)
}

// TopologyStore writes Topologies as they are.
type TopologyStore struct{ Client client.Client }

// Get reads a Topology.
func (s TopologyStore) Get(ctx context.Context, key types.NamespacedName) (*v1alpha2.Topology, error) {
	t := &v1alpha2.Topology{}
	if err := s.Client.Get(ctx, key, t); err != nil {
		return nil, err
	}
	return t, nil
}

// Update writes edited over orig's resourceVersion.
func (s TopologyStore) Update(ctx context.Context, orig, edited *v1alpha2.Topology, dryRun bool) (*v1alpha2.Topology, error) {
	out := edited.DeepCopy()
	out.ResourceVersion = orig.ResourceVersion
	var opts []client.UpdateOption
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := s.Client.Update(ctx, out, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// DryRun asks the API server, admission included, whether it would accept
// edited; nothing is written.
func DryRun(ctx context.Context, s Store, orig, edited *v1alpha2.Topology) error {
	_, err := s.Update(ctx, orig, edited, true)
	return err
}

// Write writes edited, an edit of orig, guarded by the resourceVersion orig
// was read at: a change made on the server since is never overwritten. On
// such a conflict it writes nothing and returns a *ConflictError.
//
// A conflict with a change of status, or of the marks the agent keeps in
// the metadata (finalizers, the Cluster it made, the hooks owed), is no
// conflict with the user's edit, which is of the spec only: the agent makes
// such changes all the time, most of all right after a create or an adopt.
// The edit's spec is then laid on the server's version, its metadata and
// status kept as the server has them, and written again, a few times at
// most, without asking. Anyone else's change, to the spec or to labels,
// annotations or owners, is a conflict.
func Write(ctx context.Context, s Store, orig, edited *v1alpha2.Topology) (*v1alpha2.Topology, error) {
	const retries = 5
	for attempt := 0; ; attempt++ {
		out, err := s.Update(ctx, orig, edited, false)
		if err == nil {
			return out, nil
		}
		if !apierrors.IsConflict(err) {
			return nil, err
		}
		latest, gerr := s.Get(ctx, client.ObjectKeyFromObject(orig))
		if gerr != nil {
			return nil, fmt.Errorf("%s %s/%s changed on the server after it was read, and reading it again failed; nothing was written: %w", contract.KindOf(orig), orig.Namespace, orig.Name, gerr)
		}
		if attempt < retries && onlyAgentChanges(orig, latest) {
			carried := latest.DeepCopy()
			carried.Spec = *edited.Spec.DeepCopy()
			orig, edited = latest, carried
			continue
		}
		rebased, server, both := Rebase(orig, edited, latest)
		return nil, &ConflictError{Latest: latest, Rebased: rebased, ServerChanged: server, Both: both}
	}
}

// onlyAgentChanges tells whether latest differs from orig in its status,
// finalizers and contract.AgentAnnotations alone.
func onlyAgentChanges(orig, latest *v1alpha2.Topology) bool {
	withoutMarks := func(t *v1alpha2.Topology) map[string]string {
		out := maps.Clone(t.Annotations)
		for _, k := range contract.AgentAnnotations {
			delete(out, k)
		}
		return out
	}
	return equality.Semantic.DeepEqual(orig.Spec, latest.Spec) &&
		equality.Semantic.DeepEqual(orig.Labels, latest.Labels) &&
		equality.Semantic.DeepEqual(withoutMarks(orig), withoutMarks(latest)) &&
		equality.Semantic.DeepEqual(orig.OwnerReferences, latest.OwnerReferences) &&
		orig.DeletionTimestamp.Equal(latest.DeletionTimestamp)
}

// Changes lists what edited changes in orig, setting by setting.
func Changes(orig, edited *v1alpha2.Topology) []Change {
	return Diff(Settings(orig), Settings(edited))
}
