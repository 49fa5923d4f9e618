package checker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
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
	// SpillDir is where large frontiers and trace links go (see spill.go);
	// "" is the system's temporary directory.
	SpillDir string
	// Bitstate, when above zero, is the size in bytes of a bit array that
	// replaces the visited set (see bitstate.go). It keeps no ids and no
	// keys, so it turns Liveness and Exact off.
	Bitstate int64
	// Checkpoint, when set, is a directory where the search's state is
	// written every CheckpointEvery (at the next batch boundary), when it
	// is stopped, and when it completes; Resume is a directory to
	// continue from (see checkpoint.go). Both need Liveness and Exact off.
	Checkpoint, Resume string
	CheckpointEvery    time.Duration
	// DiskAfter moves the fingerprints to disk once this many states are
	// known, whatever the memory (0: only when --max-memory would be
	// reached): to test and to measure the disk-backed search.
	DiskAfter int
	// Reduce turns partial-order reduction on (por.go): where one
	// handoff's moves touch nothing shared, only they are taken. It
	// keeps every safety verdict and quiescent state, not the liveness
	// graph: with Liveness it is off.
	Reduce bool
	// Sleep adds sleep sets to the reduction (sleep.go). They are off
	// with Exact, Bitstate, Checkpoint and Resume, and a search that
	// must move its fingerprints to disk (DiskAfter, or MaxMemory)
	// starts again without them.
	Sleep bool
	// sleepAlone keeps sleep sets and drops persistent sets: a search
	// that must then reach every state of the full one (tests).
	sleepAlone bool
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
	// TraceBytes is the parent links kept in memory to rebuild
	// counterexamples; SpilledBytes what went to files (frontiers,
	// links and fingerprints, see spill.go and diskset.go).
	TraceBytes, SpilledBytes int64
	// DiskAt is how many states were known when the fingerprints moved
	// to disk (0: they never did); DiskMerges counts the merges since.
	DiskAt, DiskMerges int
	// GraphBytes is the transition graph kept for liveness.
	GraphBytes int64
	// Reduced counts the states expanded by one handoff's moves alone
	// (partial-order reduction), Pruned the moves not taken there.
	Reduced int
	Pruned  int64
	// Slept counts the moves not taken because they were asleep (sleep
	// sets), Woken the states expanded again for moves that woke up.
	Slept int64
	Woken int
	// ConfirmStates is how many states the search without reduction
	// explored to find the shortest trace to a violation the reduced
	// search found (0: none was needed).
	ConfirmStates int
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

// diskable reports whether the search can move its fingerprints to disk:
// a fingerprint search keeping no ids (no liveness graph).
func (e *exploration) diskable() bool {
	return !e.st.exact && !e.st.bitstate && e.g == nil
}

// goToDisk moves the fingerprints to disk. The table, written to the
// file, gives its memory back and a window takes its place: a quarter of
// the memory bound at most, so that the window, the level's buffers and
// the merges' reads stay well under the bound the move was made for (a
// window as large as the table was, kept, left the run a twentieth of
// the bound to grow in). The window takes up to 0.7 of its slots' 0.8
// load, so that no shard, each loaded near the average, grows.
func (e *exploration) goToDisk() error {
	slots := 0
	for i := range e.st.fp {
		slots += len(e.st.fp[i].fps)
	}
	if b := e.lim.MaxMemory; b > 0 {
		slots = min(slots, int(b/4/8))
	}
	e.stats.DiskAt = e.links.n
	err := e.toDisk(slots / numShards)
	e.onDisk.Store(err == nil)
	return err
}

// elapsed is the time spent on the run, before a resume included.
func (e *exploration) elapsed() time.Duration { return e.before + time.Since(e.start) }

// ResidentPerState is the run's peak resident memory over its distinct
// states (0 when either is unknown): the whole process's memory, not only
// the visited set's.
func (s Stats) ResidentPerState() float64 {
	if s.States == 0 {
		return 0
	}
	return float64(s.PeakResident) / float64(s.States)
}

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

// candidate is a successor that was not in the visited set when looked up
// (nor in its worker's cache): the commit finds whether it is new.
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
// fingerprint (and, in exact mode, its key) once its batch is committed.
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
	c     *Checker
	lim   Limits
	words int
	st    *store
	links linkLog
	spill spillDir
	// recent is each worker's cache of fingerprints it has lately seen
	// known or made a candidate of (see recentSet).
	recent []recentSet
	// succ is each worker's buffer of the successors of one state.
	succ []*successors
	// diskErr is a failure of the spill files or checkpoints, which
	// stops the run.
	diskErr error
	// disk is set once the fingerprints moved to disk (diskset.go);
	// unchecked then queues the candidates new to the window. wantDisk
	// asks for the move from the memory watcher.
	disk      *diskSet
	unchecked *keyQueue
	wantDisk  atomic.Bool
	onDisk    atomic.Bool
	// ckpt writes checkpoints; identity names the search in them.
	ckpt     *checkpointer
	identity string
	// levelDone counts the frontier states of the level under way that
	// were expanded and committed.
	levelDone int
	// byShard routes a batch's candidates to their shards (commit).
	byShard [numShards][]candRef
	// start is when this process began the run; before is the time
	// spent on it before a resume.
	start  time.Time
	before time.Duration
	g      *graph
	// por: partial-order reduction is on (Limits.Reduce, no liveness).
	por bool
	// sleep interns the sleep sets, nil when they are off; fwords is a
	// frontier entry's length: the key, and with sleep sets one word
	// more (sleepFull, or the set a wake entry was expanded with).
	sleep    *sleepSets
	fwords   int
	entryBuf []uint64
	// woken counts the wake entries among the ids: states listed twice.
	woken int
	// sleepDropped says why the search stopped to start again without
	// sleep sets ("" when it did not).
	sleepDropped string
	cov          *Coverage
	stats        Stats
	deadEnds     int
	// states whose moves were cut by MaxDepth or a stop
	cut     bool
	stopWhy string
	// memStop is what the check that stopped the run for its memory
	// bound read (nil: none did), for the report to say.
	memStop atomic.Pointer[memReading]
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
	// Bitstate is set when the visited set was a bit array.
	Bitstate *Bitstate
	// Checkpoints counts the checkpoints written; Resumed says the run
	// continued from one.
	Checkpoints int
	Resumed     bool
	// Reduction says partial-order reduction was on (Stats.Reduced and
	// Stats.Pruned say how much it took away).
	Reduction bool
	// Sleep says sleep sets were on (Stats.Slept and Stats.Woken);
	// SleepDropped says why a search started again without them.
	Sleep        bool
	SleepDropped string
	// stopResident is the resident memory the check that stopped the run
	// for its bound read (0: none did); the run's peak is at least that.
	stopResident uint64
}

