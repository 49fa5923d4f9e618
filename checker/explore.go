package checker

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/handoffcheck/handoffcheck/model"
)

// Limits bound an exploration. Zero means unbounded.
type Limits struct {
	MaxStates int // stop after the level in which this many distinct states were reached
	MaxDepth  int // do not expand states at this depth
	// MaxMemory bounds the process's resident memory during the run: the
	// exploration stops, mid-level if need be, before it passes this.
	MaxMemory int64
	// Workers is how many goroutines expand states (0: all cores).
	Workers int
	// Exact stores full keys instead of fingerprints: no collisions, more memory.
	Exact bool
	// Liveness records the state graph and checks EventuallyDrained.
	Liveness bool
}

// Stats are the measurements of an exploration.
type Stats struct {
	States      int // distinct states
	Transitions int64
	Depth       int
	Elapsed     time.Duration
	// StoreBytes is the visited set's memory; FingerprintBytes the part
	// taken by the 64-bit fingerprints alone.
	StoreBytes, FingerprintBytes int64
	// TraceBytes is the parent links kept to rebuild counterexamples.
	TraceBytes int64
	// GraphBytes is the transition graph kept for liveness.
	GraphBytes int64
	// PeakHeap is the largest growth of the Go heap over what it held when
	// the run started: the run's own data, not earlier runs'.
	PeakHeap uint64
	// PeakResident is the run's peak resident memory: the process's, from
	// the run's start (set by Check, which starts each run afresh; 0 where
	// the system does not say).
	PeakResident uint64
	Workers      int
}

// StatesPerSecond is distinct states per second.
func (s Stats) StatesPerSecond() float64 { return rate(float64(s.States), s.Elapsed) }

// TransitionsPerSecond is transitions per second.
func (s Stats) TransitionsPerSecond() float64 { return rate(float64(s.Transitions), s.Elapsed) }

func rate(n float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return n / d.Seconds()
}

// Progress is reported while exploring.
type Progress struct {
	Run         string
	States      int
	Transitions int64
	Depth       int
	Queue       int
	Elapsed     time.Duration
}

// found is a violation at a position of the exploration: the state id it
// was found from and the index of the move taken (-1: in the state itself).
type found struct {
	v    *model.Violation
	pid  uint32
	move int
	// new is set when the violation is a state invariant of a successor.
}

func (f *found) before(g *found) bool {
	if f.pid != g.pid {
		return f.pid < g.pid
	}
	return f.move < g.move
}

// candidate is a successor not seen in earlier levels.
type candidate struct {
	fp      uint64
	pid     uint32
	move    uint8
	drained bool
	off     int // offset of its key in the owning worker's key buffer
	isNew   bool
	id      uint32
}

// edge is one transition for the liveness graph. Its target is either
// known (to) or a state first reached in this level, found again by its
// fingerprint (and, in exact mode, its key) once the level is committed.
type edge struct {
	from uint32
	to   uint32
	fp   uint64 // 0 when to is known
	key  int32  // exact mode: index of the target's key in workerOut.edgeKeys
}

// graph is the explored state graph, kept for liveness.
type graph struct {
	from, to []uint32
	drained  []bool
}

// exploration holds the state of one BFS.
type exploration struct {
	c        *Checker
	lim      Limits
	words    int
	st       *store
	parent   []uint32
	via      []uint8
	g        *graph
	cov      *Coverage
	stats    Stats
	deadEnds int
	// states whose moves were cut by MaxDepth or a stop
	cut     bool
	stopWhy string
	viol    *found
	rootKey Key
	// heapStart is the live heap when the run started.
	heapStart uint64
}

// Result is the outcome of exploring one run.
type Result struct {
	Run      Run
	Stats    Stats
	Complete bool
	// StopReason says why an incomplete exploration stopped, as a short
	// code (one of the Stop* constants); StopDetail says it as a sentence.
	StopReason string
	StopDetail string
	Violation  *Counterexample
	Coverage   *Coverage
	// DeadEnds is how many quiescent states were found (all checked).
	DeadEnds int
	// Liveness is set when EventuallyDrained was checked.
	Liveness bool
	// Symmetry says whether states were reduced by symmetry.
	Symmetry bool
	Exact    bool
	// CollisionProbability estimates the chance that two distinct states
	// shared a fingerprint (0 in exact mode).
	CollisionProbability float64
}

