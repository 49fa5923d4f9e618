package checker

import (
	"context"
	"fmt"
	"io"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/handoffcheck/handoffcheck/checker/system"
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
	// Fair lists leads_to obligations judged under weak fairness on the
	// liveness graph (fair.go), and FairDrained judges EventuallyDrained
	// in its fair form too: every fair run drains. Both need Liveness,
	// and both read processes that symmetry reduction would rename: a
	// caller turns it off.
	Fair        []Obligation
	FairDrained bool
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
	// From starts the search at the state these moves reach from the
	// run's initial state (a trace's: what else can happen from where it
	// ends); counterexamples begin with them. Not with Checkpoint or
	// Resume.
	From []system.Move
	// Speedup explores the runs again on one worker once they are done
	// (Check), so that the report states the speed-up of all workers
	// over one, measured in the same process right after. A search that
	// was interrupted measures nothing.
	Speedup bool
	// Walks, when above zero, asks for that many seeded random walks per
	// run instead of the exhaustive search (walk.go), each of at most
	// Steps moves: walk i uses seed Seed+i, so one failing walk is
	// reproduced alone with Seed+i and Walks 1. Swarm gives each walk its
	// own random subset of fault kinds (leaving some faults out lets
	// others go deeper). Schedule names when a walk commits its faults:
	// positions (the default, as is the empty name), uniform or pct;
	// Check refuses another name, listing these. Shards, when above
	// zero, splits the walks into that many shards of consecutive walks,
	// of which this check runs shard Shard (see shardRange): the shards
	// together are the one search, and merged reports find its first
	// failure. Workers and From apply to walks too; the other limits are
	// the exhaustive search's.
	Walks, Steps  int
	Seed          uint64
	Swarm         bool
	Schedule      string
	Shard, Shards int
	// Progress, when set, receives a line every few seconds of an
	// exhaustive search: the run, the states and distinct states so far,
	// the depth, the queue and the rate.
	Progress io.Writer
	// sleepAlone keeps sleep sets and drops persistent sets: a search
	// that must then reach every state of the full one (tests).
	sleepAlone bool
	// everyEdge keeps every own edge in the liveness graph instead of a
	// drain chain's one per state (liveness.go): the search again after
	// chains left a state unresolved, and tests that hold the two to each
	// other.
	everyEdge bool
}

