package checker

import (
	"context"
	"errors"
	"slices"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// successors holds the successors of one state while they are looked up.
type successors [maxMoves]struct {
	key system.Key
	fp  uint64
	t   system.State
}

// expander is a worker's scratch for expanding one state at a time, kept
// from batch to batch: room for the most successors a state can have is
// too large for the stack, and a new one per call would be about 170 KB
// of garbage for every batch.
type expander struct {
	succ successors
	k    system.Key
	// s is the state being expanded, unpacked from k; prec is its
	// records, made once its first new successor is judged (precOK).
	s      system.State
	prec   model.Records
	precOK bool
	ms     system.MoveSet
	tx     model.Tx
	// Per successor: the move it was reached by, its id and whether it
	// is known, and whether the worker's cache knew it.
	idx    [maxMoves]int
	ids    [maxMoves]uint32
	known  [maxMoves]bool
	cached [maxMoves]bool
	// Sleep sets: each move's slot and workers; the state's set, the
	// moves that woke up (a wake entry) and the moves taken so far; each
	// successor's set and table slot value.
	sm               sleepMoves
	z, woke, taken   sleepSet
	wake             bool
	zs               [maxMoves]sleepSet
	sv               [maxMoves]uint16
	recent           *recentSet
	seen             map[system.Key]struct{}
	protocol, amp, n int
	// chain is the successor whose edge a drain chain records (-1: none,
	// or every own edge is recorded).
	chain int
	// touch keeps the loads fpSet.touch makes from being left out.
	touch uint64
}

// batchPerWorker is how many frontier states each worker expands between
// two commits. A level is expanded in batches read in order from the
// frontier, so that what a level buffers does not grow with the level; a
// batch small enough that its table probes are still in cache when it is
// committed makes the commit's second probe of each new state cheap.
const batchPerWorker = 1024

// chunksPerWorker is how many chunks a batch is cut into per worker. The
// workers take the chunks as they come free, so a batch ends with one
// worker finishing its last chunk while the others wait: small chunks
// keep that wait short.
const chunksPerWorker = 16

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
	bufs := [2][]uint64{make([]uint64, per*e.fwords), make([]uint64, per*e.fwords)}
	cur := 0
	buf := bufs[cur]
	// Two sets of chunk outputs: a pipelined batch's ordered appends read
	// one while the next batch is expanded into the other.
	outs := [2][]workerOut{make([]workerOut, workers*chunksPerWorker), nil}
	oc := 0
	// Resumed within the level: the states before skip were expanded
	// and committed before the checkpoint.
	rd.skip(skip, buf)
	e.levelDone = skip
	n := rd.read(buf, per)
	for done := skip; ; {
		if rd.err != nil {
			e.diskErr = rd.err
			e.joinAppends(next)
			return true
		}
		if n == 0 {
			if e.joinAppends(next) {
				return true
			}
			// The set gives the states it held back (the level's last
			// window on disk): they are the next frontier's last.
			if err := e.vis.settle(&e.links, next, true); err != nil {
				e.diskErr = err
				return true
			}
			return false
		}
		batch, stop := e.expandBatch(ctx, buf, n, levelStart+uint32(done), workers, outs[oc])
		// The batch before's appends ran beside this expansion; what
		// follows reads the logs they wrote to.
		if e.joinAppends(next) || stop {
			return true
		}
		if e.tally(batch) {
			return false
		}
		// The next batch is read while this one is committed: the
		// commit's ordered part runs on one core, and reading the
		// frontier (decoding its keys, from its file when it is on
		// disk) takes the other.
		committed := n
		ahead := make(chan int, 1)
		if workers > 1 {
			go func() { ahead <- rd.read(bufs[1-cur], per) }()
		}
		pipe := e.pipelined(workers)
		if pipe {
			e.commitHead(batch, workers)
		} else {
			e.commit(batch, workers, next)
		}
		if workers > 1 {
			n = <-ahead
		} else {
			n = rd.read(bufs[1-cur], per)
		}
		cur = 1 - cur
		buf = bufs[cur]
		if pipe {
			// The batch's ordered appends run while the next batch is
			// expanded into the other outputs.
			e.appending = make(chan struct{})
			go func(batch []workerOut, done chan struct{}) {
				e.appendBatch(batch, next)
				close(done)
			}(batch, e.appending)
			oc = 1 - oc
			if outs[oc] == nil {
				outs[oc] = make([]workerOut, workers*chunksPerWorker)
			}
		} else if next.err != nil || e.links.err != nil {
			e.diskErr = errors.Join(next.err, e.links.err)
			return true
		}
		if e.sleep != nil && e.sleep.full {
			e.sleepDropped = sleepDroppedFull
			return true
		}
		done += committed
		e.levelDone = done
		if e.afterBatch(frontier, next, levelStart, done, depth) {
			e.joinAppends(next)
			return true
		}
	}
}

