package props

import (
	"container/heap"
	"fmt"
	"strings"

	"cel.dev/cel-go/cel"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

// Clock judges a set's properties along one run on a clock, for the
// drivers that follow one run (simulate, and conform and live along a
// log's explanation): each leads_to P ~> Q within T as obligations that
// open when P holds and close when Q does, each sometimes property as
// reached or not in this run, and each always implication's and leads_to's
// antecedent as held or not. Times are microseconds on the run's clock.
//
// A subject is what the driver steps in a world of its own (a request of
// the simulator, an attempt of a judged log); its states' views are the
// ones the driver judges always properties on, so a per-handoff property
// is judged per handoff of that view and any other once per subject.
//
// A subject that is gone (Gone: a retired request, a finished attempt)
// keeps its last state: nothing can make Q hold of it any more, so an
// obligation still open when it goes is violated at once: the run's clock
// need not reach the deadline for the verdict, which rests on nothing the
// driver did not see.
type Clock struct {
	set   *Set
	props []clockProp
	open  map[obKey]*Obligation
	// count is each subject's open obligations.
	count map[int]int
	due   obHeap
	now   int64
	// missed are the misses not yet taken (Take), all the misses found.
	missed, all []Miss
	// unordered counts the subjects not put on the clock (Unordered).
	unordered int
}

type clockProp struct {
	// first is where P (leads_to), the antecedent (always) or the
	// property (sometimes) first held; Subject -1 when never.
	first sighting
	// Obligations opened, met, and the longest wait from P to Q of those
	// met.
	opened, met int
	longest     int64
}

// sighting is where something first held: when (-1: not known), of
// which subject, and of which handoff of its view (-1: a property not per
// handoff).
type sighting struct {
	At, Subject, Handoff int64
}

type obKey struct{ prop, subject, handoff int }

// Obligation is one leads_to within property's P having held of a
// subject's handoff (-1: a property not per handoff), Q not yet: Q must
// hold by Deadline.
type Obligation struct {
	Prop     *Property
	Subject  int
	Handoff  int
	Since    int64
	Deadline int64
	idx      int
}

// Miss is an obligation whose deadline passed with Q not holding.
type Miss struct {
	Obligation
	// Late is when Q held at last, after the deadline; -1 when it had not
	// when the miss was found.
	Late int64
	// GoneAt is when the subject went with Q false (-1: it had not).
	GoneAt int64
	// Now is the clock when the miss was found.
	Now int64
}

// Detail says what the miss is, as a violation's detail.
func (m *Miss) Detail() string {
	p := m.Prop
	var b strings.Builder
	fmt.Fprintf(&b, "leads_to %s within %s: %s held at %s", p.Name, fmtWithin(p.Within), p.Expr, fmtUS(m.Since))
	switch {
	case m.Late >= 0:
		fmt.Fprintf(&b, "; %s held only at %s, after the deadline %s", p.Then, fmtUS(m.Late), fmtUS(m.Deadline))
	case m.GoneAt >= 0:
		fmt.Fprintf(&b, "; the handoff was gone at %s with %s false, so nothing can make it hold: the deadline %s passes", fmtUS(m.GoneAt), p.Then, fmtUS(m.Deadline))
	default:
		fmt.Fprintf(&b, "; %s did not hold by the deadline %s (the clock is at %s)", p.Then, fmtUS(m.Deadline), fmtUS(m.Now))
	}
	return b.String()
}

// NewClock is a judge of set's properties along one run.
func NewClock(set *Set) *Clock {
	c := &Clock{set: set, props: make([]clockProp, len(set.Props)), open: map[obKey]*Obligation{}, count: map[int]int{}}
	for i := range c.props {
		c.props[i].first.Subject = -1
	}
	return c
}

// TimedProperty is the set's first leads_to within property (nil: none):
// the drivers that judge one need time stamps.
func (set *Set) TimedProperty() *Property {
	for _, p := range set.Props {
		if p.Kind == LeadsTo && p.Within > 0 {
			return p
		}
	}
	return nil
}

// Observe judges a state of subject: openAt is when an obligation P opens
// here starts (the latest the state can have been reached), closeAt when
// Q holding here counts from (the earliest); a driver that knows when
// each state was reached gives both the same time. A state where P and Q
// both hold opens nothing. An expression that cannot be evaluated is
// returned as an error with its property, never taken as either verdict.
func (c *Clock) Observe(sys *system.System, s *system.State, subject int, openAt, closeAt int64) (*Property, error) {
	c.now = max(c.now, closeAt)
	return c.observe(sys, s, subject, openAt, closeAt, true)
}

// ObserveUntimed judges a state of subject whose time is not known (at
// is when it is noted, -1: never): where sometimes properties and
// antecedents held, and no obligation (Unordered says why).
func (c *Clock) ObserveUntimed(sys *system.System, s *system.State, subject int, at int64) (*Property, error) {
	return c.observe(sys, s, subject, at, at, false)
}

// Unordered notes a subject whose states could not be put on the clock:
// its obligations are not judged, and a property that is not violated
// elsewhere is not decided.
func (c *Clock) Unordered(subject int) { c.unordered++ }

func (c *Clock) observe(sys *system.System, s *system.State, subject int, openAt, closeAt int64, timed bool) (*Property, error) {
	a := newActivation(sys, s)
	defer a.done()
	for i, p := range c.set.Props {
		cp := &c.props[i]
		switch {
		case p.Kind == LeadsTo && p.Within > 0:
			pm, qm, err := p.sidesOf(a)
			if err != nil {
				return p, err
			}
			if pm != 0 && cp.earlier(openAt) {
				cp.first = sighting{At: openAt, Subject: int64(subject), Handoff: int64(lowBit(pm, p.PerHandoff))}
			}
			if !timed {
				continue
			}
			for h := 0; pm|qm != 0; h, pm, qm = h+1, pm>>1, qm>>1 {
				k := obKey{i, subject, h}
				o := c.open[k]
				if qm&1 != 0 && o != nil {
					c.close(o, closeAt)
					o = nil
				}
				if pm&1 != 0 && qm&1 == 0 && o == nil {
					o = &Obligation{Prop: p, Subject: subject, Handoff: h, Since: openAt, Deadline: openAt + p.Within.Microseconds()}
					if !p.PerHandoff {
						o.Handoff = -1
					}
					c.open[k] = o
					c.count[subject]++
					heap.Push(&c.due, o)
					cp.opened++
				}
			}
		case p.Kind == Sometimes && cp.earlier(closeAt):
			if o := p.eval(a); o.Holds && o.Err == nil {
				cp.first = sighting{At: closeAt, Subject: int64(subject), Handoff: int64(o.Handoff)}
			}
		case p.Kind == Always && p.ante != nil && cp.earlier(closeAt):
			if h, ok := p.anteHolds(a); ok {
				cp.first = sighting{At: closeAt, Subject: int64(subject), Handoff: int64(h)}
			}
		}
	}
	return nil, nil
}

// earlier reports whether a sighting at t would be the first: none yet,
// or one later on the clock (a driver that judges its subjects one after
// another, conform, sees them out of the clock's order). A sighting of
// unknown time (-1) never displaces a known one.
func (cp *clockProp) earlier(t int64) bool {
	return cp.first.Subject < 0 || t >= 0 && (cp.first.At < 0 || t < cp.first.At)
}

func lowBit(m uint64, perHandoff bool) int {
	if !perHandoff {
		return -1
	}
	h := 0
	for m&1 == 0 {
		m >>= 1
		h++
	}
	return h
}

// close meets an obligation at t, or misses it when t is past its
// deadline.
func (c *Clock) close(o *Obligation, t int64) {
	c.drop(o)
	if t > o.Deadline {
		c.miss(Miss{Obligation: *o, Late: t, GoneAt: -1, Now: t})
		return
	}
	cp := &c.props[o.Prop.index]
	cp.met++
	cp.longest = max(cp.longest, t-o.Since)
}

func (c *Clock) miss(m Miss) {
	c.missed = append(c.missed, m)
	c.all = append(c.all, m)
}

// Advance moves the clock to now: every obligation open with its deadline
// before now is missed.
func (c *Clock) Advance(now int64) {
	c.now = max(c.now, now)
	for len(c.due) > 0 && c.due[0].Deadline < c.now {
		o := c.due[0]
		c.drop(o)
		c.miss(Miss{Obligation: *o, Late: -1, GoneAt: -1, Now: c.now})
	}
}

// Gone says subject went at t (a retired request, a finished attempt):
// its obligations still open are missed now, whatever their deadline
// (Miss.GoneAt says why).
func (c *Clock) Gone(subject int, t int64) {
	if c.count[subject] == 0 {
		return
	}
	var list []Miss
	for _, o := range c.due {
		if o.Subject == subject {
			list = append(list, Miss{Obligation: *o})
		}
	}
	sortMisses(list)
	for _, m := range list {
		o := c.open[obKey{m.Prop.index, m.Subject, max(m.Handoff, 0)}]
		c.drop(o)
		c.miss(Miss{Obligation: *o, Late: -1, GoneAt: t, Now: max(c.now, t)})
	}
}

// drop takes an obligation out of the open ones.
func (c *Clock) drop(o *Obligation) {
	delete(c.open, obKey{o.Prop.index, o.Subject, max(o.Handoff, 0)})
	if c.count[o.Subject]--; c.count[o.Subject] == 0 {
		delete(c.count, o.Subject)
	}
	heap.Remove(&c.due, o.idx)
}

// Open counts subject's open obligations.
func (c *Clock) Open(subject int) int { return c.count[subject] }

// Take returns the misses found since the last Take, the earliest
// deadline first.
func (c *Clock) Take() []Miss {
	out := c.missed
	c.missed = nil
	sortMisses(out)
	return out
}

func sortMisses(ms []Miss) {
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && before(&ms[j], &ms[j-1]); j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
}

func before(a, b *Miss) bool {
	if a.Deadline != b.Deadline {
		return a.Deadline < b.Deadline
	}
	if a.Subject != b.Subject {
		return a.Subject < b.Subject
	}
	return a.Prop.index < b.Prop.index
}

// Cites reports whether a report of the run would name subject: where
// something first held, or a miss.
func (c *Clock) Cites(subject int) bool {
	for i := range c.props {
		if c.props[i].first.Subject == int64(subject) {
			return true
		}
	}
	for i := range c.all {
		if c.all[i].Subject == subject {
			return true
		}
	}
	return false
}

// Now is the clock: the latest time observed or advanced to.
func (c *Clock) Now() int64 { return c.now }

// sidesOf is Sides on an activation.
func (p *Property) sidesOf(a *activation) (pm, qm uint64, err error) {
	side := func(prg cel.Program) (bool, error) {
		ok, err := evalBool(prg, a)
		if err != nil {
			return false, fmt.Errorf("%s:%d: leads_to %s: the expression could not be judged here: %w", p.file, p.Line, p.Name, err)
		}
		return ok, nil
	}
	if !p.PerHandoff {
		pb, err := side(p.prg)
		if err != nil {
			return 0, 0, err
		}
		qb, err := side(p.then)
		if pb {
			pm = 1
		}
		if qb {
			qm = 1
		}
		return pm, qm, err
	}
	hs := a.allHandoffs()
	defer func() { a.h = nil }()
	for i := range hs {
		a.h = &hs[i]
		pb, err := side(p.prg)
		if err != nil {
			return 0, 0, err
		}
		qb, err := side(p.then)
		if err != nil {
			return 0, 0, err
		}
		if pb {
			pm |= 1 << uint(i)
		}
		if qb {
			qm |= 1 << uint(i)
		}
	}
	return pm, qm, nil
}

// anteHolds reports whether an always implication's antecedent holds, and
// of which handoff (-1: a property not per handoff).
func (p *Property) anteHolds(a *activation) (int, bool) {
	if !p.PerHandoff {
		ok, _ := evalBool(p.ante, a)
		return -1, ok
	}
	hs := a.allHandoffs()
	defer func() { a.h = nil }()
	for i := range hs {
		a.h = &hs[i]
		if ok, _ := evalBool(p.ante, a); ok {
			return i, true
		}
	}
	return -1, false
}

// obHeap orders obligations by deadline, then by when they opened.
type obHeap []*Obligation

func (h obHeap) Len() int { return len(h) }
func (h obHeap) Less(i, j int) bool {
	if h[i].Deadline != h[j].Deadline {
		return h[i].Deadline < h[j].Deadline
	}
	return h[i].Subject < h[j].Subject
}
func (h obHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].idx = i; h[j].idx = j }
func (h *obHeap) Push(x any) {
	o := x.(*Obligation)
	o.idx = len(*h)
	*h = append(*h, o)
}
func (h *obHeap) Pop() any {
	old := *h
	o := old[len(old)-1]
	*h = old[:len(old)-1]
	return o
}
