package checker

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

// The memory bound holds within a level: an exploration that would need
// gigabytes stops before the process's resident memory passes the bound,
// says so, and reports the run's own peak.
func TestExplore_MaxMemoryStopsWithinTheBound(t *testing.T) {
	if testing.Short() {
		t.Skip("explores until a few hundred MiB are resident")
	}
	if residentBytes() == 0 {
		t.Skip("this system does not report resident memory")
	}
	cfg := defaultParsed()
	c, err := New(system.Generated(), cfg, cfg.Runs[0])
	if err != nil {
		t.Fatal(err)
	}
	settle()
	bound := int64(residentBytes()) + 128<<20
	before := peakResidentBytes()
	rs := sampleResident()
	r := c.checkRun(context.Background(), Limits{MaxMemory: bound, Liveness: true, Workers: 2}, nil)
	r.Stats.PeakResident = rs.stop()
	if r.Complete || r.StopReason != stopMaxMemory {
		t.Fatalf("want a stop by the memory bound, got complete=%v stop=%q after %d states", r.Complete, r.StopReason, r.Stats.States)
	}
	// The kernel's high-water mark misses no spike between samples: when
	// the process had stayed below the bound before this run, it must
	// still be below it.
	if before < uint64(bound) {
		if hwm := peakResidentBytes(); hwm > uint64(bound) {
			t.Fatalf("the process's peak resident memory reached %s, bound %s", FormatBytes(int64(hwm)), FormatBytes(bound))
		}
	}
	if r.Stats.PeakResident == 0 || r.Stats.PeakResident > uint64(bound) {
		t.Fatalf("peak resident memory %s, bound %s", FormatBytes(int64(r.Stats.PeakResident)), FormatBytes(bound))
	}
	if r.Stats.States < 100000 {
		t.Fatalf("stopped after only %d states: the bound was not used", r.Stats.States)
	}
	t.Logf("stopped after %d states at a peak of %s (bound %s)", r.Stats.States, FormatBytes(int64(r.Stats.PeakResident)), FormatBytes(bound))
}

// Per-run figures belong to the run: a small run explored after a large
// one reports its own heap, not what the large one left behind.
func TestExplore_PerRunHeapIsTheRunsOwn(t *testing.T) {
	explore := func(cfg *system.Config, lim Limits) *Result {
		rep, err := Check(context.Background(), system.Generated(), cfg, cfg.Runs[:1], lim)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Runs[0]
	}
	small := mustConfig(t, twoByTwo)
	first := explore(small, Limits{MaxStates: 200})
	keep := explore(defaultParsed(), Limits{MaxStates: 200000})
	again := explore(small, Limits{MaxStates: 200})
	if keep.Stats.PeakHeap < 3*first.Stats.PeakHeap {
		t.Skipf("the large run's heap (%d) is not clearly larger than the small one's (%d)", keep.Stats.PeakHeap, first.Stats.PeakHeap)
	}
	if again.Stats.PeakHeap >= keep.Stats.PeakHeap/2 {
		t.Fatalf("a small run after a large one reports a peak heap of %d bytes, the large run's was %d", again.Stats.PeakHeap, keep.Stats.PeakHeap)
	}
	if keep.Stats.PeakResident > 0 && again.Stats.PeakResident >= keep.Stats.PeakResident {
		t.Fatalf("a small run after a large one reports a peak resident memory of %d bytes, the large run's was %d", again.Stats.PeakResident, keep.Stats.PeakResident)
	}
}

