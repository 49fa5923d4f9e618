package checker

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// walkOptions configure randomized exploration: Limits' walk fields
// (see Limits.Walks).
type walkOptions struct {
	Seed     uint64
	Walks    int
	Steps    int // most moves per walk
	Swarm    bool
	Schedule string
	// sched is the schedule Schedule names, as checkWalks found it.
	sched         schedule
	Workers       int
	Shard, Shards int
	From          []system.Move
}

// walkOptionsOf are the walk options lim asks for.
func walkOptionsOf(lim Limits) walkOptions {
	return walkOptions{Seed: lim.Seed, Walks: lim.Walks, Steps: lim.Steps, Swarm: lim.Swarm, Schedule: lim.Schedule,
		Workers: lim.Workers, Shard: lim.Shard, Shards: lim.Shards, From: lim.From}
}

// shardRange is the walks [lo, hi) of shard k of n over walks walks:
// consecutive ranges, as even as can be, in shard order.
func shardRange(walks, k, n int) (lo, hi int) {
	return k * walks / n, (k + 1) * walks / n
}

// walkResult is the outcome of randomized exploration of one run.
type walkResult struct {
	Run   system.Run
	Walks int
	Moves int64
	// Distinct counts the distinct states the walks visited.
	Distinct int
	Elapsed  time.Duration
	// Failing is the index of the first failing walk, or -1.
	Failing int
	// FirstWalk is the index of a shard's first walk (0 unsharded); Walks
	// and Failing count from walk 0 of the whole search.
	FirstWalk int
	// Seed reproduces the failing walk alone with --walks 1.
	Seed uint64
	// Faults are the fault kinds the failing walk could use (swarm).
	Faults []string
	// schedule is the failing walk's fault schedule (not for
	// scheduleUniform).
	schedule []scheduledFault
	// Original is how many moves the failing walk took; the
	// counterexample is that walk shrunk.
	Original  int
	Violation *Counterexample
	// Interrupted is set when the run was stopped before every walk ran:
	// Walks, Moves and Distinct then cover the walks 0..Walks-1.
	Interrupted bool
	// Stats describe the walks counted (the same walks as Moves).
	stats walkStats
}

// walkEnd is why a walk ended.
type walkEnd uint8

const (
	// endNothingEnabled: no move the walk may take was enabled (a fault
	// kind a swarm walk left out, or a fault not yet due, does not count).
	endNothingEnabled walkEnd = iota
	// endStepBound: the walk took its most moves (--steps).
	endStepBound
	// endViolation: the last move broke an invariant.
	endViolation
	numWalkEnds
)

var walkEndNames = [numWalkEnds]string{"nothing_enabled", "step_bound", "violation"}

func (e walkEnd) name() string { return walkEndNames[e] }

// walkStats describe the walks of a run: which rows fired, which moves
// were taken, which faults committed, and how long the walks were.
type walkStats struct {
	// Horizon is the number of moves over which fault positions were
	// drawn (0 for scheduleUniform).
	Horizon int
	// Coverage counts the firings of each row of each role table.
	Coverage *system.Coverage
	// Kinds counts the moves taken, by move kind.
	Kinds [system.NumMoveKinds]int64
	// Faults counts the faults committed, by fault kind (reorder and
	// early_timer included).
	Faults [system.NumFaults]int64
	// Lengths is the length of each walk counted, in walk order.
	Lengths []int
	// Ended counts the walks by why they ended.
	Ended [numWalkEnds]int
}

// lengthSummary is the distribution of walk lengths: nearest-rank
// percentiles of the moves each walk took.
type lengthSummary struct {
	Min, Median, P90, Max int
}

