package props

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/parser"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

// The top-level variables of view/v1.
const (
	varHandoffs = "handoffs"
	varWorkers  = "workers"
	varH        = "h"
)

// Property is a compiled property.
type Property struct {
	Decl
	file string
	prg  cel.Program
	// ante is the antecedent of an implication (!A || B, or A ? B :
	// true), compiled on its own for vacuity; nil for any other form.
	ante     cel.Program
	anteText string
	// then is a leads_to property's Q (its prg is P, also its ante).
	then  cel.Program
	index int
	// local: a per-handoff property that reads only h, whose judgement
	// of a handoff is a function of that handoff's packed state (cached:
	// localBits); bit is its place in the cached bits.
	local bool
	bit   uint
	// positional names what the expression reads that renaming
	// interchangeable handoffs or workers changes ("" when nothing).
	positional string
}

// Antecedent is the antecedent of an implication, as CEL text ("" when
// the property is not one).
func (p *Property) Antecedent() string { return p.anteText }

// Set is a compiled properties file.
type Set struct {
	File  string
	Props []*Property
	// nLocal counts the local properties (Property.local).
	nLocal int
	// seen is, per system judged (one per run), what held in some state
	// judged: an implication's antecedent, a sometimes property.
	seen sync.Map // *system.System -> *seen
}

// seen records, per property, whether its antecedent (always) or the
// property itself (sometimes) held in some state judged, and caches the
// judgements of local properties by handoff state.
type seen struct {
	held []atomic.Bool
	// cache maps a handoff's index and packed state to the bits of the
	// local properties' judgements of it (localBits); n counts its
	// entries, which stop growing at maxCached.
	cache sync.Map
	n     atomic.Int64
}

func (set *Set) seenBy(sys *system.System) *seen {
	if v, ok := set.seen.Load(sys); ok {
		return v.(*seen)
	}
	v, _ := set.seen.LoadOrStore(sys, &seen{held: make([]atomic.Bool, len(set.Props))})
	return v.(*seen)
}

// Held reports whether, in some state of sys judged so far, property i's
// antecedent held (an always implication) or property i held (sometimes).
func (set *Set) Held(sys *system.System, i int) bool { return set.seenBy(sys).held[i].Load() }

// Load parses and compiles a properties file: every error is one line,
// file:line:col and what was expected.
func Load(file string, data []byte) (*Set, error) {
	decls, err := Parse(file, data)
	if err != nil {
		return nil, err
	}
	return Compile(file, decls)
}

var envs struct {
	state, perHandoff *cel.Env
	err               error
}

func init() {
	base := []cel.EnvOption{
		ext.NativeTypes(reflect.TypeFor[Handoff](), reflect.TypeFor[Worker](), reflect.TypeFor[Timers](), reflect.TypeFor[Life](),
			ext.ParseStructTags(true)),
		cel.Variable(varHandoffs, cel.ListType(cel.ObjectType("props.Handoff"))),
		cel.Variable(varWorkers, cel.ListType(cel.ObjectType("props.Worker"))),
	}
	envs.state, envs.err = cel.NewEnv(base...)
	if envs.err == nil {
		envs.perHandoff, envs.err = envs.state.Extend(cel.Variable(varH, cel.ObjectType("props.Handoff")))
	}
}

// Compile type-checks and compiles parsed properties.
func Compile(file string, decls []Decl) (*Set, error) {
	if envs.err != nil {
		return nil, fmt.Errorf("props: the view's CEL environment: %w", envs.err)
	}
	set := &Set{File: file}
	for _, d := range decls {
		p, err := compile(file, d)
		if err != nil {
			return nil, err
		}
		p.index = len(set.Props)
		if p.PerHandoff && p.local && set.nLocal < maxLocal {
			p.bit = uint(3 * set.nLocal)
			set.nLocal++
		} else {
			p.local = false
		}
		set.Props = append(set.Props, p)
	}
	return set, nil
}

func compile(file string, d Decl) (*Property, error) {
	env := envs.state
	if d.PerHandoff {
		env = envs.perHandoff
	}
	bad := func(col int, format string, a ...any) error {
		return &Error{File: file, Line: d.Line, Col: col, Msg: fmt.Sprintf(format, a...)}
	}
	checked, iss := env.Compile(d.Expr)
	if iss != nil && iss.Err() != nil {
		e := iss.Errors()[0]
		return nil, bad(d.ExprCol+max(e.Location.Column(), 0), "%s", explain(e.Message, d.PerHandoff))
	}
	if !checked.OutputType().IsExactType(cel.BoolType) {
		return nil, bad(d.ExprCol, "want a bool expression; this one is %s", checked.OutputType())
	}
	prg, err := env.Program(checked, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, bad(d.ExprCol, "%v", err)
	}
	p := &Property{Decl: d, file: file, prg: prg, positional: positional(checked.NativeRep(), d.PerHandoff),
		local: d.PerHandoff && !readsList(checked.NativeRep())}
	if d.Kind == LeadsTo {
		// P is the trigger: a leads_to property whose P never held
		// holds vacuously. Its judgements are not cached as local bits
		// (no state violates it alone).
		p.local, p.ante, p.anteText = false, prg, d.Expr
		checkedQ, iss := env.Compile(d.Then)
		if iss != nil && iss.Err() != nil {
			e := iss.Errors()[0]
			return nil, bad(d.ThenCol+max(e.Location.Column(), 0), "%s", explain(e.Message, d.PerHandoff))
		}
		if !checkedQ.OutputType().IsExactType(cel.BoolType) {
			return nil, bad(d.ThenCol, "want a bool expression after '%s'; this one is %s", leadsArrow, checkedQ.OutputType())
		}
		if p.then, err = env.Program(checkedQ, cel.EvalOptions(cel.OptOptimize)); err != nil {
			return nil, bad(d.ThenCol, "%v", err)
		}
		if why := positional(checkedQ.NativeRep(), d.PerHandoff); p.positional == "" {
			p.positional = why
		}
	}
	if d.Kind == Always {
		if text := antecedent(checked.NativeRep()); text != "" {
			if ca, iss := env.Compile(text); iss == nil || iss.Err() == nil {
				if p.ante, err = env.Program(ca, cel.EvalOptions(cel.OptOptimize)); err == nil {
					p.anteText = text
				}
			}
		}
	}
	return p, nil
}

