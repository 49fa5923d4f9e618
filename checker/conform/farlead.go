package conform

import (
	"github.com/handoffcheck/handoffcheck/checker/obslog"
)

// The far memo asked first: on a milestones log most facts of some kinds
// (on the simulator's destination-first one, every pinned and activated
// fact) are explained by no move of the node their search starts from,
// only after unlogged steps; for them the memo answers for that node's
// moves too, keyed before they are tried, as it answers for the search
// after them (far.go).

// near counts a search from a node for a fact of kind k, and whether a
// move of the node explained the fact.
func (m *farMemo) near(k obslog.Kind, explained bool) {
	w := &m.nears[k]
	w.searches++
	if !explained {
		w.far++
	}
	if w.searches == farWindow {
		w.searches /= 2
		w.far /= 2
	}
}

// leads reports whether the memo is asked for a fact of kind k before
// the moves of the node the search starts from are tried (farFirst):
// where the memo answers the kind's searches and at least farLead of
// them found no move of that node that explains the fact. The memo then
// answers for those moves too, and the key is made where it would not
// be only for the few searches the node's own move would have answered.
func (m *farMemo) leads(k obslog.Kind) bool {
	w, v := &m.worth[k], &m.nears[k]
	return w.searches >= farWarm && m.answers(k) && v.searches >= farWarm && float64(v.far) >= farLead*float64(v.searches)
}

// farLead is the share of a kind's searches that go past the node they
// start from for the memo to be asked first (leads).
const farLead = 0.75

// farFirst is greedySearch from n for f where the memo is asked first
// (leads): the memo's answer, which takes n's step too, or the search,
// from n's own moves on, remembered with them.
func (j *judge) farFirst(a *attempt, n *node, f *obslog.Fact, s int) *node {
	m := &j.far
	h := j.farKeyOf(a, n, f, true)
	hit := m.lookUp(h)
	if hit != nil && !farVerify {
		m.hits++
		m.near(f.Kind, false)
		return j.farReplayFirst(a, n, f, s, hit)
	}
	broken := a.broken
	a.broken = nil
	next := j.next[:0]
	found := j.explainStep(a, n, f, s, 0 < j.bound, &next)
	m.near(f.Kind, found != nil)
	if found != nil {
		if a.broken == nil {
			a.broken = broken
		}
		if hit != nil {
			// The memo has no entry for a search a move of n answers.
			m.hits++
			farVerified.hits++
			farVerified.leads++
			m.bad++
			farVerified.bad++
		}
		return found
	}
	before := m.expanded
	found = j.bfs(a, n, f, s, next)
	m.weigh(f.Kind, m.expanded-before)
	noted := a.broken
	if a.broken == nil {
		a.broken = broken
	}
	e, keep, y := m.entryOf(a, n, f, found)
	if y != nil {
		e.lead = farStep{m: y.move, fired: y.fired}
	}
	m.keep(h, hit, e, keep, noted, a, f)
	if hit != nil && !j.replaysAs(a, n, f, s, hit, found) {
		m.bad++
		farVerified.bad++
	}
	return found
}

// replaysAs reports whether the replay of entry e from n (farVerify)
// makes the nodes the search made, up to found, which it leaves as they
// were; the replay's nodes go back to the pool.
func (j *judge) replaysAs(a *attempt, n *node, f *obslog.Fact, s int, e *farEntry, found *node) bool {
	broken, sb := a.broken, a.stepBroke[f]
	r := j.farReplayFirst(a, n, f, s, e)
	a.broken = broken
	if sb != nil || a.stepBroke[f] != nil {
		a.stepBroke[f] = sb
	}
	same := true
	x, y := r, found
	for ; x != n && y != n && x != nil && y != nil; x, y = x.parent, y.parent {
		if *x.st != *y.st || j.keyOf(x) != j.keyOf(y) || x.move != y.move || x.fired != y.fired || x.pos != y.pos || x.owed != y.owed || x.owedN != y.owedN ||
			x.consumed != y.consumed || x.silent != y.silent || x.depth != y.depth || x.clear != y.clear || x.fact != y.fact || x.faults != y.faults {
			same = false
		}
	}
	if x != y {
		same = false
	}
	for x := r; x != nil && x != n; {
		p := x.parent
		j.free(x)
		x = p
	}
	return same
}

// farReplayFirst is the node the remembered search e, of a key with lead,
// reaches from n: its first node n's unlogged child by e's lead move,
// made as explainStep makes it (taken from n's state with its budget
// full, as greedyMovesOf lists the moves; it passed its step and state
// invariants when it was searched), and the rest as farReplay makes it.
func (j *judge) farReplayFirst(a *attempt, n *node, f *obslog.Fact, s int, e *farEntry) *node {
	j.farNoted(a, f, e)
	if !e.found {
		return nil
	}
	st := n.st
	if full := j.chk.Budget(); st.B != full {
		st = &j.greedySt
		*st = *n.st
		st.B = full
	}
	x := j.child(n)
	ns := j.takeState()
	*ns = *st
	j.stepper.Apply(st, ns, e.lead.m)
	x.st, x.owns, x.clear = ns, true, true
	x.stKey = e.firstKey
	x.move, x.fired = e.lead.m, e.lead.fired
	x.silent++
	return j.farPath(x, f, s, e)
}