// searchStats are the measurements of an exploration.
type searchStats struct {
	States      int // distinct states
	Transitions int64
	Depth       int
	Elapsed     time.Duration
	// StoreBytes is the visited set's memory; FingerprintBytes the part
	// taken by the 64-bit fingerprints alone.
	StoreBytes, FingerprintBytes int64
	// TraceBytes is the parent links kept in memory to rebuild
	// counterexamples; SpilledBytes what went to files (frontiers,
	// links, the liveness graph's edges and fingerprints, see spill.go,
	// graph.go and diskset.go).
	TraceBytes, SpilledBytes int64
	// DiskAt is how many states were known when the fingerprints moved
	// to disk (0: they never did); DiskMerges counts the merges since.
	DiskAt, DiskMerges int
	// GraphBytes is the transition graph kept for liveness: its edges are
	// in a file once past spillLimit (graph.go), its flags in memory.
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

// statesPerSecond is distinct states per second.
func (s searchStats) statesPerSecond() float64 { return rate(float64(s.States), s.Elapsed) }

// elapsed is the time spent on the run, before a resume included.
func (e *exploration) elapsed() time.Duration { return e.before + time.Since(e.start) }

// residentPerState is the run's peak resident memory over its distinct
// states (0 when either is unknown): the whole process's memory, not only
// the visited set's.
func (s searchStats) residentPerState() float64 {
	if s.States == 0 {
		return 0
	}
	return float64(s.PeakResident) / float64(s.States)
}

// transitionsPerSecond is transitions per second.
func (s searchStats) transitionsPerSecond() float64 { return rate(float64(s.Transitions), s.Elapsed) }

func rate(n float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return n / d.Seconds()
}

// searchProgress is reported while exploring (Limits.Progress).
type searchProgress struct {
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
	fp   uint64
	off  int // offset of its key in the owning worker's key buffer
	pid  uint32
	id   uint32
	slot uint32 // where the visited set put it (visited.insert)
	move uint8
	// The flags last: the candidate is 32 bytes.
	drained bool
	isNew   bool
}

// edge is one transition for the liveness graph. Its target is either
// known (to) or a state first reached in this level, found again by its
// fingerprint (and, in exact mode, its key) once its batch is committed.
// While it is not found (fp is not 0), to is one more than the index of
// the chunk's candidate it leads to, if it does (0: it does not): the
// commit gives a new candidate its id without looking it up.
type edge struct {
	from uint32
	to   uint32
	fp   uint64 // 0 when to is known
	key  int32  // exact mode: index of the target's key in workerOut.edgeKeys
	proc uint8  // the process whose move it is (fair.go)
}

// exploration holds the state of one BFS.
type exploration struct {
	c       *Checker
	lim     Limits
	words   int
	workers int
	vis     visited
	links   linkLog
	spill   spillDir
	// recent is each worker's cache of fingerprints it has lately seen
	// known or made a candidate of (see recentSet).
	recent []recentSet
	// x is each worker's scratch for expanding states (expand.go).
	x []*expander
	// frontier is the level to expand; resumedNext the next level as a
	// checkpoint left it, levelStart the id of the frontier's first
	// state, startDepth the depth the search starts at and skip how many
	// of its frontier's states a checkpoint had already expanded.
	frontier, resumedNext *keyQueue
	levelStart            uint32
	startDepth, skip      int
	resumed               bool
	// diskErr is a failure of the spill files or checkpoints, which
	// stops the run.
	diskErr error
	// wantDisk asks for the move of the fingerprints to disk (diskset.go)
	// from the memory watcher; onDisk says it was made.
	wantDisk atomic.Bool
	onDisk   atomic.Bool
	// overMemory says the memory bound stopped the run; cancel stops it
	// (nil without a bound).
	overMemory atomic.Bool
	cancel     context.CancelFunc
	// ckpt writes checkpoints; identity names the search in them.
	ckpt     *checkpointer
	identity string
	// levelDone counts the frontier states of the level under way that
	// were expanded and committed.
	levelDone int
	// byShard routes a batch's candidates to their shards (commit).
	byShard [numShards][]candRef
	// appending is closed when the ordered appends of a pipelined
	// commit are over (nil: none runs; see pipelined).
	appending chan struct{}
	// start is when this process began the run; before is the time
	// spent on it before a resume.
	start  time.Time
	before time.Duration
	g      *graph
	// por: partial-order reduction is on (Limits.Reduce; with liveness, only
	// on the drain chains' search, which fairness and a search that keeps
	// every edge do not make).
	por bool
	// chains: the liveness graph keeps one own edge per state, the drain
	// chain's (liveness.go); open counts the states whose chain did not
	// reach a drained state once it was resolved.
	chains bool
	open   int
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
	cov          *system.Coverage
	stats        searchStats
	deadEnds     int
	// states whose moves were cut by MaxDepth or a stop
	cut     bool
	stopWhy string
	// memStop is what the check that stopped the run for its memory
	// bound read (nil: none did), for the report to say.
	memStop atomic.Pointer[memReading]
	// begun lets the memory watcher start once the first level passed
	// its own check: a bound the run is already past is the pre-level
	// check's to report, whichever goroutine a loaded machine runs first.
	begun     chan struct{}
	beginOnce sync.Once
	viol      *found
	rootKey   system.Key
	// heapStart is the live heap when the run started.
	heapStart uint64
}

// Result is the outcome of exploring one run.
type Result struct {
	Run      system.Run
	Stats    searchStats
	Complete bool
	// StopReason says why an incomplete exploration stopped, as a short
	// code (one of the stop* constants); StopDetail says it as a sentence.
	StopReason string
	StopDetail string
	Violation  *Counterexample
	// Seed, in a walk report (Limits.Walks), reruns the failing walk
	// alone with Walks 1.
	Seed     uint64
	Coverage *system.Coverage
	// DeadEnds is how many quiescent states were found (all checked).
	DeadEnds int
	// Liveness is set when EventuallyDrained was checked; FairDrained
	// when its fair form was too.
	Liveness    bool
	FairDrained bool
	// Fair is each obligation's verdict (Limits.Fair), when the graph was
	// complete and judged.
	Fair []FairVerdict
	// Symmetry says whether states were reduced by symmetry.
	Symmetry bool
	Exact    bool
	// CollisionProbability estimates the chance that two distinct states
	// shared a fingerprint (0 in exact mode).
	CollisionProbability float64
	// Bitstate is set when the visited set was a bit array.
	Bitstate *bitstateReport
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
	// ChainsOpen is how many states' drain chains ended short of a
	// drained state (liveness.go): EventuallyDrained was then judged by a
	// second search that kept every edge, and the result is that search's.
	ChainsOpen int
	// stopResident is the resident memory the check that stopped the run
	// for its bound read (0: none did); the run's peak is at least that.
	stopResident uint64
}

// checkRun runs a breadth-first exploration of every interleaving of the
// run's moves, checking every safety invariant on every step and state,
// Quiescence on every quiescent state and, with Limits.Liveness,
// EventuallyDrained on the explored graph. It stops at the first violation
// and rebuilds the shortest trace to it. Results are deterministic for any
// number of workers.
func (c *Checker) checkRun(ctx context.Context, lim Limits, progress func(searchProgress)) *Result {
	r := c.explore(ctx, lim, progress)
	if r.Reduction && r.Violation != nil && ctx.Err() == nil {
		c.confirmShortest(ctx, lim, r)
	}
	return r
}

// explore runs the search. One with sleep sets that had to move its
// fingerprints to disk (where the sets are not kept) or met more sets
// than it can name starts again without them: the report says so, and
// its time includes the first attempt. So does one whose drain chains
// left a state unresolved (liveness.go): it starts again keeping every
// edge, which judges EventuallyDrained exactly and finds its trap.
func (c *Checker) explore(ctx context.Context, lim Limits, progress func(searchProgress)) *Result {
	r, dropped := c.exploreOnce(ctx, lim, progress)
	if dropped != "" && ctx.Err() == nil {
		lim.Sleep = false
		r2, _ := c.exploreOnce(ctx, lim, progress)
		r2.Stats.Elapsed += r.Stats.Elapsed
		r2.SleepDropped = dropped
		r = r2
	}
	if r.ChainsOpen > 0 && ctx.Err() == nil {
		lim.everyEdge = true
		r2, _ := c.exploreOnce(ctx, lim, progress)
		r2.Stats.Elapsed += r.Stats.Elapsed
		r2.SleepDropped, r2.ChainsOpen = r.SleepDropped, r.ChainsOpen
		r = r2
	}
	return r
}

// progressEvery is how often the search reports its progress, after the
// level that ends that long after the last report. A variable so that a
// test can see a report after every level.
var progressEvery = 2 * time.Second

// The reasons an exploration stops before it is complete, as the short
// codes reports carry (stop_reason in JSON).
const (
	stopMaxStates   = "max-states"
	stopMaxDepth    = "max-depth"
	stopMaxMemory   = "max-memory"
	stopInterrupted = "interrupted"
	stopDisk        = "disk"
)

// stopDetail says a stop reason as a sentence.
func stopDetail(code string, lim Limits, s searchStats) string {
	switch code {
	case stopMaxStates:
		return fmt.Sprintf("stopped after the level that reached %s distinct states (--max-states %d)", commas(int64(s.States)), lim.MaxStates)
	case stopMaxDepth:
		return fmt.Sprintf("stopped at depth %d (--max-depth)", lim.MaxDepth)
	case stopMaxMemory:
		return fmt.Sprintf("stopped before resident memory passed the bound of %s (--max-memory)", FormatBytes(lim.MaxMemory))
	case stopInterrupted:
		return "interrupted before the exploration completed"
	case stopDisk:
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
	if e.onDisk.Load() {
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

// detail says the reading for a stop's detail, so that the stop and the
// peak resident memory the report gives can be read together.
func (m *memReading) detail() string {
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
// spillLimit: it moves to a file when larger), when the graph is kept five
// edges per state in the batch buffers and their records in the edge log's
// part in memory (at most spillLimit: it moves to a file when larger) and a
// flag per state, and what the visited set may allocate (half a table
// again, which may grow by that much; a merge's buffers on disk; nothing
// for a bit array).
func (e *exploration) levelNeed(n int) int64 {
	need := e.batchNeed() + min(int64(n)*int64(e.fwords*8), int64(spillLimit))
	if e.g != nil {
		need += int64(n)*5*int64(unsafe.Sizeof(edge{})) + min(int64(n)*5*edgeBytes, int64(spillLimit)) + int64(n)
	}
	return need + e.vis.growth(e.links.n)
}

// batchNeed is what one batch's buffers take: its frontier keys, and per
// state two successor keys and two candidates, twice where the batch's
// ordered appends run beside the next batch's expansion (pipelined), which
// fills a second set of them.
func (e *exploration) batchNeed() int64 {
	per := int64(batchPerWorker * max(len(e.recent), 1))
	sets := int64(1)
	if e.pipelined(len(e.recent)) {
		sets = 2
	}
	return per*int64(e.fwords*8) + sets*per*int64(2*e.words*8+2*int(unsafe.Sizeof(candidate{}))) + int64(len(e.recent))*recentSize*8
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
// graph (an offset per state and one more, and a source per edge, 4 bytes
// each), the stack of states to visit at its largest (an entry per state,
// 4 bytes), a flag per state, and the block the edges are read back in.
//
// With fairness, what fair.go allocates after that is counted instead
// when larger: the forward graph of the own and the environment's edges
// (an offset per state and one more, a target and a label per edge, and
// the offsets again while it is filled), and the component search's
// index, low link and component per state (4 bytes each), two flags and,
// at their largest, a stack entry and a call frame (12 bytes) per state.
func (e *exploration) livenessNeed() int64 {
	n, m := int64(e.links.n), int64(e.g.edges.n)
	if e.chains {
		// A chain's next state per state, and a byte per state for what
		// resolving it found (liveness.go).
		return 4*n + n + e.g.edges.readBuffer()
	}
	need := 4*(n+1) + 4*m + 4*n + n + e.g.edges.readBuffer()
	if e.g.fair != nil {
		m += int64(e.g.fair.env.n)
		need = max(need, 4*(n+1)+5*m+4*(n+1)+12*n+2*n+12*n+e.g.edges.readBuffer())
	}
	return need
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
	envEdges    int
}

func (e *exploration) mark() levelMark {
	m := levelMark{states: e.links.n, transitions: e.stats.Transitions, deadEnds: e.deadEnds, reduced: e.stats.Reduced, pruned: e.stats.Pruned,
		slept: e.stats.Slept, woken: e.woken}
	for r := range m.rows {
		m.rows[r] = slices.Clone(e.cov.Rows[r])
	}
	if e.g != nil {
		m.edges = e.g.edges.n
		if e.g.fair != nil {
			m.envEdges = e.g.fair.env.n
		}
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
		e.g.edges.truncate(m.edges)
		e.g.drained = e.g.drained[:m.states]
		if f := e.g.fair; f != nil {
			f.env.truncate(m.envEdges)
			f.labels = f.labels[:m.edges]
			f.enabled = f.enabled[:m.states]
			f.sides = f.sides[:m.states*len(f.obs)]
		}
	}
}

// workerOut is what one worker produced from its chunk of a batch.
type workerOut struct {
	keys     []uint64
	cands    []candidate
	edges    []edge
	edgeKeys []system.Key // exact mode: the keys of edge targets new in this level
	// With fairness (fair.go): the processes enabled at each state
	// expanded, and each candidate's P and Q of every obligation.
	enabled     []stateProcs
	sides       []uint8
	transitions int64
	deadEnds    int
	reduced     int
	pruned      int64
	viol        *found
	cov         *system.Coverage
	// With sleep sets: the table slots of the states expanded (shard in
	// the high half), whose frontier wait ends at the commit; the known
	// states reached with a set that does not hold theirs, and their keys.
	slept     int64
	candSleep []sleepSet // each candidate's set
	expanded  []uint64
	actions   []sleepAction
	wakeKeys  []uint64
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
