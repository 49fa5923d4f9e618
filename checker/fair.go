package checker

import (
	"fmt"
	"math/bits"
	"slices"
	"sync"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Fair liveness: "P leads to Q" judged under weak fairness of each
// process's moves, on the liveness graph of a complete search.
//
// The processes (system.MoveSet.Process). The composed system has no threads
// of its own; its moves are grouped by the actor that makes them, per
// handoff:
//
//   - the frontend: routing the prefill and the decode, and handing the
//     request to the source worker;
//   - the source role and the destination role: each side's scheduler
//     applying its commands, the cancel and the peer's restart it is told
//     of, its deferred steps, and (destination) reserving or refusing,
//     promoting and finishing decode, (source) admitting and computing;
//   - the transfer engine: a transfer ending;
//   - the transport, one process per direction: a fact in flight to the
//     source, and one to the destination, delivered;
//   - the clock, one process per timer of the handoff: that timer
//     firing;
//
// and per decode worker, its background load being freed. Faults are no
// process: the environment may stop faulting for good, so nothing obliges
// a fault to happen (as for EventuallyDrained, liveness.go). A timer that
// fires while something else can still happen is an early one, budgeted
// like a fault, and so not obliged either; a timer firing when nothing
// else can happen is the clock's move, and counts: time passes, so every
// timer armed while the system waits fires, not only one of them (one
// process per timer: a deadline re-armed for ever does not keep another
// handoff's, or the same handoff's other, deadline from firing).
//
// A process is enabled in a state when one of its moves is in the
// liveness graph there (a move the system makes on its own). A run is
// weakly fair when no process stays enabled forever without moving.
//
// The method. For a property and (per handoff) a handoff h, the states
// where Q does not hold of h form a region; an obligation that P raised
// is pending while the run stays in it. A violation is a reachable state
// where P holds and Q does not, from which, within the region and by any
// move (a fault or an early timer included: a run takes finitely many),
// the run can reach either a state with no move of the system's own (a
// finite maximal run: it may end there) or a strongly connected component
// of the own moves that is fair: one with an edge inside it, where every
// process either moves on an edge inside it or is disabled in one of its
// states. Weak fairness needs no finer decomposition: a process enabled
// in every state of a component and never moving inside it is so in
// every smaller cycle of it too. The region's part that a run reaches
// from where P holds is marked first (load); Tarjan's algorithm, without
// recursion, then finds the own components there (targets), and runs
// again over every edge from the states where P holds: each component is
// finished after every component it reaches, so whether it reaches a
// target is known when it is finished, without a reverse graph.

// Obligation is a leads_to property to judge under weak fairness.
type Obligation struct {
	Name string
	// PerHandoff: P and Q are judged of each handoff, and an obligation
	// P raises of a handoff is met only by Q of the same handoff.
	PerHandoff bool
	// Sides judges P and Q of a state: bit h of each for handoff h of a
	// per-handoff property, bit 0 otherwise. An error leaves the
	// property not decided (FairVerdict.Err).
	Sides func(sys *system.System, s *system.State) (p, q uint64, err error)
}

// FairVerdict is an obligation's verdict on a complete search.
type FairVerdict struct {
	Name string
	// Held says P held in some reachable state; Pending that P held
	// where Q did not (Q already holding meets the obligation at once).
	Held, Pending bool
	// Violation is a fair run on which P held and Q never held after:
	// Steps to the state where P held, then on to where the run stays,
	// and Loop, the fair cycle it repeats (empty: the run ends in a
	// state where nothing more can happen). Nil: every fair run meets
	// every obligation.
	Violation *Counterexample
	// Handoff is the handoff of a per-handoff violation (-1 otherwise).
	Handoff int
	// Err is the first state P or Q could not be judged in: the verdict
	// is not decided.
	Err error
}

// ownProcesses is the set of processes with a move in the liveness graph
// at a state whose enabled moves are ms (the first protocol of them the
// protocol's).
func ownProcesses(ms *system.MoveSet, protocol int) uint64 {
	var m uint64
	for i := 0; i < protocol; i++ {
		if p, own := ms.Process(i, protocol); own {
			m |= 1 << p
		}
	}
	return m
}

// fairState is what the search records for fairness beside the liveness
// graph: each edge's process, each state's enabled processes, and each
// state's P and Q of every obligation (a byte each: P's handoffs in the
// low four bits, Q's in the high four). The edges themselves are the
// graph's, in its order.
type fairState struct {
	obs []Obligation
	// env is the environment's edges (faults, early timers): a run may
	// take them, finitely often, on its way from P to where it stays.
	env     edgeLog
	labels  []uint8
	enabled []uint64
	sides   []uint8
	errOnce sync.Once
	err     error
}

func (f *fairState) bytes() int64 {
	return int64(f.env.n)*edgeBytes + int64(len(f.labels)) + 8*int64(len(f.enabled)) + int64(len(f.sides))
}

// judgeSides appends a state's P and Q of every obligation to dst. An
// evaluation error is kept (the first) and leaves nothing pending there.
func (f *fairState) judgeSides(dst []uint8, sys *system.System, s *system.State) []uint8 {
	for _, ob := range f.obs {
		p, q, err := ob.Sides(sys, s)
		if err != nil {
			f.errOnce.Do(func() { f.err = err })
			p, q = 0, 0
		}
		dst = append(dst, uint8(p&0xf)|uint8(q&0xf)<<4)
	}
	return dst
}

// envLabel labels an edge of the environment's (a fault, or a timer
// firing early): a run may take it, finitely often, but no process is
// obliged to, and no fair cycle is made of it.
const envLabel = 0xff

// fairGraph is the liveness graph in forward compressed form, with the
// environment's edges beside the system's own, and what fairness reads.
type fairGraph struct {
	n       int
	off     []uint32 // state v's edges are dst[off[v]:off[v+1]]
	dst     []uint32
	lab     []uint8 // each edge's process, envLabel for the environment's
	enabled []uint64
}

// forward builds the forward graph from the own edges and the
// environment's, each recorded in order of their source: one pass over
// both counts, one fills.
func (e *exploration) forward() (*fairGraph, error) {
	n := e.links.n
	f := e.g.fair
	fg := &fairGraph{n: n, off: make([]uint32, n+1), enabled: f.enabled}
	count := func(from, _ uint32) { fg.off[from+1]++ }
	if err := e.g.edges.each(count); err != nil {
		return nil, err
	}
	if err := f.env.each(count); err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		fg.off[i+1] += fg.off[i]
	}
	m := fg.off[n]
	fg.dst, fg.lab = make([]uint32, m), make([]uint8, m)
	at := slices.Clone(fg.off[:n])
	i := 0
	if err := e.g.edges.each(func(from, to uint32) {
		fg.dst[at[from]], fg.lab[at[from]] = to, f.labels[i]
		at[from]++
		i++
	}); err != nil {
		return nil, err
	}
	err := f.env.each(func(from, to uint32) {
		fg.dst[at[from]], fg.lab[at[from]] = to, envLabel
		at[from]++
	})
	return fg, err
}

