package printer

import (
	"fmt"
	"io"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-topology/kubectl-topology/internal/plan"
)

// PlanTable writes plan's table: a row per change with its namespace, kind,
// name and action, a pending object's with why it waits.
func PlanTable(w io.Writer, changes []plan.Change) error {
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "NAMESPACE\tKIND\tNAME\tACTION")
	for _, c := range changes {
		action := string(c.Action)
		if c.Action == plan.Pending {
			action += " (" + c.Reason + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Object.GetNamespace(), c.Object.GetKind(), c.Object.GetName(), action)
	}
	return tw.Flush()
}

// Changes writes the changes a command's preview lists under its sentence:
// indented, a line per object, a pending object's with why it waits.
func Changes(w io.Writer, changes []plan.Change) error {
	tw := printers.GetNewTabWriter(w)
	for _, c := range changes {
		reason := ""
		if c.Action == plan.Pending {
			reason = "(" + c.Reason + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Action, c.Object.GetKind(), c.Object.GetName(), reason)
	}
	return tw.Flush()
}

// ChangePatches writes changes as Changes does, each with the merge patch
// that makes it: what adopt shows the agent would do to objects upstream made.
func ChangePatches(w io.Writer, changes []plan.Change) error {
	tw := printers.GetNewTabWriter(w)
	for _, c := range changes {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Action, c.Object.GetKind(), c.Object.GetName(), string(c.MergePatch))
	}
	return tw.Flush()
}