// Explore runs a breadth-first exploration of every interleaving of the
// run's moves, checking every safety invariant on every step and state,
// Quiescence on every quiescent state and, with Limits.Liveness,
// EventuallyDrained on the explored graph. It stops at the first violation
// and rebuilds the shortest trace to it. Results are deterministic for any
// number of workers.
func (c *Checker) Explore(ctx context.Context, lim Limits, progress func(Progress)) *Result {
	start := time.Now()
	workers := lim.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	e := &exploration{c: c, lim: lim, words: 1 + c.nW + model.HandoffWords*c.nH, cov: newCoverage(c.proto.spec)}
	e.heapStart = readHeap()
	e.st = newStore(lim.Exact, e.words, lim.Liveness)
	e.stats.Workers = workers
	if lim.Liveness {
		e.g = &graph{}
	}
	var overMemory atomic.Bool
	// stopForMemory stops the run for its memory bound. Both checks, the
	// watcher's and the one before each level, stop through it, so that
	// the report gives the same reason whichever of them noticed.
	stopForMemory := func() {}
	if lim.MaxMemory > 0 {
		// The bound holds within a level too: a watcher stops the level
		// when resident memory nears the bound, and the collector works
		// harder as the heap nears it.
		old := debug.SetMemoryLimit(lim.MaxMemory)
		defer debug.SetMemoryLimit(old)
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		done := make(chan struct{})
		defer func() { close(done); cancel() }()
		stopForMemory = func() { overMemory.Store(true); cancel() }
		go watchMemory(lim.MaxMemory, done, stopForMemory)
	}
	init := c.Initial()
	var k Key
	c.canonical(&init, &k)
	e.rootKey = k
	fp := fingerprint(&k, e.words)
	e.insertRoot(fp, &k, c.Drained(&init))
	if v := c.CheckState(&init); v != nil {
		e.viol = &found{v: v, pid: 0, move: -1}
	}
	frontier := slices.Clone(k[:e.words])
	levelStart := uint32(0)
	lastReport := time.Now()
	stopped := func() string {
		if overMemory.Load() {
			return StopMaxMemory
		}
		return StopInterrupted
	}
	for depth := 0; len(frontier) > 0 && e.viol == nil; depth++ {
		if lim.MaxDepth > 0 && depth >= lim.MaxDepth {
			e.cut, e.stopWhy = true, StopMaxDepth
			break
		}
		if err := ctx.Err(); err != nil {
			e.cut, e.stopWhy = true, stopped()
			break
		}
		if lim.MaxMemory > 0 && e.levelWouldPass(len(frontier)/e.words, lim.MaxMemory) {
			stopForMemory()
			e.cut, e.stopWhy = true, stopped()
			break
		}
		next, interrupted := e.level(ctx, frontier, levelStart, workers)
		if interrupted {
			e.cut, e.stopWhy = true, stopped()
			break
		}
		levelStart += uint32(len(frontier) / e.words)
		frontier = next
		if len(next) > 0 {
			e.stats.Depth = depth + 1
		}
		if progress != nil && time.Since(lastReport) >= progressEvery {
			lastReport = time.Now()
			progress(Progress{Run: c.run.Name, States: len(e.parent), Transitions: e.stats.Transitions, Depth: depth + 1,
				Queue: len(next) / e.words, Elapsed: time.Since(start)})
		}
		e.sampleHeap()
		if e.viol == nil && len(next) > 0 {
			if lim.MaxStates > 0 && len(e.parent) >= lim.MaxStates {
				e.cut, e.stopWhy = true, StopMaxStates
				break
			}
		}
	}
	e.stats.States = len(e.parent)
	e.stats.Elapsed = time.Since(start)
	e.stats.StoreBytes = e.st.bytes(len(e.parent))
	e.stats.FingerprintBytes = e.st.fingerprintBytes()
	e.stats.TraceBytes = int64(len(e.parent))*4 + int64(len(e.via))
	if e.g != nil {
		e.stats.GraphBytes = int64(len(e.g.from))*8 + int64(len(e.g.drained))
	}
	e.sampleHeap()
	r := &Result{Run: c.run, Stats: e.stats, Coverage: e.cov, DeadEnds: e.deadEnds,
		Symmetry: c.sym.any(), Exact: lim.Exact, Complete: !e.cut && e.viol == nil}
	if e.cut {
		r.StopReason = e.stopWhy
		r.StopDetail = stopDetail(e.stopWhy, lim, r.Stats)
	}
	if !lim.Exact {
		n := float64(r.Stats.States)
		r.CollisionProbability = n * n / 2 / 18446744073709551616.0
	}
	if e.viol != nil {
		r.Violation = e.counterexample(e.viol)
		r.Complete = false
	} else if lim.Liveness && !e.cut && lim.MaxMemory > 0 && e.livenessWouldPass(lim.MaxMemory) {
		// The graph is complete, but judging it needs a reverse copy of
		// its edges that the bound does not leave room for.
		r.Complete = false
		r.StopReason = StopMaxMemory
		r.StopDetail = stopDetail(StopMaxMemory, lim, r.Stats) + "; EventuallyDrained not judged: its reverse graph would not fit"
	} else if lim.Liveness && !e.cut {
		r.Liveness = true
		if trap := e.checkLiveness(); trap != nil {
			r.Violation = trap
		}
	} else if lim.Liveness {
		r.StopDetail += "; EventuallyDrained not judged: the graph is incomplete"
	}
	return r
}