// pendingRegion is one obligation and handoff: where P holds (start) and
// where Q does not (in the region).
type pendingRegion struct {
	start, in func(v uint32) bool
}

// tarjan holds the arrays of the component searches, reused from one to
// the next.
type tarjan struct {
	fg    *fairGraph
	index []uint32 // 0: not visited; else the visit order, from 1
	low   []uint32
	comp  []uint32 // the component of a finished state, from 1; 0 while on the stack
	// flag is a finished state's verdict: of a search of the own edges,
	// a target (in a fair component, or a deadlock); of a search of every
	// edge, reaching a target (target is then the own search's flags).
	flag, target []bool
	// own: only the system's own edges are followed.
	own bool
	// in and reach are the region being judged, loaded once (load): the
	// states where Q does not hold, and those of them that a run can
	// reach from where P holds without leaving them.
	in, reach   []bool
	stack       []uint32
	calls       []frame
	next, ncomp uint32
}

type frame struct{ v, at uint32 }

func newTarjan(fg *fairGraph) *tarjan {
	n := fg.n
	return &tarjan{fg: fg, index: make([]uint32, n), low: make([]uint32, n), comp: make([]uint32, n), flag: make([]bool, n), target: make([]bool, n),
		in: make([]bool, n), reach: make([]bool, n)}
}

