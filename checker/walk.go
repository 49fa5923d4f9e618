package checker

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/handoffcheck/handoffcheck/model"
)

// WalkOptions configure randomized exploration.
type WalkOptions struct {
	// Seed fixes every choice: walk i uses seed Seed+i, so one failing
	// walk is reproduced alone with --seed Seed+i --walks 1.
	Seed  uint64
	Walks int
	Steps int // most moves per walk
	// Swarm gives each walk its own random subset of fault kinds (swarm
	// testing: leaving some faults out lets others go deeper).
	Swarm   bool
	Workers int
}

// WalkResult is the outcome of randomized exploration of one run.
type WalkResult struct {
	Run   Run
	Walks int
	Moves int64
	// Distinct counts the distinct states the walks visited.
	Distinct int
	Elapsed  time.Duration
	// Failing is the index of the first failing walk, or -1.
	Failing int
	// Seed reproduces the failing walk alone with --walks 1.
	Seed uint64
	// Faults are the fault kinds the failing walk could use (swarm).
	Faults []string
	// Original is how many moves the failing walk took; the
	// counterexample is that walk shrunk.
	Original  int
	Violation *Counterexample
	// Interrupted is set when the run was stopped before every walk ran:
	// Walks, Moves and Distinct then cover the walks 0..Walks-1.
	Interrupted bool
}

// faultKinds lists the fault moves a swarm walk may switch off.
var faultKinds = SwarmFaultMoves()

// Walk runs seeded random walks: each step takes one of the moves the
// state enables, uniformly. A walk ends when nothing is enabled or after
// opts.Steps moves. The first failing walk (by index, so the result does
// not depend on scheduling) is shrunk to a short trace that still fails
// the same invariant.
func (c *Checker) Walk(ctx context.Context, opts WalkOptions) *WalkResult {
	start := time.Now()
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	res := &WalkResult{Run: c.run, Walks: opts.Walks, Failing: -1}
	type outcome struct {
		moves   []Move
		v       *model.Violation
		allowed []string
		n       int
		fps     []uint64 // fingerprints of the states the walk visited
		ran     bool
	}
	outs := make([]outcome, opts.Walks)
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
				o := &outs[i]
				o.moves, o.v, o.allowed, o.n, o.fps = c.walkOnce(opts.Seed+uint64(i), opts.Steps, opts.Swarm)
				o.ran = true
				if o.v != nil {
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
	merged := &fpTable{}
	for i := 0; i <= last; i++ {
		if !outs[i].ran {
			// Interrupted: the walks that ran are not a prefix.
			res.Interrupted = true
			last = i - 1
			break
		}
		for _, fp := range outs[i].fps {
			merged.insert(fp)
		}
		res.Moves += int64(outs[i].n)
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
		res.Original = len(o.moves)
		res.Violation = c.shrink(o.moves, o.v.Invariant)
	}
	res.Elapsed = time.Since(start)
	return res
}

// walkOnce is one walk. It returns the moves taken up to and including the
// failing one, the violation, the fault kinds allowed, and the step count.
func (c *Checker) walkOnce(seed uint64, steps int, swarm bool) ([]Move, *model.Violation, []string, int, []uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x68616e646f6666)) // stream: "handoff"
	allowed := map[MoveKind]bool{}
	var names []string
	for _, k := range faultKinds {
		if !swarm || rng.IntN(2) == 0 {
			allowed[k] = true
			names = append(names, k.String())
		}
	}
	s := c.NewSession()
	var taken []Move
	var fps []uint64
	var ms moveSet
	var k Key
	for i := 0; i < steps; i++ {
		c.moves(&s.s, &ms)
		var pick [len(ms.m)]Move
		n := 0
		for j := 0; j < ms.n; j++ {
			if m := ms.m[j]; !m.Kind.Fault() || allowed[m.Kind] {
				pick[n] = m
				n++
			}
		}
		if n == 0 {
			break
		}
		m := pick[rng.IntN(n)]
		taken = append(taken, m)
		r, err := s.Apply(m)
		if err != nil {
			panic("checker: a walk took a move its state did not enable: " + err.Error())
		}
		if r.Violation != nil {
			return taken, r.Violation, names, i + 1, fps
		}
		c.canonical(&s.s, &k)
		fps = append(fps, fingerprint(&k, 1+c.nW+model.HandoffWords*c.nH))
	}
	return nil, nil, names, len(taken), fps
}

// replayLenient replays moves, skipping any the state no longer enables,
// and reports the index of the move that broke inv (or -1).
func (c *Checker) replayLenient(moves []Move, inv string) ([]Move, bool) {
	s := c.NewSession()
	var kept []Move
	for _, m := range moves {
		r, err := s.Apply(m)
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
func (c *Checker) shrink(moves []Move, inv string) *Counterexample {
	cur, _ := c.replayLenient(moves, inv)
	for chunk := len(cur) / 2; chunk >= 1; chunk /= 2 {
		for i := 0; i+chunk <= len(cur); {
			cand := append(append([]Move(nil), cur[:i]...), cur[i+chunk:]...)
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
func (c *Checker) traceOf(moves []Move) *Counterexample {
	s := c.NewSession()
	ce := &Counterexample{Initial: s.Describe(), Shrunk: true}
	for _, m := range moves {
		r, err := s.Apply(m)
		if err != nil {
			break
		}
		ce.Steps = append(ce.Steps, TraceStep{Move: m, Fired: r.Fired, State: s.Describe()})
		if r.Violation != nil {
			ce.Violation = r.Violation
			ce.Steps[len(ce.Steps)-1].Failed = true
			break
		}
	}
	return ce
}
