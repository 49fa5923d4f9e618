package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// A site is one small change to one production source file: the bytes
// [start, end) replaced by repl. Orig and Mut show the smallest enclosing
// expression or statement before and after, which is what a reader needs
// to recognise it and what keys it in the list of equivalent changes.
type site struct {
	File       string // slash path relative to the module root
	Func       string
	Op         string
	Line       int
	start, end int
	repl       string
	Orig, Mut  string
	occurrence int // 1-based among sites of the same file, func, op and text
	// fn is where the enclosing function declaration starts and ends:
	// a test that runs none of its code cannot see the change.
	fn span
}

// Key names a site independently of its line, so that the list of
// equivalent changes survives edits elsewhere in the file.
func (s *site) Key() string {
	k := fmt.Sprintf("%s %s %s: `%s` -> `%s`", s.File, s.Func, s.Op, s.Orig, s.Mut)
	if s.occurrence > 1 {
		k += fmt.Sprintf(" #%d", s.occurrence)
	}
	return k
}

// apply returns the file's source with the site's change made.
func (s *site) apply(src []byte) []byte {
	out := make([]byte, 0, len(src)+len(s.repl))
	out = append(out, src[:s.start]...)
	out = append(out, s.repl...)
	return append(out, src[s.end:]...)
}

// The change operators. Each says what kind of slip in the production
// code it stands for; a test suite with teeth notices every one that
// alters behaviour.
const (
	opBoundary   = "boundary"    // < <= > >= moved by one
	opCompare    = "compare"     // == and != swapped
	opLogic      = "logic"       // && and || swapped
	opArith      = "arith"       // + and - swapped
	opIncDec     = "incdec"      // ++ and --, += and -= swapped
	opNegateIf   = "negate-if"   // an if condition inverted
	opDropCase   = "drop-case"   // a case of a tagless switch never taken
	opDropNot    = "drop-not"    // !x becomes x
	opDropStmt   = "drop-stmt"   // a call, assignment or increment removed
	opReturnNil  = "return-nil"  // a returned call result replaced by nil
	opFlipBool   = "flip-bool"   // true and false swapped
	opIntLiteral = "int-literal" // an integer constant off by one
)

var swaps = map[token.Token]token.Token{
	token.LSS: token.LEQ, token.LEQ: token.LSS, token.GTR: token.GEQ, token.GEQ: token.GTR,
	token.EQL: token.NEQ, token.NEQ: token.EQL,
	token.LAND: token.LOR, token.LOR: token.LAND,
	token.ADD: token.SUB, token.SUB: token.ADD,
	token.ADD_ASSIGN: token.SUB_ASSIGN, token.SUB_ASSIGN: token.ADD_ASSIGN,
	token.INC: token.DEC, token.DEC: token.INC,
}

func binaryOp(t token.Token) string {
	switch t {
	case token.LSS, token.LEQ, token.GTR, token.GEQ:
		return opBoundary
	case token.EQL, token.NEQ:
		return opCompare
	case token.LAND, token.LOR:
		return opLogic
	case token.ADD, token.SUB:
		return opArith
	}
	return ""
}

