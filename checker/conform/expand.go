package conform

import (
	"math/bits"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Expanding: a node's enabled moves, the unlogged ones taken at once (up
// to the bound and the fault level), the logged ones kept for the facts
// that explain them.

func (j *judge) replay(a *attempt, prev []*node) bool {
	a.seen = map[uint64][]*node{}
	a.waiting = nil
	a.cut, a.fcut = false, false
	st := j.stepper.Initial(a.wcfg)
	root := &node{st: &st, stKey: j.stateKey(&st)}
	a.seen[root.key()] = []*node{root}
	j.drain(a, []*node{root})
	return j.settle(a, prev)
}

// drain expands nodes until none is left to expand.
func (j *judge) drain(a *attempt, work []*node) {
	for len(work) > 0 {
		n := work[len(work)-1]
		work = work[:len(work)-1]
		work = j.expand(a, n, work)
	}
}

// settle looks at an attempt after its search advanced: retired when it
// finished, searched again with more unlogged faults, or rejected.
func (j *judge) settle(a *attempt, prev []*node) bool {
	if len(a.waiting) == 0 {
		if !a.full {
			a.full = true
			return j.replay(a, prev)
		}
		if a.fcut && a.level < j.maxF {
			a.level++
			return j.replay(a, prev)
		}
		if j.attachSilent(a) {
			return j.replay(a, nil)
		}
		j.dead(a, prev)
		return false
	}
	// An attempt is over when some explanation finished it and none
	// could explain a fact still to come: its memory goes.
	var fin *node
	for _, n := range a.waiting {
		if !j.caughtUp(a, n) {
			continue
		}
		// A finished explanation waits only for the Removed of what its
		// sides keep cached, which the record of the finished attempt
		// judges (retire): it does not keep the attempt open.
		over := n.owedN == 0 && j.done(n)
		if n.hungry && !(over && j.onlyRemovals(n)) {
			return true
		}
		if fin == nil && over {
			fin = n
		}
	}
	if fin != nil {
		j.retire(a, fin)
	}
	return true
}

// onlyRemovals reports whether every logged step a node has is a cache's
// eviction publishing Removed.
func (j *judge) onlyRemovals(n *node) bool {
	for _, sc := range n.succ {
		if !sc.lazy && sc.mn == 0 {
			continue // a step that explains nothing
		}
		if sc.lazy || sc.m.Kind != system.Evict.Move() {
			return false
		}
	}
	return true
}

// done reports whether a node's attempt finished and returned everything.
// While the logs go on, a transfer still running keeps the attempt open:
// its end may yet be logged.
func (j *judge) done(n *node) bool {
	return j.chk.Finished(n.st, 0) && n.st.W.HandoffDrained(0)
}

// doneAtEnd reports whether a node's attempt is finished when the logs
// end, as docs/conform.md defines it: both sides terminal, and no block,
// page, slot, booking, timer or in-flight count held. A transfer that
// never ended (hung) holds none of them once both sides released what it
// read and wrote, so it does not keep the attempt unfinished.
func (j *judge) doneAtEnd(n *node) bool {
	if !j.chk.Finished(n.st, 0) {
		return false
	}
	w := &n.st.W
	if w.H[0].Xfer != model.XferRunning {
		return w.HandoffDrained(0)
	}
	cp := *w
	cp.H[0].Xfer = model.XferFailed
	return cp.HandoffDrained(0)
}

func (j *judge) caughtUp(a *attempt, n *node) bool {
	for s := range a.slots {
		if int(n.pos[s]) < len(a.slots[s].facts) {
			return false
		}
	}
	return true
}

func (j *judge) retire(a *attempt, n *node) {
	j.account(a, n)
	j.exercise(a, n, true)
	j.observeTimed(a, n, true)
	j.recount(a, nil)
	delete(j.att, a.id)
	if r := &j.recent[recentSlot(a.id)]; r.a == a {
		*r = recentAttempt{}
	}
	e := finished{p: int16(a.p), d: int16(a.d), removed: j.stillRemoved(a, n), line: int32(a.last.Line)}
	e.file = uint16(max(0, slices.Index(j.rep.Files, a.last.File)))
	for k, p := range []int{a.p, a.d} {
		if p >= 0 {
			e.gen[k] = int32(j.procs[p].gen)
		}
	}
	// A copy of the id: the record must not keep what it was cut from.
	j.retireDecoder(a.id, &e)
	j.gone.add(strings.Clone(a.id), e)
	j.leave(a)
	j.freeFactsOf(a)
}

// stillRemoved is, for each side of a finished explanation, the blocks of
// the Removed its process may still log (a cache evicting what the index
// advertises), or -1.
func (j *judge) stillRemoved(a *attempt, n *node) [2]int32 {
	out := [2]int32{-1, -1}
	// Where no process that would log a Removed records it (a
	// milestones log), none is counted whatever an eviction makes
	// observable (mustLog reads only the label's kind and who logs it):
	// the evictions are not taken.
	logged := false
	for _, by := range [...]obslog.Who{obslog.ByRouter, obslog.BySource, obslog.ByDestination} {
		logged = logged || j.mustLog(a, &obslog.Label{Kind: obslog.Removed, By: by})
	}
	if !logged {
		return out
	}
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		x := &n.st.W.H[0]
		if x.Worker(sd) < 0 || !(sd == model.SourceSide && x.SrcIndexed || sd == model.DestinationSide && x.Published) {
			continue
		}
		next := *n.st
		m := cluster.Evict(sd)
		if v := j.stepper.Force(&next, m); v != nil {
			continue
		}
		for _, l := range obslog.Observe(j.labels[:0], 0, n.st, &next, m, j.stepper.Firings()) {
			if l.Kind == obslog.Removed && j.mustLog(a, &l) {
				out[sd] = l.Blocks
			}
		}
	}
	return out
}