func (t *tarjan) reset(own bool) {
	clear(t.index)
	clear(t.low)
	clear(t.comp)
	clear(t.flag)
	t.next, t.ncomp, t.own = 0, 0, own
}

// follows reports whether the search follows edge at.
func (t *tarjan) follows(at uint32) bool { return !t.own || t.fg.lab[at] != envLabel }

// load reads a region: where Q does not hold (t.in), and the part of it
// a run reaches from the states where P holds without leaving it, by any
// edge (t.reach): only there can an obligation be pending.
func (t *tarjan) load(r pendingRegion) {
	fg := t.fg
	clear(t.reach)
	var work []uint32
	for s := 0; s < fg.n; s++ {
		v := uint32(s)
		t.in[s] = r.in(v)
		if t.in[s] && r.start(v) {
			t.reach[s] = true
			work = append(work, v)
		}
	}
	for len(work) > 0 {
		v := work[len(work)-1]
		work = work[:len(work)-1]
		for at := fg.off[v]; at < fg.off[v+1]; at++ {
			if w := fg.dst[at]; t.in[w] && !t.reach[w] {
				t.reach[w] = true
				work = append(work, w)
			}
		}
	}
}

// targets finds the components of the own edges in the reached part of
// the region (closed under the region's edges, so its components are
// the region's) and flags the targets: states of fair components, and
// deadlocks (t.target).
func (t *tarjan) targets() {
	t.reset(true)
	for s := 0; s < t.fg.n; s++ {
		if v := uint32(s); t.reach[v] && t.index[v] == 0 {
			t.visit(v)
		}
	}
	copy(t.target, t.flag)
}

// run judges a region: it returns the first start state (in id order:
// the nearest the initial state) from which, staying in the region (the
// environment's edges included: a run may take finitely many faults),
// a target can be reached, or -1. t.target is left set for the lasso.
func (t *tarjan) run(r pendingRegion) int {
	t.load(r)
	t.targets()
	t.reset(false)
	first := -1
	for s := 0; s < t.fg.n; s++ {
		v := uint32(s)
		if !t.in[v] || !r.start(v) {
			continue
		}
		if t.index[v] == 0 {
			t.visit(v)
		}
		if first < 0 && t.flag[v] {
			first = s
		}
	}
	return first
}

// visit runs Tarjan's search from root, with an explicit call stack.
func (t *tarjan) visit(root uint32) {
	fg := t.fg
	t.push(root)
	for len(t.calls) > 0 {
		top := &t.calls[len(t.calls)-1]
		v := top.v
		if top.at < fg.off[v+1] {
			at := top.at
			top.at++
			w := fg.dst[at]
			if !t.follows(at) || !t.in[w] {
				continue
			}
			switch {
			case t.index[w] == 0:
				t.push(w)
			case t.comp[w] == 0: // on the stack
				t.low[v] = min(t.low[v], t.index[w])
			}
			continue
		}
		t.calls = t.calls[:len(t.calls)-1]
		if t.low[v] == t.index[v] {
			t.finish(v)
		}
		if len(t.calls) > 0 {
			u := t.calls[len(t.calls)-1].v
			t.low[u] = min(t.low[u], t.low[v])
		}
	}
}

func (t *tarjan) push(v uint32) {
	t.next++
	t.index[v], t.low[v] = t.next, t.next
	t.stack = append(t.stack, v)
	t.calls = append(t.calls, frame{v: v, at: t.fg.off[v]})
}

// finish pops the component rooted at v and flags it. Of the own edges:
// a target when it is fair (an edge inside it, and every process moving
// inside it or disabled somewhere in it) or a deadlock (a state with no
// move of the system's own). Of every edge: when a state of it is a
// target, or an edge leaves it for a flagged component (finished before
// it, as Tarjan finishes a component after those it reaches).
func (t *tarjan) finish(v uint32) {
	fg := t.fg
	i := len(t.stack) - 1
	for t.stack[i] != v {
		i--
	}
	members := t.stack[i:]
	t.ncomp++
	c := t.ncomp
	for _, u := range members {
		t.comp[u] = c
	}
	var taken, disabled uint64
	flag := false
	for _, u := range members {
		if !t.own {
			flag = flag || t.target[u]
		} else if fg.enabled[u] == 0 {
			flag = true // a deadlock: the run may end here
		}
		disabled |= ^fg.enabled[u]
		for at := fg.off[u]; at < fg.off[u+1]; at++ {
			w := fg.dst[at]
			if !t.follows(at) || !t.in[w] {
				continue
			}
			switch {
			case t.own && t.comp[w] == c:
				taken |= 1 << fg.lab[at]
			case !t.own && t.comp[w] != c && t.flag[w]:
				flag = true
			}
		}
	}
	if t.own && taken != 0 && taken|disabled == ^uint64(0) {
		flag = true
	}
	for _, u := range members {
		t.flag[u] = flag
	}
	t.stack = t.stack[:i]
}