// EventuallyDrained is not judged when its reverse graph would not fit
// under the bound: the estimate counts the graph's states and edges.
func TestExplore_LivenessNeedsRoomForTheReverseGraph(t *testing.T) {
	if residentBytes() == 0 {
		t.Skip("this system does not report resident memory")
	}
	e := &exploration{links: linkLog{recordLog{n: 1 << 20}}, g: &graph{edges: edgeLog{recordLog{n: 5 << 20}}}}
	need := int64(4*(1<<20+1) + 4*(5<<20) + 4*(1<<20) + 1<<20) // about 29 MiB
	rss := int64(residentBytes())
	// The smallest bound whose threshold passes a given level.
	boundFor := func(threshold int64) int64 {
		b := threshold
		for memoryThreshold(b) < threshold {
			b += 1 << 20
		}
		return b
	}
	tight := boundFor(rss + need/2)
	roomy := boundFor(rss + 4*need)
	if !e.livenessWouldPass(tight) {
		t.Errorf("a reverse graph of %s fits under a threshold only %s above resident memory", FormatBytes(need), FormatBytes(need/2))
	}
	if e.livenessWouldPass(roomy) {
		t.Errorf("a reverse graph of %s does not fit under a threshold %s above resident memory", FormatBytes(need), FormatBytes(4*need))
	}
}

// The memory bound with liveness on. A bound of one byte leaves no room
// for any level: the run stops before the first, says why, and says that
// EventuallyDrained was not judged because the graph is incomplete. A
// bound a gigabyte above what the process holds leaves room for the whole
// graph and the check: the run completes, EventuallyDrained is judged, and
// the run's peak stays under the bound.
func TestMemory_BoundWithLivenessOn(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	rep := checkOne(t, cfg, "vllm", Limits{MaxMemory: 1, Liveness: true, Workers: 2})
	r := rep.Runs[0]
	// The detail names what resident memory was and what the first level
	// needed; they vary with the process.
	detail := r.StopDetail
	if !strings.HasPrefix(detail, "stopped before resident memory passed the bound of 1 B (--max-memory): ") ||
		!strings.HasSuffix(detail, " more to allocate would reach 1 B; EventuallyDrained not judged: the graph is incomplete") {
		t.Errorf("bound of 1 byte: stop detail %q", detail)
	}
	if r.Complete || r.StopReason != stopMaxMemory || r.Liveness || r.Violation != nil || rep.Interrupted {
		t.Errorf("bound of 1 byte: complete=%v stop=%q %q liveness=%v violation=%v interrupted=%v",
			r.Complete, r.StopReason, r.StopDetail, r.Liveness, r.Violation != nil, rep.Interrupted)
	}
	// Not even the first level was begun: only the initial state is known.
	if r.Stats.States != 1 || r.Stats.Transitions != 0 || r.Stats.Depth != 0 || r.DeadEnds != 0 {
		t.Errorf("bound of 1 byte: %d states, %d transitions, depth %d, %d dead ends; want the initial state alone",
			r.Stats.States, r.Stats.Transitions, r.Stats.Depth, r.DeadEnds)
	}
	text := rep.text(TextOptions{})
	wantLine(t, text, "run vllm (source-first, engine vllm): incomplete ("+detail+"), no violation found\n")
	wantNoLine(t, text, "EventuallyDrained: checked")
	j := parseReportJSON(t, rep, TextOptions{})
	if jr := j.Runs[0]; j.Verdict != "incomplete" || jr.StopReason != stopMaxMemory || jr.StopDetail != detail || jr.Liveness || jr.Complete {
		t.Errorf("JSON of a run stopped by the bound: verdict %q, %+v", j.Verdict, jr)
	}

	if residentBytes() == 0 {
		t.Skip("this system does not report resident memory")
	}
	settle()
	bound := int64(residentBytes()) + 1<<30
	rep = checkOne(t, cfg, "vllm", Limits{MaxMemory: bound, Liveness: true, Workers: 2})
	r = rep.Runs[0]
	if !r.Complete || r.StopReason != "" || r.StopDetail != "" || !r.Liveness || r.Violation != nil || r.Stats.States != 563 {
		t.Errorf("bound %s: complete=%v stop=%q %q liveness=%v violation=%v, %d states", FormatBytes(bound),
			r.Complete, r.StopReason, r.StopDetail, r.Liveness, r.Violation != nil, r.Stats.States)
	}
	if r.Stats.PeakResident == 0 || r.Stats.PeakResident >= uint64(bound) || r.Stats.GraphBytes == 0 {
		t.Errorf("bound %s: peak resident %s, graph %d bytes", FormatBytes(bound), FormatBytes(int64(r.Stats.PeakResident)), r.Stats.GraphBytes)
	}
	wantLine(t, rep.text(TextOptions{}), "  EventuallyDrained: checked on the explored graph\n")
}