// account adds an explanation's figures to the report.
func (j *judge) account(a *attempt, n *node) {
	if a.everCut || a.cut {
		j.rep.BoundReached++
	}
	if a.level > 0 {
		j.rep.Escalated++
	}
	// An explanation followed greedily was tallied up to a.cur as it
	// went (advance): only what lies beyond it is walked.
	var t tally
	var from *node
	if !a.full && a.cur != nil {
		t, from = a.tally, a.cur
	}
	t = j.tallyTo(t, from, n)
	j.rep.Unlogged += t.unlogged
	j.rep.FaultsUsed += t.faults
	j.rep.LongestGap = max(j.rep.LongestGap, t.longest)
}

// tally counts the unlogged steps of an explanation, oldest first.
type tally struct {
	unlogged, faults int
	// longest is the most unlogged steps between two facts, run the
	// unlogged steps since the last fact.
	longest, run int
}

func (t *tally) add(x *node) {
	if x.fact != nil {
		t.run = 0
		return
	}
	t.unlogged++
	if _, fault := x.move.Kind.Spends(); fault {
		t.faults++
	}
	t.run++
	t.longest = max(t.longest, t.run)
}

// tallyTo is t, the tally of an explanation up to node from, with the
// steps from there to n; from nil (or not an ancestor of n): n's whole
// explanation, from its root.
func (j *judge) tallyTo(t tally, from, n *node) tally {
	if from != nil && n != nil && n.parent == from {
		// One step, as most facts are: no path to walk.
		t.add(n)
		return t
	}
	path := j.path[:0]
	x := n
	for ; x != nil && x != from && x.parent != nil; x = x.parent {
		path = append(path, x)
	}
	if x != from {
		t = tally{}
	}
	for i := len(path) - 1; i >= 0; i-- {
		t.add(path[i])
	}
	clear(path)
	j.path = path[:0]
	return t
}

// advance makes c, which the greedy explanation reached from a.cur, its
// current node, tallying the steps between. The chain lists them in
// their order, root first.
func (j *judge) advance(a *attempt, c *node) {
	a.tally = j.tallyTo(a.tally, a.cur, c)
	at := int64(-1)
	mark := len(a.chain)
	for x := c; x != a.cur; x = x.parent {
		// Noted while the nodes are fresh in the cache: at the attempt's
		// end they have long left it.
		at = j.stepAt(x, at)
		a.ex.Note(x.fired, at, a.seq)
		cn := chainNode{n: x, fact: x.fact, move: x.move}
		if x.owns {
			cn.st = x.st
		}
		a.chain = append(a.chain, cn)
	}
	slices.Reverse(a.chain[mark:])
	a.cur = c
	if j.clock == nil {
		j.dropPast(a)
	}
}