// Explore runs a breadth-first exploration of every interleaving of the
// run's moves, checking every safety invariant on every step and state,
// Quiescence on every quiescent state and, with Limits.Liveness,
// EventuallyDrained on the explored graph. It stops at the first violation
// and rebuilds the shortest trace to it. Results are deterministic for any
// number of workers.
func (c *Checker) Explore(ctx context.Context, lim Limits, progress func(Progress)) *Result {
	r := c.explore(ctx, lim, progress)
	if r.Reduction && r.Violation != nil && ctx.Err() == nil {
		c.confirmShortest(ctx, lim, r)
	}
	return r
}

// explore runs the search. One with sleep sets that had to move its
// fingerprints to disk (where the sets are not kept) or met more sets
// than it can name starts again without them: the report says so, and
// its time includes the first attempt.
func (c *Checker) explore(ctx context.Context, lim Limits, progress func(Progress)) *Result {
	r, dropped := c.exploreOnce(ctx, lim, progress)
	if dropped == "" || ctx.Err() != nil {
		return r
	}
	lim.Sleep = false
	r2, _ := c.exploreOnce(ctx, lim, progress)
	r2.Stats.Elapsed += r.Stats.Elapsed
	r2.SleepDropped = dropped
	return r2
}

func (c *Checker) exploreOnce(ctx context.Context, lim Limits, progress func(Progress)) (*Result, string) {
	start := time.Now()
	workers := lim.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	e := &exploration{c: c, lim: lim, words: 1 + c.nW + model.HandoffWords*c.nH, cov: newCoverage(c.proto.spec), start: start}
	e.heapStart = readHeap()
	if lim.Bitstate > 0 {
		lim.Liveness, lim.Exact = false, false
		e.lim = lim
	}
	e.por = lim.Reduce && !lim.Liveness
	if lim.Bitstate > 0 {
		e.st = newBitStore(e.words, lim.Bitstate)
	} else {
		e.st = newStore(lim.Exact, e.words, lim.Liveness, e.sleepsOn(lim))
	}
	e.fwords = e.words
	if e.sleepsOn(lim) {
		e.sleep = newSleepSets()
		e.fwords++
	}
	e.spill.parent = lim.SpillDir
	e.links.dir = &e.spill
	defer func() {
		// Everything the run held outside the Go heap goes back now: the
		// result keeps none of it.
		e.st.free()
		e.links.close()
		e.spill.remove()
	}()
	e.stats.Workers = workers
	e.recent = make([]recentSet, workers)
	e.succ = make([]*successors, workers)
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
		canDisk := e.diskable()
		go watchMemory(lim.MaxMemory, done, func(rss int64) bool {
			// A search that can move its fingerprints to disk does so
			// at its next batch, and the watcher goes on watching: its
			// table stops growing there but keeps what it holds, so only
			// the bound itself (less a twentieth) stops it then. One that
			// cannot stops at the threshold.
			limit := memoryThreshold(lim.MaxMemory)
			if canDisk {
				limit = diskThreshold(lim.MaxMemory)
				if !e.wantDisk.Swap(true) || !e.onDisk.Load() || rss < limit {
					return false
				}
			}
			e.memStop.Store(&memReading{resident: rss, limit: limit, bound: lim.MaxMemory, midLevel: true})
			stopForMemory()
			return true
		})
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
	frontier := newKeyQueue(e.fwords, &e.spill)
	frontier.push(e.entry(k[:e.words], sleepFull))
	defer func() { frontier.close() }()
	levelStart := uint32(0)
	startDepth, skip := 0, 0
	var resumedNext *keyQueue
	resumedRun := false
	if lim.Checkpoint != "" || lim.Resume != "" {
		e.identity = c.identity(e.words, lim.Bitstate, e.por)
		if err := checkpointLimits(lim); err != nil {
			e.diskErr = err
		}
	}
	if lim.Checkpoint != "" && e.diskErr == nil {
		e.ckpt = &checkpointer{dir: CheckpointDir(lim.Checkpoint, c.run), every: lim.CheckpointEvery, last: time.Now()}
	}
	if lim.Resume != "" && e.diskErr == nil {
		res, ok, err := e.restore(CheckpointDir(lim.Resume, c.run))
		switch {
		case err != nil:
			e.diskErr = err
		case ok:
			frontier.close()
			frontier, resumedNext = res.frontier, res.next
			levelStart, startDepth, skip = res.levelStart, res.depth, res.done
			e.stats.Depth, e.before, resumedRun = res.depth, res.elapsed, true
		}
	}
	if e.diskErr != nil {
		// Nothing is explored: the run stops at once, saying why.
		e.cut, e.stopWhy = true, StopDisk
		frontier.n = 0
	}
	lastReport := time.Now()
	stopped := func() string {
		switch {
		case e.diskErr != nil:
			return StopDisk
		case overMemory.Load():
			return StopMaxMemory
		}
		return StopInterrupted
	}
	// stopBefore saves a checkpoint of a run stopped before a level (or
	// before the rest of the level it resumed in).
	stopBefore := func(depth int) {
		if e.ckpt == nil || e.diskErr != nil {
			return
		}
		next := resumedNext
		if next == nil {
			next = newKeyQueue(e.fwords, &e.spill)
			defer next.close()
		}
		e.save(frontier, next, depth, levelStart, skip, false)
		if e.ckpt.err != nil {
			e.diskErr = e.ckpt.err
			e.stopWhy = StopDisk
		}
	}
	for depth := startDepth; frontier.n > 0 && e.viol == nil; depth++ {
		if lim.MaxDepth > 0 && depth >= lim.MaxDepth {
			e.cut, e.stopWhy = true, StopMaxDepth
			stopBefore(depth)
			break
		}
		if err := ctx.Err(); err != nil {
			e.cut, e.stopWhy = true, stopped()
			stopBefore(depth)
			break
		}
		// A level that would not fit under the bound moves a search
		// that can go to disk there (its table stops growing), and is
		// judged again; one that cannot, or still does not fit, stops.
		pass := lim.MaxMemory > 0 && e.levelWouldPass(frontier.n, lim.MaxMemory)
		if (pass || e.wantDisk.Load()) && e.disk == nil && e.diskable() {
			if e.sleep != nil {
				e.sleepDropped = sleepDroppedDisk
				e.cut, e.stopWhy = true, StopInterrupted
				break
			}
			if err := e.goToDisk(); err != nil {
				e.diskErr = err
				e.cut, e.stopWhy = true, StopDisk
				break
			}
			pass = pass && e.levelWouldPass(frontier.n, lim.MaxMemory)
		}
		if pass {
			stopForMemory()
			e.cut, e.stopWhy = true, stopped()
			stopBefore(depth)
			break
		}
		next := resumedNext
		if next == nil {
			next = newKeyQueue(e.fwords, &e.spill)
		}
		resumedNext = nil
		mark := e.mark()
		interrupted := e.level(ctx, frontier, next, levelStart, workers, skip, depth)
		skip = 0
		if interrupted {
			if e.ckpt != nil && e.diskErr == nil {
				// The batches committed so far are a consistent state: a
				// resumed run goes on from the next one.
				e.save(frontier, next, depth, levelStart, e.levelDone, false)
				if e.ckpt.err != nil {
					e.diskErr = e.ckpt.err
				}
			}
			// The level's committed batches are dropped: the figures are
			// those of the levels the run completed (or, resumed within
			// a level, of the point it resumed from).
			e.rollback(mark)
			next.close()
			e.cut, e.stopWhy = true, stopped()
			break
		}
		levelStart += uint32(frontier.n)
		frontier.close()
		frontier = next
		if next.n > 0 {
			e.stats.Depth = depth + 1
		}
		if progress != nil && time.Since(lastReport) >= progressEvery {
			lastReport = time.Now()
			progress(Progress{Run: c.run.Name, States: e.states(), Transitions: e.stats.Transitions, Depth: depth + 1,
				Queue: next.n, Elapsed: time.Since(start)})
		}
		e.sampleHeap()
		if e.viol == nil && next.n > 0 {
			if lim.MaxStates > 0 && e.states() >= lim.MaxStates {
				e.cut, e.stopWhy = true, StopMaxStates
				stopBefore(depth + 1)
				break
			}
		}
	}
	if e.ckpt != nil && !e.cut && e.viol == nil && e.diskErr == nil {
		// A completed search leaves a checkpoint that resumes to its end
		// at once.
		empty := newKeyQueue(e.words, &e.spill)
		e.save(frontier, empty, e.stats.Depth, levelStart, 0, true)
		empty.close()
		if e.ckpt.err != nil {
			e.diskErr = e.ckpt.err
			e.cut, e.stopWhy = true, StopDisk
		}
	}
	e.stats.States = e.states()
	e.stats.Woken = e.woken
	e.stats.Elapsed = e.elapsed()
	if e.disk != nil {
		e.stats.DiskMerges = e.disk.merges - 1
		e.unchecked.close()
	}
	e.stats.StoreBytes = e.st.bytes(e.links.n)
	e.stats.FingerprintBytes = e.st.fingerprintBytes()
	e.stats.TraceBytes = int64(len(e.links.buf))
	e.stats.SpilledBytes = e.spill.written
	if e.g != nil {
		e.stats.GraphBytes = int64(len(e.g.from))*8 + int64(len(e.g.drained))
	}
	e.sampleHeap()
	r := &Result{Run: c.run, Stats: e.stats, Coverage: e.cov, DeadEnds: e.deadEnds, Resumed: resumedRun, Reduction: e.por, Sleep: e.sleep != nil,
		Symmetry: c.sym.any(), Exact: lim.Exact, Complete: !e.cut && e.viol == nil}
	if e.cut {
		r.StopReason = e.stopWhy
		r.StopDetail = stopDetail(e.stopWhy, lim, r.Stats)
		if m := e.memStop.Load(); m != nil && e.stopWhy == StopMaxMemory {
			r.StopDetail += m.String()
			r.stopResident = uint64(max(m.resident, 0))
		}
		if e.stopWhy == StopDisk {
			r.StopDetail += ": " + e.diskErr.Error()
		}
	}
	if !lim.Exact {
		n := float64(r.Stats.States)
		r.CollisionProbability = n * n / 2 / 18446744073709551616.0
	}
	if e.st.bitstate {
		r.Bitstate = e.st.bitstateReport(r.Stats.States)
	}
	if e.ckpt != nil {
		r.Checkpoints = e.ckpt.written
	}
	if e.viol != nil {
		r.Violation = e.counterexample(e.viol)
		if e.por {
			r.Violation = c.shortenReduced(r.Violation)
		}
		r.Complete = false
	} else if lim.Liveness && !e.cut && lim.MaxMemory > 0 && e.livenessWouldPass(lim.MaxMemory) {
		// The graph is complete, but judging it needs a reverse copy of
		// its edges that the bound does not leave room for.
		r.Complete = false
		r.StopReason = StopMaxMemory
		r.StopDetail = stopDetail(StopMaxMemory, lim, r.Stats) + e.memStop.Load().String() + "; EventuallyDrained not judged: its reverse graph would not fit"
		r.stopResident = uint64(max(e.memStop.Load().resident, 0))
	} else if lim.Liveness && !e.cut {
		r.Liveness = true
		if trap := e.checkLiveness(); trap != nil {
			r.Violation = trap
		}
	} else if lim.Liveness {
		r.StopDetail += "; EventuallyDrained not judged: the graph is incomplete"
	}
	return r, e.sleepDropped
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
	StopDisk        = "disk"
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
	case StopDisk:
		return "stopped: a file the search keeps on disk failed"
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
//
// A search whose fingerprints are on disk is judged against the bound
// less a twentieth, as the watcher judges it: its window does not grow,
// and what a level allocates besides is all in the estimate, so the
// margin the threshold keeps for growth the estimate misses would stop
// it at half a small bound.
func (e *exploration) levelWouldPass(n int, bound int64) bool {
	limit := memoryThreshold(bound)
	if e.disk != nil {
		limit = diskThreshold(bound)
	}
	m := memReading{resident: int64(readResident()), need: e.levelNeed(n), limit: limit, bound: bound}
	if m.resident+m.need < limit {
		return false
	}
	e.memStop.Store(&m)
	return true
}

// memReading is what a check of the memory bound read when it stopped
// the run: resident memory, what was about to be allocated (0 for the
// watcher, which stops a level under way), and the figure they reached.
type memReading struct {
	resident, need, limit, bound int64
	midLevel                     bool
}

// String says the reading for a stop's detail, so that the stop and the
// peak resident memory the report gives can be read together.
func (m *memReading) String() string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	if m.midLevel {
		fmt.Fprintf(&b, ": %s resident within a level reached %s", FormatBytes(m.resident), FormatBytes(m.limit))
	} else {
		fmt.Fprintf(&b, ": %s resident and about %s more to allocate would reach %s", FormatBytes(m.resident), FormatBytes(m.need), FormatBytes(m.limit))
	}
	if m.limit == memoryThreshold(m.bound) && m.limit < diskThreshold(m.bound) {
		// A search in memory keeps a margin for what a level allocates
		// between two looks at resident memory: say where it stopped.
		fmt.Fprintf(&b, ", the bound less the %s kept for what a level allocates between two looks", FormatBytes(m.bound-m.limit))
	}
	return b.String()
}