// progressEvery is how often Explore reports its progress, after the
// level that ends that long after the last report. A variable so that a
// test can see a report after every level.
var progressEvery = 2 * time.Second

// The reasons an exploration stops before it is complete, as the short
// codes reports carry (stop_reason in JSON).
const (
	StopMaxStates   = "max-states"
	StopMaxDepth    = "max-depth"
	StopMaxMemory   = "max-memory"
	StopInterrupted = "interrupted"
)

// stopDetail says a stop reason as a sentence.
func stopDetail(code string, lim Limits, s Stats) string {
	switch code {
	case StopMaxStates:
		return fmt.Sprintf("stopped after the level that reached %s distinct states (--max-states %d)", commas(int64(s.States)), lim.MaxStates)
	case StopMaxDepth:
		return fmt.Sprintf("stopped at depth %d (--max-depth)", lim.MaxDepth)
	case StopMaxMemory:
		return fmt.Sprintf("stopped before resident memory passed the bound of %s (--max-memory)", FormatBytes(lim.MaxMemory))
	case StopInterrupted:
		return "interrupted before the exploration completed"
	}
	return code
}

// FormatBytes renders a byte count in binary units: "3.4 GiB".
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// levelWouldPass reports whether expanding a level of n states could take
// resident memory past the bound. The watcher stops a level that grows past
// the estimate, but the commit of a level cannot stop halfway, so a level
// that cannot fit is not begun.
func (e *exploration) levelWouldPass(n int, bound int64) bool {
	return passes(int64(readResident()), e.levelNeed(n), bound)
}

// readResident reads resident memory for the checks made before a level
// and before liveness. It is a variable so that a test can give those
// checks the readings it needs; the watcher reads the real figure.
var readResident = residentBytes

// levelNeed estimates what expanding a level of n states allocates: per
// frontier state, about two new keys and candidates, a key of the next
// frontier and five graph edges; and the store may grow by half.
func (e *exploration) levelNeed(n int) int64 {
	need := int64(n) * int64(2*e.words*8+2*int(unsafe.Sizeof(candidate{}))+e.words*8)
	if e.g != nil {
		need += int64(n) * 5 * int64(unsafe.Sizeof(edge{})+8)
	}
	return need + e.st.bytes(len(e.parent))/2
}

// livenessWouldPass reports whether judging EventuallyDrained could take
// resident memory past the bound.
func (e *exploration) livenessWouldPass(bound int64) bool {
	return passes(int64(readResident()), e.livenessNeed(), bound)
}

// livenessNeed is what judging EventuallyDrained allocates: the reverse
// graph (an offset per state and a source per edge, 4 bytes each) and a
// flag per state.
func (e *exploration) livenessNeed() int64 {
	n, m := int64(len(e.parent)), int64(len(e.g.from))
	return 4*(n+1) + 4*m + 4*n + n
}

// passes reports whether resident memory plus what is about to be
// allocated reaches the threshold of the bound: the one comparison the
// watcher and the checks before a level and before liveness all make.
func passes(resident, need, bound int64) bool {
	return resident+need >= memoryThreshold(bound)
}

