package health

import (
	"cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/core"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
)

// StatusRead are the paths under status that the engine reads of a Cluster
// API object: ObserveState and WithMachines, the health of parts and
// Machines, InfrastructurePhase. The agent's cache keeps nothing else of a
// status, so a new read must be added here, or it reads nothing.
var StatusRead = [][]string{
	{"version"}, {"replicas"}, {"readyReplicas"}, {"availableReplicas"}, {"observedGeneration"},
	{"upToDateReplicas"}, {"updatedReplicas"}, {"v1beta2", "availableReplicas"}, {"v1beta2", "readyReplicas"}, {"v1beta2", "upToDateReplicas"},
	// A pool's v1beta1 counts, read where it has no v1beta2 ones.
	{"deprecated", "v1beta1", "updatedReplicas"}, {"deprecated", "v1beta1", "readyReplicas"}, {"deprecated", "v1beta1", "availableReplicas"},
	{"conditions"}, {"v1beta2", "conditions"},
	{"phase"}, {"nodeRef"},
	{"initialization", "provisioned"}, {"ready"}, {"initialization", "infrastructureProvisioned"}, {"infrastructureReady"},
	// A Machine's kubelet version says it is upgraded; a Cluster's
	// initialized control plane makes AfterControlPlaneInitialized due.
	{"nodeInfo", "kubeletVersion"}, {"initialization", "controlPlaneInitialized"},
}

// ConditionsRead are the condition types the engine reads (see Conditions):
// a control plane's or pool's health conditions and Remediating, what a
// Machine's health looks at, and the TopologyReconciled the agent mirrors on
// a Cluster (read so that an unchanged one is not written again). The
// agent's cache keeps no others.
var ConditionsRead = []string{
	"Available", "EtcdClusterHealthy", "ControlPlaneComponentsHealthy", "CertificatesAvailable", "Remediating",
	"HealthCheckSucceeded", "Ready", "InfrastructureReady", "BootstrapConfigReady", "BootstrapReady", "TopologyReconciled",
	"ControlPlaneInitialized",
}

// ObserveState reads the rollout state of existing objects per the Cluster API
// contracts: the control plane's spec.version and status.version, and a pool's
// version and whether its replicas are all up to date. The agent refines pool
// state from Machines when it has them.
func ObserveState(s *clusterstate.State) (*upgrade.Observed, error) {
	obs := &upgrade.Observed{MachineDeployments: map[string]upgrade.PartObserved{}, MachinePools: map[string]upgrade.PartObserved{}}
	if s == nil {
		return obs, nil
	}
	if cp := s.ControlPlane.Object; cp != nil {
		// A control plane is a provider's object: read by the contract's paths.
		o := upgrade.PartObserved{Exists: true, ObjectName: cp.GetName()}
		o.SpecVersion, _, _ = unstructured.NestedString(cp.Object, "spec", "version")
		o.StatusVersion, _, _ = unstructured.NestedString(cp.Object, "status", "version")
		o.Replicas = nestedInt32(cp, "status", "replicas")
		o.ReadyReplicas = nestedInt32(cp, "status", "readyReplicas")
		o.UpToDateReplicas = upToDateReplicas(cp)
		o.AvailableReplicas = availableReplicas(cp)
		o.Problems = partProblems(cp.GetKind()+"/"+cp.GetName(), Conditions(cp))
		if statusStale(cp) {
			o.UpToDateReplicas = 0
		}
		obs.ControlPlane = o
	}
	if err := observePools(s.MachineDeployments, obs.MachineDeployments, machineDeploymentObserved); err != nil {
		return nil, err
	}
	if err := observePools(s.MachinePools, obs.MachinePools, machinePoolObserved); err != nil {
		return nil, err
	}
	return obs, nil
}

// observePools reads each pool that exists with read, into into.
func observePools(pools map[string]*clusterstate.Worker, into map[string]upgrade.PartObserved, read func(*unstructured.Unstructured) (upgrade.PartObserved, error)) error {
	for name, w := range pools {
		if w == nil || w.Object == nil {
			continue
		}
		o, err := read(w.Object)
		if err != nil {
			return err
		}
		into[name] = o
	}
	return nil
}

