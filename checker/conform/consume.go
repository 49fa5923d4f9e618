package conform

import (
	"slices"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Consuming facts: each logged fact is explained by a step of a node, or
// paid from what the node owes, greedily along one path while one path
// explains them, with a memo of the steps that explained the same fact.

// greedy explains the next fact from the attempt's current explanation:
// by a fact the explanation owes, by a restart the logs name, or by the
// first step, after as few unlogged steps as can be (none of them a
// fault), that makes it observable first of its process.
func (j *judge) greedy(a *attempt, f *obslog.Fact, s int) bool {
	n := a.cur
	if !j.inClockOrder(a, n, s, f) {
		return false
	}
	for i := 0; i < int(n.owedN) && f.Kind != obslog.WorkerRestarted; i++ {
		l := &n.owed[i]
		if !j.logsIt(a, l, f) {
			continue
		}
		// The process owes facts of earlier steps: this is the next.
		if !firstOfItsProcess(n.owed[:n.owedN], i) || !matches(f, l) || !j.paysInTime(a, n, i, s, f) {
			return false
		}
		j.advance(a, j.payOwed(n, i, s, f))
		return true
	}
	if f.Kind == obslog.WorkerRestarted {
		k := int8(0)
		if f.Proc == a.d {
			k = 1
		}
		c := j.child(n)
		ns := *n.st
		if v := j.stepper.Force(&ns, system.Move{Kind: system.Restart.Move(), H: -1, Arg: k}); v != nil || !j.setState(a, c, &ns) {
			return false
		}
		c.fired = j.stepper.Fired()
		j.forgive(a, c, f.Proc)
		c.pos[s]++
		c.consumed++
		c.fact = f
		j.advance(a, c)
		return true
	}
	// Attempts of one size go through the same states: the search from
	// a state for a fact is done once and replayed (greedyMemo). A log
	// whose attempts are of many sizes seldom repeats one: while the memo
	// finds too few, searches skip it (memoUse). With a clock error they
	// all do: what a step leaves owed to its own process (owedSame)
	// depends on what the node owed already, which the memo leaves out.
	if j.clockOn() || !j.memoUse() {
		c := j.greedySearch(a, n, f, s)
		if c == nil {
			return false
		}
		j.advance(a, c)
		return true
	}
	mk := j.memoKey(a, n, f)
	for i := j.memo[mk.hash]; i != 0; i = j.memoTab[i-1].next {
		if e := &j.memoTab[i-1]; e.key == mk && e.from == *n.st {
			j.memoHits++
			if !e.found {
				return false
			}
			j.advance(a, j.memoReplay(n, e, s, f))
			return true
		}
	}
	if j.memoN == maxMemo {
		clear(j.memo)
		j.memoN = 0
	}
	if j.memoN == len(j.memoTab) {
		j.memoTab = append(j.memoTab, greedyMemo{})
	}
	e := &j.memoTab[j.memoN]
	*e = greedyMemo{key: mk, from: *n.st, steps: e.steps[:0], next: j.memo[mk.hash]}
	j.memoN++
	j.memo[mk.hash] = int32(j.memoN)
	c := j.greedySearch(a, n, f, s)
	if c == nil {
		return false
	}
	for y := c; y != n; y = y.parent {
		e.steps = append(e.steps, memoStep{m: y.move, st: *y.st, stKey: j.keyOf(y), fired: y.fired})
	}
	slices.Reverse(e.steps)
	e.owed, e.owedN, e.found = c.owed, c.owedN, true
	j.advance(a, c)
	return true
}

// greedySearch searches breadth first from n for the first step that
// explains f after unlogged steps (none of them a fault), and returns
// the node it makes, or nil. The search's other nodes go back to the
// pool.
func (j *judge) greedySearch(a *attempt, n *node, f *obslog.Fact, s int) *node {
	// The far memo is asked first for a kind of fact the node's own
	// moves seldom explain (farFirst).
	if j.far.leads(f.Kind) && j.farApplies(a, n, f, s) {
		return j.farFirst(a, n, f, s)
	}
	// Most facts are explained by a move of n itself: a node that
	// explains f makes no other (explainStep), so nothing is to be freed.
	next := j.next[:0]
	found := j.explainStep(a, n, f, s, 0 < j.bound, &next)
	j.far.near(f.Kind, found != nil)
	if found != nil {
		return found
	}
	return j.farSearch(a, n, f, s, next)
}

// bfs is greedySearch's breadth-first search from n, whose unlogged
// children next are, for f.
func (j *judge) bfs(a *attempt, n *node, f *obslog.Fact, s int, next []*node) *node {
	var found *node
	j.scratch = append(j.scratch[:0], next...)
	j.seen.reset()
	j.frontier, j.next = next, append(j.frontier[:0], n)
	frontier := next
	for depth := 1; len(frontier) > 0 && found == nil; depth++ {
		next := j.next[:0]
		for _, x := range frontier {
			// Compared with the states seen when its turn comes, in the
			// frontier's order (expanding adds nothing to seen): the
			// nodes after the one that explains f are never hashed.
			if !j.seen.add(j, x) {
				continue
			}
			j.far.expanded++
			mark := len(next)
			c := j.explainStep(a, x, f, s, depth < j.bound, &next)
			j.scratch = append(j.scratch, next[mark:]...)
			if c != nil {
				found = c
				break
			}
		}
		j.frontier, j.next = next, frontier
		frontier = next
	}
	for y := found; y != nil && y != n; y = y.parent {
		y.onPath = true
	}
	for _, x := range j.scratch {
		if !x.onPath {
			j.free(x)
		}
	}
	for y := found; y != nil && y != n; y = y.parent {
		y.onPath = false
	}
	clear(j.scratch)
	j.scratch = j.scratch[:0]
	clear(j.frontier)
	clear(j.next)
	j.seen.reset()
	return found
}

// memoUse reports whether greedy's next search goes through the memo.
// The memo is tried for memoProbe searches; when fewer than one in
// memoWorth of them was found there, the next searches skip it, and then
// it is tried again: memoRest of them after a probe that found enough,
// twice as many after each probe in a row that did not, up to
// memoRestMax (a log of many sizes pays a probe's keys and copies of
// states at most once in a million searches). Only the time differs: a
// search remembered or not finds the same node.
func (j *judge) memoUse() bool {
	if j.memoSkip > 0 {
		j.memoSkip--
		return false
	}
	j.memoLooks++
	if j.memoLooks == memoProbe {
		if j.memoHits*memoWorth < j.memoLooks {
			j.memoRestN = min(max(2*j.memoRestN, memoRest), memoRestMax)
			j.memoSkip = j.memoRestN
		} else {
			j.memoRestN = 0
		}
		j.memoLooks, j.memoHits = 0, 0
	}
	return true
}

const (
	memoWorth   = 8
	memoRest    = 1 << 14
	memoRestMax = 1 << 20
)

// memoProbe is how many searches the memo is tried for before it is
// judged. A variable for the tests: with 1, the memo is skipped from the
// second search on.
var memoProbe = 1 << 10

// maxWorlds bounds the attempts' world configurations kept for attempts
// to come.
const maxWorlds = 64

// maxMemo bounds the searches greedy remembers.
const maxMemo = 1 << 9

// greedyMemo is greedy's search from a state for a fact: the steps to
// the node that explains it (nil: none does) and what that node owes.
type greedyMemo struct {
	key  memoKey
	from system.State
	// found: steps lead to the node that explains the fact.
	found bool
	steps []memoStep
	owed  [maxOwed]obslog.Label
	owedN uint8
	next  int32 // the entry before it of the same hash, one more than its index
}

type memoStep struct {
	m     system.Move
	st    system.State
	stKey uint64
	fired model.Triggers
}

// memoKey is all that greedy's search reads beside the state: what the
// node owes, the fact's kind and figures, which side logs it, and what
// the attempt's processes record.
type memoKey struct {
	hash uint64
	// size is the attempt's prompt and prefix hit, and world the
	// incarnation of its configuration: a state's hash leaves out its
	// configuration.
	size       [2]int64
	world      uint64
	owed       [maxOwed]obslog.Label
	owedN      uint8
	kind       obslog.Kind
	stage      model.Side
	has        uint32
	figs       [8]int64
	outcome    model.Outcome
	timer      model.Timer
	side       int8
	recP, recD obslog.KindSet
	p, d       bool
}

func (j *judge) memoKey(a *attempt, n *node, f *obslog.Fact) memoKey {
	k := memoKey{size: [2]int64{a.prompt, a.hit}, world: a.world.id, owed: n.owed, owedN: n.owedN, kind: f.Kind, stage: f.Stage, outcome: f.Outcome, timer: f.Timer, side: 2, p: a.p >= 0, d: a.d >= 0}
	for i, g := range obslog.Kinds[f.Kind].Figures {
		if f.HasFigure(g) {
			k.has |= 1 << i
			k.figs[i] = figure(f, g)
		}
	}
	switch {
	case f.Proc == a.p:
		k.side = 0
	case f.Proc == a.d:
		k.side = 1
	case j.h.Processes[f.Proc].Role != obslog.RoleRouter:
		k.side = 3
	}
	if a.p >= 0 {
		k.recP = j.h.Processes[a.p].Records
	}
	if a.d >= 0 {
		k.recD = j.h.Processes[a.d].Records
	}
	h := mix(mix(mix(j.keyOf(n), uint64(k.size[0])), uint64(k.size[1])), uint64(k.kind)|uint64(k.side)<<8|uint64(k.has)<<16|uint64(k.owedN)<<48)
	for _, v := range k.figs {
		h = mix(h, uint64(v))
	}
	for _, l := range n.owed[:n.owedN] {
		h = mix(h, uint64(l.Kind)|uint64(l.By)<<8|uint64(l.Blocks)<<16)
	}
	k.hash = h
	return k
}

// memoReplay is the node a remembered search reaches from n: the same
// nodes explainStep made, sharing their states.
func (j *judge) memoReplay(n *node, e *greedyMemo, s int, f *obslog.Fact) *node {
	x := n
	for i := range e.steps {
		st := &e.steps[i]
		c := j.child(x)
		j.own(c, &st.st)
		c.stKey, c.move, c.fired = st.stKey, st.m, st.fired
		if i < len(e.steps)-1 {
			c.silent++
		} else {
			c.pos[s]++
			c.consumed++
			c.fact = f
			c.silent = 0
			c.owed, c.owedN = e.owed, e.owedN
		}
		x = c
	}
	return x
}

// logsIt reports whether fact f is the process that logs label l.
func (j *judge) logsIt(a *attempt, l *obslog.Label, f *obslog.Fact) bool {
	if l.By == obslog.ByRouter {
		return j.h.Processes[f.Proc].Role == obslog.RoleRouter
	}
	return j.logger(a, l) == f.Proc
}

// explainStep tries each move of x: the first whose first fact for f's
// process is f makes the child returned; unlogged ones (no faults) are
// added to silent when more may be taken.
func (j *judge) explainStep(a *attempt, x *node, f *obslog.Fact, s int, more bool, silent *[]*node) *node {
	st, moves := j.greedyMovesOf(x, f)
	// Each move is taken in a state of the pool: the one that explains f
	// keeps it, and so does an unlogged one (quiet) until it is a node
	// or the search is over; the others give it to the next move.
	next := j.takeState()
	var must [maxOwed]obslog.Label
moves:
	for _, m := range moves {
		*next = *st
		// The step's invariants are judged only for a move kept (one
		// that explains f, or an unlogged one the search goes on
		// from): a move that breaks one is left out, as Force leaves it,
		// and most moves tried are neither.
		j.stepper.Apply(st, next, m)
		fired := j.stepper.Fired()
		if (m.Kind == system.MvDeliver) && ignored(j.stepper.Firings()) {
			continue
		}
		j.labels = obslog.Observe(j.labels[:0], 0, st, next, m, j.stepper.Firings())
		mn := 0
		for i := range j.labels {
			if j.mustLog(a, &j.labels[i]) && mn < maxOwed {
				must[mn] = j.labels[i]
				mn++
			}
		}
		if mn == 0 {
			if _, fault := m.Kind.Spends(); more && !(fault && m.Kind != system.Evict.Move()) {
				if j.stepper.JudgeApplied(st, next, m) != nil {
					continue
				}
				// Made a node only if no move of x explains f: most
				// facts are explained at once, and then these go.
				j.quiet = append(j.quiet, quietStep{m: m, st: next, fired: fired})
				next = j.takeState()
			}
			continue
		}
		for i := 0; i < mn; i++ {
			if !firstOfItsProcess(must[:mn], i) || !j.logsIt(a, &must[i], f) || !matches(f, &must[i]) {
				continue
			}
			owed, on, ok := carry(x, must[:mn], i)
			if !ok {
				continue
			}
			if v := j.stepper.JudgeApplied(st, next, m); v != nil {
				j.refused(a, x, st, next, m, v)
				continue moves
			}
			c := j.child(x)
			// Its key is left to be computed (keyOf): the explanation
			// followed greedily goes on from it without a visited set.
			if v := j.checkStep(x, st, next); v != nil {
				a.broken = v
				j.refused(a, x, st, next, m, v)
				j.free(c)
				j.freeStates = append(j.freeStates, next)
				j.flushQuiet(a, x, silent)
				return nil
			}
			c.st, c.owns, c.clear = next, true, true
			c.stKey = 0
			c.move, c.fired = m, fired
			c.pos[s]++
			c.consumed++
			c.fact = f
			c.silent = 0
			c.owed, c.owedN, c.owedSame = owed, on, j.sameStep(x, must[:mn], i)
			j.dropQuiet()
			return c
		}
	}
	j.freeStates = append(j.freeStates, next)
	j.flushQuiet(a, x, silent)
	return nil
}

// counted moves a greedily followed attempt's share of its workers'
// ledgers to its explanation; false when that breaks CapacityRespected,
// rejected at the attempt's last fact. An explanation whose state is the
// one counted last (a fact it owed) holds what it held: every share that
// grew was judged when it grew, and shares that shrank break nothing.
func (j *judge) counted(a *attempt) bool {
	if a.cur.st == a.countedSt {
		return true
	}
	a.countedSt = a.cur.st
	v := j.recount(a, a.cur)
	if v == nil {
		return true
	}
	f := a.last
	j.reject(&Rejection{File: f.File, Line: f.Line, Attempt: a.id, Fact: Describe(j.h, f), Invariant: v.Invariant,
		Detail: v.Detail, Explained: j.chainHistory(a)})
	return false
}

// greedyDone forgets an attempt its explanation finished, when no
// process could log anything more about it.
func (j *judge) greedyDone(a *attempt) {
	n := a.cur
	if n.owedN != 0 || !j.done(n) {
		return
	}
	// A Removed may still come for what its sides keep cached: the
	// record of the finished attempt says which (retire), so the attempt
	// goes now, not when its blocks are evicted, which may be never.
	j.retire(a, n)
	a.cur = nil
	j.freeGreedy(a)
	// Nothing points to the attempt any more: it is open no longer,
	// and its record (gone) is a copy.
	j.freeAtts = append(j.freeAtts, a)
}

// greedyEnd is the explanation that ends an attempt followed greedily:
// its own, or one it reaches by unlogged steps.
func (j *judge) greedyEnd(a *attempt) *node {
	n := a.cur
	if n.owedN != 0 {
		return nil
	}
	frontier := []*node{n}
	var seen map[uint64][]*node
	for depth := 0; len(frontier) > 0 && depth <= j.bound; depth++ {
		var next []*node
		for _, x := range frontier {
			if j.open || j.doneAtEnd(x) {
				return x
			}
			j.explainStep(a, x, &obslog.Fact{Kind: 0}, 0, depth < j.bound, &next)
		}
		frontier, seen = j.fresh(next, seen)
	}
	return nil
}

// mustLog reports whether some process that would log a label records
// its kind: a fact that happens without its line cannot explain a log
// that records it.
func (j *judge) mustLog(a *attempt, l *obslog.Label) bool {
	pr := j.h.Processes
	switch l.By {
	case obslog.ByRouter:
		for _, p := range j.routers {
			if pr[p].Records.Has(l.Kind) {
				return true
			}
		}
		return false
	case obslog.BySource:
		if a.p >= 0 {
			return pr[a.p].Records.Has(l.Kind)
		}
		return j.allOfRole(obslog.RolePrefill, l.Kind)
	default:
		if a.d >= 0 {
			return pr[a.d].Records.Has(l.Kind)
		}
		return j.allOfRole(obslog.RoleDecode, l.Kind)
	}
}

func (j *judge) allOfRole(r obslog.Role, k obslog.Kind) bool {
	for _, p := range j.h.Processes {
		if p.Role == r && !p.Records.Has(k) {
			return false
		}
	}
	return true
}

// logger is the process that logs a side's label, or -1 while unknown.
func (j *judge) logger(a *attempt, l *obslog.Label) int {
	if l.By == obslog.BySource {
		return a.p
	}
	return a.d
}

// consume tries to explain the head facts of the slots by label l. It
// returns the children and whether some process that would log l has no
// fact to match yet (the node then waits for one).
func (j *judge) consume(a *attempt, n *node, l *obslog.Label, make func(s int, f *obslog.Fact)) (waits bool) {
	try := func(p int) {
		s := -1
		for i := range a.slots {
			if a.slots[i].proc == p {
				s = i
			}
		}
		if s < 0 || int(n.pos[s]) >= len(a.slots[s].facts) {
			waits = true
			return
		}
		if f := a.slots[s].facts[n.pos[s]]; matches(f, l) && j.inClockOrder(a, n, s, f) {
			make(s, f)
		}
	}
	if l.By == obslog.ByRouter {
		for _, p := range j.routers {
			if j.h.Processes[p].Records.Has(l.Kind) {
				try(p)
			}
		}
		return waits
	}
	p := j.logger(a, l)
	if p < 0 {
		return true
	}
	try(p)
	return waits
}

// payOwed is the node that explains fact f, of slot s, by the label n
// owes at i.
func (j *judge) payOwed(n *node, i, s int, f *obslog.Fact) *node {
	c := j.child(n)
	c.clear = n.clear // n's state, shared
	c.pos[s]++
	c.consumed++
	c.fact = f
	copy(c.owed[i:], c.owed[i+1:c.owedN])
	c.owed[c.owedN-1] = obslog.Label{}
	c.owedN--
	c.owedSame = dropOwedBit(c.owedSame, i)
	c.silent = 0
	return c
}

// carry is what a node owes after a step that makes must observable and
// whose fact i it explains: what it owed before, then the step's other
// facts. A process's facts come in that order, so the fact explained
// must be its process's first: ok is false when the process still owes
// earlier ones (or when too many are owed).
func carry(n *node, must []obslog.Label, i int) (owed [maxOwed]obslog.Label, on uint8, ok bool) {
	for _, l := range n.owed[:n.owedN] {
		if l.By == must[i].By {
			return owed, 0, false
		}
	}
	if int(n.owedN)+len(must)-1 > maxOwed {
		return owed, 0, false
	}
	copy(owed[:], n.owed[:n.owedN])
	k := int(n.owedN)
	for x := range must {
		if x != i {
			owed[k] = must[x]
			k++
		}
	}
	return owed, uint8(k), true
}

// forgive drops the facts a node owes process p, which restarted: a
// process may die after a step and before it logs what the step did (a
// route that reached it as it died, a line it had not written), and the
// new process logs nothing of the old one's attempts.
func (j *judge) forgive(a *attempt, n *node, p int) {
	k := 0
	for _, l := range n.owed[:n.owedN] {
		if l.By == obslog.ByRouter || j.logger(a, &l) != p {
			n.owed[k] = l
			k++
		} else {
			n.owedSame = dropOwedBit(n.owedSame, k)
		}
	}
	for i := k; i < int(n.owedN); i++ {
		n.owed[i] = obslog.Label{}
	}
	n.owedN = uint8(k)
}

// owes reports whether a node owes process p a fact.
func (j *judge) owes(a *attempt, n *node, p int) bool {
	for _, l := range n.owed[:n.owedN] {
		if l.By != obslog.ByRouter && j.logger(a, &l) == p {
			return true
		}
	}
	return false
}

// firstOfItsProcess reports whether label i is the first of ls that its
// process logs: the facts one step makes observable to one process come
// in the vocabulary's order (a receipt before what it causes, a release
// before the outcome reported on it).
func firstOfItsProcess(ls []obslog.Label, i int) bool {
	for k := 0; k < i; k++ {
		if ls[k].By == ls[i].By {
			return false
		}
	}
	return true
}

func matches(f *obslog.Fact, l *obslog.Label) bool {
	if f.Kind != l.Kind {
		return false
	}
	if f.Kind == obslog.Routed && f.Stage != l.Stage {
		return false
	}
	for _, g := range obslog.Kinds[f.Kind].Figures {
		if !f.HasFigure(g) {
			continue
		}
		switch g {
		case obslog.FigStage:
		case obslog.FigOutcome:
			if f.Outcome != l.Outcome {
				return false
			}
		case obslog.FigTimer:
			if f.Timer != l.Timer {
				return false
			}
		default:
			if figure(f, g) != labelFigure(l, g) {
				return false
			}
		}
	}
	return true
}

// expand takes every way a node can go on: explain an owed fact, or take
// a step (a restart a log names, or an enabled move), logged or not. A
// node that may explain a fact not read yet waits for it; so does one
// that explained every fact read, for the end of the logs.

// mayConsume reports whether a head fact of the process that logs l is
// of l's kind.
func (j *judge) mayConsume(a *attempt, n *node, l *obslog.Label) bool {
	for s := range a.slots {
		p := int(n.pos[s])
		if p >= len(a.slots[s].facts) {
			continue
		}
		f := a.slots[s].facts[p]
		if f.Kind != l.Kind {
			continue
		}
		if l.By == obslog.ByRouter && j.h.Processes[f.Proc].Role == obslog.RoleRouter || l.By != obslog.ByRouter && f.Proc == j.logger(a, l) {
			return true
		}
	}
	return false
}

// awaits reports whether a process that would log l has no fact left to
// match yet: one may still come.
func (j *judge) awaits(a *attempt, n *node, l *obslog.Label) bool {
	return j.consume(a, n, l, func(int, *obslog.Fact) {})
}
