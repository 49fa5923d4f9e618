package conform

import (
	"fmt"
	"slices"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Nodes: a node of an attempt's search is a state of the composed system
// with what the attempt's logs explained so far and what it still owes;
// its key hashes all of that for the visited set, whose buckets confirm a
// hit by comparing the nodes themselves (same), never by the hash alone.

type node struct {
	// st is the world and the machines; nodes that differ only in what
	// they explained share it. stKey is its hash.
	st     *system.State
	parent *node
	// owns: st was taken from the judge's pool for this node alone (not
	// shared with the node it came from), and goes back with it (free).
	owns   bool
	stKey  uint64
	pos    [maxSlots]uint16
	owed   [maxOwed]obslog.Label
	owedN  uint8
	silent uint8
	faults uint8
	// owedSame marks the labels of owed a step left to its own process
	// after a fact of it that step explained (sameStep): set only with a
	// clock error.
	owedSame uint8
	consumed uint32
	// hungry: the node may explain a fact not read yet.
	hungry bool
	// depth is the steps and facts from the attempt's start: of two
	// explanations of as many facts, a report shows the shorter.
	depth uint16
	fact  *obslog.Fact // the fact this node explained, or nil
	move  system.Move  // the step that made this node (none: a fact owed)
	// fired is the invariants' triggers that step fired (a restart's
	// too): an explanation that is final notes them (exercise).
	fired model.Triggers
	// succ is, once the node was expanded, its logged steps: a node
	// expanded again (a fact it may explain arrived) matches the fact
	// against them without stepping the world again.
	succ     []succ
	labels   []obslog.Label
	expanded bool
	// onPath marks, for a moment, the nodes of the explanation a greedy
	// search found, which its other nodes are freed around.
	onPath bool
	// clear: st passed the state invariants (model.CheckState), judged
	// where the node was made (checkStep); false where that is not known.
	clear bool
}

// succ is a logged step of a node: the move and what it makes observable.
type succ struct {
	m system.Move
	// off and mn locate what the step makes observable in the node's
	// labels.
	off uint16
	mn  uint8
	// lazy: the labels hold only the step's first fact, known without
	// taking it; the step is taken when a fact of that kind arrives.
	lazy bool
}

// key is a node's identity for the search: its state, what it explained
// and owes, and the faults it used (they count toward a bound, so two
// paths with different counts may go different ways), hashed with a fixed
// hash (the same on every run: the search's course, and so its report,
// never depends on the process).
func (n *node) key() uint64 {
	h := n.stKey
	for _, p := range n.pos {
		h = mix(h, uint64(p))
	}
	h = mix(h, uint64(n.owedN)|uint64(n.faults)<<8)
	if n.owedSame != 0 {
		h = mix(h, uint64(n.owedSame))
	}
	for _, l := range n.owed[:n.owedN] {
		h = mix(h, uint64(l.Kind)|uint64(l.By)<<8|uint64(l.Stage)<<16|uint64(l.Outcome)<<24|uint64(l.Timer)<<32)
		h = mix(h, uint64(l.Blocks))
		h = mix(h, uint64(l.Pages))
		h = mix(h, uint64(l.Slot))
		h = mix(h, uint64(l.Headroom))
		h = mix(h, uint64(l.Tokens))
	}
	return h
}

func mix(h, v uint64) uint64 {
	h ^= v
	h *= 0x9e3779b97f4a7c15
	return h ^ h>>29
}

// stateKey hashes a state's canonical packing.
func (j *judge) stateKey(st *system.State) uint64 {
	h := uint64(0x68616e646f666663)
	for _, w := range j.chk.Key(st) {
		h = mix(h, w)
	}
	return h
}

// keyOf is a node's state's hash, computed now if it was left out (0):
// greedy's explanation needs it only where its memo does.
func (j *judge) keyOf(n *node) uint64 {
	if n.stKey == 0 {
		n.stKey = j.stateKey(n.st)
	}
	return n.stKey
}

// setState gives a node a copy of a new state, judged by the state
// invariants: a state that breaks one explains nothing.
func (j *judge) setState(a *attempt, n *node, st *system.State) bool {
	if v := j.chk.CheckState(st); v != nil {
		a.broken = v
		return false
	}
	j.own(n, st)
	n.stKey = j.stateKey(st)
	return true
}

// own gives a node a state of its own from the pool, a copy of st.
func (j *judge) own(n *node, st *system.State) {
	p := take(&j.freeStates)
	*p = *st
	n.st, n.owns = p, true
}

func (j *judge) root(a *attempt) *node {
	st := j.stepper.Initial(a.wcfg)
	n := j.newNode()
	*n = node{}
	j.own(n, &st)
	n.stKey = j.stateKey(&st)
	return n
}

// The nodes of an explanation followed greedily are recycled: a long log
// makes a few for each fact, and the attempt forgets them when it ends
// (or the search that made them found another way). A free list of nodes
// and one of states, as long as the most in use at once.

func (j *judge) newNode() *node { return take(&j.freeNodes) }

// take pops the last of a free list, or makes a new one when it is
// empty: the one rule of the judge's pools of nodes, states and facts.
func take[T any](free *[]*T) *T {
	if k := len(*free); k > 0 {
		p := (*free)[k-1]
		*free = (*free)[:k-1]
		return p
	}
	return new(T)
}

// free gives a node, and its state if it owns it, back to the pool.
// Nothing may point to it any more. It is not cleared: whoever takes it
// sets all of it (child, root), and what it points to is the pool's too
// (nodes, states, facts) or nothing (a greedy node has no succ).
func (j *judge) free(n *node) {
	if n.owns {
		j.freeStates = append(j.freeStates, n.st)
		n.owns = false
	}
	j.freeNodes = append(j.freeNodes, n)
}

// visited is a breadth-first search's set of states seen: a list while
// it is short (most of greedy's searches see a few states), a map by the
// state's hash beyond that; a hit is confirmed by the canonical key
// (sameState), never by the hash alone.
type visited struct {
	list []*node
	m    map[uint64][]*node
}

const visitedList = 64

func (v *visited) reset() {
	clear(v.list)
	v.list = v.list[:0]
	v.m = nil
}

// add adds n's state; false when it was seen. Every node it holds was
// hashed (keyOf) on its way in.
func (v *visited) add(j *judge, n *node) bool {
	c := j.chk
	j.keyOf(n)
	if v.m == nil {
		for _, m := range v.list {
			if m.stKey == n.stKey && sameState(c, m.st, n.st) {
				return false
			}
		}
		if len(v.list) < visitedList {
			v.list = append(v.list, n)
			return true
		}
		v.m = map[uint64][]*node{}
		for _, m := range v.list {
			v.m[m.stKey] = append(v.m[m.stKey], m)
		}
	}
	for _, m := range v.m[n.stKey] {
		if sameState(c, m.st, n.st) {
			return false
		}
	}
	v.m[n.stKey] = append(v.m[n.stKey], n)
	return true
}

// fresh keeps the nodes of a breadth-first frontier whose states were not
// seen before.
func (j *judge) fresh(ns []*node, seen map[uint64][]*node) ([]*node, map[uint64][]*node) {
	if len(ns) == 0 {
		return nil, seen
	}
	if seen == nil {
		seen = map[uint64][]*node{}
	}
	out := ns[:0]
next:
	for _, n := range ns {
		for _, m := range seen[j.keyOf(n)] {
			if sameState(j.chk, m.st, n.st) {
				continue next
			}
		}
		seen[n.stKey] = append(seen[n.stKey], n)
		out = append(out, n)
	}
	return out, seen
}

func (j *judge) push(a *attempt, n *node, work []*node) []*node {
	k := n.key()
	for _, m := range a.seen[k] {
		if j.same(m, n) {
			return work
		}
	}
	a.seen[k] = append(a.seen[k], n)
	return append(work, n)
}

// same reports whether two nodes are one for the search: the same state
// (by its canonical key), what they explained and owe, and faults used.
func (j *judge) same(x, y *node) bool {
	if x.pos != y.pos || x.owedN != y.owedN || x.owed != y.owed || x.faults != y.faults || x.owedSame != y.owedSame {
		return false
	}
	return sameState(j.chk, x.st, y.st)
}

// sameState reports whether two states are one: equal, or with the same
// canonical key.
func sameState(c *system.System, x, y *system.State) bool {
	return x == y || *x == *y || c.Key(x) == c.Key(y)
}

func (j *judge) child(n *node) *node {
	c := j.newNode()
	*c = *n
	c.parent = n
	if c.depth < maxFacts {
		c.depth++
	}
	c.fact = nil
	c.move = system.Move{}
	c.fired = 0
	c.succ = nil
	c.labels = nil
	c.expanded = false
	c.hungry = false
	c.owns, c.onPath, c.clear = false, false, false
	return c
}

// step is the state a node's move leads to, and the triggers it fired.
func (j *judge) step(n *node, m system.Move) (*system.State, model.Triggers) {
	next := *n.st
	j.stepper.Force(&next, m)
	return &next, j.stepper.Fired()
}

// better orders explanations for a report: more facts explained, then
// fewer owed, fewer unlogged faults, fewer steps.
func better(x, y *node) bool {
	switch {
	case x.consumed != y.consumed:
		return x.consumed > y.consumed
	case x.owedN != y.owedN:
		return x.owedN < y.owedN
	case x.faults != y.faults:
		return x.faults < y.faults
	}
	return x.depth < y.depth
}

// history is an explanation's facts and unlogged steps, oldest first.
func (j *judge) history(n *node) []string {
	var out []string
	for x := n; x != nil && x.parent != nil; x = x.parent {
		out = append(out, j.historyLine(x.fact, x.move))
	}
	slices.Reverse(out)
	return out
}

// chainHistory is the history of the explanation an attempt follows
// greedily, from its list (chain): its nodes before the current one may
// be back in the pool.
func (j *judge) chainHistory(a *attempt) []string {
	var out []string
	for _, cn := range a.chain[min(1, len(a.chain)):] {
		out = append(out, j.historyLine(cn.fact, cn.move))
	}
	return out
}

// historyLine is a node's line of a history: the fact it explained, the
// step that made it, or both.
func (j *judge) historyLine(f *obslog.Fact, m system.Move) string {
	switch {
	case f != nil && m.Kind != 0:
		return fmt.Sprintf("%s %s (step %s)", f.Where(), Describe(j.h, f), m)
	case f != nil:
		return fmt.Sprintf("%s %s", f.Where(), Describe(j.h, f))
	}
	return "unlogged: " + m.String()
}

// takeState is a state from the pool, or a new one.
func (j *judge) takeState() *system.State { return take(&j.freeStates) }

// quietStep is an unlogged step explainStep found, not yet a node: its
// state is the pool's.
type quietStep struct {
	m     system.Move
	st    *system.State
	fired model.Triggers
}

// dropQuiet gives the states of the unlogged steps explainStep found back
// to the pool: a move explained the fact, and they make no nodes.
func (j *judge) dropQuiet() {
	for i := range j.quiet {
		j.freeStates = append(j.freeStates, j.quiet[i].st)
		j.quiet[i].st = nil
	}
	j.quiet = j.quiet[:0]
}

// flushQuiet makes the unlogged steps explainStep found of x nodes of the
// next frontier, in the order found.
func (j *judge) flushQuiet(a *attempt, x *node, silent *[]*node) {
	fromX := len(j.quiet) > 0 && j.stepClear(x)
	var prec model.Records
	if fromX {
		prec = j.chk.Records(x.st)
	}
	for i := range j.quiet {
		q := &j.quiet[i]
		// Hashed only when the search comes to expand it (greedySearch),
		// which a search that finds the fact before it does not.
		var v *model.Violation
		if fromX {
			v = j.checkFrom(x.st, &prec, q.st)
		} else {
			v = j.chk.CheckState(q.st)
		}
		if v != nil {
			a.broken = v
			j.freeStates = append(j.freeStates, q.st)
		} else {
			c := j.child(x)
			c.st, c.owns, c.clear = q.st, true, true
			c.stKey = 0
			c.move, c.fired = q.m, q.fired
			c.silent++
			*silent = append(*silent, c)
		}
		q.st = nil
	}
	j.quiet = j.quiet[:0]
}

// checkStep is CheckState's judgement of next, one step from st, the
// state of node parent (or a copy of it): where parent's state passed
// the state invariants (clear) and no properties are judged, only what
// the step changed is judged (model.StateClearFrom, exact on a state one
// step from one that passed), all of them only when that objects, so
// that the violation is CheckState's own.
func (j *judge) checkStep(parent *node, st, next *system.State) *model.Violation {
	if !j.stepClear(parent) {
		return j.chk.CheckState(next)
	}
	prec := j.chk.Records(st)
	return j.checkFrom(st, &prec, next)
}

// stepClear reports whether the states one step from parent's are judged
// on what the step changed (checkStep).
func (j *judge) stepClear(parent *node) bool { return parent.clear && j.props == nil }

// checkFrom is checkStep's judgement where it applies, prec being st's
// records (asked once for all the steps from one state).
func (j *judge) checkFrom(st *system.State, prec *model.Records, next *system.State) *model.Violation {
	rec := j.chk.Records(next)
	if model.StateClearFrom(&st.W, &next.W, prec, &rec) {
		return nil
	}
	return model.CheckState(&next.W, &rec)
}