func machineDeploymentObserved(u *unstructured.Unstructured) (upgrade.PartObserved, error) {
	md, err := core.MachineDeployment(u)
	if err != nil {
		return upgrade.PartObserved{}, err
	}
	st := md.Status
	c := poolCounts{replicas: st.Replicas, ready: st.ReadyReplicas, available: st.AvailableReplicas, upToDate: st.UpToDateReplicas}
	if d := st.Deprecated; d != nil && d.V1Beta1 != nil {
		c.v1beta1Ready, c.v1beta1Available, c.v1beta1Updated = &d.V1Beta1.ReadyReplicas, &d.V1Beta1.AvailableReplicas, &d.V1Beta1.UpdatedReplicas //nolint:staticcheck // the counts a core before v1beta2 reports, and the one the up-to-date count is checked against
	}
	return c.observed("MachineDeployment", md.ObjectMeta, st.ObservedGeneration, md.Spec.Template.Spec.Version, core.Conditions(md)), nil
}

func machinePoolObserved(u *unstructured.Unstructured) (upgrade.PartObserved, error) {
	mp, err := core.MachinePool(u)
	if err != nil {
		return upgrade.PartObserved{}, err
	}
	st := mp.Status
	c := poolCounts{replicas: st.Replicas, ready: st.ReadyReplicas, available: st.AvailableReplicas, upToDate: st.UpToDateReplicas}
	if d := st.Deprecated; d != nil && d.V1Beta1 != nil {
		c.v1beta1Ready, c.v1beta1Available = &d.V1Beta1.ReadyReplicas, &d.V1Beta1.AvailableReplicas //nolint:staticcheck // the counts a core before v1beta2 reports
	}
	return c.observed("MachinePool", mp.ObjectMeta, st.ObservedGeneration, mp.Spec.Template.Spec.Version, core.Conditions(mp)), nil
}

// poolCounts are a pool's replica counts in status: upstream's v1beta2
// counts, and the v1beta1 ones it still keeps under status.deprecated (or,
// read from a core before v1beta2 counts, the only ones there are).
type poolCounts struct {
	replicas, ready, available, upToDate           *int32
	v1beta1Ready, v1beta1Available, v1beta1Updated *int32
}

// observed is the state of the pool kind/meta.Name. v1beta2 counts Machines
// whose UpToDate condition is true, which lags a template change by a moment
// after observedGeneration has caught up; the v1beta1 count of updated
// replicas (the new MachineSet's) does not, so the lower of the two is
// taken. A status older than the spec (observedGeneration 0: never
// observed) has no replica up to date yet.
func (c poolCounts) observed(kind string, meta metav1.ObjectMeta, observedGeneration int64, version string, conds []metav1.Condition) upgrade.PartObserved {
	o := upgrade.PartObserved{Exists: true, ObjectName: meta.Name, SpecVersion: version, Problems: partProblems(kind+"/"+meta.Name, conds)}
	o.Replicas = ptr.Deref(c.replicas, 0)
	o.ReadyReplicas = ptr.Deref(cmp.Or(c.ready, c.v1beta1Ready), 0)
	o.AvailableReplicas = ptr.Deref(cmp.Or(c.available, c.v1beta1Available), 0)
	o.UpToDateReplicas = ptr.Deref(cmp.Or(c.upToDate, c.v1beta1Updated), 0)
	if c.upToDate != nil && c.v1beta1Updated != nil {
		o.UpToDateReplicas = min(*c.upToDate, *c.v1beta1Updated)
	}
	if observedGeneration > 0 && observedGeneration < meta.Generation {
		o.UpToDateReplicas = 0
	}
	o.Upgrading = o.UpToDateReplicas < o.Replicas
	return o
}