// Resident memory is read from the system, and agrees with what the
// kernel says in another file: VmRSS now, VmHWM as the high-water mark.
func TestMemory_ResidentFigures(t *testing.T) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	field := func(name string) uint64 {
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, name+":"); ok {
				kb, err := strconv.ParseUint(strings.Fields(v)[0], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return kb << 10
			}
		}
		t.Fatalf("no %s in /proc/self/status", name)
		return 0
	}
	rss, hwm := field("VmRSS"), field("VmHWM")
	now := residentBytes()
	if now%pageSize != 0 || now+4<<20 < rss || now > rss+4<<20 {
		t.Errorf("resident memory %d bytes; the kernel's VmRSS says %d", now, rss)
	}
	if peak := peakResidentBytes(); peak < hwm || peak < now || processPeakResident() < peak {
		t.Errorf("peak resident %d bytes; VmHWM says %d, resident now %d", peak, hwm, now)
	}
	if mem, err := os.ReadFile("/proc/meminfo"); err == nil {
		var total uint64
		for _, line := range strings.Split(string(mem), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseUint(strings.Fields(v)[0], 10, 64)
				total = kb << 10
			}
		}
		if m := MachineMemory(); m == 0 || m > total {
			t.Errorf("machine memory %d bytes; MemTotal is %d", m, total)
		}
	}
}

// The sampler catches a peak that is gone by the time it stops: 32 MiB
// touched and returned to the system in between.
func TestMemory_SamplerKeepsThePeak(t *testing.T) {
	if residentBytes() == 0 {
		t.Skip("this system does not report resident memory")
	}
	settle()
	start := residentBytes()
	rs := sampleResident()
	buf := make([]byte, 32<<20)
	for i := range buf {
		if i%4096 == 0 {
			buf[i] = 1
		}
	}
	// Wait until a sample has seen the touched memory (the sampler looks
	// every 10 ms; the deadline is only a guard against hanging).
	deadline := time.Now().Add(10 * time.Second)
	for rs.peak.Load() < start+24<<20 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	runtime.KeepAlive(buf)
	buf = nil
	settle()
	peak := rs.stop()
	if peak < start+24<<20 {
		t.Fatalf("peak %s, started at %s with 32 MiB touched in between", FormatBytes(int64(peak)), FormatBytes(int64(start)))
	}
}

// A level is not begun when what it may need would pass the watcher's
// threshold: per frontier state two keys and two candidates and a key of
// the next frontier, five edges of the liveness graph when it is kept, and
// half the store again. Each part alone must be counted: a threshold half
// of it above resident memory stops the level, one twice above does not.
func TestMemory_LevelNeedsRoomForEachPart(t *testing.T) {
	if residentBytes() == 0 {
		t.Skip("this system does not report resident memory")
	}
	const words = 8
	boundFor := func(threshold int64) int64 {
		b := threshold
		for memoryThreshold(b) < threshold {
			b += 1 << 20
		}
		return b
	}
	perState := int64(words * 8)
	perEdges := int64(5*(unsafe.Sizeof(edge{})+edgeBytes) + 1)
	// A store of 64 MiB of fingerprint slots, never touched: it costs
	// address space, not resident memory.
	big := newFPSet(false, false)
	big.shards[0].fps = make([]uint64, 8<<20)
	cases := []struct {
		name  string
		n     int
		store visited
		graph bool
		need  int64
	}{
		{"frontier", 1 << 17, newFPSet(false, false), false, min((1<<17)*perState, int64(spillLimit))},
		{"graph", 1 << 17, newFPSet(false, false), true, (1 << 17) * perEdges},
		{"store", 0, big, false, 32 << 20},
	}
	for _, tc := range cases {
		e := &exploration{words: words, fwords: words, vis: tc.store}
		tc.need += e.batchNeed()
		if tc.graph {
			e.g = &graph{}
		}
		rss := int64(residentBytes())
		if !e.levelWouldPass(tc.n, boundFor(rss+tc.need/2)) {
			t.Errorf("%s: a level needing %s fits under a threshold %s above resident memory", tc.name, FormatBytes(tc.need), FormatBytes(tc.need/2))
		}
		if e.levelWouldPass(tc.n, boundFor(rss+2*tc.need+8<<20)) {
			t.Errorf("%s: a level needing %s does not fit under a threshold %s above resident memory", tc.name, FormatBytes(tc.need), FormatBytes(2*tc.need+8<<20))
		}
	}
	runtime.KeepAlive(big)
}