// dropPast gives the nodes of the greedy explanation before its current
// one, and their states, back to the pool, where the next steps take
// them while they are still in the cache: only the current node and its
// state are read again (the next step, the ledgers, the end; the chain
// keeps each step's fact and move for a report), and an explanation that
// goes wrong is searched again in full from the start. The clock
// (timed.go) walks the whole explanation, so with properties to judge on
// it they stay.
func (j *judge) dropPast(a *attempt) {
	last := len(a.chain) - 1
	keep := last
	for i := a.live; i < last; i++ {
		cn := &a.chain[i]
		if cn.st != nil {
			if cn.st == a.cur.st {
				// The current node shares it (a fact owed): it stays
				// the chain's until the explanation moves on.
				keep = min(keep, i)
			} else {
				if cn.st == a.countedSt {
					// Compared by pointer (counted): a state of the
					// pool may come back as another.
					a.countedSt = nil
				}
				j.freeStates = append(j.freeStates, cn.st)
				cn.st = nil
			}
		}
		if cn.n != nil {
			j.freeNodes = append(j.freeNodes, cn.n)
			cn.n = nil
		}
	}
	a.cur.parent = nil
	a.live = keep
}

// freeGreedy gives the explanation followed greedily back to the pools,
// from its list (chain): what the nodes hold is set again by whoever
// takes them (child, root).
func (j *judge) freeGreedy(a *attempt) {
	a.live = 0
	for i, cn := range a.chain {
		if cn.st != nil {
			j.freeStates = append(j.freeStates, cn.st)
		}
		if cn.n != nil {
			j.freeNodes = append(j.freeNodes, cn.n)
		}
		a.chain[i] = chainNode{}
	}
	a.chain = a.chain[:0]
}

// dropGreedy forgets the explanation followed greedily when the attempt
// is searched in full instead: its nodes go to the collector, not back
// to the pools.
func (j *judge) dropGreedy(a *attempt) {
	a.ex.Reset()
	clear(a.chain)
	a.chain = a.chain[:0]
	a.live = 0
}

func (j *judge) expand(a *attempt, n *node, work []*node) []*node {
	if len(a.furthest) == 0 || n.consumed > a.furthest[0].consumed {
		a.furthest = append(a.furthest[:0], n)
	} else if n.consumed == a.furthest[0].consumed && len(a.furthest) < maxFurthest {
		a.furthest = append(a.furthest, n)
	}
	caught := j.caughtUp(a, n)
	waits := false
	for i := 0; i < int(n.owedN); i++ {
		l := n.owed[i]
		if !firstOfItsProcess(n.owed[:n.owedN], i) {
			continue
		}
		if j.consume(a, n, &l, func(s int, f *obslog.Fact) {
			if j.paysInTime(a, n, i, s, f) {
				work = j.push(a, j.payOwed(n, i, s, f), work)
			}
		}) {
			waits = true
		}
	}
	for s := range a.slots {
		if int(n.pos[s]) < len(a.slots[s].facts) {
			if f := a.slots[s].facts[n.pos[s]]; f.Kind == obslog.WorkerRestarted && j.inClockOrder(a, n, s, f) {
				k := int8(0)
				if a.slots[s].proc == a.d {
					k = 1
				}
				c := j.child(n)
				ns := *n.st
				if v := j.stepper.Force(&ns, system.Move{Kind: system.Restart.Move(), H: -1, Arg: k}); v != nil {
					a.broken = v
					continue
				}
				fired := j.stepper.Fired()
				if !j.setState(a, c, &ns) {
					continue
				}
				c.fired = fired
				j.forgive(a, c, f.Proc)
				c.pos[s]++
				c.consumed++
				c.fact = f
				c.silent = 0
				work = j.push(a, c, work)
			}
		}
	}
	if !n.expanded {
		n.expanded = true
		work = j.steps(a, n, work)
	}
	for k := range n.succ {
		sc := &n.succ[k]
		if sc.lazy {
			if !j.mayConsume(a, n, &n.labels[sc.off]) {
				if j.awaits(a, n, &n.labels[sc.off]) {
					waits = true
				}
				continue
			}
			j.resolve(a, n, sc)
		}
		var next *system.State
		var nextKey uint64
		var fired model.Triggers
		must := n.labels[sc.off : int(sc.off)+int(sc.mn)]
		for i := 0; i < int(sc.mn); i++ {
			l := must[i]
			if !firstOfItsProcess(must, i) {
				continue
			}
			owed, on, ok := carry(n, must, i)
			if !ok {
				continue
			}
			if j.consume(a, n, &l, func(s int, f *obslog.Fact) {
				if next == nil {
					next, fired = j.step(n, sc.m)
					if v := j.chk.CheckState(next); v != nil {
						a.broken = v
						j.refused(a, n, n.st, next, sc.m, v)
						sc.mn = 0 // explains nothing
						return
					}
					nextKey = j.stateKey(next)
				}
				if sc.mn == 0 {
					return
				}
				c := j.child(n)
				c.st, c.stKey = next, nextKey
				c.move, c.fired = sc.m, fired
				c.pos[s]++
				c.consumed++
				c.fact = f
				c.silent = 0
				c.owed, c.owedN, c.owedSame = owed, on, j.sameStep(n, must, i)
				work = j.push(a, c, work)
			}) {
				waits = true
			}
		}
	}
	if caught || (waits && a.full) {
		n.hungry = waits
		a.waiting = append(a.waiting, n)
	}
	return work
}

