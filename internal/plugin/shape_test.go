package plugin

import (
	"reflect"
	"regexp"
	"runtime"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestEveryCommandRunsCompleteValidateRun walks the command tree: every
// command that runs goes through runE, so Complete, Validate and Run are
// called in that order, always, whatever command is added next.
func TestEveryCommandRunsCompleteValidateRun(t *testing.T) {
	// The closure runE returns is named …plugin.runE.func1, or …NewCmdX.runE.funcN
	// where runE is inlined into a constructor; a literal RunE is …NewCmdX.funcN.
	want := regexp.MustCompile(`^github\.com/kubectl-topology/kubectl-topology/internal/plugin\.(\w+\.)*runE\.func\d+$`)
	var walk func(c *cobra.Command)
	runnable := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Run != nil {
			t.Errorf("%q sets Run; give it RunE: runE(o)", c.CommandPath())
		}
		if c.RunE == nil {
			return
		}
		runnable++
		if got := runtime.FuncForPC(reflect.ValueOf(c.RunE).Pointer()).Name(); !want.MatchString(got) {
			t.Errorf("%q runs %s, not runE's Complete → Validate → Run", c.CommandPath(), got)
		}
	}
	walk(NewRootCommand(genericiooptions.NewTestIOStreamsDiscard()))
	if runnable < 16 {
		t.Errorf("found %d runnable commands, want every one of the 16", runnable)
	}
}