// errSymmetric says fairness was not judged for symmetry reduction.
var errSymmetric = fmt.Errorf("symmetric")

// checkFair judges every obligation (and, with Limits.FairDrained,
// EventuallyDrained's fair form, first) on the complete graph. It returns
// the built-in's counterexample, if any, and the obligations' verdicts.
func (e *exploration) checkFair() (*Counterexample, []FairVerdict, error) {
	fs := e.g.fair
	if e.c.Symmetric() {
		// A state stands for its orbit, and a move of handoff 0 in it for
		// a move of any handoff: processes cannot be told apart. Nothing
		// is judged, and each verdict says why.
		err := fmt.Errorf("fair liveness needs symmetry reduction off: it renames the handoffs and workers whose moves fairness tells apart")
		var out []FairVerdict
		for _, ob := range fs.obs {
			out = append(out, FairVerdict{Name: ob.Name, Handoff: -1, Err: err})
		}
		return nil, out, errSymmetric
	}
	fg, err := e.forward()
	if err != nil {
		return nil, nil, err
	}
	t := newTarjan(fg)
	var drained *Counterexample
	if e.lim.FairDrained {
		r := pendingRegion{start: func(uint32) bool { return true }, in: func(v uint32) bool { return !e.g.drained[v] }}
		if s := t.run(r); s >= 0 {
			v := &model.Violation{Invariant: model.NameEventuallyDrained, Handoff: -1, Worker: -1,
				Detail: "from this state a weakly fair run need never drain: something can stay held forever while every process moves or is disabled"}
			v.Check = v.Detail
			drained = e.lasso(t, uint32(s), v)
			drained.Fair = "drain"
		}
	}
	k := len(fs.obs)
	var out []FairVerdict
	for i, ob := range fs.obs {
		fv := FairVerdict{Name: ob.Name, Handoff: -1, Err: fs.err}
		hs := 1
		if ob.PerHandoff {
			hs = e.c.World().NumHandoffs()
		}
		region := func(h int) pendingRegion {
			pb, qb := uint8(1)<<h, uint8(0x10)<<h
			return pendingRegion{start: func(v uint32) bool { return fs.sides[int(v)*k+i]&pb != 0 }, in: func(v uint32) bool { return fs.sides[int(v)*k+i]&qb == 0 }}
		}
		best, bestH := -1, -1
		for h := 0; h < hs; h++ {
			pb, qb := uint8(1)<<h, uint8(0x10)<<h
			for v := 0; v < fg.n; v++ {
				sd := fs.sides[v*k+i]
				fv.Held = fv.Held || sd&pb != 0
				fv.Pending = fv.Pending || sd&pb != 0 && sd&qb == 0
			}
			if s := t.run(region(h)); s >= 0 && (best < 0 || s < best) {
				best, bestH = s, h
			}
		}
		if best >= 0 && fs.err == nil {
			r := region(bestH)
			t.run(r)
			h := -1
			if ob.PerHandoff {
				h = bestH
			}
			fv.Handoff = h
			v := &model.Violation{Invariant: ob.Name, Handoff: h, Worker: -1,
				Detail: fmt.Sprintf("leads_to %s: P holds here, and from here a weakly fair run need never meet Q", ob.Name)}
			v.Check = v.Detail
			fv.Violation = e.lasso(t, uint32(best), v)
			fv.Violation.Fair = "meet Q"
		}
		out = append(out, fv)
	}
	return drained, out, nil
}

