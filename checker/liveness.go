package checker

import (
	"sync/atomic"
	"unsafe"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// eventuallyDrained checks, on the explored graph, that from every
// reachable state some fully drained state is reachable by the moves the
// system makes on its own (faults and early timers are left out of the
// graph: the environment may stop faulting for good, and a way out must not
// need its help). It is reachability, not fairness: heartbeat or retry
// cycles are allowed as long as a way out exists. States that cannot reach
// a drained state form a trap; the report shows the shortest path into it
// and a cycle inside it.
//
// It returns the ids of the states that cannot drain, in BFS order. The
// edges are read twice (each is a function that calls its argument with
// every edge, cut into as many parts as asked, the parts read at once):
// once to count each state's incoming edges, once to place their sources
// in a reverse graph in compressed form. Only the reverse graph (an offset
// per state and one more, and a source per edge) and a bit per state are
// held, never the edges too.
//
// The workers share every pass: the edges' parts count and place with
// atomic additions, and the backward search runs level by level, the
// workers taking the level's states in blocks and claiming each state they
// reach with an atomic bit. Which worker reaches a state first, and so the
// order of a state's sources, depends on scheduling; the set of states
// that can drain does not, and it is all that is returned.
func eventuallyDrained(n, workers int, each func(parts int, f func(part int, from, to uint32)) error, drained []bool) ([]uint32, error) {
	// off[t+1] counts t's incoming edges; summed, off[t] is where t's
	// sources start.
	off := make([]uint32, n+1)
	if err := each(workers, func(_ int, _, t uint32) { atomic.AddUint32(&off[t+1], 1) }); err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		off[i+1] += off[i]
	}
	src := make([]uint32, off[n])
	// Filling moves off[t] to the end of t's sources, which is where
	// t+1's start: shifted by one, off is the offsets again.
	if err := each(workers, func(_ int, f, t uint32) { src[atomic.AddUint32(&off[t], 1)-1] = f }); err != nil {
		return nil, err
	}
	copy(off[1:], off[:n])
	off[0] = 0
	can := make([]uint32, (n+31)/32)
	// Each state is queued at most once, so n entries always suffice:
	// mapped at that size, the queue never grows by copying, and only
	// the pages it reaches become resident.
	words := mapWords((n + 1) / 2)
	defer unmapWords(words)
	var queue []uint32
	if words != nil {
		queue = unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(words))), n)
	} else {
		queue = make([]uint32, n)
	}
	tail := 0
	for id := 0; id < n; id++ {
		if drained[id] {
			can[id>>5] |= 1 << (id & 31)
			queue[tail] = uint32(id)
			tail++
		}
	}
	backwards(queue, tail, off, src, can, workers)
	var trapped []uint32
	for id := 0; id < n; id++ {
		if can[id>>5]&(1<<(id&31)) == 0 {
			trapped = append(trapped, uint32(id))
		}
	}
	return trapped, nil
}

// backwards marks in can every state from which one of queue[:tail]
// (marked already) is reached, walking the reverse graph (off, src) level
// by level on up to workers goroutines. A level is queue[lo:hi]; the
// states it reaches first are appended after it, each worker placing its
// own in blocks it reserves, so that the queue holds every state once.
func backwards(queue []uint32, tail int, off, src, can []uint32, workers int) {
	const block = 1024
	lo, hi := 0, tail
	var end atomic.Int64
	end.Store(int64(tail))
	for lo < hi {
		var next atomic.Int64
		next.Store(int64(lo))
		level := func(int) {
			var mine [block]uint32
			k := 0
			flush := func() {
				at := end.Add(int64(k)) - int64(k)
				copy(queue[at:], mine[:k])
				k = 0
			}
			for {
				from := int(next.Add(block)) - block
				if from >= hi {
					break
				}
				for _, v := range queue[from:min(from+block, hi)] {
					for _, u := range src[off[v]:off[v+1]] {
						bit := uint32(1) << (u & 31)
						if atomic.LoadUint32(&can[u>>5])&bit != 0 || atomic.OrUint32(&can[u>>5], bit)&bit != 0 {
							continue
						}
						mine[k] = u
						if k++; k == block {
							flush()
						}
					}
				}
			}
			flush()
		}
		if workers == 1 || hi-lo < 2*block {
			level(0)
		} else {
			parallel(workers, workers, level)
		}
		lo, hi = hi, int(end.Load())
	}
}