// readResident reads resident memory for the checks made before a level
// and before liveness. It is a variable so that a test can give those
// checks the readings it needs; the watcher reads the real figure.
var readResident = residentBytes

// levelNeed estimates what expanding a level of n states allocates: the
// batch buffers (see level), the next frontier's part in memory (at most
// spillLimit: it moves to a file when larger), five graph edges per state
// when the graph is kept, and half the store again, which may grow by that
// much.
func (e *exploration) levelNeed(n int) int64 {
	need := e.batchNeed() + min(int64(n)*int64(e.fwords*8), int64(spillLimit))
	if e.g != nil {
		need += int64(n) * 5 * int64(unsafe.Sizeof(edge{})+8)
	}
	if e.disk != nil {
		// The window of a search on disk never grows. A merge of the
		// window with the file reads and writes through two buffers and
		// marks each of the window's fingerprints, and the candidates
		// new to the window queue in memory up to spillLimit.
		return need + e.mergeNeed()
	}
	if e.st.bitstate {
		// A bit array never grows.
		return need
	}
	return need + e.st.bytes(e.links.n)/2
}

// mergeNeed is what a search on disk allocates besides a level's
// buffers: a merge's two file buffers and a flag per slot of the window,
// and the part in memory of the queue of candidates new to the window.
func (e *exploration) mergeNeed() int64 {
	return 2*mergeBuffer + int64(e.disk.window) + int64(spillLimit)
}