// movesOf is a node's state, its budget full, and the moves of the
// attempt it enables. A worker's restart is left out (the logs say when
// one happens) and so is other requests' load (outside the attempt); a
// cache evicting what a finished side keeps is added: the explorer leaves
// it out, since nothing of the protocol follows, but a log may say it
// happened.
func (j *judge) movesOf(n *node) (system.State, []system.Move) {
	st := *n.st
	j.moves = j.stepper.Moves(&st, j.moves[:0])
	j.addEvictions(&st)
	// Filtered in place: a caller is done with the moves before it asks
	// for another node's.
	moves := j.moves[:0]
	for _, m := range j.moves {
		// A move on a worker (a restart, background load taken or
		// freed) names no handoff: not the request's.
		if m.H >= 0 {
			moves = append(moves, m)
		}
	}
	return st, moves
}

// addEvictions adds to j.moves the evictions of what a finished side of
// st keeps in its worker's cache.
func (j *judge) addEvictions(st *system.State) {
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		if cluster.Evicts(j.chk, st, sd) {
			j.moves = append(j.moves, cluster.Evict(sd))
		}
	}
}

// greedyMovesOf is movesOf without the moves explainStep never takes for
// fact f: the faults that are never logged (loss, delay, hang, no-show,
// duplicate), and a cancel or an abort unless f is its fact. They are
// switched off in the budget the moves are listed with, so they cost
// nothing to list; the state returned, which the moves are taken from,
// keeps the full budget, as movesOf's does. The moves left are in
// movesOf's order.
//
// The state is n's own (when its budget is full) or the judge's
// (greedySt), to be read only, and the moves are listed in its set
// (greedyMs), neither of them copied nor cleared: explainStep, the one
// caller, is done with both before it asks again.
func (j *judge) greedyMovesOf(n *node, f *obslog.Fact) (*system.State, []system.Move) {
	full := j.chk.Budget()
	// A state whose budget is full is listed in place, its budget put
	// back before the moves are taken: a copy of 592 bytes for every
	// node a search expands, saved. Another is copied.
	st := n.st
	if st.B != full {
		st = &j.greedySt
		*st = *n.st
	}
	st.B = full &^ j.greedyOff(f.Kind)
	ms := &j.greedyMs
	j.chk.Enabled(st, ms)
	st.B = full
	j.moves = j.moves[:0]
	for _, m := range ms.M[:ms.N] {
		// A move on a worker (background load freed; a restart and
		// background load taken are switched off above) names no
		// handoff: not the request's.
		if m.H >= 0 {
			j.moves = append(j.moves, m)
		}
	}
	j.addEvictions(st)
	return st, j.moves
}

// greedyOff is the budget's bits of the fault kinds greedyMovesOf leaves
// out for a fact of kind k, once computed per kind.
func (j *judge) greedyOff(k obslog.Kind) system.Remaining {
	if !j.offDone {
		for l := range obslog.NumKinds {
			j.off[l] = greedyOff(l)
		}
		j.offDone = true
	}
	return j.off[k]
}

// greedyOff is what the fault table says greedy's search leaves out for a
// fact of kind k: every kind with a move of its own (reorder and
// early_timer are protocol moves taken out of order) but one whose facts
// show it (FaultKinds' Shown: a transfer failure, an eviction) and one
// whose first fact is k (Logs: a cancel for client_cancelled, an abort
// for aborted). A move on a worker (a restart, background load) names no
// handoff, so none is the request's.
func greedyOff(k obslog.Kind) system.Remaining {
	width := bits.Len(uint(system.MaxBudget))
	var off system.Remaining
	for f := range system.NumFaults {
		if f.Move() == 0 {
			continue
		}
		kind := &system.FaultKinds[f]
		h, _, _, _ := f.Move().Names()
		if h && (kind.Shown || (kind.Logs != "" && kind.Logs == obslog.Kinds[k].Name)) {
			continue
		}
		off |= system.MaxBudget << (width * int(f))
	}
	return off
}