// lengthSummary summarizes the walk lengths; all zero when no walk was
// counted.
func (s *walkStats) lengthSummary() lengthSummary {
	if len(s.Lengths) == 0 {
		return lengthSummary{}
	}
	l := slices.Clone(s.Lengths)
	slices.Sort(l)
	rank := func(p int) int { return l[max(0, (p*len(l)+99)/100-1)] }
	return lengthSummary{Min: l[0], Median: rank(50), P90: rank(90), Max: l[len(l)-1]}
}

// moveKindCount is how often one move kind was taken.
type moveKindCount struct {
	Kind  string
	Count int64
}

// moveKinds lists every move kind with how often walks took it, in move
// kind order (protocol moves, then fault moves).
func (s *walkStats) moveKinds() []moveKindCount {
	var out []moveKindCount
	for _, k := range system.MoveKinds() {
		out = append(out, moveKindCount{Kind: k.String(), Count: s.Kinds[k]})
	}
	return out
}

// faultKinds lists, in budget order, the fault moves a swarm walk may
// switch off (the fault table's Swarm).
var faultKinds = func() []system.MoveKind {
	var out []system.MoveKind
	for f := range system.FaultKinds {
		if system.FaultKinds[f].Swarm {
			out = append(out, system.Fault(f).Move())
		}
	}
	return out
}()

// walkRun is what one walk did.
type walkRun struct {
	moves    []system.Move // up to and including the failing one; nil when the walk passed, unless kept
	v        *model.Violation
	allowed  []string
	schedule []scheduledFault
	n        int
	fps      []uint64 // fingerprints of the states the walk visited
	end      walkEnd
	kinds    [system.NumMoveKinds]int32
	faults   [system.NumFaults]int32
	cov      *system.Coverage
	ran      bool
}

// walk runs seeded random walks: each step takes one of the moves the
// state enables, faults placed by opts.sched. A walk ends when nothing
// is enabled, after opts.Steps moves, or on a violation. The first
// failing walk (by index, so the result does not depend on scheduling) is
// shrunk to a short trace that still fails the same invariant.
func (c *Checker) walk(ctx context.Context, opts walkOptions) *walkResult {
	lo := 0
	if opts.Shards > 0 {
		var hi int
		lo, hi = shardRange(opts.Walks, opts.Shard, opts.Shards)
		opts.Seed += uint64(lo)
		opts.Walks = hi - lo
	}
	res := c.walkRange(ctx, opts)
	res.FirstWalk = lo
	if res.Failing >= 0 {
		res.Failing += lo
	}
	return res
}