// fileSites lists every site of one file, in source order.
func fileSites(root, rel string) ([]site, error) {
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	tf := fset.File(f.Pos())
	off := func(p token.Pos) int { return tf.Offset(p) }
	text := func(n ast.Node) string { return oneLine(string(src[off(n.Pos()):off(n.End())])) }
	var out []site
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		fn := funcName(fd)
		from, to := tf.Position(fd.Pos()), tf.Position(fd.End())
		sp := span{pos{from.Line, from.Column}, pos{to.Line, to.Column}}
		add := func(op string, around ast.Node, start, end int, repl string) {
			s := site{File: rel, Func: fn, Op: op, Line: tf.Line(tf.Pos(start)),
				start: start, end: end, repl: repl, Orig: text(around), fn: sp}
			a, b := off(around.Pos()), off(around.End())
			mutated := string(src[a:start]) + repl + string(src[end:b])
			s.Mut = oneLine(mutated)
			out = append(out, s)
		}
		// stack holds the nodes enclosing the one being visited, so that a
		// literal is shown with the expression or statement it sits in.
		var stack []ast.Node
		context := func(n ast.Node) ast.Node {
			for i := len(stack) - 1; i >= 0; i-- {
				switch p := stack[i].(type) {
				case *ast.BinaryExpr, *ast.CallExpr, *ast.UnaryExpr, *ast.CompositeLit, *ast.IndexExpr,
					*ast.AssignStmt, *ast.ReturnStmt, *ast.IncDecStmt, *ast.ExprStmt, *ast.KeyValueExpr:
					return p
				case ast.Stmt:
					return n
				}
			}
			return n
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return false
			}
			defer func() { stack = append(stack, n) }()
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if op := binaryOp(n.Op); op != "" {
					p := off(n.OpPos)
					add(op, n, p, p+len(n.Op.String()), swaps[n.Op].String())
				}
			case *ast.UnaryExpr:
				if n.Op == token.NOT {
					p := off(n.OpPos)
					add(opDropNot, n, p, p+1, "")
				}
			case *ast.IncDecStmt:
				p := off(n.TokPos)
				add(opIncDec, n, p, p+2, swaps[n.Tok].String())
			case *ast.AssignStmt:
				if t, ok := swaps[n.Tok]; ok {
					p := off(n.TokPos)
					add(opIncDec, n, p, p+2, t.String())
				}
			case *ast.IfStmt:
				a, b := off(n.Cond.Pos()), off(n.Cond.End())
				add(opNegateIf, n.Cond, a, b, "!("+string(src[a:b])+")")
			case *ast.SwitchStmt:
				if n.Tag != nil {
					break
				}
				for _, c := range n.Body.List {
					cc := c.(*ast.CaseClause)
					for _, e := range cc.List {
						add(opDropCase, e, off(e.Pos()), off(e.End()), "false")
					}
				}
			case *ast.ReturnStmt:
				if len(n.Results) == 1 {
					if _, ok := n.Results[0].(*ast.CallExpr); ok {
						r := n.Results[0]
						add(opReturnNil, n, off(r.Pos()), off(r.End()), "nil")
					}
				}
			case *ast.Ident:
				if n.Name == "true" || n.Name == "false" {
					repl := map[string]string{"true": "false", "false": "true"}[n.Name]
					add(opFlipBool, context(n), off(n.Pos()), off(n.End()), repl)
				}
			case *ast.BasicLit:
				if v, err := strconv.ParseInt(n.Value, 0, 64); err == nil && n.Kind == token.INT {
					add(opIntLiteral, context(n), off(n.Pos()), off(n.End()), strconv.FormatInt(v+1, 10))
				}
			}
			// Statements that can go without breaking the build.
			var list []ast.Stmt
			switch n := n.(type) {
			case *ast.BlockStmt:
				list = n.List
			case *ast.CaseClause:
				list = n.Body
			}
			for _, st := range list {
				switch st := st.(type) {
				case *ast.ExprStmt:
					if _, ok := st.X.(*ast.CallExpr); ok {
						add(opDropStmt, st, off(st.Pos()), off(st.End()), "")
					}
				case *ast.AssignStmt:
					if st.Tok != token.DEFINE {
						add(opDropStmt, st, off(st.Pos()), off(st.End()), "")
					}
				case *ast.IncDecStmt:
					add(opDropStmt, st, off(st.Pos()), off(st.End()), "")
				}
			}
			return true
		})
	}
	// Where the same change of the same text occurs twice in one function,
	// number the occurrences so that keys stay distinct.
	seen := map[string]int{}
	for i := range out {
		seen[out[i].Key()]++
		out[i].occurrence = seen[out[i].Key()]
	}
	return out, nil
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	ptr := ""
	if s, ok := t.(*ast.StarExpr); ok {
		t, ptr = s.X, "*"
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if ix, ok := t.(*ast.IndexListExpr); ok {
		t = ix.X
	}
	name := "?"
	if id, ok := t.(*ast.Ident); ok {
		name = id.Name
	}
	return "(" + ptr + name + ")." + fd.Name.Name
}

// oneLine folds an excerpt of source onto one line, shortened for reports.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// productionFiles lists the non-test Go files of the given package
// directories, sorted.
func productionFiles(root string, dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		ents, err := os.ReadDir(filepath.Join(root, d))
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			n := e.Name()
			if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			out = append(out, filepath.ToSlash(filepath.Join(d, n)))
		}
	}
	sort.Strings(out)
	return out, nil
}