// statusStale tells whether an object's status predates its spec: its
// controller has not seen the latest change (e.g. a rotated template), so
// none of its replicas can be called up to date yet.
func statusStale(o *unstructured.Unstructured) bool {
	observed, found, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
	return found && observed < o.GetGeneration()
}

// upToDateReplicas reads the v1beta2 contract's status.upToDateReplicas, or
// v1beta1's status.updatedReplicas from a provider still on that contract.
// v1beta2 counts Machines whose UpToDate condition is true, which lags a
// template change by a moment after observedGeneration has caught up; the
// v1beta1 count it still keeps under status.deprecated (the new MachineSet's
// replicas) does not, so the lower of the two is taken.
func upToDateReplicas(o *unstructured.Unstructured) int32 {
	if _, found, _ := unstructured.NestedFieldNoCopy(o.Object, "status", "upToDateReplicas"); !found {
		return nestedInt32(o, "status", "updatedReplicas")
	}
	n := nestedInt32(o, "status", "upToDateReplicas")
	if _, found, _ := unstructured.NestedFieldNoCopy(o.Object, "status", "deprecated", "v1beta1", "updatedReplicas"); found {
		n = min(n, nestedInt32(o, "status", "deprecated", "v1beta1", "updatedReplicas"))
	}
	return n
}

// availableReplicas reads upstream's v1beta2 count where the object has it
// (status.v1beta2 when read as v1beta1), else the v1beta1 one.
func availableReplicas(o *unstructured.Unstructured) int32 {
	if _, found, _ := unstructured.NestedFieldNoCopy(o.Object, "status", "v1beta2", "availableReplicas"); found {
		return nestedInt32(o, "status", "v1beta2", "availableReplicas")
	}
	return nestedInt32(o, "status", "availableReplicas")
}

func nestedInt32(o *unstructured.Unstructured, path ...string) int32 {
	v, found, err := unstructured.NestedFieldNoCopy(o.Object, path...)
	if !found || err != nil {
		return 0
	}
	switch n := v.(type) {
	case int64:
		return int32(n)
	case float64:
		return int32(n)
	case int:
		return int32(n)
	}
	return 0
}

// MachineDeploymentNameOfMachine is the label the MachineSet controller puts
// on each Machine: the name of its MachineDeployment.
const MachineDeploymentNameOfMachine = "cluster.x-k8s.io/deployment-name"

// WithMachines refines o, what the contracts' status says, with the Machines
// themselves: a MachineDeployment is upgrading while, and only while, any of
// its Machines runs another version than its spec, whatever its counters
// say; and
// each part's Machines that are not ready are its problems.
func WithMachines(o *upgrade.Observed, s *clusterstate.State, machines []*clusterv1.Machine) *upgrade.Observed {
	if cp := s.ControlPlane.Object; cp != nil {
		var mine []*clusterv1.Machine
		for _, m := range machines {
			if _, ok := m.Labels[clusterv1.MachineControlPlaneLabel]; ok {
				mine = append(mine, m)
			}
		}
		observeMachines(&o.ControlPlane, mine)
	}
	for name, w := range s.MachineDeployments {
		if w == nil || w.Object == nil {
			continue
		}
		part := o.MachineDeployments[name]
		var mine []*clusterv1.Machine
		// Upgrading is read from the Machines alone, as upstream reads it: a
		// Machine at another version than the spec's, by its spec or by its
		// kubelet. The counters in status lag the Machines by a few updates,
		// and every chained step would wait them out.
		part.Upgrading = false
		for _, m := range machines {
			if m.Labels[MachineDeploymentNameOfMachine] != w.Object.GetName() {
				continue
			}
			mine = append(mine, m)
			v, kubelet := m.Spec.Version, ""
			if m.Status.NodeInfo != nil {
				kubelet = m.Status.NodeInfo.KubeletVersion
			}
			if (v != "" && v != part.SpecVersion) || (kubelet != "" && kubelet != part.SpecVersion) {
				part.Upgrading = true
			}
		}
		observeMachines(&part, mine)
		o.MachineDeployments[name] = part
	}
	return o
}
