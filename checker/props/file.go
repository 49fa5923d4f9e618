// Package props reads properties written in a file (handoffcheck.props/v1)
// over a versioned view of the composed system's state (view/v1), compiles
// them once with CEL, and judges states with them: every driver that
// checks the built-in invariants on a state checks them there too.
package props

import (
	"fmt"
	"strings"
)

// Schema is the first line of every properties file.
const Schema = "handoffcheck.props/v1"

// Kind is what a property says of the runs.
type Kind uint8

const (
	// Always: the expression holds in every reachable state (an invariant).
	Always Kind = iota
	// Sometimes: some reachable state satisfies the expression; the
	// shortest trace to one is its witness.
	Sometimes
)

func (k Kind) String() string {
	if k == Always {
		return "always"
	}
	return "sometimes"
}

// Decl is one property as written, before compiling.
type Decl struct {
	Kind Kind
	Name string
	// PerHandoff: the expression is judged once per handoff, with h
	// bound to it; the property holds when it holds for every handoff
	// (always) or for some handoff (sometimes).
	PerHandoff bool
	// Question is the comment lines above the property: the question it
	// answers.
	Question string
	Expr     string
	// Line is the property's line, NameCol and ExprCol the 1-based
	// columns its name and expression start at.
	Line, NameCol, ExprCol int
}

// Error is one problem of a properties file, at a position.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg) }

// unsupported are the kinds of the issue that this driver does not judge
// yet: refused where they are written, never skipped.
var unsupported = map[string]string{
	"leads_to": "leads_to (P leads to Q under weak fairness) is not supported yet by this driver; want always or sometimes",
	"within":   "within (P leads to Q within a time on the clock) is not supported yet by this driver; want always or sometimes",
}

// Parse reads a properties file: its first line is the schema, then blank
// lines, '#' comments and one property per line:
//
//	always NAME [per handoff]: EXPR
//	sometimes NAME [per handoff]: EXPR
//
// Parse checks the form only; Compile checks the expressions.
func Parse(file string, data []byte) ([]Decl, error) {
	lines := strings.Split(string(data), "\n")
	bad := func(line, col int, format string, a ...any) error {
		return &Error{File: file, Line: line, Col: col, Msg: fmt.Sprintf(format, a...)}
	}
	if len(data) == 0 || strings.TrimRight(lines[0], " \t\r") != Schema {
		return nil, bad(1, 1, "want the first line %q", Schema)
	}
	var decls []Decl
	seen := map[string]int{}
	var question []string
	for i := 1; i < len(lines); i++ {
		ln := i + 1
		raw := strings.TrimRight(lines[i], "\r")
		text := strings.TrimLeft(raw, " \t")
		indent := len(raw) - len(text)
		switch {
		case strings.TrimSpace(text) == "":
			question = nil
			continue
		case strings.HasPrefix(text, "#"):
			question = append(question, strings.TrimSpace(strings.TrimPrefix(text, "#")))
			continue
		}
		d, err := parseLine(raw, indent, ln, bad)
		if err != nil {
			return nil, err
		}
		if prev, ok := seen[d.Name]; ok {
			return nil, bad(ln, d.NameCol, "duplicate property name %q (first at line %d); want a name used once", d.Name, prev)
		}
		seen[d.Name] = ln
		d.Question = strings.Join(question, " ")
		question = nil
		decls = append(decls, d)
	}
	if len(decls) == 0 {
		return nil, bad(len(lines), 1, "no property; want at least one line 'always NAME: EXPR' or 'sometimes NAME: EXPR'")
	}
	return decls, nil
}

// parseLine reads one property line; indent is where its text starts.
func parseLine(raw string, indent, ln int, bad func(int, int, string, ...any) error) (Decl, error) {
	var d Decl
	p := indent
	skip := func() {
		for p < len(raw) && (raw[p] == ' ' || raw[p] == '\t') {
			p++
		}
	}
	word := func() (string, int) {
		at := p
		for p < len(raw) && isNameByte(raw[p]) {
			p++
		}
		return raw[at:p], at + 1
	}
	kind, col := word()
	switch kind {
	case "always":
		d.Kind = Always
	case "sometimes":
		d.Kind = Sometimes
	default:
		if msg, ok := unsupported[kind]; ok {
			return d, bad(ln, col, "%s", msg)
		}
		if kind == "" {
			return d, bad(ln, col, "want a property: 'always NAME: EXPR' or 'sometimes NAME: EXPR', or a '#' comment")
		}
		return d, bad(ln, col, "unknown kind %q; want always or sometimes", kind)
	}
	skip()
	name, col := word()
	if !isName(name) {
		return d, bad(ln, col, "want a property name (a letter, then letters, digits or _) after %s", d.Kind)
	}
	d.Name, d.NameCol = name, col
	skip()
	if p < len(raw) && raw[p] != ':' {
		w, col := word()
		if w != "per" {
			if w == "" {
				return d, bad(ln, col, "want ':' or 'per handoff' after the name %s", name)
			}
			if msg, ok := unsupported[w]; ok {
				return d, bad(ln, col, "%s", msg)
			}
			return d, bad(ln, col, "unexpected %q; want ':' or 'per handoff' after the name %s", w, name)
		}
		skip()
		if w, col := word(); w != "handoff" {
			return d, bad(ln, col, "want 'handoff' after 'per' (the only quantifier of view/v1)")
		}
		d.PerHandoff = true
		skip()
	}
	if p >= len(raw) || raw[p] != ':' {
		return d, bad(ln, p+1, "want ':' and an expression after the name %s", name)
	}
	p++
	skip()
	expr := strings.TrimRight(raw[p:], " \t")
	if expr == "" {
		return d, bad(ln, p+1, "want an expression after ':'")
	}
	if w, at := fairnessWord(expr); w != "" {
		return d, bad(ln, p+1+at, "%s", unsupported[w])
	}
	d.Expr, d.Line, d.ExprCol = expr, ln, p+1
	return d, nil
}

func isNameByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// isName: a letter, then letters, digits or _.
func isName(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

// fairnessWord finds leads_to or within as a word of an expression,
// outside string literals, and its byte offset: the temporal forms this
// driver refuses rather than misreads.
func fairnessWord(expr string) (string, int) {
	var quote byte
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if quote != 0 {
			switch c {
			case '\\':
				i++
			case quote:
				quote = 0
			}
			continue
		}
		if c == '"' || c == '\'' {
			quote = c
			continue
		}
		if !isNameByte(c) || i > 0 && isNameByte(expr[i-1]) {
			continue
		}
		j := i
		for j < len(expr) && isNameByte(expr[j]) {
			j++
		}
		if _, ok := unsupported[expr[i:j]]; ok {
			return expr[i:j], i
		}
		i = j - 1
	}
	return "", 0
}
