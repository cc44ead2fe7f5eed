package plugin

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
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

// TestNoConstructorTakesABehaviourSwitch: a command's constructors take
// kubectl's flags and streams and nothing else; one that takes a bool or an
// action word is two commands sharing a body, which each should name.
func TestNoConstructorTakesABehaviourSwitch(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"*genericclioptions.ConfigFlags": true, "genericiooptions.IOStreams": true}
	constructors := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || !strings.HasPrefix(fn.Name.Name, "New") {
				continue
			}
			constructors++
			for _, p := range fn.Type.Params.List {
				if typ := types.ExprString(p.Type); !allowed[typ] {
					t.Errorf("%s: %s takes %s; give each behaviour its own constructor", fset.Position(fn.Pos()), fn.Name.Name, typ)
				}
			}
		}
	}
	if constructors < 30 {
		t.Errorf("found %d constructors, want every one of the plugin's", constructors)
	}
}

// TestHelpSaysClusterNameTargetsAnUpstreamCluster: every command that works
// on one cluster says in its help that cluster/NAME is an upstream Cluster,
// as the README promises.
func TestHelpSaysClusterNameTargetsAnUpstreamCluster(t *testing.T) {
	root := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	for _, path := range [][]string{{"status"}, {"scale"}, {"set", "variable"}, {"pause"}, {"resume"}, {"upgrade"}, {"edit"}} {
		cmd, _, err := root.Find(path)
		if err != nil {
			t.Fatalf("%v: %v", path, err)
		}
		if help := cmd.Long + cmd.Example; !strings.Contains(help, "cluster/dev") && !strings.Contains(help, "cluster/NAME") {
			t.Errorf("%q's help does not say that cluster/NAME targets an upstream Cluster", cmd.CommandPath())
		}
	}
}