// batchNeed is what one batch's buffers take: its frontier keys, and per
// state two successor keys and two candidates.
func (e *exploration) batchNeed() int64 {
	per := int64(batchPerWorker * max(len(e.recent), 1))
	return per*int64(e.fwords*8) + per*int64(2*e.words*8+2*int(unsafe.Sizeof(candidate{}))) + int64(len(e.recent))*recentSize*8
}

// livenessWouldPass reports whether judging EventuallyDrained could take
// resident memory past the bound.
func (e *exploration) livenessWouldPass(bound int64) bool {
	m := memReading{resident: int64(readResident()), need: e.livenessNeed(), limit: memoryThreshold(bound), bound: bound}
	if !passes(m.resident, m.need, bound) {
		return false
	}
	e.memStop.Store(&m)
	return true
}

// livenessNeed is what judging EventuallyDrained allocates: the reverse
// graph (an offset per state and a source per edge, 4 bytes each) and a
// flag per state.
func (e *exploration) livenessNeed() int64 {
	n, m := int64(e.links.n), int64(len(e.g.from))
	return 4*(n+1) + 4*m + 4*n + n
}

// passes reports whether resident memory plus what is about to be
// allocated reaches the threshold of the bound: the one comparison the
// watcher and the checks before a level and before liveness all make.
func passes(resident, need, bound int64) bool {
	return resident+need >= memoryThreshold(bound)
}

