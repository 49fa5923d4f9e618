package gen_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/handoffcheck/handoffcheck/spec"
)

// repeatedCases parses Go source and reports every case clause whose body
// (its statements, comments aside) repeats the body of an earlier clause of
// the same switch; such clauses belong in one case with several labels, or
// the switch is not needed at all. It also returns how many switches it
// looked at, so that a caller can tell "no repeats" from "no switches".
func repeatedCases(name string, src []byte) (repeats []string, switches int, err error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, 0, err
	}
	body := func(stmts []ast.Stmt) string {
		var b bytes.Buffer
		for _, s := range stmts {
			if err := printer.Fprint(&b, fset, s); err != nil {
				panic(err) // printing a node just parsed cannot fail
			}
			b.WriteByte('\n')
		}
		return b.String()
	}
	ast.Inspect(f, func(n ast.Node) bool {
		var clauses []ast.Stmt
		switch sw := n.(type) {
		case *ast.SwitchStmt:
			clauses = sw.Body.List
		case *ast.TypeSwitchStmt:
			clauses = sw.Body.List
		default:
			return true
		}
		switches++
		first := map[string]token.Pos{}
		for _, c := range clauses {
			cc := c.(*ast.CaseClause)
			b := body(cc.Body)
			if prev, ok := first[b]; ok {
				repeats = append(repeats, fmt.Sprintf("%s repeats the body of the case at %s:\n%s",
					fset.Position(cc.Pos()), fset.Position(prev), b))
				continue
			}
			first[b] = cc.Pos()
		}
		return true
	})
	return repeats, switches, nil
}

// TestRepeatedCases_FindsRepeats keeps the check below from passing
// vacuously: a policy switch whose two cases return the same row, the shape
// the machines must not have, is reported; labels merged into one case are
// not.
func TestRepeatedCases_FindsRepeats(t *testing.T) {
	const repeated = `package p

func f(p, s int) (int, bool) {
	switch p {
	case 0:
		// row 6: under the first policy
		return s, true
	case 1:
		// row 6: under the second policy
		return s, true
	}
	return 0, false
}
`
	const merged = `package p

func f(p, s int) (int, bool) {
	switch p {
	case 0, 1:
		return s, true
	case 2:
		return 0, true
	}
	return 0, false
}
`
	got, n, err := repeatedCases("repeated.go", []byte(repeated))
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || len(got) != 1 {
		t.Errorf("repeated cases: %d switches, %d repeats %q; want 1 and 1", n, len(got), got)
	}
	got, n, err = repeatedCases("merged.go", []byte(merged))
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || len(got) != 0 {
		t.Errorf("merged cases: %d switches, %d repeats %q; want 1 and 0", n, len(got), got)
	}
}

// TestRender_NoRepeatedCaseBodies checks that no switch of the rendered
// machines holds two identical case bodies: a body the same under every
// policy is written once without a policy switch, and states that share a
// body share one case. The default spec and one mutant per operator are
// rendered, so that a changed row cannot bring repeats back either.
func TestRender_NoRepeatedCaseBodies(t *testing.T) {
	specs := []struct {
		name string
		s    *spec.Spec
	}{{"default", spec.Default()}}
	for _, op := range spec.Operators {
		ms := spec.Mutants(spec.Default(), []spec.Operator{op})
		if len(ms) == 0 {
			t.Fatalf("operator %s makes no mutant of the default spec", op)
		}
		specs = append(specs, struct {
			name string
			s    *spec.Spec
		}{ms[0].Name, ms[0].Spec})
	}
	for _, sc := range specs {
		t.Run(sc.name, func(t *testing.T) {
			switches := 0
			for _, f := range mustRender(t, sc.s) {
				if filepath.Ext(f.Name) != ".go" {
					continue
				}
				repeats, n, err := repeatedCases(f.Name, f.Data)
				if err != nil {
					t.Fatalf("%s does not parse: %v", f.Name, err)
				}
				switches += n
				for _, r := range repeats {
					t.Errorf("%s", r)
				}
			}
			if switches == 0 {
				t.Fatal("the rendered machines hold no switch: nothing was checked")
			}
		})
	}
}

// TestRender_EachRowOnce checks the machines against repeating a row in
// several places: each row of a role's table is the Row of exactly one
// Transition literal in that role's file, however many from-states and
// policies it lists.
func TestRender_EachRowOnce(t *testing.T) {
	s := spec.Default()
	files := mustRender(t, s)
	for _, r := range spec.Roles {
		t.Run(r.String(), func(t *testing.T) {
			var src []byte
			for _, f := range files {
				if f.Name == r.String()+"_gen.go" {
					src = f.Data
				}
			}
			if src == nil {
				t.Fatalf("no %s_gen.go rendered", r)
			}
			file, err := parser.ParseFile(token.NewFileSet(), r.String()+"_gen.go", src, 0)
			if err != nil {
				t.Fatal(err)
			}
			count := map[int]int{}
			ast.Inspect(file, func(n ast.Node) bool {
				kv, ok := n.(*ast.KeyValueExpr)
				if !ok {
					return true
				}
				if key, ok := kv.Key.(*ast.Ident); !ok || key.Name != "Row" {
					return true
				}
				lit, ok := kv.Value.(*ast.BasicLit)
				if !ok || lit.Kind != token.INT {
					t.Errorf("a Row field is not an integer literal: %T", kv.Value)
					return true
				}
				row, err := strconv.Atoi(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				count[row]++
				return true
			})
			rows := len(s.Table(r).Rows)
			for row := 1; row <= rows; row++ {
				if count[row] != 1 {
					t.Errorf("%s: written %d times, want once", s.Table(r).RowLabel(row-1), count[row])
				}
			}
			for row := range count {
				if row < 1 || row > rows {
					t.Errorf("Row: %d is not a row of the %d-row table", row, rows)
				}
			}
		})
	}
}
