package props

import (
	"fmt"
	"sync/atomic"

	"cel.dev/cel-go/cel"

	"cel.dev/cel-go/interpreter"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// activation resolves the view's variables of one state, each built the
// first time an expression reads it: a property that reads only workers
// never builds a handoff's view.
type activation struct {
	sys      *system.System
	s        *system.State
	handoffs []Handoff
	workers  []Worker
	h        *Handoff
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case varHandoffs:
		return a.allHandoffs(), true
	case varWorkers:
		if a.workers == nil {
			a.workers = make([]Worker, a.sys.Workers())
			for w := range a.workers {
				a.workers[w] = workerView(a.sys, a.s, w)
			}
		}
		return a.workers, true
	case varH:
		if a.h != nil {
			return a.h, true
		}
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

func (a *activation) allHandoffs() []Handoff {
	if a.handoffs == nil {
		a.handoffs = make([]Handoff, a.sys.Handoffs())
		for h := range a.handoffs {
			a.handoffs[h] = handoffView(a.sys, a.s, h)
		}
	}
	return a.handoffs
}

// Outcome is one property's judgement of one state.
type Outcome struct {
	Holds bool
	// Handoff is, for a per-handoff property, the handoff it failed on
	// (always) or held on (sometimes); -1 otherwise.
	Handoff int
	// Err is an evaluation error (a list index out of range, say): the
	// state is judged as a violation of an always property, never passed.
	Err error
}

// eval judges a property on a state. A per-handoff always property holds
// when it holds for every handoff, a per-handoff sometimes property when
// it holds for some.
func (p *Property) eval(a *activation) Outcome {
	if !p.PerHandoff {
		ok, err := evalBool(p.prg, a)
		return Outcome{Holds: ok, Handoff: -1, Err: err}
	}
	hs := a.allHandoffs()
	for i := range hs {
		a.h = &hs[i]
		ok, err := evalBool(p.prg, a)
		a.h = nil
		if err != nil {
			return Outcome{Handoff: i, Err: err}
		}
		if ok == (p.Kind == Sometimes) {
			return Outcome{Holds: ok, Handoff: i}
		}
	}
	return Outcome{Holds: p.Kind == Always, Handoff: -1}
}

func evalBool(prg cel.Program, a *activation) (bool, error) {
	v, _, err := prg.Eval(a)
	if err != nil {
		return false, err
	}
	b, ok := v.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the expression gave %v, not a bool", v)
	}
	return b, nil
}

// antecedentHeld records whether an implication's antecedent holds in a
// state (for any handoff, per handoff).
func (p *Property) noteAntecedent(a *activation, held *atomic.Bool) {
	if p.ante == nil || held.Load() {
		return
	}
	if !p.PerHandoff {
		if ok, _ := evalBool(p.ante, a); ok {
			held.Store(true)
		}
		return
	}
	hs := a.allHandoffs()
	for i := range hs {
		a.h = &hs[i]
		ok, _ := evalBool(p.ante, a)
		a.h = nil
		if ok {
			held.Store(true)
			return
		}
	}
}

// violation is how a failed always property is reported: like a built-in
// invariant, named by the property.
func (p *Property) violation(o Outcome) *model.Violation {
	v := &model.Violation{Invariant: p.Name, Handoff: o.Handoff, Worker: -1, Check: p.Expr}
	switch {
	case o.Err != nil:
		v.Detail = fmt.Sprintf("%s:%d: always %s: the expression could not be judged here: %v", p.file, p.Line, p.Name, o.Err)
	default:
		v.Detail = fmt.Sprintf("always %s does not hold: %s", p.Name, p.Expr)
	}
	return v
}

// Judge judges a state with every always property, in file order, and
// notes which sometimes properties and antecedents held. It is the
// system's StateJudge.
func (set *Set) Judge(sys *system.System, s *system.State) *model.Violation {
	a := activation{sys: sys, s: s}
	seen := set.seenBy(sys)
	for i, p := range set.Props {
		switch p.Kind {
		case Always:
			p.noteAntecedent(&a, &seen.held[i])
			if o := p.eval(&a); !o.Holds {
				return p.violation(o)
			}
		case Sometimes:
			if !seen.held[i].Load() {
				if o := p.eval(&a); o.Holds {
					seen.held[i].Store(true)
				}
			}
		}
	}
	return nil
}

// Judgement is every property's outcome on one state, in file order.
func (set *Set) Judgement(sys *system.System, s *system.State) []Outcome {
	a := activation{sys: sys, s: s}
	out := make([]Outcome, len(set.Props))
	for i, p := range set.Props {
		out[i] = p.eval(&a)
	}
	return out
}

// Target judges a state by one sometimes property, as a violation when it
// holds: a search for it stops at the shortest state where it does, and
// the trace to that state is the property's witness.
type Target struct {
	P *Property
}

// Judge is the system's StateJudge for a witness search.
func (t Target) Judge(sys *system.System, s *system.State) *model.Violation {
	a := activation{sys: sys, s: s}
	o := t.P.eval(&a)
	if !o.Holds {
		return nil
	}
	return &model.Violation{Invariant: t.P.Name, Handoff: o.Handoff, Worker: -1, Check: t.P.Expr,
		Detail: fmt.Sprintf("sometimes %s holds: %s", t.P.Name, t.P.Expr)}
}