// logsKind is, per fault kind, the log kind the fault table names its
// first fact by (Logs), read once: firstFact is asked on every step.
var logsKind = func() (lk [system.NumFaults]obslog.Kind) {
	for k := range system.NumFaults {
		lk[k], _ = obslog.KindNamed(system.FaultKinds[k].Logs)
	}
	return lk
}()

// firstFact is the fact a move of fault kind k makes first, which the
// fault table names (Logs): logged by the process its log kind says, the
// move's side for a kind a side logs.
func firstFact(k system.Fault, m system.Move) obslog.Label {
	lk := logsKind[k]
	l := obslog.Label{Kind: lk, By: obslog.Kinds[lk].Who}
	if l.By == obslog.BySide {
		l.By = obslog.BySource
		if model.Side(m.Arg) == model.DestinationSide {
			l.By = obslog.ByDestination
		}
	}
	return l
}

// steps takes a node's enabled moves once: the unlogged ones make
// children now, the logged ones are kept for the facts that explain them.
func (j *judge) steps(a *attempt, n *node, work []*node) []*node {
	st, moves := j.movesOf(n)
	for _, m := range moves {
		fk, isFault := m.Kind.Spends()
		switch {
		case isFault && system.FaultKinds[fk].Silent:
			// Never logged: a fault the level may not allow yet.
			if int(n.faults) >= a.level {
				a.fcut = true
				continue
			}
		case isFault && system.FaultKinds[fk].Logs != "":
			// Their first fact is known without taking them (a cancel's
			// client_cancelled, an abort's aborted); most nodes never see
			// it, so the step waits for it.
			if l := firstFact(fk, m); j.mustLog(a, &l) {
				n.succ = append(n.succ, succ{m: m, off: uint16(len(n.labels)), mn: 1, lazy: true})
				n.labels = append(n.labels, l)
				continue
			}
		}
		// A cache evicting is no fault: caches do it all the time.
		_, fault := m.Kind.Spends()
		fault = fault && m.Kind != system.Evict.Move()
		next := st
		v := j.stepper.Force(&next, m)
		if v != nil {
			a.broken = v
			j.refused(a, n, &st, &next, m, v)
			continue
		}
		fired := j.stepper.Fired()
		if delivers(m.Kind) && ignored(j.stepper.Firings()) {
			// A fact no row acts on (a late one, a duplicate, one at a
			// side that finished) only leaves the channel. Leaving it
			// there instead explains every log the delivery would (a fact
			// in flight need never arrive), so the search skips it.
			continue
		}
		j.labels = obslog.Observe(j.labels[:0], 0, &st, &next, m, j.stepper.Firings())
		sc := succ{m: m, off: uint16(len(n.labels))}
		for i := range j.labels {
			if j.mustLog(a, &j.labels[i]) && sc.mn < maxOwed {
				n.labels = append(n.labels, j.labels[i])
				sc.mn++
			}
		}
		if sc.mn > 0 {
			n.succ = append(n.succ, sc)
			continue
		}
		if fault && int(n.faults) >= a.level {
			a.fcut = true
			continue
		}
		if int(n.silent) >= j.bound {
			a.cut, a.everCut = true, true
			continue
		}
		c := j.child(n)
		ns := next
		if !j.setState(a, c, &ns) {
			continue
		}
		c.move, c.fired = m, fired
		c.silent++
		if fault {
			c.faults++
		}
		work = j.push(a, c, work)
	}
	return work
}

// resolve takes a lazy step: what it makes observable replaces its first
// fact. A step that breaks an invariant or turns out to make nothing
// observable explains no fact.
func (j *judge) resolve(a *attempt, n *node, sc *succ) {
	sc.lazy = false
	next := *n.st
	v := j.stepper.Force(&next, sc.m)
	sc.mn = 0
	if v != nil {
		a.broken = v
		j.refused(a, n, n.st, &next, sc.m, v)
		return
	}
	j.labels = obslog.Observe(j.labels[:0], 0, n.st, &next, sc.m, j.stepper.Firings())
	sc.off = uint16(len(n.labels))
	for i := range j.labels {
		if j.mustLog(a, &j.labels[i]) && sc.mn < maxOwed {
			n.labels = append(n.labels, j.labels[i])
			sc.mn++
		}
	}
}

// ignored reports whether the rows that fired (if any) did nothing.
func ignored(fs []system.Firing) bool {
	for _, f := range fs {
		if f.From != f.To || len(f.Actions) > 0 {
			return false
		}
	}
	return true
}
