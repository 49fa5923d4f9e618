package checker

import (
	"context"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// exploreOnce runs one breadth-first search: it sets the search up, starts
// it from the initial state or a checkpoint, runs it level by level, and
// reports. It returns why a search with sleep sets must start again
// without them ("" when it need not).
func (c *Checker) exploreOnce(ctx context.Context, lim Limits, progress func(searchProgress)) (*Result, string) {
	e := c.newExploration(lim)
	// Everything the run held outside the Go heap goes back at the end:
	// the result keeps none of it.
	defer e.release()
	ctx, unwatch := e.watchBound(ctx)
	defer unwatch()
	e.root()
	defer func() { e.frontier.close() }()
	e.startFromCheckpoint()
	e.search(ctx, progress)
	e.finishCheckpoint()
	return e.result(), e.sleepDropped
}

// newExploration sets up a search with these limits. A bit array keeps no
// ids and no keys: it turns Liveness and Exact off.
func (c *Checker) newExploration(lim Limits) *exploration {
	start := time.Now()
	workers := lim.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	e := &exploration{c: c, lim: lim, words: 1 + c.World().NumWorkers() + model.HandoffWords*c.World().NumHandoffs(), cov: system.NewCoverage(c.Protocol().Spec()), start: start}
	e.heapStart = readHeap()
	if lim.Bitstate > 0 {
		e.lim.Liveness, e.lim.Exact = false, false
	}
	// Liveness is judged on drain chains (liveness.go) unless fairness
	// needs every edge or a search starts again to show a trap. The
	// reduction keeps EventuallyDrained's verdict on the chains' search
	// (system/por.go); one that keeps every edge explores every ordering.
	chains := e.lim.Liveness && len(lim.Fair) == 0 && !lim.FairDrained && !lim.everyEdge
	e.por = e.lim.Reduce && (!e.lim.Liveness || chains)
	sleep := e.sleepsOn(e.lim)
	e.vis = newVisited(e.lim, e.words, e.lim.Liveness, sleep)
	e.fwords = e.words
	if sleep {
		e.sleep = newSleepSets(e.vis.(*fpSet))
		e.fwords++
	}
	e.spill.parent = lim.SpillDir
	e.links.dir = &e.spill
	e.workers = workers
	e.stats.Workers = workers
	e.recent = make([]recentSet, workers)
	e.x = make([]*expander, workers)
	if e.lim.Liveness {
		e.g = &graph{edges: edgeLog{recordLog{dir: &e.spill}}}
		if len(lim.Fair) > 0 || lim.FairDrained {
			e.g.fair = &fairState{obs: lim.Fair, env: edgeLog{recordLog{dir: &e.spill}}}
		}
		e.chains = chains
	}
	return e
}

// release gives back what the run held outside the Go heap.
func (e *exploration) release() {
	e.vis.free()
	e.links.close()
	if e.g != nil {
		e.g.edges.close()
		if e.g.fair != nil {
			e.g.fair.env.close()
		}
	}
	e.spill.remove()
}

// watchBound holds the memory bound within a level too: a watcher stops
// the level when resident memory nears the bound, and the collector works
// harder as the heap nears it. It returns the context the search runs
// under and what ends the watch.
func (e *exploration) watchBound(ctx context.Context) (context.Context, func()) {
	bound := e.lim.MaxMemory
	if bound <= 0 {
		return ctx, func() {}
	}
	old := debug.SetMemoryLimit(bound)
	ctx, e.cancel = context.WithCancel(ctx)
	done := make(chan struct{})
	canDisk := e.diskable()
	e.begun = make(chan struct{})
	go func() {
		select {
		case <-e.begun:
		case <-done:
			return
		}
		watchMemory(bound, done, e.watched(canDisk, bound))
	}()
	return ctx, func() {
		close(done)
		e.cancel()
		debug.SetMemoryLimit(old)
	}
}

// watched is what the memory watcher does with a reading past the bound.
func (e *exploration) watched(canDisk bool, bound int64) func(rss int64) bool {
	return func(rss int64) bool {
		// A search that can move its fingerprints to disk does so at its
		// next batch, and the watcher goes on watching: its table stops
		// growing there but keeps what it holds, so only the bound itself
		// (less a twentieth) stops it then. One that cannot stops at the
		// threshold.
		limit := memoryThreshold(bound)
		if canDisk {
			limit = diskThreshold(bound)
			if !e.wantDisk.Swap(true) || !e.onDisk.Load() || rss < limit {
				return false
			}
		}
		e.memStop.Store(&memReading{resident: rss, limit: limit, bound: bound, midLevel: true})
		e.stopForMemory()
		return true
	}
}

// stopForMemory stops the run for its memory bound. Both checks, the
// watcher's and the one before each level, stop through it, so that the
// report gives the same reason whichever of them noticed.
func (e *exploration) stopForMemory() {
	if e.cancel == nil {
		return
	}
	e.overMemory.Store(true)
	e.cancel()
}

// root puts the initial state in the visited set and on the frontier.
func (e *exploration) root() {
	c := e.c
	init := c.Initial()
	k := c.Key(&init)
	e.rootKey = k
	fp := fingerprint(&k, e.words)
	_, slot := e.vis.insert(fp, k[:e.words])
	if e.vis.keepsIDs() {
		e.vis.setID(fp, k[:e.words], slot, 0)
	}
	if e.sleep != nil {
		*e.sleep.tab.sleepAt(e.sleep.tab.sleepRef(fp)) = sleepPending
	}
	e.links.append(0, 0)
	if e.g != nil {
		e.g.drained = append(e.g.drained, c.Drained(&init))
		if f := e.g.fair; f != nil {
			f.enabled = append(f.enabled, 0)
			f.sides = f.judgeSides(f.sides, c.System, &init)
		}
	}
	if v := c.CheckState(&init); v != nil {
		e.viol = &found{v: v, pid: 0, move: -1}
	}
	e.frontier = newKeyQueue(e.fwords, &e.spill)
	e.frontier.push(e.entry(k[:e.words], sleepFull))
}

// startFromCheckpoint sets up the checkpoints and, resuming, replaces the
// root's frontier with the checkpoint's. A checkpoint that cannot be
// written or read stops the run before anything is explored, saying why.
func (e *exploration) startFromCheckpoint() {
	lim := e.lim
	if lim.Checkpoint != "" || lim.Resume != "" {
		e.identity = e.c.identity(e.words, lim.Bitstate, e.por)
		if err := checkpointLimits(lim); err != nil {
			e.diskErr = err
		}
	}
	if lim.Checkpoint != "" && e.diskErr == nil {
		e.ckpt = &checkpointer{dir: checkpointDir(lim.Checkpoint, e.c.Run()), every: lim.CheckpointEvery, last: time.Now()}
	}
	if lim.Resume != "" && e.diskErr == nil {
		res, ok, err := e.restore(checkpointDir(lim.Resume, e.c.Run()))
		switch {
		case err != nil:
			e.diskErr = err
		case ok:
			e.frontier.close()
			e.frontier, e.resumedNext = res.frontier, res.next
			e.levelStart, e.startDepth, e.skip = res.levelStart, res.depth, res.done
			e.stats.Depth, e.before, e.resumed = res.depth, res.elapsed, true
		}
	}
	if e.diskErr != nil {
		e.cut, e.stopWhy = true, stopDisk
		e.frontier.n = 0
	}
}

// search expands the frontier level by level until it is empty, a
// violation is found, or a limit or a stop ends the run.
func (e *exploration) search(ctx context.Context, progress func(searchProgress)) {
	lastReport := time.Now()
	for depth := e.startDepth; e.frontier.n > 0 && e.viol == nil; depth++ {
		if e.stopBeforeLevel(ctx, depth) || !e.runLevel(ctx, depth) {
			break
		}
		if progress != nil && time.Since(lastReport) >= progressEvery {
			lastReport = time.Now()
			progress(searchProgress{Run: e.c.Run().Name, States: e.states(), Transitions: e.stats.Transitions, Depth: depth + 1,
				Queue: e.frontier.n, Elapsed: time.Since(e.start)})
		}
		e.sampleHeap()
		if e.viol == nil && e.frontier.n > 0 && e.lim.MaxStates > 0 && e.states() >= e.lim.MaxStates {
			e.cut, e.stopWhy = true, stopMaxStates
			e.stopBefore(depth + 1)
			break
		}
	}
}

// stopBeforeLevel reports whether the run stops before the level at
// depth: its depth limit, a stop, or a level that would not fit under the
// memory bound. A level that would not fit moves a search that can go to
// disk there (its table stops growing), and is judged again; one that
// cannot, or still does not fit, stops.
func (e *exploration) stopBeforeLevel(ctx context.Context, depth int) bool {
	lim := e.lim
	if lim.MaxDepth > 0 && depth >= lim.MaxDepth {
		e.cut, e.stopWhy = true, stopMaxDepth
		e.stopBefore(depth)
		return true
	}
	if err := ctx.Err(); err != nil {
		e.cut, e.stopWhy = true, e.stopped()
		e.stopBefore(depth)
		return true
	}
	pass := lim.MaxMemory > 0 && e.levelWouldPass(e.frontier.n, lim.MaxMemory)
	if (pass || e.wantDisk.Load()) && e.diskable() {
		if e.sleep != nil {
			e.sleepDropped = sleepDroppedDisk
			e.cut, e.stopWhy = true, stopInterrupted
			return true
		}
		if err := e.goToDisk(); err != nil {
			e.diskErr = err
			e.cut, e.stopWhy = true, stopDisk
			return true
		}
		pass = pass && e.levelWouldPass(e.frontier.n, lim.MaxMemory)
	}
	if pass {
		e.stopForMemory()
		e.cut, e.stopWhy = true, e.stopped()
		e.stopBefore(depth)
		return true
	}
	if e.begun != nil {
		e.beginOnce.Do(func() { close(e.begun) })
	}
	return false
}

// runLevel expands the frontier at depth into the next level, which
// becomes the frontier. It reports whether the run goes on: an
// interrupted level is dropped whole, after a checkpoint of the batches
// committed so far (a consistent state: a resumed run goes on from the
// next one). The figures are then those of the levels the run completed
// (or, resumed within a level, of the point it resumed from).
func (e *exploration) runLevel(ctx context.Context, depth int) bool {
	next := e.resumedNext
	if next == nil {
		next = newKeyQueue(e.fwords, &e.spill)
	}
	e.resumedNext = nil
	mark := e.mark()
	interrupted := e.level(ctx, e.frontier, next, e.levelStart, e.workers, e.skip, depth)
	e.skip = 0
	if interrupted {
		if e.ckpt != nil && e.diskErr == nil {
			e.save(e.frontier, next, depth, e.levelStart, e.levelDone, false)
			if e.ckpt.err != nil {
				e.diskErr = e.ckpt.err
			}
		}
		e.rollback(mark)
		next.close()
		e.cut, e.stopWhy = true, e.stopped()
		return false
	}
	e.levelStart += uint32(e.frontier.n)
	e.frontier.close()
	e.frontier = next
	if next.n > 0 {
		e.stats.Depth = depth + 1
	}
	return true
}

// stopped is the reason of a stop that was not asked for by a limit.
func (e *exploration) stopped() string {
	switch {
	case e.diskErr != nil:
		return stopDisk
	case e.overMemory.Load():
		return stopMaxMemory
	}
	return stopInterrupted
}

// stopBefore saves a checkpoint of a run stopped before a level (or
// before the rest of the level it resumed in).
func (e *exploration) stopBefore(depth int) {
	if e.ckpt == nil || e.diskErr != nil {
		return
	}
	next := e.resumedNext
	if next == nil {
		next = newKeyQueue(e.fwords, &e.spill)
		defer next.close()
	}
	e.save(e.frontier, next, depth, e.levelStart, e.skip, false)
	if e.ckpt.err != nil {
		e.diskErr = e.ckpt.err
		e.stopWhy = stopDisk
	}
}

// finishCheckpoint leaves, after a completed search, a checkpoint that
// resumes to its end at once.
func (e *exploration) finishCheckpoint() {
	if e.ckpt == nil || e.cut || e.viol != nil || e.diskErr != nil {
		return
	}
	empty := newKeyQueue(e.words, &e.spill)
	e.save(e.frontier, empty, e.stats.Depth, e.levelStart, 0, true)
	empty.close()
	if e.ckpt.err != nil {
		e.diskErr = e.ckpt.err
		e.cut, e.stopWhy = true, stopDisk
	}
}

// diskable reports whether the search can move its fingerprints to disk:
// a fingerprint search in memory keeping no ids (no liveness graph).
func (e *exploration) diskable() bool {
	_, ok := e.vis.(*fpSet)
	return ok && e.g == nil
}

// goToDisk moves the fingerprints to disk. The table, written to the
// file, gives its memory back and a window takes its place: a quarter of
// the memory bound at most, so that the window, the level's buffers and
// the merges' reads stay well under the bound the move was made for (a
// window as large as the table was, kept, left the run a twentieth of
// the bound to grow in). The window takes up to 0.7 of its slots' 0.8
// load, so that no shard, each loaded near the average, grows.
func (e *exploration) goToDisk() error {
	slots := e.vis.(*fpSet).slots()
	if b := e.lim.MaxMemory; b > 0 {
		slots = min(slots, int(b/4/8))
	}
	e.stats.DiskAt = e.links.n
	err := e.toDisk(slots / numShards)
	e.onDisk.Store(err == nil)
	return err
}

// releaseSearch gives back, once a complete search is to be judged for
// liveness, what only the search needed: the visited set (the largest
// thing it held; a liveness counterexample is rebuilt from the trace
// links, never looked up), the workers' buffers and caches. The collector
// then runs and the freed memory goes back to the system, so that the
// reverse graph is built in the room they left and the check before it
// reads what is really still held: for a large search only, as a forced
// collection costs a small one more than it gives back. It returns true,
// to sit in judge's conditions.
func (e *exploration) releaseSearch() bool {
	large := e.vis.bytes(e.links.n) >= releaseAbove
	e.vis.free()
	e.x, e.recent = nil, nil
	for sh := range e.byShard {
		e.byShard[sh] = nil
	}
	e.spill.spare = nil
	if large {
		debug.FreeOSMemory()
	}
	return true
}

// releaseAbove is the visited set's size from which releaseSearch hands
// memory back to the system at once.
const releaseAbove = 64 << 20

// result gathers the run's figures and verdicts.
func (e *exploration) result() *Result {
	e.finishStats()
	lim := e.lim
	r := &Result{Run: e.c.Run(), Stats: e.stats, Coverage: e.cov, DeadEnds: e.deadEnds, Resumed: e.resumed, Reduction: e.por, Sleep: e.sleep != nil,
		Symmetry: e.c.Symmetric(), Exact: lim.Exact, Complete: !e.cut && e.viol == nil}
	if e.cut {
		r.StopReason = e.stopWhy
		r.StopDetail = stopDetail(e.stopWhy, lim, r.Stats)
		if m := e.memStop.Load(); m != nil && e.stopWhy == stopMaxMemory {
			r.StopDetail += m.detail()
			r.stopResident = uint64(max(m.resident, 0))
		}
		if e.stopWhy == stopDisk {
			r.StopDetail += ": " + e.diskErr.Error()
		}
	}
	if !lim.Exact {
		n := float64(r.Stats.States)
		r.CollisionProbability = n * n / 2 / 18446744073709551616.0
	}
	if b, ok := e.vis.(*bitstateSet); ok {
		r.Bitstate = b.report(r.Stats.States)
	}
	if e.ckpt != nil {
		r.Checkpoints = e.ckpt.written
	}
	e.judge(r)
	return r
}

// finishStats fills the figures read at the end of the run.
func (e *exploration) finishStats() {
	e.stats.States = e.states()
	e.stats.Woken = e.woken
	e.stats.Elapsed = e.elapsed()
	if d, ok := e.vis.(*diskStore); ok {
		e.stats.DiskMerges = d.merges()
	}
	e.stats.StoreBytes = e.vis.bytes(e.links.n)
	e.stats.FingerprintBytes = e.vis.fingerprintBytes()
	e.stats.TraceBytes = int64(len(e.links.buf))
	e.stats.SpilledBytes = e.spill.written
	if e.g != nil {
		e.stats.GraphBytes = e.g.bytes()
	}
	e.sampleHeap()
}

// judge gives the result its violation: the one the search found, with
// its trace, or, on a complete graph, the liveness trap.
func (e *exploration) judge(r *Result) {
	lim := e.lim
	switch {
	case e.viol != nil:
		r.Violation = e.counterexample(e.viol)
		if e.por {
			r.Violation = e.c.shortenReduced(r.Violation)
		}
		r.Complete = false
	case lim.Liveness && !e.cut && e.releaseSearch() && lim.MaxMemory > 0 && e.livenessWouldPass(lim.MaxMemory):
		// The graph is complete, but judging it needs a reverse copy of
		// its edges that the bound does not leave room for.
		r.Complete = false
		r.StopReason = stopMaxMemory
		r.StopDetail = stopDetail(stopMaxMemory, lim, r.Stats) + e.memStop.Load().detail() + "; EventuallyDrained not judged: its reverse graph would not fit"
		r.stopResident = uint64(max(e.memStop.Load().resident, 0))
	case lim.Liveness && !e.cut:
		trap, err := e.checkLiveness()
		r.Stats.PeakHeap = e.stats.PeakHeap
		if err != nil {
			r.Complete = false
			r.StopReason = stopDisk
			r.StopDetail = stopDetail(stopDisk, lim, r.Stats) + ": " + err.Error() + "; EventuallyDrained not judged"
			break
		}
		if e.open > 0 {
			// The chains leave the verdict open: explore starts again
			// keeping every edge, and this result is set aside.
			r.ChainsOpen = e.open
			break
		}
		r.Liveness = true
		e.cov.Fired |= model.TrigLiveness
		r.Violation = trap
		if e.g.fair == nil {
			break
		}
		drained, fair, err := e.checkFair()
		if err == errSymmetric {
			// The verdicts say why nothing was judged; the search is
			// complete all the same.
			r.Fair = fair
			break
		}
		if err != nil {
			r.Complete = false
			r.StopReason = stopDisk
			r.StopDetail = stopDetail(stopDisk, lim, r.Stats) + ": " + err.Error() + "; fair liveness not judged"
			break
		}
		r.FairDrained, r.Fair = lim.FairDrained, fair
		if r.Violation == nil {
			r.Violation = drained
		}
	case lim.Liveness:
		r.StopDetail += "; EventuallyDrained not judged: the graph is incomplete"
	}
}
