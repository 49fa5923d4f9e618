package cluster

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The drivers differ only in when they take moves: a virtual clock, real
// processes, a log. What they share lives below them, here, so none of
// them builds on another; a driver importing a driver would let one
// driver's clock or bookkeeping leak into the others' verdicts.
func TestNoDriverImportsAnother(t *testing.T) {
	const mod = "github.com/handoffcheck/handoffcheck/"
	drivers := []string{mod + "checker/sim", mod + "checker/live", mod + "checker/conform"}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the drivers' imports: %v", err)
	}
	for _, d := range drivers {
		out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", d).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", d, err)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, d) {
			t.Fatalf("go list -deps %s does not list the package itself: %q", d, deps)
		}
		for _, o := range drivers {
			if o != d && slices.Contains(deps, o) {
				t.Errorf("%s imports %s (directly or through another package); drivers share the cluster layer, not each other", d, o)
			}
		}
	}
}

// The cluster's names have one home: the simulator keeps no aliases of
// them (a type, constant or variable that only renames a name of this
// package), so that a driver's callers name the cluster layer itself and
// a reader never meets one thing under two names.
func TestSimKeepsNoAliasesOfClusterNames(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("../sim/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no files of the simulator found (%v)", err)
	}
	renames := func(e ast.Expr) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		id, ok := sel.X.(*ast.Ident)
		return ok && id.Name == "cluster"
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Assign.IsValid() && renames(s.Type) {
						t.Errorf("%s: type %s is an alias of a cluster name", fset.Position(s.Pos()), s.Name.Name)
					}
				case *ast.ValueSpec:
					for i, v := range s.Values {
						if renames(v) {
							t.Errorf("%s: %s renames a cluster name", fset.Position(s.Pos()), s.Names[i].Name)
						}
					}
				}
			}
		}
	}
}