// explain completes a CEL type error with what was expected.
func explain(msg string, perHandoff bool) string {
	switch {
	case strings.HasPrefix(msg, "undeclared reference"):
		want := "want handoffs or workers"
		if perHandoff {
			want = "want h, handoffs or workers"
		} else if strings.Contains(msg, "'h'") {
			want += " (h names the handoff only in a 'per handoff' property)"
		}
		return msg + "; " + want + " (" + ViewVersion + ", docs/props.md)"
	case strings.HasPrefix(msg, "undefined field"):
		return msg + "; want a field of " + ViewVersion + " (docs/props.md lists each)"
	case strings.HasPrefix(msg, "found no matching overload"):
		return msg + "; want operands of the types docs/props.md gives"
	}
	return msg
}

// antecedent finds A in an implication written !A || B or A ? B : true,
// as CEL text. A disjunction with several negated terms, !A1 || !A2 || B,
// is (A1 && A2) implies B.
func antecedent(a *ast.AST) string {
	e := a.Expr()
	if e.Kind() != ast.CallKind {
		return ""
	}
	call := e.AsCall()
	args := call.Args()
	var parts []ast.Expr
	switch call.FunctionName() {
	case operators.LogicalOr:
		var negated, plain int
		for _, d := range disjuncts(e, nil) {
			if d.Kind() == ast.CallKind && d.AsCall().FunctionName() == operators.LogicalNot {
				parts = append(parts, d.AsCall().Args()[0])
				negated++
			} else {
				plain++
			}
		}
		if negated == 0 || plain == 0 {
			return ""
		}
	case operators.Conditional:
		if len(args) == 3 && args[2].Kind() == ast.LiteralKind && args[2].AsLiteral().Value() == true {
			parts = append(parts, args[0])
		}
	}
	var texts []string
	for _, p := range parts {
		t, err := parser.Unparse(p, a.SourceInfo())
		if err != nil {
			return ""
		}
		if len(parts) > 1 {
			t = "(" + t + ")"
		}
		texts = append(texts, t)
	}
	return strings.Join(texts, " && ")
}

// disjuncts lists the terms of a (nested) disjunction, left to right.
func disjuncts(e ast.Expr, out []ast.Expr) []ast.Expr {
	if e.Kind() == ast.CallKind && e.AsCall().FunctionName() == operators.LogicalOr {
		for _, a := range e.AsCall().Args() {
			out = disjuncts(a, out)
		}
		return out
	}
	return append(out, e)
}

// indexFields are the fields of view/v1 whose value is a handoff's or a
// worker's position: renaming interchangeable ones changes them.
var indexFields = map[string]bool{"index": true, "source_worker": true, "destination_worker": true}

// positional says what an expression reads that a renaming of
// interchangeable handoffs or workers changes: the lists handoffs and
// workers (their order is positional), or a field that is a position. A
// per-handoff property that reads neither holds of every handoff in a
// state exactly when it does of every renaming of that state: symmetry
// reduction keeps its verdicts and its shortest traces.
func positional(a *ast.AST, perHandoff bool) string {
	if !perHandoff {
		return "it is not 'per handoff'"
	}
	why := ""
	ast.PostOrderVisit(a.Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		switch e.Kind() {
		case ast.IdentKind:
			if n := e.AsIdent(); (n == varHandoffs || n == varWorkers) && why == "" {
				why = "it reads " + n
			}
		case ast.SelectKind:
			if f := e.AsSelect().FieldName(); indexFields[f] && why == "" {
				why = "it reads " + f
			}
		}
	}))
	return why
}

// Symmetric reports whether every property keeps its verdict under
// symmetry reduction, and when not, which property does not and why.
func (set *Set) Symmetric() (bool, string) {
	for _, p := range set.Props {
		if p.positional != "" {
			return false, fmt.Sprintf("%s: %s", p.Name, p.positional)
		}
	}
	return true, ""
}

// readsList reports whether an expression reads the lists handoffs or
// workers: then its judgement of a handoff depends on more than it.
func readsList(a *ast.AST) bool {
	reads := false
	ast.PostOrderVisit(a.Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() == ast.IdentKind && (e.AsIdent() == varHandoffs || e.AsIdent() == varWorkers) {
			reads = true
		}
	}))
	return reads
}