// walkRange runs walks 0..opts.Walks-1 of opts.Seed.
func (c *Checker) walkRange(ctx context.Context, opts walkOptions) *walkResult {
	start := time.Now()
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	res := &walkResult{Run: c.Run(), Walks: opts.Walks, Failing: -1}
	horizon := 0
	if opts.sched != scheduleUniform && opts.Walks > 0 {
		horizon = c.horizon(opts.Steps)
	}
	outs := make([]walkRun, opts.Walks)
	next := make(chan int, opts.Walks)
	for i := 0; i < opts.Walks; i++ {
		next <- i
	}
	close(next)
	var mu sync.Mutex
	firstFail := opts.Walks
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				mu.Lock()
				skip := i > firstFail
				mu.Unlock()
				if skip || ctx.Err() != nil {
					continue
				}
				outs[i] = c.walkOnce(walkSpec{seed: opts.Seed + uint64(i), steps: opts.Steps, swarm: opts.Swarm, sched: opts.sched, horizon: horizon})
				if outs[i].v != nil {
					mu.Lock()
					firstFail = min(firstFail, i)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	// The figures cover walks 0..firstFail only, in index order: which
	// later walks a worker happened to start before the failure was known
	// depends on scheduling, and the report must not.
	last := min(firstFail, opts.Walks-1)
	for i := 0; i <= last; i++ {
		if !outs[i].ran {
			// Interrupted: the walks that ran are not a prefix.
			res.Interrupted = true
			last = i - 1
			break
		}
	}
	merged := &fpTable{}
	st := &res.stats
	st.Horizon = horizon
	st.Coverage = system.NewCoverage(c.Protocol().Spec())
	for i := 0; i <= last; i++ {
		o := &outs[i]
		for _, fp := range o.fps {
			merged.insert(fp)
		}
		res.Moves += int64(o.n)
		addCoverage(st.Coverage, o.cov)
		for k, n := range o.kinds {
			st.Kinds[k] += int64(n)
		}
		for f, n := range o.faults {
			st.Faults[f] += int64(n)
		}
		st.Lengths = append(st.Lengths, o.n)
		st.Ended[o.end]++
	}
	res.Distinct = merged.n
	res.Walks = last + 1
	if res.Interrupted {
		firstFail = opts.Walks // a failure after a gap is not the first
		for i := 0; i <= last; i++ {
			if outs[i].v != nil {
				firstFail = i
				break
			}
		}
	}
	if firstFail < opts.Walks {
		o := outs[firstFail]
		res.Failing = firstFail
		res.Seed = opts.Seed + uint64(firstFail)
		res.Faults = o.allowed
		res.schedule = o.schedule
		res.Original = len(o.moves)
		res.Violation = c.shrink(o.moves, o.v.Invariant)
	}
	res.Elapsed = time.Since(start)
	return res
}

// walkSpec is what one walk depends on.
type walkSpec struct {
	seed    uint64
	steps   int
	swarm   bool
	sched   schedule
	horizon int  // the run's horizon (unused by scheduleUniform)
	keep    bool // keep the moves of a walk that passes too
}

// walkOnce is one walk on its own seed.
func (c *Checker) walkOnce(w walkSpec) walkRun {
	seed, steps, swarm, sched, horizon := w.seed, w.steps, w.swarm, w.sched, w.horizon
	rng := rand.New(rand.NewPCG(seed, 0x68616e646f6666)) // stream: "handoff"
	out := walkRun{ran: true, cov: system.NewCoverage(c.Protocol().Spec())}
	var allowed [system.NumMoveKinds]bool
	for _, k := range faultKinds {
		// A kind the run gives no budget is never committed: a swarm
		// walk does not spend a draw on it, nor name it.
		if f, _ := k.Spends(); c.Budget().Left(f) == 0 {
			continue
		}
		if !swarm || rng.IntN(2) == 0 {
			allowed[k] = true
			out.allowed = append(out.allowed, k.String())
		}
	}
	var plan *faultPlan
	var order *pctOrder
	if sched != scheduleUniform {
		plan = c.planFaults(rng, &allowed, horizon)
		out.schedule = plan.list()
		if sched == schedulePCT {
			order = newPCTOrder(rng, c.World().NumHandoffs()+1, horizon)
		}
	}
	s := c.Initial()
	var taken []system.Move
	var ms system.MoveSet
	var k system.Key
	out.end = endStepBound
	for i := 0; i < steps; i++ {
		c.Enabled(&s, &ms)
		var m system.Move
		var ok bool
		if plan == nil {
			m, ok = c.pickUniform(rng, &ms, &allowed)
		} else {
			m, ok = c.pickScheduled(rng, &s, &ms, &allowed, plan, order, i)
		}
		if !ok {
			out.end = endNothingEnabled
			break
		}
		f, fault := m.SpendsAt(&s, ms.Stuck)
		taken = append(taken, m)
		r, err := c.Apply(&s, m)
		if err != nil {
			panic("checker: a walk took a move its state did not enable: " + err.Error())
		}
		out.n++
		out.kinds[m.Kind]++
		if fault {
			out.faults[f]++
			if plan != nil {
				plan.spent[f]++
			}
		}
		if order != nil {
			order.moved(c, m, i)
		}
		for _, fr := range r.Fired {
			out.cov.Rows[fr.Role][fr.Row]++
		}
		out.cov.Fired |= r.Triggers
		if r.Violation != nil {
			out.moves, out.v, out.end = taken, r.Violation, endViolation
			return out
		}
		k = c.Key(&s)
		out.fps = append(out.fps, fingerprint(&k, 1+c.World().NumWorkers()+model.HandoffWords*c.World().NumHandoffs()))
	}
	if w.keep {
		out.moves = taken
	}
	return out
}

// pickUniform takes one of the enabled moves uniformly, leaving out the
// fault moves the walk may not use.
func (c *Checker) pickUniform(rng *rand.Rand, ms *system.MoveSet, allowed *[system.NumMoveKinds]bool) (system.Move, bool) {
	var pick [len(ms.M)]system.Move
	n := 0
	for j := 0; j < ms.N; j++ {
		m := ms.M[j]
		if _, fault := m.Kind.Spends(); !fault || allowed[m.Kind] {
			pick[n] = m
			n++
		}
	}
	if n == 0 {
		return system.Move{}, false
	}
	return pick[rng.IntN(n)], true
}

// pickScheduled takes a move under a fault schedule: among the moves
// that commit no fault and the faults that are due, uniformly, or by PCT
// priority. A fault whose position the walk has not reached is not
// offered, so a walk that ends before a position leaves that fault out.
func (c *Checker) pickScheduled(rng *rand.Rand, s *system.State, ms *system.MoveSet, allowed *[system.NumMoveKinds]bool,
	plan *faultPlan, order *pctOrder, i int) (system.Move, bool) {
	var offered [len(ms.M)]system.Move
	n := 0
	for j := 0; j < ms.N; j++ {
		m := ms.M[j]
		if _, fault := m.Kind.Spends(); fault && !allowed[m.Kind] {
			continue
		}
		if f, fault := m.SpendsAt(s, ms.Stuck); !fault || plan.due(f, i) {
			offered[n] = m
			n++
		}
	}
	switch {
	case n == 0:
		return system.Move{}, false
	case order != nil:
		return order.pick(c, rng, offered[:n]), true
	}
	return offered[rng.IntN(n)], true
}

// replayLenient replays moves, skipping any the state no longer enables,
// and reports the index of the move that broke inv (or -1).
func (c *Checker) replayLenient(moves []system.Move, inv string) ([]system.Move, bool) {
	s := c.Initial()
	var kept []system.Move
	for _, m := range moves {
		r, err := c.Apply(&s, m)
		if err != nil {
			continue
		}
		kept = append(kept, m)
		if r.Violation != nil {
			return kept, r.Violation.Invariant == inv
		}
	}
	return kept, false
}

// shrink makes a failing walk short: it drops chunks of moves, halving the
// chunk size, while the rest still breaks the same invariant (delta
// debugging), then replays the result into a counterexample.
func (c *Checker) shrink(moves []system.Move, inv string) *Counterexample {
	cur, _ := c.replayLenient(moves, inv)
	for chunk := len(cur) / 2; chunk >= 1; chunk /= 2 {
		for i := 0; i+chunk <= len(cur); {
			cand := append(append([]system.Move(nil), cur[:i]...), cur[i+chunk:]...)
			if kept, ok := c.replayLenient(cand, inv); ok {
				cur = kept
				continue
			}
			i += chunk
		}
	}
	return c.traceOf(cur)
}

// traceOf replays moves into a counterexample ending at the violation.
func (c *Checker) traceOf(moves []system.Move) *Counterexample {
	s := c.Initial()
	ce := &Counterexample{Initial: c.DescribeState(&s), Shrunk: true}
	for _, m := range moves {
		r, err := c.Apply(&s, m)
		if err != nil {
			break
		}
		ce.Steps = append(ce.Steps, TraceStep{Move: m, Fired: r.Fired, State: c.DescribeState(&s)})
		if r.Violation != nil {
			ce.Violation = r.Violation
			ce.Steps[len(ce.Steps)-1].Failed = true
			break
		}
	}
	return ce
}
