package agent

import (
	"context"
	"fmt"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
)

// heartbeatHolder is the replica the heartbeat Lease names, or "".
func heartbeatHolder(t *testing.T) string {
	t.Helper()
	lease := &coordinationv1.Lease{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: components.Namespace, Name: components.HeartbeatLease}, lease); err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// TestStandbyKeepsItsCachesWarmAndTakesOver runs two leader-elected agents:
// the standby watches what the controllers read — the agent's kinds, Cluster
// API's and the kinds its class generates — while it writes nothing, and it
// leads once the leader stops, which hands its Lease over as it goes.
func TestStandbyKeepsItsCachesWarmAndTakesOver(t *testing.T) {
	elected := func(identity string) func(*Options) {
		return func(o *Options) { o.LeaderElect, o.Identity = true, identity }
	}
	leader := startAgentWith(t, elected("replica-a"))
	ns := newNamespace(t, "standby")
	createClass(t, loadExample(t, ns)) // admitted by the leader's webhook
	eventually(t, "replica-a leads and beats", func() (bool, error) {
		return heartbeatHolder(t) == "replica-a", fmt.Errorf("the heartbeat names %q", heartbeatHolder(t))
	})
	drained(t, leader) // the other tests' Topologies, reconciled before it hands them over
	standby := startAgentWith(t, elected("replica-b"))
	for _, resource := range []string{
		"topologies", "topologyclasses", "topologyextensions", "topologyrollouts",
		"clusters", "machinedeployments", "machinehealthchecks", "machines", "machinesets",
		"dockerclusters", "kubeadmcontrolplanes", "dockermachinetemplates", "kubeadmconfigtemplates",
	} {
		eventually(t, "the standby watches "+resource, func() (bool, error) {
			return standby.writes.watching(resource), fmt.Errorf("watching %v", standby.writes.watchedResources())
		})
	}
	if n, paths := standby.writes.seen(); n != 0 {
		t.Errorf("the standby wrote %d times while it did not lead: %v", n, paths)
	}
	if got := heartbeatHolder(t); got != "replica-a" {
		t.Errorf("the heartbeat names %q while replica-a leads", got)
	}
	leader.stop()
	eventually(t, "replica-b takes the lead and beats", func() (bool, error) {
		return heartbeatHolder(t) == "replica-b", fmt.Errorf("the heartbeat names %q", heartbeatHolder(t))
	})
	drained(t, standby) // the queue the process's metrics share is left empty for the next test
}

// drained is waitIdle where the Topology queue may never have been used:
// run alone, this test has no Topology, and the queue's metrics appear only
// once something is queued.
func drained(t *testing.T, ra *runningAgent) {
	t.Helper()
	if _, err := gauge("workqueue_depth", "topology"); err != nil {
		return
	}
	waitIdle(t, ra)
}
