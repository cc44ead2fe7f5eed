package plugin

import (
	"context"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// clock lets tests fix "now" for ages.
type clock func() time.Time

func (c clock) now() time.Time {
	if c == nil {
		return time.Now()
	}
	return c()
}

// liveFlags are what every live command holds: kubectl's flags and, once
// connected, the cluster.
type liveFlags struct {
	configFlags *genericclioptions.ConfigFlags
	access      *live.Cluster
}

// connectOnce reaches the cluster once the flags are known to be good.
func (l *liveFlags) connectOnce() error {
	if l.access != nil {
		return nil
	}
	var err error
	l.access, err = connect(l.configFlags)
	return err
}

// readTopology connects once and reads what ref names in the flags'
// namespace: a Topology, or an upstream Cluster with spec.topology seen as
// one, with its rollout summarised from the objects upstream made.
func (l *liveFlags) readTopology(ctx context.Context, ref string) (*v1alpha2.Topology, error) {
	if err := l.connectOnce(); err != nil {
		return nil, err
	}
	t, err := l.access.Resolve(ctx, l.access.Namespace, ref)
	if err != nil {
		return nil, err
	}
	if upstream.IsCluster(t) {
		if err := l.access.Summarize(ctx, t); err != nil {
			return nil, err
		}
	}
	return t, nil
}
