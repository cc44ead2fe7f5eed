package printer

import (
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/health"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/internal/upstream"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TopologyTable is get's table: NAME, CLASS, VERSION, CONTROL PLANE, WORKERS,
// STATE, PROBLEMS, AGE, and the columns its fields add.
type TopologyTable struct {
	// Namespace puts a NAMESPACE column first (-A).
	Namespace bool
	// Wide adds PHASE, PINNED, INFRASTRUCTURE, RECONCILED and MESSAGE (-o wide).
	Wide bool
	// Controller adds MANAGED BY, worth a column once upstream Clusters are
	// among the rows.
	Controller bool
	// Extra are the headers of further columns after AGE (and MANAGED BY);
	// each Row gives their cells.
	Extra []string
}

// Print writes the header and a row per item, aligned.
func (c TopologyTable) Print(w io.Writer, items []v1alpha2.Topology, now time.Time) error {
	rows := c.Rows(w)
	rows.Header()
	for i := range items {
		rows.Add(&items[i], now)
	}
	return rows.Flush()
}

// Rows writes the table to w a row at a time, as get --watch prints it.
func (c TopologyTable) Rows(w io.Writer) *TopologyRows {
	return &TopologyRows{table: c, w: printers.GetNewTabWriter(w)}
}

// TopologyRows is a TopologyTable being written; what it holds is aligned
// and written at each Flush.
type TopologyRows struct {
	table TopologyTable
	w     interface {
		io.Writer
		Flush() error
	}
}

// Header adds the header line.
func (r *TopologyRows) Header() { r.table.header(r.w) }

// Add adds t's row; extra are the cells of the table's Extra columns.
func (r *TopologyRows) Add(t *v1alpha2.Topology, now time.Time, extra ...string) {
	r.table.row(r.w, t, now, extra...)
}

// Flush aligns what was added and writes it.
func (r *TopologyRows) Flush() error { return r.w.Flush() }

func (c TopologyTable) header(w io.Writer) {
	cols := []string{"NAME", "CLASS", "VERSION", "CONTROL PLANE", "WORKERS", "STATE", "PROBLEMS", "AGE"}
	if c.Controller {
		cols = append(cols, "MANAGED BY")
	}
	cols = append(cols, c.Extra...)
	if c.Namespace {
		cols = append([]string{"NAMESPACE"}, cols...)
	}
	if c.Wide {
		cols = append(cols, "PHASE", "PINNED", "INFRASTRUCTURE", "RECONCILED", "MESSAGE")
	}
	fmt.Fprintln(w, strings.Join(cols, "\t"))
}

func (c TopologyTable) row(w io.Writer, t *v1alpha2.Topology, now time.Time, extra ...string) {
	state := health.TopologyState(t)
	if state == "" {
		state = v1alpha2.StateWaiting
	}
	row := []string{upstream.Ref(t), t.Spec.ClassRef.Name, t.Spec.Version, controlPlaneReplicas(t), workerReplicas(t), string(state), dash(strings.Join(health.TopologyProblems(t), ",")), duration.HumanDuration(now.Sub(t.CreationTimestamp.Time))}
	if c.Controller {
		row = append(row, upstream.ManagedBy(t))
	}
	row = append(row, extra...)
	if c.Namespace {
		row = append([]string{t.Namespace}, row...)
	}
	if c.Wide {
		reconciled, msg := "-", ""
		if cond := meta.FindStatusCondition(t.Status.Conditions, v1alpha2.TopologyReconciledCondition); cond != nil {
			reconciled, msg = string(cond.Status)+"/"+cond.Reason, health.ConditionLine(cond.Message)
		}
		row = append(row, dash(string(t.Status.Phase)), dash(pinnedPools(t)), dash(string(t.Status.Infrastructure)), reconciled, msg)
	}
	fmt.Fprintln(w, strings.Join(row, "\t"))
}

// pinnedPools lists the pools pinned to a version of their own, as
// POOL=VERSION in topology order, MachineDeployments first.
func pinnedPools(t *v1alpha2.Topology) string {
	var out []string
	for _, p := range upgrade.PinnedPools(t) {
		out = append(out, p.Name+"="+p.Version)
	}
	return strings.Join(out, ",")
}

// controlPlaneReplicas is the control plane's ready/desired.
func controlPlaneReplicas(t *v1alpha2.Topology) string {
	desired := "-"
	if t.Spec.ControlPlane.Replicas != nil {
		desired = fmt.Sprint(*t.Spec.ControlPlane.Replicas)
	}
	ready := int32(0)
	if cp := t.Status.ControlPlane; cp != nil {
		ready = cp.ReadyReplicas
	}
	return fmt.Sprintf("%d/%s", ready, desired)
}

// workerReplicas is ready/desired summed over MachineDeployments and
// MachinePools; a "+" says some pools leave replicas to an autoscaler.
func workerReplicas(t *v1alpha2.Topology) string {
	var desired, ready int32
	open := false
	if w := t.Spec.Workers; w != nil {
		for _, md := range w.MachineDeployments {
			if md.Replicas == nil {
				open = true
				continue
			}
			desired += *md.Replicas
		}
		for _, mp := range w.MachinePools {
			if mp.Replicas == nil {
				open = true
				continue
			}
			desired += *mp.Replicas
		}
	}
	for _, p := range append(append([]v1alpha2.PartStatus{}, t.Status.MachineDeployments...), t.Status.MachinePools...) {
		ready += p.ReadyReplicas
	}
	d := fmt.Sprint(desired)
	if open {
		d += "+"
	}
	return fmt.Sprintf("%d/%s", ready, d)
}