// lasso rebuilds a fair run that never leaves the region t judged last
// (run), from its start state s: the shortest path to s (marked as the violation's step), then the
// shortest path in the region to a target (a deadlock, where the run
// ends, or a state of a fair component), and in that component a cycle
// that moves every process that is enabled throughout it, or visits a
// state where it is not.
func (e *exploration) lasso(t *tarjan, s uint32, v *model.Violation) *Counterexample {
	fg := t.fg
	ce := e.counterexample(&found{v: v, pid: s, move: -1})
	path := t.bfs(s, func(u uint32) bool { return t.target[u] }, func(w uint32) bool { return t.in[w] }, true)
	entry := path.ids[len(path.ids)-1]
	loop := hops{ids: []uint32{entry}} // a deadlock: the run ends there
	if fg.enabled[entry] != 0 {
		// The own components again, for the entry's.
		t.targets()
		loop = t.fairCycle(entry)
	}
	st := e.replayTo(s)
	ce.Steps = e.stepsAlong(&st, path, ce.Steps, "the way to a fair cycle")
	ce.Loop = e.stepsAlong(&st, loop, ce.Loop, "a fair cycle")
	return ce
}

// stepsAlong takes the steps of a path of hops from st, which it leaves
// at the path's end, and appends them to out.
func (e *exploration) stepsAlong(st *system.State, h hops, out []TraceStep, what string) []TraceStep {
	for i, id := range h.ids[1:] {
		k := e.keyOf(id)
		step, ok := e.c.stepBy(st, &k, h.proc[i])
		if !ok {
			panic("checker: cannot replay " + what)
		}
		out = append(out, step)
	}
	return out
}

// stepBy takes the step of an edge: a move of the system's own of
// process proc, or for the environment's edge any move, to want.
func (c *Checker) stepBy(s *system.State, want *system.Key, proc uint8) (TraceStep, bool) {
	if proc == envLabel {
		return c.concreteStep(s, want, "")
	}
	return c.ownStep(s, want, int(proc))
}

// hops is a path in the graph: its states, and the process of each edge
// (proc[i] takes ids[i] to ids[i+1]).
type hops struct {
	ids  []uint32
	proc []uint8
}

func (h *hops) then(g hops) {
	h.ids = append(h.ids, g.ids[1:]...)
	h.proc = append(h.proc, g.proc...)
}

// bfs finds the shortest path from s to a state where stop holds, through
// states where through holds (s itself need not), by the own edges or,
// with env, every edge. A path of one state is s itself.
func (t *tarjan) bfs(s uint32, stop, through func(uint32) bool, env bool) hops {
	if stop(s) {
		return hops{ids: []uint32{s}}
	}
	fg := t.fg
	type via struct {
		from uint32
		at   uint32
	}
	prev := map[uint32]via{s: {from: s}}
	queue := []uint32{s}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for at := fg.off[u]; at < fg.off[u+1]; at++ {
			w := fg.dst[at]
			if _, seen := prev[w]; seen || !through(w) || (!env && fg.lab[at] == envLabel) {
				continue
			}
			prev[w] = via{from: u, at: at}
			if stop(w) {
				var h hops
				for x := w; x != s; x = prev[x].from {
					h.ids = append(h.ids, x)
					h.proc = append(h.proc, fg.lab[prev[x].at])
				}
				h.ids = append(h.ids, s)
				slices.Reverse(h.ids)
				slices.Reverse(h.proc)
				return h
			}
			queue = append(queue, w)
		}
	}
	panic("checker: a fair run's path is missing")
}