// diskThreshold is where a search whose fingerprints are on disk stops:
// a twentieth of the bound below it.
func diskThreshold(bound int64) int64 { return bound - bound/20 }

// memoryThreshold is where the watcher stops a level: a tenth of the
// bound, and at least 64 MiB, below it. The margin is what a level may
// still allocate between two looks and while it winds down.
func memoryThreshold(bound int64) int64 {
	return bound - max(bound/10, min(64<<20, bound/2))
}

// watchMemory calls stop whenever resident memory is past memoryThreshold,
// until stop says it stopped the run. It returns then or when done is
// closed. It looks again sooner the nearer memory is to the threshold:
// each look takes a core from the workers for a moment (see
// residentSampleEvery), and far below the bound a look every 5 ms only
// costs the run its rate.
func watchMemory(bound int64, done <-chan struct{}, stop func(resident int64) bool) {
	for {
		rss := int64(residentBytes())
		if passes(rss, 0, bound) {
			if stop(rss) {
				return
			}
		}
		select {
		case <-done:
			return
		case <-time.After(watchAgain(memoryThreshold(bound) - rss)):
		}
	}
}

// residentGrowth is a rate resident memory does not pass while a run
// explores: several times what writing a new table or filling a batch's
// buffers reaches on one core (about 1 to 2 GB/s).
const residentGrowth = 8 << 30 // bytes per second

// watchAgain is how long the watcher may wait with gap bytes left below
// the threshold: the time resident memory takes to grow by gap at
// residentGrowth, between 5 ms and a quarter of a second.
func watchAgain(gap int64) time.Duration {
	d := time.Duration(float64(max(gap, 0)) / residentGrowth * float64(time.Second))
	return min(max(d, 5*time.Millisecond), 250*time.Millisecond)
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
	if e.st.exact {
		e.st.keys[shardOf(fp)][*k] = 0
	} else {
		e.st.insertFP(fp)
		if e.sleep != nil {
			t := &e.st.fp[shardOf(fp)]
			slot, _ := t.find(fp)
			t.sleep[slot] = sleepPending
		}
	}
	e.links.append(0, 0)
	if e.g != nil {
		e.g.drained = append(e.g.drained, drained)
	}
}

// levelMark is what a level adds to, taken before it: an interrupted
// level is dropped whole.
type levelMark struct {
	states      int
	transitions int64
	deadEnds    int
	reduced     int
	pruned      int64
	slept       int64
	woken       int
	rows        [2][]uint64
	edges       int
}

func (e *exploration) mark() levelMark {
	m := levelMark{states: e.links.n, transitions: e.stats.Transitions, deadEnds: e.deadEnds, reduced: e.stats.Reduced, pruned: e.stats.Pruned,
		slept: e.stats.Slept, woken: e.woken}
	for r := range m.rows {
		m.rows[r] = slices.Clone(e.cov.Rows[r])
	}
	if e.g != nil {
		m.edges = len(e.g.from)
	}
	return m
}

// rollback forgets what was added since m, except the visited set: the
// run stops, and the set is not reported state by state.
func (e *exploration) rollback(m levelMark) {
	e.links.truncate(m.states)
	e.stats.Transitions, e.deadEnds = m.transitions, m.deadEnds
	e.stats.Reduced, e.stats.Pruned = m.reduced, m.pruned
	e.stats.Slept, e.woken = m.slept, m.woken
	e.cov.Rows = m.rows
	if e.g != nil {
		e.g.from, e.g.to, e.g.drained = e.g.from[:m.edges], e.g.to[:m.edges], e.g.drained[:m.states]
	}
}

// workerOut is what one worker produced from its chunk of a batch.
type workerOut struct {
	keys        []uint64
	cands       []candidate
	edges       []edge
	edgeKeys    []Key // exact mode: the keys of edge targets new in this level
	transitions int64
	deadEnds    int
	reduced     int
	pruned      int64
	viol        *found
	cov         *Coverage
	// With sleep sets: the table slots of the states expanded (shard in
	// the high half), whose frontier wait ends at the commit; the known
	// states reached with a set that does not hold theirs, and their keys.
	slept     int64
	candSleep []sleepSet // each candidate's set
	expanded  []uint64
	actions   []sleepAction
	wakeKeys  []uint64
}

// successors holds the successors of one state while they are looked up.
type successors [maxMoves]struct {
	key Key
	fp  uint64
	t   State
}

// batchPerWorker is how many frontier states each worker expands between
// two commits. A level is expanded in batches read in order from the
// frontier, so that what a level buffers does not grow with the level; a
// batch small enough that its table probes are still in cache when it is
// committed makes the commit's second probe of each new state cheap.
const batchPerWorker = 1024