// pipelined reports whether a batch's commit leaves its ordered appends
// (trace links, outcomes, the next frontier, the liveness graph's edges)
// to run beside the next batch's expansion. That needs a second core, a
// set that admits every new candidate at once (one on disk may hold some
// back), no sleep sets (their commit reads the frontier's order) and no
// checkpoints (which read the logs between batches).
func (e *exploration) pipelined(workers int) bool {
	if workers < 2 || e.sleep != nil || e.ckpt != nil {
		return false
	}
	switch e.vis.(type) {
	case *fpSet, *exactSet:
		return true
	}
	return false
}

// joinAppends waits for the batch before's ordered appends, if they run
// (see pipelined), and reports whether a log they wrote failed (the run
// then stops, as at any commit).
func (e *exploration) joinAppends(next *keyQueue) bool {
	if e.appending == nil {
		return false
	}
	<-e.appending
	e.appending = nil
	if next.err != nil || e.links.err != nil {
		e.diskErr = errors.Join(next.err, e.links.err)
		return true
	}
	return false
}

// expandBatch is phase A for a batch of n states whose first has id
// first, in chunks on the workers. It returns the chunks up to the first
// that found a violation, or reports that the run was stopped.
//
// The first violation in frontier order is the one to report: it lies on
// a shortest path and does not depend on scheduling. The batches before
// this one held none, and chunks are in frontier order. A chunk stops
// after the state its violation was found from, so the figures of the
// chunks up to the first violating one count every state up to that one
// in frontier order, and no other: the same figures for any number of
// workers.
func (e *exploration) expandBatch(ctx context.Context, buf []uint64, n int, first uint32, workers int, outs []workerOut) ([]workerOut, bool) {
	chunks := min(n, len(outs))
	if workers == 1 {
		chunks = 1
		e.expand(ctx, buf, first, 0, n, 0, &outs[0])
	} else {
		parallelOn(workers, chunks, func(w, ci int) {
			if ctx.Err() == nil {
				lo, hi := ci*n/chunks, (ci+1)*n/chunks
				e.expand(ctx, buf, first, lo, hi, w, &outs[ci])
			}
		})
	}
	if ctx.Err() != nil {
		return nil, true
	}
	batch := outs[:chunks]
	for i := range batch {
		if batch[i].viol != nil {
			e.viol = batch[i].viol
			return batch[:i+1], false
		}
	}
	return batch, false
}

// tally adds a batch's figures to the run's and reports whether it found
// a violation (the batch is then not committed).
func (e *exploration) tally(batch []workerOut) bool {
	for i := range batch {
		e.stats.Transitions += batch[i].transitions
		e.deadEnds += batch[i].deadEnds
		e.stats.Reduced += batch[i].reduced
		e.stats.Pruned += batch[i].pruned
		e.stats.Slept += batch[i].slept
		addCoverage(e.cov, batch[i].cov)
	}
	return e.viol != nil
}

