// Package props reads properties written in a file (handoffcheck.props/v1)
// over a versioned view of the composed system's state (view/v1), compiles
// them once with CEL, and judges states with them: every driver that
// checks the built-in invariants on a state checks them there too.
package props

import (
	"fmt"
	"strings"
	"time"
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
	// LeadsTo: every state where P holds is followed, on every run, by
	// one where Q holds: untimed, under weak fairness of each process's
	// moves; with Within, on the clock, no later than Within after it.
	LeadsTo
)

func (k Kind) String() string {
	switch k {
	case Always:
		return "always"
	case Sometimes:
		return "sometimes"
	}
	return "leads_to"
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
	// Expr is the expression; of a leads_to property, P.
	Expr string
	// Then is a leads_to property's Q ("" for the other kinds).
	Then string
	// Within bounds a leads_to property on the clock: Q holds no later
	// than Within after P did. Zero: no bound (the untimed, fair form).
	Within time.Duration
	// Line is the property's line, NameCol, ExprCol, ThenCol and
	// WithinCol the 1-based columns its name, expression, Q and bound
	// start at.
	Line, NameCol, ExprCol, ThenCol, WithinCol int
}

// Error is one problem of a properties file, at a position.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg) }

// leadsArrow separates a leads_to property's P from its Q; it is no CEL
// operator, so it cannot be misread as part of either.
const leadsArrow = "~>"

// Parse reads a properties file: its first line is the schema, then blank
// lines, '#' comments and one property per line:
//
//	always NAME [per handoff]: EXPR
//	sometimes NAME [per handoff]: EXPR
//	leads_to NAME [per handoff]: P ~> Q [within DURATION]
//
// DURATION is a Go duration (250ms, 2s). Which driver judges which kind
// is the drivers' business (Set.Refuse); the form is the same for all.
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
		return nil, bad(len(lines), 1, "no property; want at least one line 'always NAME: EXPR', 'sometimes NAME: EXPR' or 'leads_to NAME: P ~> Q'")
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
	case "leads_to":
		d.Kind = LeadsTo
	default:
		if kind == "" {
			return d, bad(ln, col, "want a property: 'always NAME: EXPR', 'sometimes NAME: EXPR' or 'leads_to NAME: P ~> Q', or a '#' comment")
		}
		if kind == "within" {
			return d, bad(ln, col, "within is no kind; want 'leads_to NAME: P ~> Q within DURATION'")
		}
		return d, bad(ln, col, "unknown kind %q; want always, sometimes or leads_to", kind)
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
	d.Line, d.ExprCol = ln, p+1
	arrow := findOutside(expr, leadsArrow)
	if d.Kind != LeadsTo {
		if arrow >= 0 {
			return d, bad(ln, d.ExprCol+arrow, "'%s' belongs to a leads_to property; want 'leads_to %s: P ~> Q'", leadsArrow, name)
		}
		if at := findWord(expr, "within"); at >= 0 {
			return d, bad(ln, d.ExprCol+at, "within bounds a leads_to property; want 'leads_to %s: P ~> Q within DURATION'", name)
		}
		d.Expr = expr
		return d, nil
	}
	if arrow < 0 {
		return d, bad(ln, d.ExprCol, "want 'P %s Q' after ':' (P leads to Q)", leadsArrow)
	}
	d.Expr = strings.TrimRight(expr[:arrow], " \t")
	if d.Expr == "" {
		return d, bad(ln, d.ExprCol, "want the expression P before '%s'", leadsArrow)
	}
	q := arrow + len(leadsArrow)
	for q < len(expr) && (expr[q] == ' ' || expr[q] == '\t') {
		q++
	}
	then := expr[q:]
	d.ThenCol = d.ExprCol + q
	if at := findWord(then, "within"); at >= 0 {
		bound := strings.TrimSpace(then[at+len("within"):])
		o := q + at + len("within")
		for o < len(expr) && (expr[o] == ' ' || expr[o] == '\t') {
			o++
		}
		d.WithinCol = d.ExprCol + o
		dur, err := time.ParseDuration(bound)
		switch {
		case bound == "":
			return d, bad(ln, d.WithinCol, "want a duration after within (250ms, 2s)")
		case err != nil:
			return d, bad(ln, d.WithinCol, "within %q: want a duration (250ms, 2s)", bound)
		case dur <= 0:
			return d, bad(ln, d.WithinCol, "within %s: want a positive duration", bound)
		}
		d.Within = dur
		then = strings.TrimRight(then[:at], " \t")
	}
	if then == "" {
		return d, bad(ln, d.ThenCol, "want the expression Q after '%s'", leadsArrow)
	}
	if at := findOutside(then, leadsArrow); at >= 0 {
		return d, bad(ln, d.ThenCol+at, "one '%s' per property; want 'P %s Q'", leadsArrow, leadsArrow)
	}
	d.Then = then
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

// scan calls at with the byte offset of each character of expr outside
// string literals, until at returns true; it returns that offset or -1.
func scan(expr string, at func(i int) bool) int {
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
		if at(i) {
			return i
		}
	}
	return -1
}

// findOutside finds sub in expr outside string literals.
func findOutside(expr, sub string) int {
	return scan(expr, func(i int) bool { return strings.HasPrefix(expr[i:], sub) })
}

// findWord finds word as a whole word of expr outside string literals.
func findWord(expr, word string) int {
	return scan(expr, func(i int) bool {
		j := i + len(word)
		return strings.HasPrefix(expr[i:], word) && (i == 0 || !isNameByte(expr[i-1])) && (j == len(expr) || !isNameByte(expr[j]))
	})
}

// Can is what a driver judges beyond always and sometimes properties.
type Can uint8

const (
	// CanLeadsTo: leads_to without a bound, under weak fairness of each
	// process's moves (an exhaustive search's lassos).
	CanLeadsTo Can = 1 << iota
	// CanWithin: leads_to within a bound, on a clock.
	CanWithin
	// Timed: the driver has a clock (a within it does not judge yet is
	// refused as such, not as a missing clock).
	Timed
)

// Refuse returns the first property of the set that driver does not
// judge, as an *Error at the property's line: a kind a driver cannot
// judge is refused where it is written, never skipped.
func (set *Set) Refuse(driver string, can Can) error {
	for _, p := range set.Props {
		if p.Kind != LeadsTo {
			continue
		}
		switch {
		case p.Within > 0 && can&CanWithin == 0:
			why := "has no clock"
			if can&Timed != 0 {
				why = "does not judge it yet"
			}
			return &Error{File: set.File, Line: p.Line, Col: p.WithinCol,
				Msg: fmt.Sprintf("leads_to %s within %s: %s %s; want simulate, live, or conform of logs with time stamps", p.Name, p.Within, driver, why)}
		case p.Within == 0 && can&CanLeadsTo == 0:
			return &Error{File: set.File, Line: p.Line, Col: 1,
				Msg: fmt.Sprintf("leads_to %s without within is judged under weak fairness over every run, which %s does not do; want check, or a bound 'within DURATION' on a timed driver", p.Name, driver)}
		}
	}
	return nil
}