// level expands one BFS level batch by batch. For each batch, phase A
// expands chunks of it in parallel against the visited set (which holds
// earlier levels and this level's earlier batches); phase B inserts the
// new candidates shard by shard in parallel, each shard in (parent, move)
// order, and gives ids in (parent, move) order. Every choice is fixed by
// the order of the frontier, so results do not depend on scheduling. It
// reports whether the level was interrupted (a stop, or a spill file that
// failed).
func (e *exploration) level(ctx context.Context, frontier, next *keyQueue, levelStart uint32, workers, skip, depth int) bool {
	rd := frontier.reader()
	per := batchPerWorker * workers
	buf := make([]uint64, per*e.fwords)
	outs := make([]workerOut, workers*4)
	// Resumed within the level: the states before skip were expanded
	// and committed before the checkpoint.
	rd.skip(skip, buf)
	e.levelDone = skip
	for done := skip; ; {
		n := rd.read(buf, per)
		if rd.err != nil {
			e.diskErr = rd.err
			return true
		}
		if n == 0 {
			if e.disk != nil {
				// The level's last window is merged: its new states are
				// the next frontier's last.
				if err := e.flush(next); err != nil {
					e.diskErr = err
					return true
				}
			}
			return false
		}
		chunks := min(n, len(outs))
		if workers == 1 {
			chunks = 1
			e.expand(ctx, buf, levelStart+uint32(done), 0, n, 0, &outs[0])
		} else {
			parallelOn(workers, chunks, func(w, ci int) {
				if ctx.Err() == nil {
					lo, hi := ci*n/chunks, (ci+1)*n/chunks
					e.expand(ctx, buf, levelStart+uint32(done), lo, hi, w, &outs[ci])
				}
			})
		}
		if ctx.Err() != nil {
			return true
		}
		batch := outs[:chunks]
		// The first violation in frontier order is the one to report: it
		// lies on a shortest path and does not depend on scheduling. The
		// batches before this one held none, and chunks are in frontier
		// order. A chunk stops after the state its violation was found
		// from, so the figures of the chunks up to the first violating
		// one count every state up to that one in frontier order, and no
		// other: the same figures for any number of workers.
		for i := range batch {
			if batch[i].viol != nil {
				e.viol = batch[i].viol
				batch = batch[:i+1]
				break
			}
		}
		for i := range batch {
			e.stats.Transitions += batch[i].transitions
			e.deadEnds += batch[i].deadEnds
			e.stats.Reduced += batch[i].reduced
			e.stats.Pruned += batch[i].pruned
			e.stats.Slept += batch[i].slept
			e.cov.add(batch[i].cov)
		}
		if e.viol != nil {
			return false
		}
		e.commit(batch, workers, next)
		if next.err != nil || e.links.err != nil {
			e.diskErr = errors.Join(next.err, e.links.err)
			return true
		}
		if e.sleep != nil && e.sleep.full {
			e.sleepDropped = sleepDroppedFull
			return true
		}
		done += n
		e.levelDone = done
		if e.disk != nil && e.st.windowSize() >= e.disk.window {
			if err := e.flush(next); err != nil {
				e.diskErr = err
				return true
			}
		}
		if lim := e.lim.DiskAfter; lim > 0 && e.links.n >= lim && e.diskable() {
			e.wantDisk.Store(true)
		}
		if e.wantDisk.Load() && e.disk == nil {
			if e.sleep != nil {
				e.sleepDropped = sleepDroppedDisk
				return true
			}
			if err := e.goToDisk(); err != nil {
				e.diskErr = err
				return true
			}
		}
		if e.ckpt != nil && e.ckpt.due() {
			e.save(frontier, next, depth, levelStart, done, false)
			if e.ckpt.err != nil {
				e.diskErr = e.ckpt.err
				return true
			}
		}
	}
}