// afterBatch lets the visited set settle what it held back (a full window
// on disk), moves the fingerprints to disk when asked, and writes a
// checkpoint when one is due, after the batch that brought the level to
// done states. It reports whether the level must stop.
func (e *exploration) afterBatch(frontier, next *keyQueue, levelStart uint32, done, depth int) bool {
	// The move to disk reads the trace links' count: the appends of the
	// batch must be over first. A request the watcher makes after this
	// is seen at the next batch.
	want := e.wantDisk.Load()
	if (want || e.lim.DiskAfter > 0) && e.joinAppends(next) {
		return true
	}
	if err := e.vis.settle(&e.links, next, false); err != nil {
		e.diskErr = err
		return true
	}
	if lim := e.lim.DiskAfter; lim > 0 && e.links.n >= lim && e.diskable() {
		e.wantDisk.Store(true)
		want = true
	}
	if want && e.diskable() {
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
	return false
}

// expand is phase A for the batch's states lo..hi, whose first has id
// batchStart, on worker w. It fills out, reusing its buffers.
func (e *exploration) expand(ctx context.Context, batch []uint64, batchStart uint32, lo, hi, w int, out *workerOut) {
	out.reset(hi-lo, e.words, e.c)
	if e.x[w] == nil {
		e.x[w] = new(expander)
	}
	x := e.x[w]
	x.recent, x.seen = &e.recent[w], nil
	if e.vis.byKey() {
		// A set that compares keys cannot trust a fingerprint: the chunk
		// remembers the keys it made candidates of instead.
		x.seen = map[system.Key]struct{}{}
	}
	fw := e.fwords
	for i := lo; i < hi; i++ {
		if i&255 == 0 && ctx.Err() != nil {
			// Stopped (interrupt or memory bound): the level is dropped.
			break
		}
		e.expandState(x, batch[i*fw:(i+1)*fw], batchStart+uint32(i), out)
		if out.viol != nil {
			// Later states of this chunk cannot hold an earlier violation.
			break
		}
	}
}

// reset empties a chunk's output for a chunk of n states. Most states
// produce about one or two new candidates; the buffers are sized for that
// so that appends rarely copy.
func (out *workerOut) reset(n, words int, c *Checker) {
	out.keys = slices.Grow(out.keys[:0], 2*n*words)
	out.cands = slices.Grow(out.cands[:0], 2*n)
	out.edges, out.edgeKeys = out.edges[:0], out.edgeKeys[:0]
	out.enabled, out.sides = out.enabled[:0], out.sides[:0]
	out.transitions, out.deadEnds, out.viol = 0, 0, nil
	out.reduced, out.pruned, out.slept = 0, 0, 0
	out.candSleep, out.expanded, out.actions, out.wakeKeys = out.candSleep[:0], out.expanded[:0], out.actions[:0], out.wakeKeys[:0]
	if out.cov == nil {
		out.cov = system.NewCoverage(c.Protocol().Spec())
	} else {
		resetCoverage(out.cov)
	}
}

// expandState expands the frontier entry of state pid. Its successors are
// built first and looked up after, in a tight loop: the lookups are
// independent random reads of a large table, and issuing them together
// lets the memory system overlap their cache misses.
func (e *exploration) expandState(x *expander, entry []uint64, pid uint32, out *workerOut) {
	c := e.c
	k := &x.k
	copy(k[:e.words], entry[:e.words])
	s := &x.s
	c.UnpackTo(k, s)
	x.precOK = false
	x.protocol = c.Enabled(s, &x.ms)
	x.wake = false
	if e.sleep != nil {
		e.sleepOfState(x, s, k, entry[e.words], out)
	}
	if x.protocol == 0 && !x.wake {
		out.deadEnds++
		out.cov.Fired |= c.quiescenceFired(s)
		if _, v := c.Quiescence(s); v != nil && out.viol == nil {
			out.viol = &found{v: v, pid: pid, move: -1}
		}
	}
	x.amp = -1
	if e.por && !e.lim.sleepAlone {
		x.amp = c.Ample(s, &x.ms)
		if x.amp >= 0 && e.chains && !ownSet(&x.ms, x.protocol, x.amp) {
			x.amp = -1
		}
		if x.amp >= 0 && !x.wake {
			out.reduced++
		}
	}
	if e.g != nil && e.g.fair != nil {
		out.enabled = append(out.enabled, stateProcs{id: pid, procs: ownProcesses(&x.ms, x.protocol)})
	}
	e.successorsOf(x, s, pid, out)
	x.chain = -1
	if e.chains {
		e.chainStep(x, k)
	}
	e.lookUp(x)
	for j := 0; j < x.n; j++ {
		e.keep(x, j, pid, out)
	}
}

// ownSet reports whether every enabled move of handoff h is one the
// system makes on its own. The reduction keeps EventuallyDrained's
// verdict only for such sets (system/por.go): a state a set's move leads
// to from one that cannot drain cannot drain either. The set spends no
// budget, so this holds wherever the set is persistent; the check keeps
// the argument from resting on that.
func ownSet(ms *system.MoveSet, protocol, h int) bool {
	for i := 0; i < ms.N; i++ {
		if int(ms.M[i].H) != h {
			continue
		}
		if _, own := ms.Process(i, protocol); !own {
			return false
		}
	}
	return true
}

// sleepOfState reads the sleep set state s is expanded with, and the
// moves that woke up when the entry is a wake entry (extra is not
// sleepFull): it takes only the moves that were asleep when it was
// expanded and are awake now.
func (e *exploration) sleepOfState(x *expander, s *system.State, k *system.Key, extra uint64, out *workerOut) {
	ref := e.sleep.tab.sleepRef(fingerprint(k, e.words))
	x.z = e.sleep.get(*e.sleep.tab.sleepAt(ref))
	out.expanded = append(out.expanded, ref)
	x.woke, x.taken = sleepSet{}, sleepSet{}
	if extra != sleepFull {
		x.wake, x.woke = true, e.sleep.get(uint16(extra))
	}
	e.c.sleepInfo(s, &x.ms, &x.sm)
}

// successorsOf applies the moves the reductions leave to s, judging each
// step, and puts the successors in x.succ (x.n of them).
func (e *exploration) successorsOf(x *expander, s *system.State, pid uint32, out *workerOut) {
	c := e.c
	ms := &x.ms
	n := 0
	// The triggers the steps fire, kept in a register and merged once.
	fired := out.cov.Fired
	for mi := 0; mi < ms.N; mi++ {
		if x.amp >= 0 && int(ms.M[mi].H) != x.amp {
			// Taken from the successors instead (por.go).
			if !x.wake {
				out.pruned++
			}
			continue
		}
		if e.sleep != nil && e.asleep(x, mi, out) {
			continue
		}
		sc := &x.succ[n]
		sc.t = *s
		x.tx.W, x.tx.J.N = &sc.t.W, 0
		c.ApplyTx(&sc.t, &x.tx, ms.M[mi], out.cov, ms.Stuck)
		out.transitions++
		fired |= x.tx.J.Fired()
		if v := c.JudgeStep(s, &sc.t, &x.tx.J, ms.M[mi]); v != nil {
			if out.viol == nil {
				out.viol = &found{v: v, pid: pid, move: mi}
			}
			continue
		}
		c.CanonicalFrom(&sc.t, s, &x.k, &sc.key, int(ms.M[mi].H))
		if e.sleep != nil {
			x.zs[n] = c.successorSleep(s, &sc.t, ms, &x.sm, mi, x.z, x.taken)
			if sl := x.sm.slot[mi]; sl >= 0 {
				x.taken.add(int(sl))
			}
		}
		x.idx[n] = mi
		n++
	}
	x.n = n
	out.cov.Fired = fired
}

// asleep reports whether move mi is not taken for sleep sets: asleep (its
// successor is reached through a commuting order, sleep.go), or, in a
// wake entry, taken when the state was first expanded.
func (e *exploration) asleep(x *expander, mi int, out *workerOut) bool {
	sl := int(x.sm.slot[mi])
	if sl >= 0 && x.z.has(sl) {
		if !x.wake {
			out.slept++
		}
		return true
	}
	return x.wake && (sl < 0 || !x.woke.has(sl))
}

// lookUp finds which successors are known: to the worker's cache, or to
// the visited set. With sleep sets there is no cache: a state met again
// may need its set cut.
//
// A known state's id is read only for an edge the liveness graph records:
// the ids lie apart from the fingerprints, and reading one is a second
// miss of the cache for each known successor.
func (e *exploration) lookUp(x *expander) {
	// The fingerprints are computed together, apart from the steps: each
	// is a chain of dependent multiplies, and the processor overlaps the
	// chains of successive successors only in a loop this short.
	for j := 0; j < x.n; j++ {
		x.succ[j].fp = fingerprint(&x.succ[j].key, e.words)
	}
	if t, ok := e.vis.(*fpSet); ok && e.sleep == nil {
		x.touch = t.touch(x, x.seen == nil)
	}
	for j := 0; j < x.n; j++ {
		fp := x.succ[j].fp
		if e.sleep != nil {
			x.cached[j] = false
			x.sv[j], x.known[j] = e.sleep.tab.sleepOf(fp)
			continue
		}
		x.cached[j] = x.seen == nil && x.recent.has(fp)
		switch {
		case x.cached[j]:
		case !e.recorded(x, j):
			x.known[j] = e.vis.has(fp, &x.succ[j].key)
		default:
			x.ids[j], x.known[j] = e.vis.lookup(fp, &x.succ[j].key)
		}
	}
}

// recorded says whether the liveness graph records successor j's edge:
// the system's own moves, and with fairness every move (see keep).
func (e *exploration) recorded(x *expander, j int) bool {
	if e.g == nil {
		return false
	}
	if e.chains {
		return j == x.chain
	}
	_, own := x.ms.Process(x.idx[j], x.protocol)
	return e.g.fair != nil || own
}

// chainStep picks the successor whose edge the state's drain chain takes
// (liveness.go): the first the system reaches on its own that is not the
// state itself, or the state itself when that is all there is. Any choice
// keeps the verdict (a chain that does not drain sends the search to
// keep every edge); a self-loop never drains, so it comes last. The
// state is told from its successors by their canonical keys, which the
// explorer holds for both: no fingerprint is computed again.
func (e *exploration) chainStep(x *expander, k *system.Key) {
	for j := 0; j < x.n; j++ {
		if _, own := x.ms.Process(x.idx[j], x.protocol); !own {
			continue
		}
		x.chain = j
		if !slices.Equal(x.succ[j].key[:e.words], k[:e.words]) {
			return
		}
	}
}

// keep files successor j of state pid: an edge of the liveness graph, a
// sleep action for a known state, a violation, or a candidate.
func (e *exploration) keep(x *expander, j int, pid uint32, out *workerOut) {
	sc := &x.succ[j]
	// The liveness graph holds the moves the system makes on its own:
	// the environment may stop faulting for good, so a way to a drained
	// state must not need a fault or an early timer.
	// On drain chains the edge is the chain's (chainStep asked which
	// moves are the system's own already), and fairness, which labels
	// edges with processes, never runs on them.
	var p uint8
	own := false
	if e.g != nil && !e.chains {
		p, own = x.ms.Process(x.idx[j], x.protocol)
	}
	// rec: the edge is recorded. Fairness also keeps the environment's
	// edges, labelled apart (fair.go): a run may take them on its way,
	// finitely often; and it labels each own edge with its process.
	rec, proc := own, uint8(0)
	if e.chains {
		rec = j == x.chain
	}
	if e.g != nil && e.g.fair != nil {
		rec, proc = true, envLabel
		if own {
			proc = p
		}
	}
	switch {
	case x.cached[j]:
		// Known, or a candidate at an earlier (parent, move) in this
		// level, which the level keeps anyway; its id is found once the
		// batch is committed.
		if rec {
			out.edges = append(out.edges, e.newEdge(out, pid, sc.fp, &sc.key, proc))
		}
		return
	case x.known[j]:
		e.keepKnown(x, j, pid, rec, proc, out)
		return
	case x.seen != nil:
		if _, ok := x.seen[sc.key]; ok {
			if rec {
				out.edges = append(out.edges, e.newEdge(out, pid, sc.fp, &sc.key, proc))
			}
			return
		}
	}
	// Every state expanded passed the state invariants when it was
	// found (the initial state before the search, any other as a
	// candidate), so only what the step changed is judged.
	if !x.precOK {
		x.prec, x.precOK = e.c.Records(&x.s), true
	}
	if v := e.c.checkStateFrom(&sc.t, &x.s, &x.prec); v != nil {
		if out.viol == nil || (out.viol.pid == pid && x.idx[j] < out.viol.move) {
			out.viol = &found{v: v, pid: pid, move: x.idx[j]}
		}
		return
	}
	cd := candidate{fp: sc.fp, pid: pid, move: uint8(x.idx[j]), off: len(out.keys)}
	if e.sleep != nil {
		out.candSleep = append(out.candSleep, x.zs[j])
	}
	if x.seen != nil {
		x.seen[sc.key] = struct{}{}
	} else {
		x.recent.add(sc.fp)
	}
	if e.g != nil {
		cd.drained = e.c.Drained(&sc.t)
		if f := e.g.fair; f != nil {
			out.sides = f.judgeSides(out.sides, e.c.System, &sc.t)
		}
	}
	if rec {
		ed := e.newEdge(out, pid, sc.fp, &sc.key, proc)
		ed.to = uint32(len(out.cands)) + 1
		out.edges = append(out.edges, ed)
	}
	out.keys = append(out.keys, sc.key[:e.words]...)
	out.cands = append(out.cands, cd)
}

// keepKnown files a successor the visited set knows. With sleep sets, one
// reached with a set that does not hold its own must have its set cut,
// and if it was expanded, take the moves that wake up (commit).
func (e *exploration) keepKnown(x *expander, j int, pid uint32, rec bool, proc uint8, out *workerOut) {
	sc := &x.succ[j]
	if e.sleep != nil && !e.sleep.get(x.sv[j]).within(x.zs[j]) {
		out.actions = append(out.actions, sleepAction{fp: sc.fp, z: x.zs[j], pid: pid, move: uint8(x.idx[j])})
		out.wakeKeys = append(out.wakeKeys, sc.key[:e.words]...)
	}
	if x.seen == nil {
		x.recent.add(sc.fp)
	}
	if rec {
		out.edges = append(out.edges, edge{from: pid, to: x.ids[j], key: -1, proc: proc})
	}
}

// commit is phase B: insert the batch's candidates, give ids to the new
// ones, record their trace links and push them on the next frontier.
func (e *exploration) commit(outs []workerOut, workers int, next *keyQueue) {
	if e.sleep != nil {
		e.endWaits(outs)
	}
	e.insertAll(outs, workers)
	// Ids in (parent, move) order: the order of the chunks and of the
	// candidates within them. A set may hold a new candidate back until
	// it knows whether it is new at all (on disk, settle).
	admitted := false
	for w := range outs {
		o := &outs[w]
		for i := range o.cands {
			cd := &o.cands[i]
			if !cd.isNew {
				continue
			}
			key := o.keys[cd.off : cd.off+e.words]
			if cd.isNew = e.vis.admit(cd, key); !cd.isNew {
				continue
			}
			admitted = true
			cd.id = uint32(e.links.n)
			e.appendState(o, i, next)
		}
	}
	if e.sleep != nil {
		e.commitSleep(outs, next)
	}
	if admitted && e.vis.keepsIDs() {
		e.recordIDs(outs, workers)
	}
	if e.g != nil {
		e.resolveEdges(outs, workers)
		e.appendEdges(outs)
	}
}

// appendState records new candidate i of o, whose id is the next: its
// trace link, its outcome and its place on the next frontier.
func (e *exploration) appendState(o *workerOut, i int, next *keyQueue) {
	cd := &o.cands[i]
	e.links.append(cd.pid, cd.move)
	if e.g != nil {
		e.g.drained = append(e.g.drained, cd.drained)
		if f := e.g.fair; f != nil {
			k := len(f.obs)
			f.enabled = append(f.enabled, 0)
			f.sides = append(f.sides, o.sides[i*k:(i+1)*k]...)
		}
	}
	next.push(e.entry(o.keys[cd.off:cd.off+e.words], sleepFull))
}

// commitHead is the part of a pipelined commit (see pipelined) the next
// batch's expansion waits for: the insertions and the new states' ids,
// which the expansion reads in the visited set. The ids are those commit
// gives, in (parent, move) order from the count of states the appends
// before left; appendBatch then finds the liveness graph's targets and
// writes the logs.
func (e *exploration) commitHead(outs []workerOut, workers int) {
	e.insertAll(outs, workers)
	id := uint32(e.links.n)
	for w := range outs {
		o := &outs[w]
		for i := range o.cands {
			if cd := &o.cands[i]; cd.isNew {
				cd.id = id
				id++
			}
		}
	}
	if id != uint32(e.links.n) && e.vis.keepsIDs() {
		e.recordIDs(outs, workers)
	}
}

// appendBatch is a pipelined commit's ordered appends, in the order
// commit makes them, after the liveness graph's targets are found. The
// targets only read the visited set, as the next batch's expansion does
// beside them, and the next commit, which writes the set, waits for
// them: they need not hold the expansion up.
func (e *exploration) appendBatch(outs []workerOut, next *keyQueue) {
	if e.g != nil {
		e.resolveEdges(outs, 1)
	}
	for w := range outs {
		o := &outs[w]
		for i := range o.cands {
			if o.cands[i].isNew {
				e.appendState(o, i, next)
			}
		}
	}
	if e.g != nil {
		e.appendEdges(outs)
	}
}

// insertAll inserts the batch's candidates into the visited set and marks
// the new ones. One worker inserts in (parent, move) order directly; more
// route every candidate to its shard, keeping (parent, move) order (chunks
// are in frontier order and candidates in each are in order), and insert
// shard by shard in parallel: within a shard the first candidate in
// (parent, move) order wins.
func (e *exploration) insertAll(outs []workerOut, workers int) {
	// A fingerprint table's first slot for a candidate a few places
	// ahead is read before each insertion (fpSet.peekAhead): the
	// insertions' misses of the cache are then under way together.
	fs, _ := e.vis.(*fpSet)
	if e.sleep != nil {
		fs = nil
	}
	if workers == 1 {
		for w := range outs {
			cands := outs[w].cands
			for i := range cands {
				if fs != nil && i+insertAhead < len(cands) {
					fs.peekAhead(cands[i+insertAhead].fp)
				}
				e.insert(&outs[w], i)
			}
		}
		return
	}
	// The routing lists are kept from batch to batch: a batch is small
	// and there are many.
	byShard := &e.byShard
	for sh := range byShard {
		byShard[sh] = byShard[sh][:0]
	}
	for w := range outs {
		for i := range outs[w].cands {
			sh := shardOf(outs[w].cands[i].fp)
			byShard[sh] = append(byShard[sh], candRef{w, i})
		}
	}
	parallel(workers, numShards, func(sh int) {
		refs := byShard[sh]
		for k, r := range refs {
			if fs != nil && k+insertAhead < len(refs) {
				a := refs[k+insertAhead]
				fs.peekAhead(outs[a.w].cands[a.i].fp)
			}
			e.insert(&outs[r.w], r.i)
		}
	})
}

// insertAhead is how many candidates ahead of its insertion a
// candidate's slot is read: about as many as the processor's window of
// instructions holds insertions.
const insertAhead = 6

// recordIDs records the new states' ids in the visited set: no shard grows
// any more in this batch, so slots found now stay put. More workers record
// shard by shard in parallel, from the routing lists insertAll made.
func (e *exploration) recordIDs(outs []workerOut, workers int) {
	if workers == 1 {
		for w := range outs {
			o := &outs[w]
			for i := range o.cands {
				if cd := &o.cands[i]; cd.isNew {
					e.vis.setID(cd.fp, o.keys[cd.off:cd.off+e.words], cd.slot, cd.id)
				}
			}
		}
		return
	}
	parallel(workers, numShards, func(sh int) {
		for _, r := range e.byShard[sh] {
			o := &outs[r.w]
			if cd := &o.cands[r.i]; cd.isNew {
				e.vis.setID(cd.fp, o.keys[cd.off:cd.off+e.words], cd.slot, cd.id)
			}
		}
	})
}

// resolveEdges finds the targets of the batch's edges first reached in
// this level, chunk by chunk in parallel (the visited set is only read
// now): a target that is one of the chunk's own candidates and was new
// has the id the commit gave it, any other is looked up. appendEdges
// then adds them to the liveness graph in order.
func (e *exploration) resolveEdges(outs []workerOut, workers int) {
	byKey := e.vis.byKey()
	resolve := func(w int) {
		o := &outs[w]
		for j := range o.edges {
			ed := &o.edges[j]
			if ed.fp == 0 {
				continue
			}
			if ed.to > 0 && o.cands[ed.to-1].isNew {
				ed.to = o.cands[ed.to-1].id
			} else {
				var k *system.Key
				if byKey {
					k = &o.edgeKeys[ed.key]
				}
				ed.to, _ = e.vis.lookup(ed.fp, k)
			}
			ed.fp = 0
		}
	}
	if workers == 1 {
		for w := range outs {
			resolve(w)
		}
	} else {
		parallel(workers, len(outs), resolve)
	}
}

// appendEdges adds the batch's edges to the liveness graph, each chunk's
// in chunk order, so that the graph stays ordered by source state.
func (e *exploration) appendEdges(outs []workerOut) {
	for w := range outs {
		o := &outs[w]
		for _, ed := range o.edges {
			switch f := e.g.fair; {
			case f != nil && ed.proc == envLabel:
				f.env.append(ed.from, ed.to)
			case f != nil:
				e.g.edges.append(ed.from, ed.to)
				f.labels = append(f.labels, ed.proc)
			default:
				e.g.edges.append(ed.from, ed.to)
			}
		}
		if f := e.g.fair; f != nil {
			for _, sp := range o.enabled {
				f.enabled[sp.id] = sp.procs
			}
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
	cd.isNew, cd.slot = e.vis.insert(cd.fp, o.keys[cd.off:cd.off+e.words])
}

// newEdge records a transition to a state whose id is known only once the
// batch is committed.
func (e *exploration) newEdge(out *workerOut, from uint32, fp uint64, k *system.Key, proc uint8) edge {
	ed := edge{from: from, fp: fp, proc: proc}
	if e.vis.byKey() {
		ed.key = int32(len(out.edgeKeys))
		out.edgeKeys = append(out.edgeKeys, *k)
	}
	return ed
}

// stateProcs is a state's enabled processes (fair.go), recorded when it
// is expanded.
type stateProcs struct {
	id    uint32
	procs uint64
}

// maxMoves bounds the moves one state enables (system.MoveSet).
const maxMoves = len(system.MoveSet{}.M)
