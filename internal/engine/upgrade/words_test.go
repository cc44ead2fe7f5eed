package upgrade

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRolloutIsOnlyTheFleetsWord: outside the fleet package, no engine
// package names an exported identifier "rollout"; one cluster's version
// change is a sequence (this package), a fleet's is a rollout.
func TestRolloutIsOnlyTheFleetsWord(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "fleet" {
				return filepath.SkipDir
			}
			if strings.Contains(strings.ToLower(d.Name()), "rollout") {
				t.Errorf("package directory %s says rollout", path)
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			var names []*ast.Ident
			switch n := n.(type) {
			case *ast.FuncDecl:
				names = append(names, n.Name)
			case *ast.TypeSpec:
				names = append(names, n.Name)
			case *ast.ValueSpec:
				names = append(names, n.Names...)
			case *ast.Field:
				names = append(names, n.Names...)
			}
			for _, id := range names {
				if id.IsExported() && strings.Contains(id.Name, "Rollout") {
					t.Errorf("%s: %s says rollout outside the fleet", fset.Position(id.Pos()), id.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Errorf("checked %d files, want every engine package's", checked)
	}
}
