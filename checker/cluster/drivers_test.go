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

// A live run shows counters in a window one way, Window: the coordinator's
// router view and a worker's view of its own worker both Project the
// ledgers in and WriteBack what the attempt holds, as the simulator does.
// A window's worker is never overwritten by hand from a ledger (only from
// another state of the same window), and each project and writeBack goes
// through Window.
func TestLiveShowsCountersThroughWindow(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("../live/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no files of the live driver found (%v)", err)
	}
	// worldWorker reports whether e is X.W.W[i], a window's worker.
	worldWorker := func(e ast.Expr) bool {
		ix, ok := e.(*ast.IndexExpr)
		if !ok {
			return false
		}
		sel, ok := ix.X.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "W" {
			return false
		}
		inner, ok := sel.X.(*ast.SelectorExpr)
		return ok && inner.Sel.Name == "W"
	}
	calls := func(body *ast.BlockStmt, method string) bool {
		found := false
		ast.Inspect(body, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == method {
					found = true
				}
			}
			return true
		})
		return found
	}
	seen := map[string]bool{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok || len(as.Lhs) != len(as.Rhs) {
				return true
			}
			for i, l := range as.Lhs {
				if worldWorker(l) && !worldWorker(as.Rhs[i]) {
					t.Errorf("%s: a window's worker is set by hand; Window.Project shows a ledger in a window", fset.Position(as.Pos()))
				}
			}
			return true
		})
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Body == nil {
				continue
			}
			recv := ""
			if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok {
					recv = id.Name
				}
			}
			want := map[string]string{"project": "Project", "writeBack": "WriteBack"}[fn.Name.Name]
			if want == "" {
				continue
			}
			seen[recv+"."+fn.Name.Name] = true
			if !calls(fn.Body, want) {
				t.Errorf("%s: %s.%s does not go through Window.%s", fset.Position(fn.Pos()), recv, fn.Name.Name, want)
			}
		}
	}
	for _, m := range []string{"coord.project", "coord.writeBack", "worker.project", "worker.writeBack"} {
		if !seen[m] {
			t.Errorf("no method %s found in the live driver; the test looks for the coordinator's and the worker's project and writeBack", m)
		}
	}
}