// The watcher stops a run once resident memory has passed the threshold,
// once, and returns; under a bound far above resident memory it never
// stops the run and returns when the run is done.
func TestMemory_WatcherStopsPastTheThreshold(t *testing.T) {
	if residentBytes() == 0 {
		t.Skip("this system does not report resident memory")
	}
	done := make(chan struct{})
	stops := 0
	// A bound of one byte is passed at once: the watcher stops the run at
	// its first look and returns by itself (done stays open).
	watchMemory(1, done, func(int64) bool { stops++; return true })
	if stops != 1 {
		t.Fatalf("past the threshold, the watcher stopped the run %d times, want once", stops)
	}
	var far atomic.Int32
	returned := make(chan struct{})
	go func() {
		watchMemory(1<<62, done, func(int64) bool { far.Add(1); return true })
		close(returned)
	}()
	// Let it look (far below the threshold it looks every quarter of a
	// second, and once at once); it must not have stopped the run.
	time.Sleep(30 * time.Millisecond)
	close(done)
	<-returned
	if n := far.Load(); n != 0 {
		t.Fatalf("far below the threshold, the watcher stopped the run %d times", n)
	}
}

// A stop by the memory bound reads as such, not as an interrupt: the run
// is stopped through the same path whichever check noticed, and the
// context it was given is left alone.
func TestMemory_StopReasonIsTheBound(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	c, err := New(system.Generated(), cfg, runNamed(t, cfg, "trtllm"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := c.checkRun(ctx, Limits{MaxMemory: 1, Workers: 1}, nil)
	if r.Complete || r.StopReason != stopMaxMemory || !strings.HasPrefix(r.StopDetail, "stopped before resident memory passed the bound of 1 B (--max-memory): ") || ctx.Err() != nil {
		t.Errorf("complete=%v stop=%q %q, the caller's context: %v", r.Complete, r.StopReason, r.StopDetail, ctx.Err())
	}
}

// fakeHeap makes the run read the given live-heap figures, one per
// reading, the last repeated: the first is the heap when the run starts.
func fakeHeap(t *testing.T, readings ...uint64) *int {
	t.Helper()
	n := 0
	old := readHeap
	readHeap = func() uint64 {
		h := readings[min(n, len(readings)-1)]
		n++
		return h
	}
	t.Cleanup(func() { readHeap = old })
	return &n
}

// PeakHeap is the largest growth of the heap over its size when the run
// started, read after every level and once more at the end: a peak in the
// middle of the run is kept when the heap has shrunk by its end, a heap
// that ends below where it started counts as no growth, and a run stopped
// before its first level still reads the heap it used.
func TestExplore_PeakHeapIsTheLargestGrowth(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/small.json")
	c, err := New(system.Generated(), cfg, runNamed(t, cfg, "trtllm"))
	if err != nil {
		t.Fatal(err)
	}
	// trtllm is 10 moves deep: 11 levels (the last reaches nothing new),
	// so a reading at the start, one after each level and one at the end.
	// The peak is after the third level; the run ends below where it
	// started.
	n := fakeHeap(t, 1000, 1100, 1200, 5000, 1500, 1500, 1500, 1500, 1500, 1500, 1500, 1500, 900)
	r := c.checkRun(context.Background(), Limits{Workers: 2}, nil)
	if *n != 13 || !r.Complete || r.Stats.Depth != 10 {
		t.Fatalf("%d heap readings over a complete run of depth %d (complete=%v), want 13", *n, r.Stats.Depth, r.Complete)
	}
	if r.Stats.PeakHeap != 4000 {
		t.Errorf("peak heap %d, want 4000 (the largest reading, 5000, less 1000 at the start)", r.Stats.PeakHeap)
	}
	// The heap only shrinks: no growth.
	fakeHeap(t, 1000, 800)
	if r := c.checkRun(context.Background(), Limits{Workers: 1}, nil); r.Stats.PeakHeap != 0 {
		t.Errorf("a heap that only shrank: peak %d, want 0", r.Stats.PeakHeap)
	}
	// Interrupted before the first level: only the reading at the end.
	n = fakeHeap(t, 1000, 3000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r = c.checkRun(ctx, Limits{Workers: 1}, nil)
	if r.StopReason != stopInterrupted || *n != 2 || r.Stats.PeakHeap != 2000 {
		t.Errorf("interrupted before the first level: stop %q, %d readings, peak %d; want 2 readings and a peak of 2000", r.StopReason, *n, r.Stats.PeakHeap)
	}
}

// The estimates the bound is judged by, to the byte. A level of n states
// needs one batch's buffers (per frontier state of the batch: its key, two
// successor keys and two candidates; and each worker's cache of recent
// fingerprints), the next frontier's part in memory (8 bytes a word of each
// state, at most spillLimit), with the liveness graph five edges and their
// 8-byte records in the edge log per state (the records at most
// spillLimit) and a flag per state, and half the store again. Judging
// EventuallyDrained needs an offset per state and one more, a source per
// edge and a stack entry per state, 4 bytes each, a flag per state, and a
// block to read the edges back in when they are on file.
func TestMemory_EstimatesToTheByte(t *testing.T) {
	const words, n = 8, 1000
	perEdges := int64(5*(unsafe.Sizeof(edge{})+edgeBytes) + 1)
	st := newFPSet(false, false)
	st.shards[0].fps = make([]uint64, 1<<10)
	half := st.bytes(0) / 2
	if half < 4<<10 {
		t.Fatalf("a store of 1024 slots counts %d bytes", st.bytes(0))
	}
	e := &exploration{words: words, fwords: words, vis: st, recent: make([]recentSet, 2)}
	// On two workers the ordered appends of a batch run beside the next
	// batch's expansion, which fills a second set of successor keys and
	// candidates (pipelined).
	batch := int64(2*batchPerWorker)*(words*8+2*(2*words*8+2*int64(unsafe.Sizeof(candidate{})))) + 2*recentSize*8
	if got, want := e.batchNeed(), batch; got != want {
		t.Errorf("a batch on two workers needs %d bytes, want %d", got, want)
	}
	if got, want := e.levelNeed(n), batch+n*words*8+half; got != want {
		t.Errorf("a level of %d states without the graph needs %d bytes, want %d", n, got, want)
	}
	if got, want := e.levelNeed(1<<30), batch+int64(spillLimit)+half; got != want {
		t.Errorf("a level of 2^30 states needs %d bytes, want %d: its frontier goes to a file past %d bytes", got, want, spillLimit)
	}
	e.g = &graph{}
	if got, want := e.levelNeed(n), batch+n*words*8+n*perEdges+half; got != want {
		t.Errorf("a level of %d states with the graph needs %d bytes, want %d", n, got, want)
	}
	// On disk the window does not grow; a merge takes its two buffers and
	// a flag per fingerprint of the window, and the queue of candidates
	// new to the window its part in memory. A set on disk may hold some
	// candidates back, so its batches' appends are not pipelined: one set
	// of successor keys and candidates.
	batch = int64(2*batchPerWorker)*(3*words*8+2*int64(unsafe.Sizeof(candidate{}))) + 2*recentSize*8
	e = &exploration{words: words, fwords: words, vis: &diskStore{inMemory: st, onFile: &diskSet{window: 5000}}, recent: make([]recentSet, 2)}
	if got, want := e.levelNeed(n), batch+n*words*8+2*mergeBuffer+5000+int64(spillLimit); got != want {
		t.Errorf("a level of %d states on disk needs %d bytes, want %d", n, got, want)
	}
	e = &exploration{links: linkLog{recordLog{n: 10}}, g: &graph{edges: edgeLog{recordLog{n: 7}}}}
	if got, want := e.livenessNeed(), int64(4*11+4*7+4*10+10); got != want {
		t.Errorf("judging 10 states and 7 edges held in memory needs %d bytes, want %d", got, want)
	}
	// Edges in a file are read back a block at a time.
	e.g.edges.base = 7
	if got, want := e.livenessNeed(), int64(4*11+4*7+4*10+10+7*edgeBytes); got != want {
		t.Errorf("judging 10 states and 7 edges on file needs %d bytes, want %d", got, want)
	}
}

// The bound is reached when resident memory and what is about to be
// allocated together reach the threshold: at the threshold itself, not
// only past it.
func TestMemory_PassesAtTheThreshold(t *testing.T) {
	const bound = 1 << 30
	th := memoryThreshold(bound)
	for _, tc := range []struct {
		resident, need int64
		want           bool
	}{
		{th - 100, 99, false},
		{th - 100, 100, true},
		{th, 0, true},
		{th - 1, 0, false},
		{th + 1, -2, false},
	} {
		if got := passes(tc.resident, tc.need, bound); got != tc.want {
			t.Errorf("resident %d + need %d against a threshold of %d: passes=%v, want %v", tc.resident, tc.need, th, got, tc.want)
		}
	}
}

// The watcher looks again sooner the nearer resident memory is to the
// threshold, at least every quarter of a second and never more often than
// every 5 ms; and at residentGrowth, memory cannot cross the gap it leaves
// before the next look.
func TestMemory_WatcherLooksSoonerNearTheBound(t *testing.T) {
	cases := []struct {
		gap  int64
		want time.Duration
	}{
		{-1 << 20, 5 * time.Millisecond}, // past the threshold
		{0, 5 * time.Millisecond},
		{16 << 20, 5 * time.Millisecond},      // 1.95 ms at 8 GiB/s
		{256 << 20, 31250 * time.Microsecond}, // a thirty-second of 8 GiB
		{1 << 30, 125 * time.Millisecond},
		{4 << 30, 250 * time.Millisecond},
		{1 << 40, 250 * time.Millisecond},
	}
	for _, tc := range cases {
		got := watchAgain(tc.gap)
		if got != tc.want {
			t.Errorf("watchAgain(%d) = %v, want %v", tc.gap, got, tc.want)
		}
		if grown := int64(got.Seconds() * residentGrowth); tc.gap > 0 && got > 5*time.Millisecond && grown > tc.gap {
			t.Errorf("watchAgain(%d) = %v: memory may grow %d bytes before the next look", tc.gap, got, grown)
		}
	}
}

// A run's peak resident memory includes a peak shorter than the sampler's
// period, when the run raises the process's high-water mark: here a
// region mapped, touched and unmapped before the sampler's first look.
// (Resident memory before the region plus the region is no bound: the
// runtime may return memory of earlier tests meanwhile. The kernel's mark
// after the region is.)
func TestMemory_SamplerSeesAShortPeak(t *testing.T) {
	if residentBytes() == 0 || peakResidentBytes() == 0 {
		t.Skip("this system does not report resident memory or its high-water mark")
	}
	rss, hwm := residentBytes(), peakResidentBytes()
	// Enough to raise the high-water mark by about 64 MiB.
	n := (hwm - rss + 64<<20) / 8
	if n*8 > 2<<30 {
		t.Skipf("the process's high-water mark is %s above its resident memory", FormatBytes(int64(hwm-rss)))
	}
	r := sampleResident()
	words := mapWords(int(n))
	if words == nil {
		t.Skip("cannot map the region")
	}
	for i := 0; i < len(words); i += 512 {
		words[i] = 1
	}
	unmapWords(words)
	after := peakResidentBytes()
	if after <= hwm {
		t.Skipf("the region (%s) did not raise the high-water mark (%s)", FormatBytes(int64(n*8)), FormatBytes(int64(hwm)))
	}
	if peak := r.stop(); peak < after {
		t.Fatalf("peak %s, want at least the high-water mark the region raised, %s (from %s)",
			FormatBytes(int64(peak)), FormatBytes(int64(after)), FormatBytes(int64(hwm)))
	}
}

// A search whose fingerprints moved to disk stops only when resident
// memory and what its next level allocates would reach the bound less a
// twentieth, as the watcher judges it: its window does not grow, so the
// threshold's margin for growth between two looks (half of a bound under
// 128 MiB) stopped it at half the bound. Its stop names what it read, and
// the run's peak resident memory is not below that.
func TestMemory_OnDiskStopsOnlyNearTheBound(t *testing.T) {
	cfg := loadConfigFile(t, "../testdata/configs/commands.json")
	c := checkerFor(t, system.Generated(), cfg, "trtllm")
	ref := c.checkRun(context.Background(), Limits{Workers: 2}, nil)
	const bound = 1 << 40
	old := readResident
	t.Cleanup(func() { readResident = old })
	// Resident memory reads as the bound before the sixth level, which
	// moves the search to disk, then as after.
	fake := func(after int64) {
		looks := 0
		readResident = func() uint64 {
			looks++
			if looks == 6 {
				return bound
			}
			if looks > 6 {
				return uint64(after)
			}
			return 0
		}
	}
	// Past the threshold of a search in memory, well below the bound.
	below := memoryThreshold(bound) + bound/50
	fake(below)
	r := c.checkRun(context.Background(), Limits{Workers: 2, MaxMemory: bound}, nil)
	if !r.Complete || r.Stats.States != ref.Stats.States || r.Stats.DiskAt == 0 {
		t.Fatalf("on disk with %s resident of a %s bound: complete=%v (%s), %d states of %d, moved to disk at %d",
			FormatBytes(below), FormatBytes(bound), r.Complete, r.StopDetail, r.Stats.States, ref.Stats.States, r.Stats.DiskAt)
	}
	// Near the bound: it stops, and says with what.
	near := diskThreshold(bound) - 1<<20
	fake(near)
	rep := checkOne(t, cfg, "trtllm", Limits{Workers: 2, MaxMemory: bound})
	r = rep.Runs[0]
	want := "stopped before resident memory passed the bound of 1024.0 GiB (--max-memory): " + FormatBytes(near) + " resident and about "
	if r.Complete || r.StopReason != stopMaxMemory || !strings.HasPrefix(r.StopDetail, want) ||
		!strings.HasSuffix(r.StopDetail, " more to allocate would reach "+FormatBytes(diskThreshold(bound))) || r.Stats.DiskAt == 0 {
		t.Fatalf("on disk with %s resident: complete=%v stop=%q %q, moved to disk at %d; want a stop saying %q…",
			FormatBytes(near), r.Complete, r.StopReason, r.StopDetail, r.Stats.DiskAt, want)
	}
	if r.Stats.PeakResident < uint64(near) || rep.PeakResident < uint64(near) {
		t.Fatalf("the stop read %s resident, yet the run's peak is %s and the process's %s",
			FormatBytes(near), FormatBytes(int64(r.Stats.PeakResident)), FormatBytes(int64(rep.PeakResident)))
	}
}