// fairCycle is a cycle from entry back to it inside entry's own
// component that, for every process, takes one of its edges inside the
// component or passes a state where it is disabled; where the component
// lets a process do either, the cycle does what it meets first.
func (t *tarjan) fairCycle(entry uint32) hops {
	fg := t.fg
	c := t.comp[entry]
	inComp := func(w uint32) bool { return t.comp[w] == c }
	cyc := hops{ids: []uint32{entry}}
	done := ^fg.enabled[entry] // processes moved or seen disabled on the cycle so far
	at := entry
	for p := 0; p < 64; p++ {
		if done&(1<<p) != 0 {
			continue
		}
		// The nearest state where p is disabled, or that has an edge of
		// p inside the component, from where the cycle is.
		var edgeAt uint32
		found := false
		reach := t.bfs(at, func(u uint32) bool {
			if fg.enabled[u]&(1<<p) == 0 {
				return true
			}
			for a := fg.off[u]; a < fg.off[u+1]; a++ {
				if fg.lab[a] == uint8(p) && inComp(fg.dst[a]) {
					edgeAt, found = a, true
					return true
				}
			}
			return false
		}, inComp, false)
		cyc.then(reach)
		for _, u := range reach.ids {
			done |= ^fg.enabled[u]
		}
		for _, q := range reach.proc {
			done |= 1 << q
		}
		at = reach.ids[len(reach.ids)-1]
		if found {
			w := fg.dst[edgeAt]
			cyc.ids = append(cyc.ids, w)
			cyc.proc = append(cyc.proc, uint8(p))
			done |= 1<<p | ^fg.enabled[w]
			at = w
		}
	}
	// Back to the entry: at least one step, so that the loop moves.
	if at == entry && len(cyc.ids) == 1 {
		cyc.then(t.stepBack(entry, inComp))
		return cyc
	}
	cyc.then(t.bfs(at, func(u uint32) bool { return u == entry }, inComp, false))
	return cyc
}

// stepBack is the shortest cycle from entry through at least one own
// edge.
func (t *tarjan) stepBack(entry uint32, in func(uint32) bool) hops {
	fg := t.fg
	for a := fg.off[entry]; a < fg.off[entry+1]; a++ {
		if fg.dst[a] == entry && fg.lab[a] != envLabel {
			return hops{ids: []uint32{entry, entry}, proc: []uint8{fg.lab[a]}}
		}
	}
	for a := fg.off[entry]; a < fg.off[entry+1]; a++ {
		w := fg.dst[a]
		if fg.lab[a] == envLabel || !in(w) {
			continue
		}
		h := hops{ids: []uint32{entry, w}, proc: []uint8{fg.lab[a]}}
		h.then(t.bfs(w, func(u uint32) bool { return u == entry }, in, false))
		return h
	}
	panic("checker: a fair component has no edge")
}

// ownStep finds a move the system makes on its own, of process proc, from
// a concrete state to the canonical state want, and takes it.
func (c *Checker) ownStep(s *system.State, want *system.Key, proc int) (TraceStep, bool) {
	var ms system.MoveSet
	protocol := c.Enabled(s, &ms)
	for i := 0; i < protocol; i++ {
		if p, own := ms.Process(i, protocol); !own || int(p) != proc {
			continue
		}
		var t system.State
		_, log := c.applyLogged(s, &t, &ms, i)
		if c.Key(&t) != *want {
			continue
		}
		*s = t
		return TraceStep{Move: ms.M[i], Fired: log, State: c.DescribeState(&t)}, true
	}
	return TraceStep{}, false
}

// Unfair judges a loop replayed from state s by moves: it returns the
// processes that are enabled in every state of the loop and never move
// in it (none: the loop is weakly fair), and whether each move is one the
// system makes on its own. A loop that is not fair, or needs a fault or
// an early timer, shows no run the environment cannot escape. Without
// moves it judges a run that ends at s: the processes enabled there (none:
// nothing but faults can happen, and the run may end).
func (c *Checker) Unfair(s system.State, moves []system.Move) (unfair []string, own bool) {
	var ms system.MoveSet
	var taken, disabled uint64
	own = true
	if len(moves) == 0 {
		disabled = ^ownProcesses(&ms, c.Enabled(&s, &ms))
	}
	for _, m := range moves {
		protocol := c.Enabled(&s, &ms)
		disabled |= ^ownProcesses(&ms, protocol)
		i := 0
		for i < ms.N && ms.M[i] != m {
			i++
		}
		if i == ms.N {
			return nil, false
		}
		if p, mine := ms.Process(i, protocol); !mine {
			own = false
		} else {
			taken |= 1 << p
		}
		tx := model.Tx{W: &s.W}
		c.ApplyTx(&s, &tx, m, nil, ms.Stuck)
	}
	for rest := ^(taken | disabled); rest != 0; rest &= rest - 1 {
		unfair = append(unfair, system.ProcessName(bits.TrailingZeros64(rest)))
	}
	return unfair, own
}