// expand is phase A for the batch's states lo..hi, whose first has id
// batchStart, on worker w. It fills out, reusing its buffers.
func (e *exploration) expand(ctx context.Context, batch []uint64, batchStart uint32, lo, hi, w int, out *workerOut) {
	c := e.c
	// Most states produce about one or two new candidates; size the
	// buffers for that so that appends rarely copy.
	out.keys = slices.Grow(out.keys[:0], 2*(hi-lo)*e.words)
	out.cands = slices.Grow(out.cands[:0], 2*(hi-lo))
	out.edges, out.edgeKeys = out.edges[:0], out.edgeKeys[:0]
	out.transitions, out.deadEnds, out.viol = 0, 0, nil
	out.reduced, out.pruned, out.slept = 0, 0, 0
	out.candSleep, out.expanded, out.actions, out.wakeKeys = out.candSleep[:0], out.expanded[:0], out.actions[:0], out.wakeKeys[:0]
	if out.cov == nil {
		out.cov = newCoverage(c.proto.spec)
	} else {
		out.cov.reset()
	}
	recent := &e.recent[w]
	var seen map[Key]struct{}
	if e.st.exact {
		// Exact mode cannot trust a fingerprint: it remembers the keys it
		// made candidates of in this chunk instead.
		seen = map[Key]struct{}{}
	}
	var ms moveSet
	var k Key
	// Per state, successors are built first and looked up after, in a
	// tight loop: the lookups are independent random reads of a large
	// table, and issuing them together lets the memory system overlap
	// their cache misses.
	// The successors live in the worker's own buffer: room for the most a
	// state can have is too large for the stack, and a new one per call
	// would be about 170 KB of garbage for every batch.
	if e.succ[w] == nil {
		e.succ[w] = new(successors)
	}
	succ := e.succ[w]
	var tx model.Tx
	var idx [len(ms.m)]int
	var ids [len(ms.m)]uint32
	var known [len(ms.m)]bool
	var cached [len(ms.m)]bool
	// Sleep sets: each move's slot and workers, the state's set, the
	// moves taken so far, and each successor's set and table slot value.
	var sm sleepMoves
	var zs [len(ms.m)]sleepSet
	var sv [len(ms.m)]uint16
	fw := e.fwords
	for i := lo; i < hi; i++ {
		if i&255 == 0 && ctx.Err() != nil {
			// Stopped (interrupt or memory bound): the level is dropped.
			break
		}
		pid := batchStart + uint32(i)
		copy(k[:e.words], batch[i*fw:i*fw+e.words])
		s := c.unpack(&k)
		protocol := c.moves(&s, &ms)
		var z, woke, taken sleepSet
		wake := false
		if e.sleep != nil {
			fp := fingerprint(&k, e.words)
			sh := shardOf(fp)
			slot, _ := e.st.fp[sh].find(fp)
			z = e.sleep.get(e.st.fp[sh].sleep[slot])
			out.expanded = append(out.expanded, uint64(sh)<<32|uint64(slot))
			if extra := batch[i*fw+e.words]; extra != sleepFull {
				// A wake entry: it takes only the moves that were asleep
				// when it was expanded and are awake now.
				wake, woke = true, e.sleep.get(uint16(extra))
			}
			c.sleepInfo(&s, &ms, &sm)
		}
		if protocol == 0 && !wake {
			out.deadEnds++
			if v := c.CheckQuiescence(&s); v != nil && out.viol == nil {
				out.viol = &found{v: v, pid: pid, move: -1}
			}
		}
		amp := -1
		if e.por && !e.lim.sleepAlone {
			if amp = c.ample(&s, &ms); amp >= 0 && !wake {
				out.reduced++
			}
		}
		n := 0
		for mi := 0; mi < ms.n; mi++ {
			if amp >= 0 && int(ms.m[mi].H) != amp {
				// Taken from the successors instead (por.go).
				if !wake {
					out.pruned++
				}
				continue
			}
			if e.sleep != nil {
				sl := int(sm.slot[mi])
				if sl >= 0 && z.has(sl) {
					// Asleep: its successor is reached through a commuting
					// order (sleep.go).
					if !wake {
						out.slept++
					}
					continue
				}
				if wake && (sl < 0 || !woke.has(sl)) {
					// Taken when the state was first expanded.
					continue
				}
			}
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
			if e.sleep != nil {
				zs[n] = c.successorSleep(&s, &sc.t, &ms, &sm, mi, z, taken)
				if sl := sm.slot[mi]; sl >= 0 {
					taken.add(int(sl))
				}
			}
			idx[n] = mi
			n++
		}
		for j := 0; j < n; j++ {
			switch {
			case e.sleep != nil:
				// No cache: a state met again may need its set cut.
				cached[j] = false
				sv[j], known[j] = e.st.fp[shardOf(succ[j].fp)].sleepOf(succ[j].fp)
			default:
				cached[j] = seen == nil && recent.has(succ[j].fp)
				if !cached[j] {
					ids[j], known[j] = e.st.lookup(succ[j].fp, &succ[j].key)
				}
			}
		}
		for j := 0; j < n; j++ {
			sc := &succ[j]
			// The liveness graph holds the moves the system makes on its
			// own: the environment may stop faulting for good, so a way to
			// a drained state must not need a fault or an early timer.
			own := e.g != nil && idx[j] < protocol && !(ms.m[idx[j]].Kind == MvTimer && !ms.stuck)
			if cached[j] {
				// Known, or a candidate at an earlier (parent, move) in
				// this level, which the level keeps anyway; its id is
				// found once the batch is committed.
				if own {
					out.edges = append(out.edges, e.newEdge(out, pid, sc.fp, &sc.key))
				}
				continue
			}
			if known[j] {
				if e.sleep != nil && !e.sleep.get(sv[j]).within(zs[j]) {
					// Its set must be cut, and if it was expanded, it
					// must take the moves that wake up (commit).
					out.actions = append(out.actions, sleepAction{fp: sc.fp, z: zs[j], pid: pid, move: uint8(idx[j])})
					out.wakeKeys = append(out.wakeKeys, sc.key[:e.words]...)
				}
				if seen == nil {
					recent.add(sc.fp)
				}
				if own {
					out.edges = append(out.edges, edge{from: pid, to: ids[j], key: -1})
				}
				continue
			}
			if seen != nil {
				if _, ok := seen[sc.key]; ok {
					if own {
						out.edges = append(out.edges, e.newEdge(out, pid, sc.fp, &sc.key))
					}
					continue
				}
			}
			if v := c.CheckState(&sc.t); v != nil {
				if out.viol == nil || (out.viol.pid == pid && idx[j] < out.viol.move) {
					out.viol = &found{v: v, pid: pid, move: idx[j]}
				}
				continue
			}
			cd := candidate{fp: sc.fp, pid: pid, move: uint8(idx[j]), off: len(out.keys)}
			if e.sleep != nil {
				out.candSleep = append(out.candSleep, zs[j])
			}
			if seen != nil {
				seen[sc.key] = struct{}{}
			} else {
				recent.add(sc.fp)
			}
			if e.g != nil {
				cd.drained = c.Drained(&sc.t)
			}
			if own {
				out.edges = append(out.edges, e.newEdge(out, pid, sc.fp, &sc.key))
			}
			out.keys = append(out.keys, sc.key[:e.words]...)
			out.cands = append(out.cands, cd)
		}
		if out.viol != nil {
			// Later states of this chunk cannot hold an earlier violation.
			break
		}
	}
}

