package rules

import "github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"

// ChangeWarnings names what an edit of a Topology takes down that a user may
// not mean to: the whole control plane, or the last worker machines. The
// change is valid (webhooks admit it); `scale` asks even with --yes and the
// editor shows it beside its checks.
func ChangeWarnings(orig, edited *v1alpha2.Topology) []string {
	var out []string
	if r := edited.Spec.ControlPlane.Replicas; r != nil && *r == 0 {
		if was := orig.Spec.ControlPlane.Replicas; was == nil || *was != 0 {
			out = append(out, "control plane replicas 0 deletes every control plane machine: the cluster's API server and etcd go away")
		}
	}
	if before, after := fixedWorkers(orig), fixedWorkers(edited); before > 0 && after == 0 && !hasAutoscaledPool(edited) {
		out = append(out, "every pool at 0 replicas leaves the cluster without worker machines: its workloads stop")
	}
	return out
}

// fixedWorkers sums the replicas the pools set.
func fixedWorkers(t *v1alpha2.Topology) int32 {
	var n int32
	if w := t.Spec.Workers; w != nil {
		for _, md := range w.MachineDeployments {
			if md.Replicas != nil {
				n += *md.Replicas
			}
		}
		for _, mp := range w.MachinePools {
			if mp.Replicas != nil {
				n += *mp.Replicas
			}
		}
	}
	return n
}

func hasAutoscaledPool(t *v1alpha2.Topology) bool {
	if w := t.Spec.Workers; w != nil {
		for _, md := range w.MachineDeployments {
			if md.Replicas == nil {
				return true
			}
		}
		for _, mp := range w.MachinePools {
			if mp.Replicas == nil {
				return true
			}
		}
	}
	return false
}