// drainChains resolves the drain chains and returns how many states'
// chains end short of a drained state.
//
// Keeping every edge of the graph is what judging EventuallyDrained
// exactly needs, and most of what it costs: a known successor's id is
// read for each edge, and the edges are written out and read back twice.
// But the question is only whether a way out exists from every state,
// and one way out is enough to show it. So the search first keeps one
// edge per state, the drain chain's (chainStep picks it among the moves
// the system makes on its own): following chains from every state,
// each either reaches a drained state, and then that state can drain
// (the chain is a path of the graph), or ends (a state with no own move
// that is not drained) or closes a cycle. Where every chain reaches a
// drained state, EventuallyDrained holds, with no reverse graph built.
// Where one does not, the chains cannot tell whether another way out
// exists: the search starts again keeping every edge (explore), and
// eventuallyDrained judges that graph, so the verdict and the trap shown
// are the exact ones.
//
// The chains are read once, into a next state per state (in as many
// parts as there are workers, each state's edge written by the part that
// holds it); resolving follows each chain until a state whose outcome is
// known, and gives the whole path that outcome, so every state is visited
// a bounded number of times. With more workers, they first resolve
// blocks of states at once (resolveChainsShared); what they leave, a
// single pass resolves as one worker would. Either way each state's
// outcome is where its chain leads, so the count does not depend on who
// resolved what.
func drainChains(n, workers int, each func(parts int, f func(part int, from, to uint32)) error, drained []bool) (int, error) {
	next := make([]uint32, n)
	for i := range next {
		next[i] = chainNone
	}
	if err := each(workers, func(_ int, f, t uint32) { next[f] = t }); err != nil {
		return 0, err
	}
	// Each state's outcome is a byte, four to a word, so that the
	// workers can set one with an atomic operation on its word.
	out := make([]uint32, (n+3)/4)
	if w := min(workers, maxChainWorkers); w > 1 && n >= 2*chainBlock {
		resolveChainsShared(next, drained, out, w)
	}
	var path []uint32
	for i := 0; i < n; i++ {
		path = path[:0]
		v := uint32(i)
		var got uint8
		for {
			if o := chainOutcome(out, v); o == chainDrains || o == chainStops {
				got = o
				break
			}
			if drained[v] {
				setChainOutcome(out, v, chainDrains)
				got = chainDrains
				break
			}
			if chainOutcome(out, v) == chainOnPath {
				// The chain closed a cycle: v is on the path.
				got = chainStops
				break
			}
			if next[v] == chainNone {
				// A state with no own move that is not drained.
				setChainOutcome(out, v, chainStops)
				got = chainStops
				break
			}
			setChainOutcome(out, v, chainOnPath)
			path = append(path, v)
			v = next[v]
		}
		for _, p := range path {
			setChainOutcome(out, p, got)
		}
	}
	open := 0
	for i := 0; i < n; i++ {
		if chainOutcome(out, uint32(i)) == chainStops {
			open++
		}
	}
	return open, nil
}

// chainNone is the next state of a state with no own move.
const chainNone = ^uint32(0)

// What following a state's chain found: unknown, on the path being
// followed (chainOnPath alone; worker w's path is chainMarked+w), reaches
// a drained state, or does not.
const (
	chainUnknown uint8 = iota
	chainOnPath
	chainDrains
	chainStops
	chainMarked
)

// maxChainWorkers bounds the workers that resolve chains at once: each
// marks its path with its own outcome byte.
const maxChainWorkers = 64

// chainBlock is how many states a worker resolving chains takes at a
// time. A variable so that a test can share small graphs out.
var chainBlock = 1 << 16

func chainOutcome(out []uint32, v uint32) uint8 { return uint8(out[v>>2] >> (8 * (v & 3))) }

func setChainOutcome(out []uint32, v uint32, o uint8) {
	sh := 8 * (v & 3)
	out[v>>2] = out[v>>2]&^(0xff<<sh) | uint32(o)<<sh
}

// chainOutcomeShared is chainOutcome while other workers set outcomes
// too.
func chainOutcomeShared(out []uint32, v uint32) uint8 {
	return uint8(atomic.LoadUint32(&out[v>>2]) >> (8 * (v & 3)))
}

// swapChainOutcome sets v's outcome to o where it is was, and reports
// whether it did, while other workers set the other bytes of its word.
func swapChainOutcome(out []uint32, v uint32, was, o uint8) bool {
	sh := 8 * (v & 3)
	for {
		w := atomic.LoadUint32(&out[v>>2])
		if uint8(w>>sh) != was {
			return false
		}
		if atomic.CompareAndSwapUint32(&out[v>>2], w, w&^(0xff<<sh)|uint32(o)<<sh) {
			return true
		}
	}
}