// commit is phase B: insert the batch's candidates, give ids to the new
// ones, record their trace links and push them on the next frontier.
func (e *exploration) commit(outs []workerOut, workers int, next *keyQueue) {
	// The routing lists are kept from batch to batch: a batch is small
	// and there are many.
	byShard := &e.byShard
	for sh := range byShard {
		byShard[sh] = byShard[sh][:0]
	}
	if e.sleep != nil {
		e.endWaits(outs)
	}
	if workers == 1 {
		// One worker inserts in (parent, move) order directly.
		for w := range outs {
			for i := range outs[w].cands {
				e.insert(&outs[w], i)
			}
		}
	} else {
		// Route every candidate to its shard, keeping (parent, move)
		// order: chunks are in frontier order and candidates in each are
		// in order. Insert shard by shard in parallel; within a shard the
		// first candidate in (parent, move) order wins.
		for w := range outs {
			for i := range outs[w].cands {
				sh := shardOf(outs[w].cands[i].fp)
				byShard[sh] = append(byShard[sh], candRef{w, i})
			}
		}
		parallel(workers, numShards, func(sh int) {
			for _, r := range byShard[sh] {
				e.insert(&outs[r.w], r.i)
			}
		})
	}
	if e.disk != nil {
		// New to the window only: whether new at all is known once the
		// window is merged with the file (flush).
		for w := range outs {
			o := &outs[w]
			for i := range o.cands {
				if cd := &o.cands[i]; cd.isNew {
					e.queueUnchecked(cd, o.keys[cd.off:cd.off+e.words])
				}
			}
		}
		return
	}
	// Ids in (parent, move) order: the order of the chunks and of the
	// candidates within them.
	for w := range outs {
		o := &outs[w]
		for i := range o.cands {
			cd := &o.cands[i]
			if !cd.isNew {
				continue
			}
			cd.id = uint32(e.links.n)
			e.links.append(cd.pid, cd.move)
			if e.g != nil {
				e.g.drained = append(e.g.drained, cd.drained)
			}
			next.push(e.entry(o.keys[cd.off:cd.off+e.words], sleepFull))
		}
	}
	if e.sleep != nil {
		e.commitSleep(outs, next)
	}
	if e.g == nil && !e.st.exact {
		return
	}
	// Record the ids in the store: no shard grows any more in this batch,
	// so slots found now stay put.
	for w := range outs {
		o := &outs[w]
		for i := range o.cands {
			cd := &o.cands[i]
			if !cd.isNew {
				continue
			}
			sh := shardOf(cd.fp)
			if e.st.exact {
				var k Key
				copy(k[:e.words], o.keys[cd.off:cd.off+e.words])
				e.st.keys[sh][k] = cd.id
			} else {
				slot, _ := e.st.fp[sh].find(cd.fp)
				e.st.fp[sh].ids[slot] = cd.id
			}
		}
	}
	if e.g == nil {
		return
	}
	// Resolve the edges of each chunk, in chunk order, so that the graph
	// stays ordered by source state.
	for w := range outs {
		o := &outs[w]
		for _, ed := range o.edges {
			to := ed.to
			if ed.fp != 0 {
				var k *Key
				if e.st.exact {
					k = &o.edgeKeys[ed.key]
				}
				to, _ = e.st.lookup(ed.fp, k)
			}
			e.g.from = append(e.g.from, ed.from)
			e.g.to = append(e.g.to, to)
		}
	}
}

// candRef is a candidate by its chunk and place in the chunk.
type candRef struct{ w, i int }

// insert adds a candidate to the visited set and marks whether it was new.
func (e *exploration) insert(o *workerOut, i int) {
	cd := &o.cands[i]
	if e.sleep != nil {
		e.insertSleep(cd, o.candSleep[i])
		return
	}
	sh := shardOf(cd.fp)
	if e.st.exact {
		var k Key
		copy(k[:e.words], o.keys[cd.off:cd.off+e.words])
		cd.isNew = false
		if _, ok := e.st.keys[sh][k]; !ok {
			e.st.keys[sh][k] = ^uint32(0)
			cd.isNew = true
		}
		return
	}
	cd.isNew = e.st.insertFP(cd.fp)
}

// parallel runs f(0..n-1) on up to workers goroutines.
func parallel(workers, n int, f func(int)) {
	parallelOn(workers, n, func(_, i int) { f(i) })
}

// parallelOn runs f(w, 0..n-1) on up to workers goroutines, w naming the
// goroutine (0..workers-1), in increasing i on each.
func parallelOn(workers, n int, f func(w, i int)) {
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := range next {
				f(w, i)
			}
		}(w)
	}
	wg.Wait()
}

// newEdge records a transition to a state whose id is known only once the
// batch is committed.
func (e *exploration) newEdge(out *workerOut, from uint32, fp uint64, k *Key) edge {
	ed := edge{from: from, fp: fp}
	if e.st.exact {
		ed.key = int32(len(out.edgeKeys))
		out.edgeKeys = append(out.edgeKeys, *k)
	}
	return ed
}

// recentSize is the number of fingerprints in a worker's recentSet: 256
// KiB, which stays in a core's own cache.
const recentSize = 1 << 15

// recentSet is a direct-mapped cache of fingerprints a worker has lately
// found in the visited set or made candidates of. Most successors are
// reached again soon (the two orders of two independent moves meet in a
// state reached from two siblings, which sit next to each other in the
// frontier), so most duplicates are told here without a probe of the
// large table. A fingerprint is only ever in the cache if it is in the
// visited set or is a candidate of this level at an earlier (parent, move),
// which the level keeps: a hit is always a duplicate.
type recentSet struct{ fps []uint64 }

func (r *recentSet) has(fp uint64) bool {
	return r.fps != nil && r.fps[fp&(recentSize-1)] == fp
}

func (r *recentSet) add(fp uint64) {
	if r.fps == nil {
		r.fps = make([]uint64, recentSize)
	}
	r.fps[fp&(recentSize-1)] = fp
}