// memoryThreshold is where the watcher stops a level: a tenth of the
// bound, and at least 64 MiB, below it. The margin is what a level may
// still allocate between two looks and while it winds down.
func memoryThreshold(bound int64) int64 {
	return bound - max(bound/10, min(64<<20, bound/2))
}

// watchMemory calls stop once resident memory passes memoryThreshold. It
// returns when done is closed.
func watchMemory(bound int64, done <-chan struct{}, stop func()) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if passes(int64(residentBytes()), 0, bound) {
				stop()
				return
			}
		}
	}
}

// readHeap reads the live heap for PeakHeap. It is a variable so that a
// test can give a run the readings it would see, which the collector does
// not otherwise let a test choose.
var readHeap = heapObjects

// heapObjects is the live heap now.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		return s[0].Value.Uint64()
	}
	return 0
}

// sampleHeap records the live heap. runtime/metrics reads it without
// stopping the world, so sampling every level costs nothing measurable.
func (e *exploration) sampleHeap() {
	if h := readHeap(); h > e.heapStart {
		e.stats.PeakHeap = max(e.stats.PeakHeap, h-e.heapStart)
	}
}

func (e *exploration) insertRoot(fp uint64, k *Key, drained bool) {
	sh := shardOf(fp)
	if e.st.exact {
		e.st.keys[sh][*k] = 0
	} else {
		e.st.fp[sh].insert(fp)
	}
	e.parent = append(e.parent, 0)
	e.via = append(e.via, 0)
	if e.g != nil {
		e.g.drained = append(e.g.drained, drained)
	}
}

// workerOut is what one worker produced from its chunk of a level.
type workerOut struct {
	keys        []uint64
	cands       []candidate
	edges       []edge
	edgeKeys    []Key // exact mode: the keys of edge targets new in this level
	transitions int64
	deadEnds    int
	viol        *found
	cov         *Coverage
}

// level expands one BFS level: phase A expands chunks of the frontier in
// parallel against the visited set of earlier levels; phase B inserts the
// new candidates shard by shard in parallel, each shard in (parent, move)
// order; ids are then given in (parent, move) order. Every choice is fixed
// by the order of the frontier, so results do not depend on scheduling.
func (e *exploration) level(ctx context.Context, frontier []uint64, levelStart uint32, workers int) ([]uint64, bool) {
	n := len(frontier) / e.words
	chunks := min(n, workers*8)
	if chunks == 0 {
		return nil, false
	}
	outs := make([]workerOut, chunks)
	var wg sync.WaitGroup
	next := make(chan int, chunks)
	for i := 0; i < chunks; i++ {
		next <- i
	}
	close(next)
	// Each worker remembers what it already made a candidate of in this
	// level, so that a state reached many times in one level is checked,
	// buffered and inserted once per worker, not once per reach.
	seen := make([]levelSet, min(workers, chunks))
	for w := range seen {
		seen[w] = newLevelSet(e.st.exact)
	}
	for w := 0; w < min(workers, chunks); w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for ci := range next {
				if ctx.Err() != nil {
					continue
				}
				lo, hi := ci*n/chunks, (ci+1)*n/chunks
				outs[ci] = e.expand(ctx, frontier, levelStart, lo, hi, &seen[w])
			}
		}(w)
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, true
	}
	// The first violation in frontier order is the one to report: it lies
	// on a shortest path and does not depend on scheduling.
	for i := range outs {
		if outs[i].viol != nil {
			if e.viol == nil || outs[i].viol.before(e.viol) {
				e.viol = outs[i].viol
			}
		}
	}
	for i := range outs {
		e.stats.Transitions += outs[i].transitions
		e.deadEnds += outs[i].deadEnds
		e.cov.add(outs[i].cov)
	}
	if e.viol != nil {
		return nil, false
	}
	return e.commit(outs, workers), false
}

