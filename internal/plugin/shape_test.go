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
	allowed := map[string]bool{"*genericclioptions.ConfigFlags": true, "genericiooptions.IOStreams": true}
	constructors := 0
	for name, f := range pluginFiles(t) {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || !strings.HasPrefix(fn.Name.Name, "New") {
				continue
			}
			constructors++
			for _, p := range fn.Type.Params.List {
				if typ := types.ExprString(p.Type); !allowed[typ] {
					t.Errorf("%s: %s takes %s; give each behaviour its own constructor", name, fn.Name.Name, typ)
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

// TestThePluginDrawsNothing: tables, trees and previews are drawn by
// internal/printer, where golden files hold them; a command hands its data
// to a printer. No file here makes a tab writer or styles text.
func TestThePluginDrawsNothing(t *testing.T) {
	drawing := map[string]bool{"text/tabwriter": true, "github.com/liggitt/tabwriter": true, "github.com/charmbracelet/lipgloss": true}
	for name, f := range pluginFiles(t) {
		for _, imp := range f.Imports {
			if path := strings.Trim(imp.Path.Value, `"`); drawing[path] {
				t.Errorf("%s imports %s: draw it in internal/printer", name, path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && types.ExprString(sel) == "printers.GetNewTabWriter" {
				t.Errorf("%s makes a tab writer: draw the table in internal/printer", name)
			}
			return true
		})
	}
}

// TestNoFileUsesTheClientDirectly: the plugin reaches the cluster through
// live, loader and installer, never by calling the client's own methods.
func TestNoFileUsesTheClientDirectly(t *testing.T) {
	for name, f := range pluginFiles(t) {
		ast.Inspect(f, func(n ast.Node) bool {
			// A call of the client's own methods (….Client.Get); handing
			// the client to a reader is how it should be used.
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "Client" {
					t.Errorf("%s uses the client directly (%s): go through internal/live, loader or installer", name, types.ExprString(sel))
					return false
				}
			}
			return true
		})
	}
}

// pluginFiles parses the plugin's non-test files, by file name.
func pluginFiles(t *testing.T) map[string]*ast.File {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = f
	}
	if len(out) < 20 {
		t.Fatalf("found %d files in the plugin, want every one", len(out))
	}
	return out
}
