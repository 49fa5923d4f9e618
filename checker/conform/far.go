package conform

import (
	"math/bits"
	"slices"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// The far memo: greedy's breadth-first searches, remembered across
// attempts. A search that finds no move of the node it starts from that
// explains the fact goes on breadth first through unlogged steps
// (greedySearch); on a milestones log that is most of a fact's cost (a
// pinned three unlogged steps on, nine nodes expanded), and attempts of
// one size go through the same situations again and again (on the
// simulator's milestones log of 100,000 handoffs, 200,000 such searches
// from 12,000 to 16,000 situations). The memo remembers each such search,
// keyed by all it reads (farKey), as the path to the node it found (or
// none) and what it did besides (the violations it noted), and a search
// with the same key is replayed: the path's moves applied again, without
// the moves tried around it. Only long searches are worth it (farWorth).
//
// It is bounded: farCap searches (about 550 bytes each: the key, with the
// state packed in 112 bytes, the path's moves and what the node found
// owes), one not used lately forgotten first (a clock: put); it holds no
// pointers but to the few violations noted (farMemo.viols), so the
// collector never scans the entries, as it would on every cycle. A path
// of more than farSteps moves is not remembered (greedy's paths are one
// to three moves).

// farCap bounds the searches the far memo keeps. A variable for the
// tests.
var farCap = 1 << 14

// farVerify makes every search the memo has also searched, and the two
// compared (farVerified counts them, and the differences): for the
// tests.
var farVerify = false

var farVerified struct{ hits, bad, leads int }

// farOmit leaves a part of the key out (omitState and the others below),
// for the test that shows the parts are needed: omitNone leaves nothing
// out.
var farOmit = 0

// farKey is everything greedy's breadth-first search from node n for
// fact f reads, so that its course, its answer and what it notes are the
// same function of the key:
//
//   - the attempt's world: its configuration, which is the cluster's
//     AttemptWorld with the attempt's size set (fillWorld: the same
//     configuration for the same size), so the size stands for it;
//   - n's state, whole (the role machines, the world's handoff and
//     workers with their counters, timers and caches, the fault budget
//     left), in canonical form: its packing (system.Key), which the
//     explorer stores its states as and rebuilds them from (UnpackTo,
//     with the configuration; TestPack_RoundTripsEveryReachedState);
//     conform's system has no symmetry, so it is the plain packing, one
//     key for one state;
//   - what n owes (the owed facts, with their figures), and whether its
//     state is known to pass the state invariants (clear: checkStep
//     judges a step from it by what the step changed);
//   - the fact, every field a move is matched against (matches: kind,
//     stage, the figures it gives, outcome, timer) and the other figures
//     it gives (the prompt and prefix hit, the blocks it adopted); which
//     process logs it, as the search asks (logsIt, refused): whether it
//     is the attempt's prefill process, its decode process, a router,
//     and what it records;
//   - what the attempt's processes record (mustLog: a label is owed only
//     if its process records its kind), and whether each is known yet;
//   - whether the fact already has a step noted that would log it but
//     breaks an invariant (stepBroke: the first noted is kept).
//
// The rest is the judge's and the same for every search: the bound on
// unlogged steps, the routers' records, the properties judged, the
// budget a move is listed with. A search takes no fault, so the faults
// n used do not count. The fact's attempt name, file, line, order, time
// stamp, generation and the worker a route names are not read by the
// search (bind judged the generation and the worker before). The facts
// of the attempt other than f are read by refused only at positions past
// n's; the memo is used only where f is the one such fact (farApplies),
// so they are not read at all.
type farKey struct {
	size [2]int64
	st   system.Key
	owed [farOwed]obslog.Label
	// the fact's figures, as matches and Figure read them
	blocks, pages, slot, headroom, tokens int64
	prompt, hitTokens, adopted            int64
	recF, recP, recD                      obslog.KindSet
	has                                   uint16
	owedN                                 uint8
	kind                                  obslog.Kind
	stage                                 model.Side
	outcome                               model.Outcome
	timer                                 model.Timer
	clear                                 bool
	isP, isD, router                      bool
	pKnown, dKnown                        bool
	broke                                 bool
	// lead: the search is remembered with the step from n that no move
	// of n explains f, taken before it (farFirst): asked before that
	// step, with broke as it was before it.
	lead bool
}

// The parts of farKey a test leaves out, one at a time (farOmit).
const (
	omitNone = iota
	omitState
	omitOwed
	omitFigures
	omitKind
)

// farEntry is a remembered search: its key, and its answer.
type farEntry struct {
	// hash is the key's hash; hnext chains the entries of one head
	// (farMemo.heads), one more than an index in farMemo.tab, 0 for
	// none; used says the memo answered a search with it since the
	// clock's hand last passed it (put). First, beside the key's start:
	// a look-up walking a chain reads one cache line of each entry it
	// passes.
	hash  uint64
	hnext int32
	used  bool
	key   farKey
	found bool
	// first is the index, among the unlogged children of the node the
	// search started from (made before it: greedySearch), of the first
	// node of the path found, and firstKey that node's state's hash
	// (computed when the search came to it); steps are the path's moves
	// after it, the last the one that explains the fact.
	first    int16
	firstKey uint64
	// lead is the first node's move and its triggers, for an entry of a
	// key with lead (farFirst), whose search made n's unlogged children
	// itself.
	lead   farStep
	steps  [farSteps]farStep
	nsteps uint8
	owed   [farOwed]obslog.Label
	owedN  uint8
	// broken is the last violation the search noted (a.broken), and
	// stepBroke the one it noted for the fact (refused): one more than
	// their index in farMemo.viols, 0 for none.
	broken, stepBroke int32
}

// farSteps bounds the moves of a path the memo remembers, and farOwed
// the facts owed before and after it: a search outside them is searched.
const (
	farSteps = 4
	farOwed  = 3
)

type farStep struct {
	m     system.Move
	stKey uint64
	fired model.Triggers
}

// farMemo is the far memo: tab holds the entries, and heads, by the low
// bits of their hashes, the latest of each chain of them; hand is the
// clock's (put).
type farMemo struct {
	tab   []farEntry
	heads []int32
	hand  int
	// key is the key being looked up, entry the answer of the search
	// made for it; first the unlogged children of the search's start.
	key   farKey
	entry farEntry
	first []*node
	// viols holds the violations entries noted, freeViols the places
	// of those forgotten.
	viols     []*model.Violation
	freeViols []int32
	// expanded counts the nodes breadth-first searches expanded, and
	// worth, per kind of fact, those of its latest searches (farWorth).
	expanded int
	worth    [obslog.NumKinds]struct{ searches, expanded int32 }
	// nears counts, per kind of fact, greedy's searches and those of
	// them that no move of the node they start from explained (near,
	// leads).
	nears [obslog.NumKinds]struct{ searches, far int32 }
	// hits and bad count the searches replayed and, with farVerify, the
	// replays that differed from the search.
	hits, bad int
}

// farApplies reports whether the memo may answer greedy's search from n
// for fact f of slot s: f is the one fact of the attempt past n's
// position (the others explained), so that the search reads no other,
// and n owes at most farOwed facts. Not with a clock error: the search
// then reads the facts' stamps and what a step left owed to its own
// process (clock.go), which the key leaves out.
func (j *judge) farApplies(a *attempt, n *node, f *obslog.Fact, s int) bool {
	if a.world == nil || farCap <= 0 || n.owedN > farOwed || j.clockOn() {
		return false
	}
	for i := range a.slots {
		want := len(a.slots[i].facts)
		if i == s {
			want--
		}
		if int(n.pos[i]) != want {
			return false
		}
	}
	return a.slots[s].facts[n.pos[s]] == f
}

// farKeyOf sets j.far.key to the key of the search from n for f, and
// returns its hash.
func (j *judge) farKeyOf(a *attempt, n *node, f *obslog.Fact, lead bool) uint64 {
	m := &j.far
	k := &m.key
	k.size = a.world.size
	k.st = j.chk.Key(n.st)
	// The hash of the state is stateKey's, from the packing made here.
	sh := uint64(0x68616e646f666663)
	for _, w := range k.st {
		sh = mix(sh, w)
	}
	if n.stKey == 0 {
		n.stKey = sh
	}
	k.owed, k.owedN, k.clear = [farOwed]obslog.Label{}, n.owedN, n.clear
	copy(k.owed[:], n.owed[:n.owedN])
	k.kind, k.stage, k.has, k.outcome, k.timer = f.Kind, f.Stage, f.Has, f.Outcome, f.Timer
	k.blocks, k.pages, k.slot, k.headroom, k.tokens = f.Blocks, f.Pages, f.Slot, f.Headroom, f.Tokens
	k.prompt, k.hitTokens, k.adopted = f.PromptTokens, f.PrefixHitTokens, f.AdoptedBlocks
	pr := j.h.Processes
	k.isP, k.isD, k.router = f.Proc == a.p, f.Proc == a.d, pr[f.Proc].Role == obslog.RoleRouter
	k.recF, k.recP, k.recD = pr[f.Proc].Records, 0, 0
	k.pKnown, k.dKnown = a.p >= 0, a.d >= 0
	if k.pKnown {
		k.recP = pr[a.p].Records
	}
	if k.dKnown {
		k.recD = pr[a.d].Records
	}
	k.broke = a.stepBroke[f] != nil
	k.lead = lead
	if farOmit != omitNone {
		farLeaveOut(k)
	}
	h := mix(mix(sh, uint64(k.size[0])), uint64(k.size[1]))
	h = mix(h, uint64(k.kind)|uint64(k.stage)<<8|uint64(k.has)<<16|uint64(k.owedN)<<32|uint64(k.outcome)<<40|uint64(k.timer)<<48)
	h = mix(mix(mix(h, uint64(k.blocks)), uint64(k.pages)), uint64(k.tokens))
	if lead {
		h = mix(h, 1)
	}
	for _, l := range k.owed[:k.owedN] {
		h = mix(h, uint64(l.Kind)|uint64(l.By)<<8|uint64(l.Blocks)<<16)
	}
	if farOmit == omitState {
		h = 0
	}
	return h
}

// farLeaveOut clears the part of the key farOmit names.
func farLeaveOut(k *farKey) {
	switch farOmit {
	case omitState:
		k.st = system.Key{}
	case omitOwed:
		k.owed, k.owedN = [farOwed]obslog.Label{}, 0
	case omitFigures:
		k.blocks, k.pages, k.slot, k.headroom, k.tokens, k.has = 0, 0, 0, 0, 0, 0
		k.prompt, k.hitTokens, k.adopted = 0, 0, 0
		k.outcome, k.timer, k.stage = 0, 0, 0
	case omitKind:
		k.kind = 0
	}
}

// farSearch is greedySearch's breadth-first search from n for f, which
// found no move of n itself that explains f and made n's unlogged
// children next: answered by the memo where it has the search, else
// searched and remembered.
func (j *judge) farSearch(a *attempt, n *node, f *obslog.Fact, s int, next []*node) *node {
	m := &j.far
	if !j.farApplies(a, n, f, s) {
		return j.bfs(a, n, f, s, next)
	}
	if !m.answers(f.Kind) {
		before := m.expanded
		found := j.bfs(a, n, f, s, next)
		m.weigh(f.Kind, m.expanded-before)
		return found
	}
	h := j.farKeyOf(a, n, f, false)
	hit := m.lookUp(h)
	if hit != nil && !farVerify {
		m.hits++
		return j.farReplay(a, n, f, s, next, hit)
	}
	// Searched, with what it notes caught: the last violation it notes
	// (a.broken, put back if it notes none) and the one it notes first
	// for f.
	m.first = append(m.first[:0], next...)
	broken := a.broken
	a.broken = nil
	before := m.expanded
	found := j.bfs(a, n, f, s, next)
	m.weigh(f.Kind, m.expanded-before)
	noted := a.broken
	if a.broken == nil {
		a.broken = broken
	}
	e, keep, y := m.entryOf(a, n, f, found)
	if y != nil {
		for i, x := range m.first {
			if x == y {
				e.first = int16(i)
			}
		}
	}
	clear(m.first)
	m.keep(h, hit, e, keep, noted, a, f)
	return found
}

// answers reports whether the memo answers searches for facts of kind
// k. A search that expands few nodes costs about what its replay does
// (the key made and compared, the path's moves applied again), and the
// memo it would take is another's: the facts of a kind whose searches
// expand fewer than farWorth nodes on average are searched.
func (m *farMemo) answers(k obslog.Kind) bool {
	w := &m.worth[k]
	return w.searches < farWarm || int(w.expanded) >= farWorth*int(w.searches)
}

// lookUp is the entry of j.far.key, hash h, or nil; an entry found is
// marked used (put).
func (m *farMemo) lookUp(h uint64) *farEntry {
	for i := m.head(h); i != 0; i = m.tab[i-1].hnext {
		if e := &m.tab[i-1]; e.hash == h && e.key == m.key {
			e.used = true
			return e
		}
	}
	return nil
}

// entryOf is the entry of m.key for a search from n that found the node
// found (nil: none), in m.entry; keep is false when the memo cannot hold
// its path, and first the path's first node, a child of n (nil: none).
func (m *farMemo) entryOf(a *attempt, n *node, f *obslog.Fact, found *node) (e *farEntry, keep bool, first *node) {
	e = &m.entry
	*e = farEntry{key: m.key}
	keep = true
	if found == nil {
		return e, keep, nil
	}
	e.found = true
	keep = found.owedN <= farOwed
	copy(e.owed[:], found.owed[:min(found.owedN, farOwed)])
	e.owedN = found.owedN
	// The path after its first node, last move first.
	y := found
	for ; y.parent != n; y = y.parent {
		if int(e.nsteps) == farSteps {
			keep = false
			break
		}
		e.steps[e.nsteps] = farStep{m: y.move, stKey: y.stKey, fired: y.fired}
		e.nsteps++
	}
	slices.Reverse(e.steps[:e.nsteps])
	for ; y.parent != n; y = y.parent {
	}
	e.firstKey = y.stKey
	return e, keep, y
}

// keep remembers entry e, the search of hash h that noted violation
// noted last (nil: none) and, unless its key says one was noted before,
// a.stepBroke[f] for f; where the memo had the search (hit, searched
// again with farVerify), the two are compared instead.
func (m *farMemo) keep(h uint64, hit, e *farEntry, keep bool, noted *model.Violation, a *attempt, f *obslog.Fact) {
	var sb *model.Violation
	if !e.key.broke {
		sb = a.stepBroke[f]
	}
	if hit != nil {
		m.hits++
		farVerified.hits++
		if e.key.lead {
			farVerified.leads++
		}
		if !sameFar(m, hit, e, noted, sb) {
			m.bad++
			farVerified.bad++
		}
		return
	}
	if keep {
		e.broken, e.stepBroke = m.note(noted), m.note(sb)
		m.put(h, e)
	}
}

// farWorth is the nodes a search of a kind of fact expands on average,
// at least, for the memo to answer the facts of that kind; farWarm the
// searches of a kind before that is judged, and farWindow those it is
// judged on (the older count half, then a quarter, and so on).
const (
	farWorth  = 3
	farWarm   = 16
	farWindow = 1 << 10
)

// weigh counts a search of a fact of kind k that expanded x nodes.
func (m *farMemo) weigh(k obslog.Kind, x int) {
	w := &m.worth[k]
	w.searches++
	w.expanded += int32(x)
	if w.searches == farWindow {
		w.searches /= 2
		w.expanded /= 2
	}
}

// note keeps violation v for an entry: one more than its index in viols,
// 0 for none.
func (m *farMemo) note(v *model.Violation) int32 {
	if v == nil {
		return 0
	}
	if k := len(m.freeViols); k > 0 {
		i := m.freeViols[k-1]
		m.freeViols = m.freeViols[:k-1]
		m.viols[i-1] = v
		return i
	}
	m.viols = append(m.viols, v)
	return int32(len(m.viols))
}

// unnote forgets the violation note kept.
func (m *farMemo) unnote(i int32) {
	if i != 0 {
		m.viols[i-1] = nil
		m.freeViols = append(m.freeViols, i)
	}
}

// viol is the violation note kept, or nil.
func (m *farMemo) viol(i int32) *model.Violation {
	if i == 0 {
		return nil
	}
	return m.viols[i-1]
}

// sameFar reports whether entry x gives the answer of search y, which
// noted violations broken and stepBroke.
func sameFar(m *farMemo, x, y *farEntry, broken, stepBroke *model.Violation) bool {
	if x.found != y.found || x.first != y.first || x.firstKey != y.firstKey || x.lead != y.lead || x.steps != y.steps || x.nsteps != y.nsteps || x.owed != y.owed || x.owedN != y.owedN {
		return false
	}
	same := func(v, w *model.Violation) bool { return v == nil && w == nil || v != nil && w != nil && *v == *w }
	return same(m.viol(x.broken), broken) && same(m.viol(x.stepBroke), stepBroke)
}

// farReplay is the node the remembered search e reaches from n, as the
// search makes it: the path's first node is n's unlogged child the
// search went on from, the others are made by applying the path's moves
// again (a move kept passed its step and state invariants when it was
// searched, and the same move from the same state passes them again);
// n's other children go back to the pool. What the search noted is noted.
func (j *judge) farReplay(a *attempt, n *node, f *obslog.Fact, s int, next []*node, e *farEntry) *node {
	j.farNoted(a, f, e)
	var x *node
	for i, c := range next {
		if e.found && i == int(e.first) {
			x = c
		} else {
			j.free(c)
		}
	}
	clear(next)
	if !e.found {
		return nil
	}
	x.stKey = e.firstKey
	return j.farPath(x, f, s, e)
}

// farNoted notes for attempt a what the remembered search e noted.
func (j *judge) farNoted(a *attempt, f *obslog.Fact, e *farEntry) {
	if v := j.far.viol(e.broken); v != nil {
		a.broken = v
	}
	if v := j.far.viol(e.stepBroke); v != nil {
		if a.stepBroke == nil {
			a.stepBroke = map[*obslog.Fact]*model.Violation{}
		}
		a.stepBroke[f] = v
	}
}

// farPath is the node remembered search e reaches from its first node x:
// its steps' moves applied again.
func (j *judge) farPath(x *node, f *obslog.Fact, s int, e *farEntry) *node {
	for i := range int(e.nsteps) {
		st := &e.steps[i]
		c := j.child(x)
		ns := j.takeState()
		*ns = *x.st
		j.stepper.Apply(x.st, ns, st.m)
		c.st, c.owns, c.clear = ns, true, true
		c.move, c.fired = st.m, st.fired
		if i < int(e.nsteps)-1 {
			c.stKey = st.stKey
			c.silent++
		} else {
			c.stKey = 0
			c.pos[s]++
			c.consumed++
			c.fact = f
			c.silent = 0
			c.owed, c.owedN = [maxOwed]obslog.Label{}, e.owedN
			copy(c.owed[:], e.owed[:e.owedN])
		}
		x = c
	}
	return x
}

// head is the latest entry of hash h's chain, one more than its index,
// or 0.
func (m *farMemo) head(h uint64) int32 {
	if m.heads == nil {
		return 0
	}
	return m.heads[h&uint64(len(m.heads)-1)]
}

// put remembers entry e under hash h. When the memo is full it takes the
// place of the first entry the clock's hand finds unused since it last
// passed (clearing the marks of those it passes): an entry in use stays,
// as least recently used would keep it, without reordering a list on
// every answer.
func (m *farMemo) put(h uint64, e *farEntry) {
	if m.heads == nil {
		// Made whole at once: grown by doubling, the old and the new
		// table would be held together.
		m.tab = make([]farEntry, 0, farCap)
		m.heads = make([]int32, 1<<bits.Len(uint(2*farCap-1)))
	}
	mask := uint64(len(m.heads) - 1)
	var i int32
	if len(m.tab) < farCap {
		m.tab = append(m.tab, farEntry{})
		i = int32(len(m.tab))
	} else {
		for m.tab[m.hand].used {
			m.tab[m.hand].used = false
			m.hand = (m.hand + 1) % len(m.tab)
		}
		i = int32(m.hand + 1)
		m.hand = (m.hand + 1) % len(m.tab)
		old := &m.tab[i-1]
		// Out of its chain.
		hp := &m.heads[old.hash&mask]
		for *hp != i {
			hp = &m.tab[*hp-1].hnext
		}
		*hp = old.hnext
	}
	x := &m.tab[i-1]
	m.unnote(x.broken)
	m.unnote(x.stepBroke)
	*x = *e
	x.hash = h
	x.hnext = m.heads[h&mask]
	m.heads[h&mask] = i
}
