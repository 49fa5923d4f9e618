package props

import (
	"fmt"
	"sync"
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
	// The buffers the views are built in, kept with the activation in a
	// pool: judging a state allocates nothing once the pool is warm.
	hbuf [model.MaxHandoffs]Handoff
	wbuf [model.MaxWorkers]Worker
	sbuf [model.MaxHandoffs][4][model.ChannelCap]string
}

var activations = sync.Pool{New: func() any { return new(activation) }}

// newActivation takes an activation for a state from the pool; done
// gives it back once no expression reads it any more.
func newActivation(sys *system.System, s *system.State) *activation {
	a := activations.Get().(*activation)
	a.sys, a.s, a.handoffs, a.workers, a.h = sys, s, nil, nil, nil
	return a
}

func (a *activation) done() {
	a.sys, a.s = nil, nil
	activations.Put(a)
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case varHandoffs:
		return a.allHandoffs(), true
	case varWorkers:
		if a.workers == nil {
			a.workers = a.wbuf[:a.sys.World().NumWorkers()]
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
		a.handoffs = a.hbuf[:a.sys.World().NumHandoffs()]
		for h := range a.handoffs {
			a.handoffs[h] = handoffView(a.sys, a.s, h, &a.sbuf[h])
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
	if p.Kind == LeadsTo {
		// No single state violates or witnesses P leads to Q: the
		// drivers that judge it read Sides along runs.
		return Outcome{Holds: true, Handoff: -1}
	}
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

// noteAntecedent records whether an implication's antecedent holds in a
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

// maxLocal bounds the local properties whose judgements are cached: three
// bits each in a word. maxCached bounds the cache's entries.
const (
	maxLocal  = 21
	maxCached = 1 << 20
)

// The bits of a local property's judgement of one handoff, at its bit.
const (
	bitHolds = 1 << iota
	bitAnte
	bitErr
)

// localBits judges handoff h by every local property, from the cache when
// the handoff's state was judged before. Within a run a handoff's view is
// a function of its packed state (its world record and the two role
// states), so the judgement is too.
func (set *Set) localBits(sn *seen, a *activation, h int) uint64 {
	var key [1 + model.HandoffWords]uint64
	key[0] = uint64(h)
	ws := a.s.W.PackHandoff(h, uint64(a.s.Src[h])|uint64(a.s.Dst[h])<<4)
	copy(key[1:], ws[:])
	if v, ok := sn.cache.Load(key); ok {
		return v.(uint64)
	}
	a.h = &a.allHandoffs()[h]
	var bits uint64
	cacheable := true
	for _, p := range set.Props {
		if !p.local {
			continue
		}
		ok, err := evalBool(p.prg, a)
		switch {
		case err != nil:
			bits |= bitErr << p.bit
			cacheable = false
		case ok:
			bits |= bitHolds << p.bit
		}
		if p.ante != nil {
			if ok, _ := evalBool(p.ante, a); ok {
				bits |= bitAnte << p.bit
			}
		}
	}
	a.h = nil
	if cacheable && sn.n.Load() < maxCached {
		if _, loaded := sn.cache.LoadOrStore(key, bits); !loaded {
			sn.n.Add(1)
		}
	}
	return bits
}

// Judge judges a state with every always property, in file order, and
// notes which sometimes properties and antecedents held. It is the
// system's StateJudge.
func (set *Set) Judge(sys *system.System, s *system.State) *model.Violation {
	a := newActivation(sys, s)
	defer a.done()
	sn := set.seenBy(sys)
	var local [model.MaxHandoffs]uint64
	if set.nLocal > 0 {
		for h := 0; h < sys.World().NumHandoffs(); h++ {
			local[h] = set.localBits(sn, a, h)
		}
	}
	for i, p := range set.Props {
		if p.local {
			held := &sn.held[i]
			for h := 0; h < sys.World().NumHandoffs(); h++ {
				b := local[h] >> p.bit
				if p.Kind == Sometimes {
					if b&bitHolds != 0 && !held.Load() {
						held.Store(true)
					}
					continue
				}
				if b&bitAnte != 0 && !held.Load() {
					held.Store(true)
				}
				if b&bitErr != 0 {
					// The slow path says what the error was.
					return p.violation(p.eval(a))
				}
				if b&bitHolds == 0 {
					return p.violation(Outcome{Handoff: h})
				}
			}
			continue
		}
		switch p.Kind {
		case LeadsTo:
			p.noteAntecedent(a, &sn.held[i])
		case Always:
			p.noteAntecedent(a, &sn.held[i])
			if o := p.eval(a); !o.Holds {
				return p.violation(o)
			}
		case Sometimes:
			if !sn.held[i].Load() {
				if o := p.eval(a); o.Holds {
					sn.held[i].Store(true)
				}
			}
		}
	}
	return nil
}

// Judgement is every property's outcome on one state, in file order.
func (set *Set) Judgement(sys *system.System, s *system.State) []Outcome {
	a := newActivation(sys, s)
	defer a.done()
	out := make([]Outcome, len(set.Props))
	for i, p := range set.Props {
		out[i] = p.eval(a)
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
	a := newActivation(sys, s)
	defer a.done()
	o := t.P.eval(a)
	if !o.Holds {
		return nil
	}
	return &model.Violation{Invariant: t.P.Name, Handoff: o.Handoff, Worker: -1, Check: t.P.Expr,
		Detail: fmt.Sprintf("sometimes %s holds: %s", t.P.Name, t.P.Expr)}
}

// Sides judges a leads_to property's P and Q on a state: of a per-handoff
// property, bit h of pm (qm) is set when P (Q) holds of handoff h; of any
// other, bit 0 is set when P (Q) holds. An evaluation error is returned,
// never taken as either side's verdict.
func (p *Property) Sides(sys *system.System, s *system.State) (pm, qm uint64, err error) {
	if p.Kind != LeadsTo {
		return 0, 0, fmt.Errorf("props: %s is %s, not leads_to", p.Name, p.Kind)
	}
	a := newActivation(sys, s)
	defer a.done()
	side := func(prg cel.Program, bit uint) (uint64, error) {
		ok, err := evalBool(prg, a)
		if err != nil {
			return 0, fmt.Errorf("%s:%d: leads_to %s: the expression could not be judged here: %w", p.file, p.Line, p.Name, err)
		}
		if ok {
			return 1 << bit, nil
		}
		return 0, nil
	}
	if !p.PerHandoff {
		if pm, err = side(p.prg, 0); err == nil {
			qm, err = side(p.then, 0)
		}
		return pm, qm, err
	}
	hs := a.allHandoffs()
	for i := range hs {
		a.h = &hs[i]
		pb, err := side(p.prg, uint(i))
		var qb uint64
		if err == nil {
			qb, err = side(p.then, uint(i))
		}
		a.h = nil
		if err != nil {
			return 0, 0, err
		}
		pm, qm = pm|pb, qm|qb
	}
	return pm, qm, nil
}