// expand is phase A for frontier states lo..hi.
func (e *exploration) expand(ctx context.Context, frontier []uint64, levelStart uint32, lo, hi int, seen *levelSet) workerOut {
	c := e.c
	// Most levels produce about one or two new candidates per state; size
	// the buffers for that so that appends rarely copy.
	out := workerOut{cov: newCoverage(c.proto.spec)}
	out.keys = make([]uint64, 0, 2*(hi-lo)*e.words)
	out.cands = make([]candidate, 0, 2*(hi-lo))
	if e.g != nil {
		out.edges = make([]edge, 0, 5*(hi-lo))
	}
	var ms moveSet
	var k Key
	// Per state, successors are built first and looked up after, in a
	// tight loop: the lookups are independent random reads of a large
	// table, and issuing them together lets the memory system overlap
	// their cache misses.
	var succ [len(ms.m)]struct {
		key Key
		fp  uint64
		t   State
	}
	var tx model.Tx
	var idx [len(ms.m)]int
	var ids [len(ms.m)]uint32
	var known [len(ms.m)]bool
	for i := lo; i < hi; i++ {
		if i&255 == 0 && ctx.Err() != nil {
			// Stopped (interrupt or memory bound): the level is dropped.
			break
		}
		pid := levelStart + uint32(i)
		copy(k[:e.words], frontier[i*e.words:(i+1)*e.words])
		s := c.unpack(&k)
		protocol := c.moves(&s, &ms)
		if protocol == 0 {
			out.deadEnds++
			if v := c.CheckQuiescence(&s); v != nil && out.viol == nil {
				out.viol = &found{v: v, pid: pid, move: -1}
			}
		}
		n := 0
		for mi := 0; mi < ms.n; mi++ {
			sc := &succ[n]
			sc.t = s
			tx.W, tx.J.N = &sc.t.W, 0
			c.apply(&sc.t, &tx, ms.m[mi], out.cov, ms.stuck)
			out.transitions++
			if v := c.judgeStep(&s, &sc.t, &tx.J, ms.m[mi]); v != nil {
				if out.viol == nil {
					out.viol = &found{v: v, pid: pid, move: mi}
				}
				continue
			}
			c.canonical(&sc.t, &sc.key)
			sc.fp = fingerprint(&sc.key, e.words)
			idx[n] = mi
			n++
		}
		for j := 0; j < n; j++ {
			ids[j], known[j] = e.st.lookup(succ[j].fp, &succ[j].key)
		}
		for j := 0; j < n; j++ {
			sc := &succ[j]
			// The liveness graph holds the moves the system makes on its
			// own: the environment may stop faulting for good, so a way to
			// a drained state must not need a fault or an early timer.
			own := e.g != nil && idx[j] < protocol && !(ms.m[idx[j]].Kind == MvTimer && !ms.stuck)
			if known[j] {
				if own {
					out.edges = append(out.edges, edge{from: pid, to: ids[j], key: -1})
				}
				continue
			}
			// A state reached twice in this level by this worker is a
			// candidate once: its first reach is the smallest (parent,
			// move), the one the level keeps anyway.
			if seen.has(sc.fp, &sc.key) {
				if own {
					out.edges = append(out.edges, e.newEdge(&out, pid, sc.fp, &sc.key))
				}
				continue
			}
			if v := c.CheckState(&sc.t); v != nil {
				if out.viol == nil || (out.viol.pid == pid && idx[j] < out.viol.move) {
					out.viol = &found{v: v, pid: pid, move: idx[j]}
				}
				continue
			}
			cd := candidate{fp: sc.fp, pid: pid, move: uint8(idx[j]), off: len(out.keys)}
			seen.add(sc.fp, &sc.key)
			if e.g != nil {
				cd.drained = c.Drained(&sc.t)
			}
			if own {
				out.edges = append(out.edges, e.newEdge(&out, pid, sc.fp, &sc.key))
			}
			out.keys = append(out.keys, sc.key[:e.words]...)
			out.cands = append(out.cands, cd)
		}
		if out.viol != nil {
			// Later states of this chunk cannot hold an earlier violation.
			break
		}
	}
	return out
}

