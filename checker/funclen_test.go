package checker

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// searchFiles are the files of the search: the explorer, its visited
// sets, its frontier and spill files, checkpoints, reductions and the
// liveness judge.
var searchFiles = []string{
	"bitstate.go", "checkpoint.go", "diskset.go", "expand.go", "explore.go", "liveness.go",
	"memory.go", "offheap_linux.go", "offheap_other.go", "search.go", "shortest.go", "sleep.go",
	"spill.go", "store.go", "visited.go",
}

// maxSearchFunc is the most lines a function of the search may take: one
// that does more is read as a list of modes, and a new mode then goes into
// it as one more branch.
const maxSearchFunc = 100

// No function of the search is longer than maxSearchFunc lines, its
// declaration and closing brace included.
func TestSearch_NoFunctionOver100Lines(t *testing.T) {
	fset := token.NewFileSet()
	for _, name := range searchFiles {
		if _, err := os.Stat(name); err != nil {
			t.Errorf("%s: %v (a file of the search moved: update searchFiles)", name, err)
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			from, to := fset.Position(fd.Pos()), fset.Position(fd.End())
			if n := to.Line - from.Line + 1; n > maxSearchFunc {
				t.Errorf("%s:%d: %s is %d lines, more than %d", name, from.Line, fd.Name.Name, n, maxSearchFunc)
			}
		}
	}
}

// bfsFiles are the breadth-first search itself: it reaches the composed
// system (checker/system) through its exported seam and the visited set
// through the visited interface.
var bfsFiles = []string{"explore.go", "search.go", "expand.go"}

// The search does not read a move's kind nor name one (the composed
// system says what a move is) nor the fields of a visited set (a mode is
// a type behind the visited interface, not fields the search looks
// into).
func TestSearch_ReadsNoMoveKindNorStoreInternals(t *testing.T) {
	forbidden := map[string]string{
		"Kind":      "a move's kind",
		"shards":    "a fingerprint table's shards",
		"keyShards": "an exact set's maps",
		"bitShards": "a bit array's shards",
		"inMemory":  "a disk store's window",
		"onFile":    "a disk store's file",
		"unchecked": "a disk store's queue",
	}
	fset := token.NewFileSet()
	for _, name := range bfsFiles {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		// Fields only: a method of the same name (a metric's Kind())
		// is another thing.
		calls := map[ast.Expr]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				calls[call.Fun] = true
			}
			if sel, ok := n.(*ast.SelectorExpr); ok && !calls[sel] {
				if what, bad := forbidden[sel.Sel.Name]; bad {
					t.Errorf("%s: the search reads %s (.%s)", fset.Position(sel.Pos()), what, sel.Sel.Name)
				}
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "system" && strings.HasPrefix(sel.Sel.Name, "Mv") {
					t.Errorf("%s: the search names the move kind system.%s", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
}