// resolveChainsShared resolves drain chains on workers at once, each
// taking blocks of states in turn and following each one's chain as the
// single pass does, marking its path with its own byte. A chain that runs
// into another worker's path cannot tell yet where that path leads: it
// gives its own path back unresolved, for the single pass after. So a
// state is only ever given the outcome its chain has, and a cycle is only
// ever told by one worker finding its own mark.
func resolveChainsShared(next []uint32, drained []bool, out []uint32, workers int) {
	n := len(next)
	blocks := (n + chainBlock - 1) / chainBlock
	paths := make([][]uint32, workers)
	parallelOn(workers, blocks, func(w, b int) {
		mark := chainMarked + uint8(w)
		path := paths[w]
		for i := b * chainBlock; i < min((b+1)*chainBlock, n); i++ {
			path = path[:0]
			v := uint32(i)
			got := chainUnknown
		follow:
			for {
				if drained[v] {
					swapChainOutcome(out, v, chainUnknown, chainDrains)
					got = chainDrains
					break
				}
				switch o := chainOutcomeShared(out, v); o {
				case chainDrains, chainStops:
					got = o
					break follow
				case mark:
					got = chainStops
					break follow
				case chainUnknown:
				default:
					// On another worker's path: left to the single pass.
					break follow
				}
				if next[v] == chainNone {
					swapChainOutcome(out, v, chainUnknown, chainStops)
					got = chainStops
					break
				}
				if !swapChainOutcome(out, v, chainUnknown, mark) {
					// Another worker got to it first: look again.
					continue
				}
				path = append(path, v)
				v = next[v]
			}
			for _, p := range path {
				swapChainOutcome(out, p, mark, got)
			}
		}
		paths[w] = path
	})
}

// checkLiveness runs EventuallyDrained on the explored graph and, on a
// violation, rebuilds the path into the trap and a cycle inside it. The
// search is over: what it held besides the graph and the trace links is
// given back first (see releaseSearch).
func (e *exploration) checkLiveness() (*Counterexample, error) {
	n := e.links.n
	if e.chains {
		open, err := drainChains(n, e.workers, e.g.edges.eachIn, e.g.drained)
		e.open = open
		e.sampleHeap()
		return nil, err
	}
	trapped, err := eventuallyDrained(n, e.workers, e.g.edges.eachIn, e.g.drained)
	e.sampleHeap()
	if err != nil || len(trapped) == 0 {
		return nil, err
	}
	entry := trapped[0] // the shallowest trapped state
	// Forward adjacency: edges were recorded in (from) order.
	first := make(map[uint32][]uint32)
	inTrap := make(map[uint32]bool, len(trapped))
	for _, id := range trapped {
		inTrap[id] = true
	}
	err = e.g.edges.each(func(f, t uint32) {
		if inTrap[f] && inTrap[t] {
			first[f] = append(first[f], t)
		}
	})
	if err != nil {
		return nil, err
	}
	// Walk forward inside the trap until a state repeats: every trapped
	// state has a trapped successor (a trapped dead end would have failed
	// Quiescence), so the walk closes a cycle. The entry need not lie on
	// the cycle: the states before the repeated one are a stem that leads
	// from the entry into the cycle, and the trace shows it.
	seenAt := map[uint32]int{}
	var walk []uint32
	cycle := -1 // index in walk where the cycle starts
	for v := entry; ; {
		if i, ok := seenAt[v]; ok {
			cycle = i
			walk = append(walk, v)
			break
		}
		seenAt[v] = len(walk)
		walk = append(walk, v)
		succ := first[v]
		if len(succ) == 0 {
			panic("checker: a trapped state has no trapped successor")
		}
		v = loopStep(v, succ)
	}
	v := &model.Violation{Invariant: model.NameEventuallyDrained, Handoff: -1, Worker: -1,
		Detail: "from this state no fully drained state can be reached: something stays held forever"}
	v.Check = v.Detail
	// As for any state violation, counterexample marks the last step of
	// the path: here, the step that enters the trap.
	ce := e.counterexample(&found{v: v, pid: entry, move: -1})
	// Replay the stem and then the cycle concretely from the entry: the
	// stem extends the trace, the cycle is the loop. A step that does not
	// replay is a broken step function, never a reason to drop the loop.
	c := e.c
	s := e.replayTo(entry)
	for i := 1; i < len(walk); i++ {
		k := e.keyOf(walk[i])
		step, ok := c.concreteStep(&s, &k, "")
		if !ok {
			panic("checker: cannot replay the loop of a liveness counterexample")
		}
		if i <= cycle {
			ce.Steps = append(ce.Steps, step)
		} else {
			ce.Loop = append(ce.Loop, step)
		}
	}
	return ce, nil
}

// keyOf rebuilds the canonical key of a state id.
func (e *exploration) keyOf(id uint32) system.Key {
	keys := e.keysAlong(e.pathTo(id))
	return keys[len(keys)-1]
}

// replayTo rebuilds a concrete state of a state id.
func (e *exploration) replayTo(id uint32) system.State {
	c := e.c
	keys := e.keysAlong(e.pathTo(id))
	s := c.Initial()
	for i := 1; i < len(keys); i++ {
		if _, ok := c.concreteStep(&s, &keys[i], ""); !ok {
			panic("checker: cannot replay a path")
		}
	}
	return s
}

// loopStep picks the successor of trapped state v that the shown loop
// takes: the first one other than v itself, so that the loop shows
// movement, and the self-loop only when it is all there is.
func loopStep(v uint32, succ []uint32) uint32 {
	for _, s := range succ {
		if s != v {
			return s
		}
	}
	return succ[0]
}