// commit is phase B: insert the level's candidates and give ids to the new ones.
func (e *exploration) commit(outs []workerOut, workers int) []uint64 {
	// Route every candidate to its shard, keeping (parent, move) order:
	// chunks are in frontier order and candidates in each are in order.
	type ref struct{ w, i int }
	var byShard [numShards][]ref
	for w := range outs {
		for i := range outs[w].cands {
			sh := shardOf(outs[w].cands[i].fp)
			byShard[sh] = append(byShard[sh], ref{w, i})
		}
	}
	// Insert, shard by shard in parallel; within a shard the first
	// candidate in (parent, move) order wins.
	parallel(workers, numShards, func(sh int) {
		for _, r := range byShard[sh] {
			cd := &outs[r.w].cands[r.i]
			if e.st.exact {
				var k Key
				copy(k[:e.words], outs[r.w].keys[cd.off:cd.off+e.words])
				if _, ok := e.st.keys[sh][k]; !ok {
					e.st.keys[sh][k] = ^uint32(0)
					cd.isNew = true
				}
			} else {
				_, cd.isNew = e.st.fp[sh].insert(cd.fp)
			}
		}
	})
	// Ids in (parent, move) order: the order of the chunks and of the
	// candidates within them.
	fresh := 0
	for w := range outs {
		for i := range outs[w].cands {
			if cd := &outs[w].cands[i]; cd.isNew {
				cd.id = uint32(len(e.parent) + fresh)
				fresh++
			}
		}
	}
	next := make([]uint64, 0, fresh*e.words)
	for w := range outs {
		o := &outs[w]
		for i := range o.cands {
			cd := &o.cands[i]
			if !cd.isNew {
				continue
			}
			e.parent = append(e.parent, cd.pid)
			e.via = append(e.via, cd.move)
			if e.g != nil {
				e.g.drained = append(e.g.drained, cd.drained)
			}
			next = append(next, o.keys[cd.off:cd.off+e.words]...)
		}
	}
	if e.g == nil && !e.st.exact {
		return next
	}
	// Record the ids in the store, shard by shard in parallel: no shard
	// grows any more this level, so slots found now stay put.
	parallel(workers, numShards, func(sh int) {
		for _, r := range byShard[sh] {
			cd := &outs[r.w].cands[r.i]
			if !cd.isNew {
				continue
			}
			if e.st.exact {
				var k Key
				copy(k[:e.words], outs[r.w].keys[cd.off:cd.off+e.words])
				e.st.keys[sh][k] = cd.id
			} else {
				slot, _ := e.st.fp[sh].find(cd.fp)
				e.st.fp[sh].ids[slot] = cd.id
			}
		}
	})
	if e.g == nil {
		return next
	}
	// Resolve the edges of each chunk in parallel, then append them in
	// chunk order so that the graph stays ordered by source state.
	froms := make([][]uint32, len(outs))
	tos := make([][]uint32, len(outs))
	parallel(workers, len(outs), func(w int) {
		o := &outs[w]
		froms[w] = make([]uint32, len(o.edges))
		tos[w] = make([]uint32, len(o.edges))
		for i, ed := range o.edges {
			to := ed.to
			if ed.fp != 0 {
				var k *Key
				if e.st.exact {
					k = &o.edgeKeys[ed.key]
				}
				to, _ = e.st.lookup(ed.fp, k)
			}
			froms[w][i], tos[w][i] = ed.from, to
		}
	})
	for w := range outs {
		e.g.from = append(e.g.from, froms[w]...)
		e.g.to = append(e.g.to, tos[w]...)
	}
	return next
}

// parallel runs f(0..n-1) on up to workers goroutines.
func parallel(workers, n int, f func(int)) {
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// newEdge records a transition to a state first reached in this level.
func (e *exploration) newEdge(out *workerOut, from uint32, fp uint64, k *Key) edge {
	ed := edge{from: from, fp: fp}
	if e.st.exact {
		ed.key = int32(len(out.edgeKeys))
		out.edgeKeys = append(out.edgeKeys, *k)
	}
	return ed
}

// levelSet is what one worker made a candidate of in the current level.
type levelSet struct {
	fps  fpTable
	keys map[Key]struct{}
}

func newLevelSet(exact bool) levelSet {
	if exact {
		return levelSet{keys: map[Key]struct{}{}}
	}
	return levelSet{}
}

func (l *levelSet) has(fp uint64, k *Key) bool {
	if l.keys != nil {
		_, ok := l.keys[*k]
		return ok
	}
	_, ok := l.fps.lookup(fp)
	return ok
}

func (l *levelSet) add(fp uint64, k *Key) {
	if l.keys != nil {
		l.keys[*k] = struct{}{}
		return
	}
	l.fps.insert(fp)
}
