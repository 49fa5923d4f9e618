package checker

import (
	"context"
	"fmt"
	"github.com/handoffcheck/handoffcheck/checker/internal/relabel"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/internal/steps"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Tests of every legal shape of a configuration: decode workers listed
// before prefill workers, the largest shape (MaxHandoffs handoffs on
// MaxWorkers workers), interchangeable workers without interchangeable
// handoffs (and the reverse), and headroom that binds admission. The other
// tests' configurations all list the prefill worker first, use at most three
// handoffs, never let headroom limit admission, and make workers
// interchangeable only together with handoffs, so none of them notices a
// slip in these places.

// Workers and handoffs to compose configurations from.
const (
	shP = `{"role": "prefill", "capacity_blocks": 8}`
	// shD caches 16 tokens of every handoff; shE is a different decode
	// worker (no prefix hit, other limits), so that it is never
	// interchangeable with shD and a relabelling must carry its facts.
	shD = `{"role": "decode", "capacity_blocks": 8, "slots": 2, "headroom_tokens": 1024, "prefix_hit_tokens": [16, 16, 16, 16]}`
	shE = `{"role": "decode", "capacity_blocks": 9, "slots": 1, "headroom_tokens": 512}`
	// shF differs from shD in its slots alone.
	shF = `{"role": "decode", "capacity_blocks": 8, "slots": 1, "headroom_tokens": 1024, "prefix_hit_tokens": [16, 16, 16, 16]}`
	shH = `{"prompt_tokens": 48, "headroom_tokens": 512}`

	shRuns = `{"name": "vllm", "policy": "source-first", "engine": "vllm"},
    {"name": "sglang", "policy": "destination-first", "engine": "sglang"}`
	shFaults = `"restart": 1, "cancel": 1, "loss": 1, "early_timer": 1`
)

// shapesJSON composes a configuration of the two runs of shRuns. shD's
// prefix hits are cut to the number of handoffs.
func shapesJSON(workers, handoffs []string, faults string) string {
	ws := make([]string, len(workers))
	for i, w := range workers {
		if strings.Contains(w, "[16, 16, 16, 16]") {
			hits := strings.TrimSuffix(strings.Repeat("16, ", len(handoffs)), ", ")
			w = strings.Replace(w, "[16, 16, 16, 16]", "["+hits+"]", 1)
		}
		ws[i] = w
	}
	return fmt.Sprintf(`{
  "schema": "handoffcheck.config/v1",
  "runs": [%s],
  "workers": [
    %s
  ],
  "handoffs": [%s],
  "transfer": {"bytes_per_token": 131072, "block_size_tokens": 16},
  "faults": {%s}
}`, shRuns, strings.Join(ws, ",\n    "), strings.Join(handoffs, ", "), faults)
}

// shapesLoad reads a configuration of testdata/configs.
func shapesLoad(t testing.TB, name string) *system.Config {
	t.Helper()
	file := filepath.Join("..", "testdata", "configs", name)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c, err := system.ParseConfig(file, data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// shapesNew prepares the named run of a configuration.
func shapesNew(t testing.TB, cfg *system.Config, run string, symmetry bool) *Checker {
	t.Helper()
	cp := *cfg
	cp.Symmetry = symmetry
	for _, r := range cp.Runs {
		if r.Name == run {
			c, err := New(system.Generated(), &cp, r)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	t.Fatalf("no run %q", run)
	return nil
}

// shapesPrefillFirst lists the prefill workers of a configuration first,
// each group in its order: the shape every other test uses. perm[w] is
// where worker w goes.
func shapesPrefillFirst(cfg *system.Config) (*system.Config, [model.MaxWorkers]int8) {
	var perm [model.MaxWorkers]int8
	var order []model.WorkerConfig
	for _, role := range []model.WorkerRole{model.PrefillWorker, model.DecodeWorker} {
		for w, wc := range cfg.World.Workers {
			if wc.Role == role {
				perm[w] = int8(len(order))
				order = append(order, wc)
			}
		}
	}
	cp := *cfg
	cp.World.Workers = order
	return &cp, perm
}

// shapesBFS explores every state reachable from the initial state as the
// explorer does (one state per canonical key, successors of the state the
// key stands for), judging every step, state and quiescent state with the
// explorer's checks, and calls visit on every distinct state. It fails the
// test at the first violation and returns the keys it reached.
func shapesBFS(t testing.TB, c *Checker, visit func(*system.State)) map[system.Key]bool {
	t.Helper()
	seen := map[system.Key]bool{}
	init := c.Initial()
	root := c.Key(&init)
	if v := c.CheckState(&init); v != nil {
		t.Fatalf("initial state: %v", v)
	}
	seen[root] = true
	queue := []system.Key{root}
	var ms system.MoveSet
	var tx model.Tx
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		var s system.State
		c.UnpackTo(&k, &s)
		if visit != nil {
			visit(&s)
		}
		if c.Enabled(&s, &ms) == 0 {
			if _, v := c.Quiescence(&s); v != nil {
				t.Fatalf("quiescent state violates %v:\n%s", v, strings.Join(c.DescribeState(&s), "\n"))
			}
		}
		for i := 0; i < ms.N; i++ {
			next := s
			tx.W, tx.J.N = &next.W, 0
			c.ApplyTx(&next, &tx, ms.M[i], nil, ms.Stuck)
			if v := c.JudgeStep(&s, &next, &tx.J, ms.M[i]); v != nil {
				t.Fatalf("%s violates %v from:\n%s", ms.M[i], v, strings.Join(c.DescribeState(&s), "\n"))
			}
			nk := c.Key(&next)
			if seen[nk] {
				continue
			}
			if v := c.CheckState(&next); v != nil {
				t.Fatalf("%s reaches a state that violates %v:\n%s", ms.M[i], v, strings.Join(c.DescribeState(&next), "\n"))
			}
			seen[nk] = true
			queue = append(queue, nk)
		}
	}
	return seen
}

// shapesRelabel renames the workers of a state: worker w becomes perm[w]
// (relabel.Workers), the machines' states staying as they are.
func shapesRelabel(s *system.State, perm *[model.MaxWorkers]int8) system.State {
	r := *s
	r.W = relabel.Workers(&s.W, perm)
	return r
}

// shapesCounts is what a complete exploration is pinned by.
type shapesCounts struct {
	States      int
	Transitions int64
	Depth       int
	DeadEnds    int
}

func shapesExplore(t testing.TB, c *Checker, lim Limits) (*Result, shapesCounts) {
	t.Helper()
	r := c.checkRun(context.Background(), lim, nil)
	if r.Violation != nil {
		t.Fatalf("%s: violation %v", c.Run().Name, r.Violation.Violation)
	}
	return r, shapesCounts{r.Stats.States, r.Stats.Transitions, r.Stats.Depth, r.DeadEnds}
}

// shapesPeerNotices takes every restart a state enables and checks that
// each live record whose peer's worker restarted (the peer's record live
// too, so it had not told its router an outcome) is left a notice: the
// PeerGone fact set and the peer-restarted move enabled. It returns how
// many notices it checked.
func shapesPeerNotices(t testing.TB, c *Checker, s *system.State) int {
	t.Helper()
	n := 0
	for _, m := range c.MovesInto(s, nil) {
		if m.Kind != system.Restart.Move() {
			continue
		}
		next := *s
		if _, v, err := c.Step(&next, m, nil); err != nil || v != nil {
			t.Fatalf("%s: %v %v", m, err, v)
		}
		var after []system.Move
		for h := 0; h < c.World().NumHandoffs(); h++ {
			x := &s.W.H[h]
			for side := model.SourceSide; side <= model.DestinationSide; side++ {
				peer := side.Other()
				if x.Worker(side) != int(m.Arg) || x.Worker(peer) < 0 ||
					c.Terminal(s, system.RoleOf(side), h) || c.Terminal(s, system.RoleOf(peer), h) {
					continue
				}
				n++
				if after == nil {
					after = c.MovesInto(&next, nil)
				}
				notice := steps.Move(t, fmt.Sprintf("peer-restarted h=%d side=%s", h, peer))
				if !next.W.H[h].PeerGone[peer] || !slices.Contains(after, notice) {
					t.Fatalf("%s: the %s of handoff %d (worker %d) is not told its peer restarted (PeerGone=%v, %q enabled=%v); before:\n%s",
						m, peer, h, x.Worker(peer), next.W.H[h].PeerGone[peer], notice, slices.Contains(after, notice),
						strings.Join(c.DescribeState(s), "\n"))
				}
			}
		}
	}
	return n
}

// Listing decode workers first is a relabelling of the workers: the
// explored graph is the same graph with other worker names. So every
// decode-first shape must give the prefill-first shape's verdict and
// exactly its counts (states, transitions, depth, quiescent states), and
// beyond the counts, the states reached must be the same states once the
// workers are renamed. Code that took worker 0 for the prefill worker, or
// 0 for "no worker", would make them differ. The counts are pinned: they
// are the prefill-first ones, which no shape may change.
func TestShapes_DecodeFirstIsARelabelling(t *testing.T) {
	t.Parallel()
	one := []string{shH}
	type want map[string]shapesCounts // by run
	twoWorkers := want{"vllm": {1446, 3919, 13, 119}, "sglang": {1852, 4675, 15, 168}}
	threeWorkers := want{"vllm": {2863, 7806, 13, 223}, "sglang": {3682, 9326, 15, 325}}
	cases := []struct {
		name string
		cfg  *system.Config
		want want
	}{
		{"decode,prefill", mustConfig(t, shapesJSON([]string{shD, shP}, one, shFaults)), twoWorkers},
		{"decode,decode,prefill", mustConfig(t, shapesJSON([]string{shD, shE, shP}, one, shFaults)), threeWorkers},
		// testdata/configs/decode-first.json is decode, prefill, decode
		// with the same workers and faults.
		{"decode,prefill,decode", shapesLoad(t, "decode-first.json"), threeWorkers},
		// Two interchangeable decode workers: symmetry folds the idle one
		// away, leaving the two-worker graph's states. Transitions count
		// moves, and each state that routes decode (one under source-first,
		// two under destination-first) has one more: the router may pick
		// either worker, two moves that reach one state up to symmetry.
		{"decode,decode,prefill interchangeable", mustConfig(t, shapesJSON([]string{shD, shD, shP}, one, shFaults)),
			want{"vllm": {1446, 3920, 13, 119}, "sglang": {1852, 4677, 15, 168}}},
		// Two handoffs on one worker of each role: a restart hits both.
		{"decode,prefill two handoffs", mustConfig(t, shapesJSON([]string{shD, shP}, []string{shH, shH}, `"restart": 1, "cancel": 1`)),
			want{"vllm": {8618, 24563, 21, 314}, "sglang": {28955, 86353, 25, 670}}},
	}
	for _, tc := range cases {
		if tc.cfg.World.Workers[0].Role != model.DecodeWorker {
			t.Fatalf("%s: worker 0 is not a decode worker", tc.name)
		}
		first, perm := shapesPrefillFirst(tc.cfg)
		for _, run := range tc.cfg.Runs {
			t.Run(tc.name+"/"+run.Name, func(t *testing.T) {
				a := shapesNew(t, tc.cfg, run.Name, true)
				b := shapesNew(t, first, run.Name, true)
				ra, na := shapesExplore(t, a, Limits{Workers: 2, Liveness: true})
				rb, nb := shapesExplore(t, b, Limits{Workers: 2, Liveness: true})
				if !ra.Complete || !rb.Complete || !ra.Liveness || !rb.Liveness {
					t.Fatalf("incomplete: decode-first %v (%s), prefill-first %v (%s)", ra.Complete, ra.StopReason, rb.Complete, rb.StopReason)
				}
				if na != nb {
					t.Errorf("decode-first %+v, prefill-first %+v: a relabelling changed the graph", na, nb)
				}
				if na != tc.want[run.Name] {
					t.Errorf("decode-first %+v, pinned %+v", na, tc.want[run.Name])
				}
				notices := 0
				ka := shapesBFS(t, a, func(s *system.State) { notices += shapesPeerNotices(t, a, s) })
				kb := shapesBFS(t, b, nil)
				if len(ka) != na.States || len(kb) != nb.States {
					t.Fatalf("BFS reached %d and %d states, the explorer %d and %d", len(ka), len(kb), na.States, nb.States)
				}
				for k := range ka {
					var s system.State
					a.UnpackTo(&k, &s)
					r := shapesRelabel(&s, &perm)
					if rk := b.Key(&r); !kb[rk] {
						t.Fatalf("a decode-first state, relabelled, is not reached prefill-first:\n%s", strings.Join(a.DescribeState(&s), "\n"))
					}
				}
				if notices == 0 {
					t.Errorf("no restart of a live record's peer was checked")
				}
				t.Logf("%+v; %d peer-restart notices checked", na, notices)
			})
		}
	}
}

// shapesSession steps a session through moves written as in traces.
func shapesSession(t *testing.T, c *Checker, steps ...string) *session {
	t.Helper()
	sess := newSession(c)
	for _, line := range steps {
		m, err := system.ParseMove(line, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := sess.Apply(m)
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, strings.Join(c.DescribeState(sess.State()), "\n"))
		}
		if r.Violation != nil {
			t.Fatalf("%s: %v", line, r.Violation)
		}
	}
	return sess
}

// shapesDrain takes protocol moves, heartbeats last, until nothing can
// happen, and reports whether everything was released.
func shapesDrain(t *testing.T, sess *session) bool {
	t.Helper()
	for i := 0; i < 200; i++ {
		var pick *system.Move
		for _, m := range sess.checker().MovesInto(sess.State(), nil) {
			if _, fault := m.Kind.Spends(); fault {
				continue
			}
			mm := m
			if m.Kind == system.MvTimer && m.Arg == int8(model.TimerHeartbeat) {
				if pick == nil {
					pick = &mm
				}
				continue
			}
			pick = &mm
			break
		}
		if pick == nil {
			break
		}
		r, err := sess.Apply(*pick)
		if err != nil || r.Violation != nil {
			t.Fatalf("%s: %v %v", *pick, err, r.Violation)
		}
	}
	return sess.checker().Drained(sess.State())
}

// With the decode worker listed first (worker 0), a restart of either
// worker mid-handoff must reach the other side as a peer-restart notice,
// and the notice must end what that side holds. The bug this guards
// against: code that reads worker 0 as "no worker" (or as "the prefill
// worker") drops the notice, and the source holds its pinned KV until its
// lease expires, or the destination its pages.
func TestShapes_DecodeFirstPeerRestartReachesThePeer(t *testing.T) {
	cfg := mustConfig(t, shapesJSON([]string{shD, shP}, []string{shH}, shFaults))
	cases := []struct {
		name, run string
		steps     []string
		restart   string
		told      model.Side
		from, to  string // the told side's machine before and after the notice
	}{
		{"source-first, decode restarts while pulling", "vllm",
			[]string{"route-prefill h=0 worker=1", "deliver-request h=0", "compute h=0", "route-decode h=0 worker=0", "reserve h=0"},
			"restart worker=0", model.SourceSide, "Pinned", "Aborted"},
		{"destination-first, decode restarts while the source computes", "sglang",
			[]string{"route-prefill h=0 worker=1", "deliver-request h=0", "route-decode h=0 worker=0", "reserve h=0",
				"deliver h=0 to=source msg=DestinationReserved"},
			"restart worker=0", model.SourceSide, "Computing", "Aborted"},
		{"source-first, prefill restarts while the destination pulls", "vllm",
			[]string{"route-prefill h=0 worker=1", "deliver-request h=0", "compute h=0", "route-decode h=0 worker=0", "reserve h=0"},
			"restart worker=1", model.DestinationSide, "Receiving", "Draining"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := shapesNew(t, cfg, tc.run, true)
			sess := shapesSession(t, c, append(tc.steps, tc.restart)...)
			s := sess.State()
			r := system.RoleOf(tc.told)
			if got := c.Protocol().StateName(r, s.Role(r, 0)); got != tc.from {
				t.Fatalf("the %s is %s after the restart, want %s", tc.told, got, tc.from)
			}
			if !s.W.H[0].PeerGone[tc.told] {
				t.Fatalf("the %s was not told its peer restarted:\n%s", tc.told, strings.Join(c.DescribeState(sess.State()), "\n"))
			}
			notice := fmt.Sprintf("peer-restarted h=0 side=%s", tc.told)
			sess = shapesSession(t, c, append(append(tc.steps, tc.restart), notice)...)
			s = sess.State()
			if got := c.Protocol().StateName(r, s.Role(r, 0)); got != tc.to {
				t.Errorf("after the notice the %s is %s, want %s", tc.told, got, tc.to)
			}
			if tc.told == model.SourceSide && (s.W.H[0].Src != model.SrcNone || s.W.H[0].Compute == model.ComputeRunning) {
				t.Errorf("after the notice the source still holds its blocks: %s", s.W.DescribeHandoff(0))
			}
			if !shapesDrain(t, sess) {
				t.Errorf("not drained after the notice: %s", sess.State().W.DescribeHeld())
			}
		})
	}
}

// shapesAllPlaced reports whether every handoff was routed on both sides.
func shapesAllPlaced(c *Checker, s *system.State) bool {
	for h := 0; h < c.World().NumHandoffs(); h++ {
		if s.W.H[h].Prefill < 0 || s.W.H[h].Decode < 0 {
			return false
		}
	}
	return true
}

// shapesWalk is one seeded random walk that judges every step and state as
// the explorer does and, where every handoff is placed on both sides, also
// runs every invariant of the registry on its own (the explorer's fast
// path stops at the first violation, so a later invariant could panic
// unseen behind an earlier one), counting in evaluated which ones ran
// there. With swarm the walk takes only a random subset of fault kinds.
func shapesWalk(t *testing.T, c *Checker, seed uint64, steps int, swarm bool, evaluated map[string]int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x7368617065)) // stream: "shape"
	allowed := map[system.MoveKind]bool{}
	for _, k := range faultKinds {
		allowed[k] = !swarm || rng.IntN(2) == 0
	}
	s := c.Initial()
	var ms system.MoveSet
	var tx model.Tx
	fail := func(what string, v *model.Violation, s *system.State) {
		t.Helper()
		t.Fatalf("seed %d: %s: %v\n%s", seed, what, v, strings.Join(c.DescribeState(s), "\n"))
	}
	for i := 0; i < steps; i++ {
		placed := shapesAllPlaced(c, &s)
		protocol := c.Enabled(&s, &ms)
		if placed {
			rec := c.Records(&s)
			for j := range model.Invariants {
				if inv := &model.Invariants[j]; inv.HasState() {
					evaluated[inv.Name]++
					if v := inv.JudgeState(&s.W, &rec); v != nil {
						fail("state", v, &s)
					}
				}
			}
			if protocol == 0 {
				evaluated[model.NameQuiescence]++
				if v := model.Quiescence(&s.W, &rec); v != nil {
					fail("quiescent state", v, &s)
				}
				if s.B == c.Budget() {
					evaluated[model.NameFaultFreeCompletion]++
					if v := model.FaultFreeCompletion(&s.W); v != nil {
						fail("fault-free quiescent state", v, &s)
					}
				}
			}
		}
		if protocol == 0 {
			if _, v := c.Quiescence(&s); v != nil {
				fail("quiescent state", v, &s)
			}
		}
		var pick []system.Move
		for _, m := range ms.M[:ms.N] {
			if _, fault := m.Kind.Spends(); !fault || allowed[m.Kind] {
				pick = append(pick, m)
			}
		}
		if len(pick) == 0 {
			return
		}
		m := pick[rng.IntN(len(pick))]
		next := s
		tx.W, tx.J.N = &next.W, 0
		c.ApplyTx(&next, &tx, m, nil, ms.Stuck)
		if placed {
			for j := range model.Invariants {
				if inv := &model.Invariants[j]; inv.HasStep() {
					evaluated[inv.Name]++
					if v := inv.JudgeStep(&next.W, &tx.J); v != nil {
						fail(m.String(), v, &s)
					}
				}
			}
			if (m.Kind == system.MvDeliver || m.Kind == faultMove(t, "duplicate")) && c.Terminal(&s, system.RoleOf(model.Side(m.Arg)), int(m.H)) {
				evaluated[model.NameAttemptIsolation]++
			}
		}
		if v := c.JudgeStep(&s, &next, &tx.J, m); v != nil {
			fail(m.String(), v, &s)
		}
		if v := c.CheckState(&next); v != nil {
			fail(m.String(), v, &next)
		}
		s = next
	}
}

// The largest shape a configuration may have: MaxHandoffs handoffs on
// MaxWorkers workers (two prefill, three decode, a decode worker first and
// the roles interleaved), the handoffs all different (one a full prefix
// hit on two workers: nothing moves), every fault kind. It must check
// without a panic or a violation, and every invariant must actually run
// where all four handoffs are placed, not only on the early states a
// bounded search reaches.
func TestShapes_MaximalShape(t *testing.T) {
	t.Parallel()
	cfg := shapesLoad(t, "max-shape.json")
	if len(cfg.World.Handoffs) != model.MaxHandoffs || len(cfg.World.Workers) != model.MaxWorkers {
		t.Fatalf("max-shape.json has %d handoffs and %d workers, want %d and %d",
			len(cfg.World.Handoffs), len(cfg.World.Workers), model.MaxHandoffs, model.MaxWorkers)
	}
	for f := system.Fault(0); f < system.NumFaults; f++ {
		if cfg.Budget[f] == 0 {
			t.Fatalf("max-shape.json does not allow %s", f)
		}
	}
	evaluated := map[string]int{}

	// Exhaustive, to completion (liveness included), on the same shape
	// with the three decode workers made alike, four interchangeable
	// handoffs and no fault: the only way to judge EventuallyDrained, and
	// FaultFreeCompletion on every quiescent state, with four handoffs
	// (symmetry makes it small enough). Destination-first on SGLang also
	// has headroom bind here: each decode worker admits two of the four.
	same := *cfg
	same.Budget = system.Budget{}
	same.World.Handoffs = slices.Repeat(cfg.World.Handoffs[:1], model.MaxHandoffs)
	same.World.Workers = slices.Clone(cfg.World.Workers)
	same.World.Workers[2] = same.World.Workers[0]
	for _, tc := range []struct {
		run  string
		want shapesCounts
	}{
		{"vllm", shapesCounts{15289, 61970, 32, 36}},
		{"sglang", shapesCounts{131894, 666610, 40, 36}},
	} {
		c := shapesNew(t, &same, tc.run, true)
		r, n := shapesExplore(t, c, Limits{Workers: 2, Liveness: true})
		if !r.Complete || !r.Liveness || n != tc.want {
			t.Errorf("%s: four interchangeable handoffs, no fault: complete=%v liveness=%v %+v, pinned %+v", tc.run, r.Complete, r.Liveness, n, tc.want)
		}
		if r.Liveness {
			evaluated[model.NameEventuallyDrained]++
		}
	}

	// A bounded search stops after a whole level, so its counts do not
	// depend on the order of the moves.
	bounded := map[string]shapesCounts{"vllm": {16891, 43497, 6, 5}, "sglang": {19398, 47999, 5, 0}}
	for _, run := range cfg.Runs {
		c := shapesNew(t, cfg, run.Name, true)
		// Bounded breadth-first search with every fault: the shallow
		// states, every ordering.
		r, n := shapesExplore(t, c, Limits{Workers: 2, MaxStates: 10000})
		if r.StopReason != stopMaxStates || n != bounded[run.Name] {
			t.Errorf("%s: bounded search stopped for %q: %+v, pinned %+v", run.Name, r.StopReason, n, bounded[run.Name])
		}
		// Seeded swarm walks through the CLI's engine: deep states.
		w := c.walk(context.Background(), walkOptions{Seed: 1, Walks: 200, Steps: 300, Swarm: true, Workers: 2})
		if w.Violation != nil || w.Interrupted || w.Walks != 200 {
			t.Fatalf("%s: walks: %d walks, interrupted=%v, violation %v", run.Name, w.Walks, w.Interrupted, w.Violation)
		}
		// Walks that judge every invariant separately once all four
		// handoffs are placed: with faults (swarm), and without any.
		for seed := uint64(0); seed < 150; seed++ {
			shapesWalk(t, c, seed, 300, true, evaluated)
		}
		none := *cfg
		none.Budget = system.Budget{}
		free := shapesNew(t, &none, run.Name, true)
		for seed := uint64(0); seed < 30; seed++ {
			shapesWalk(t, free, seed, 300, false, evaluated)
		}
		t.Logf("%s: bounded search %d states (depth %d); walks %d moves, %d distinct states", run.Name, r.Stats.States, r.Stats.Depth, w.Moves, w.Distinct)
	}
	for _, inv := range model.Invariants {
		if evaluated[inv.Name] == 0 {
			t.Errorf("%s was never evaluated with all %d handoffs placed", inv.Name, model.MaxHandoffs)
		}
	}
	t.Logf("evaluations with all handoffs placed: %v", evaluated)
}

// shapesSymmetry checks one configuration with and without symmetry
// reduction: the same verdict, the pinned counts, strictly fewer states
// with it; and, with it, exactly one state per orbit of the states
// reached without it. That each renaming the reduction uses is a true
// symmetry of the system (the states reached without it closed under
// it) is the system's test (TestSymmetry_RenamingsAreSymmetries), on
// these two shapes.
func shapesSymmetry(t *testing.T, cfg *system.Config, run string, wantOn, wantOff shapesCounts) {
	t.Helper()
	on := shapesNew(t, cfg, run, true)
	off := shapesNew(t, cfg, run, false)
	ron, non := shapesExplore(t, on, Limits{Workers: 2, Liveness: true})
	roff, noff := shapesExplore(t, off, Limits{Workers: 2, Liveness: true})
	if !ron.Complete || !roff.Complete || !ron.Symmetry || roff.Symmetry {
		t.Fatalf("complete %v/%v, symmetry reported %v/%v", ron.Complete, roff.Complete, ron.Symmetry, roff.Symmetry)
	}
	if non != wantOn || noff != wantOff {
		t.Errorf("with symmetry %+v (pinned %+v), without %+v (pinned %+v)", non, wantOn, noff, wantOff)
	}
	if non.States >= noff.States {
		t.Errorf("symmetry keeps %d states of %d: no reduction", non.States, noff.States)
	}
	full := shapesBFS(t, off, nil)
	reduced := shapesBFS(t, on, nil)
	orbits := map[system.Key]bool{}
	for k := range full {
		var s system.State
		off.UnpackTo(&k, &s)
		orbits[on.Key(&s)] = true
	}
	if len(orbits) != len(reduced) {
		t.Errorf("%d orbits among the states reached without symmetry, %d states kept with it", len(orbits), len(reduced))
	}
	for k := range reduced {
		if !orbits[k] {
			t.Fatalf("a state kept with symmetry stands for no state reached without it")
		}
	}
}

// Two identical decode workers and two handoffs that differ (prompt and
// headroom): the only symmetry is the renaming of the workers. The other
// tests' one configuration with interchangeable workers also has
// interchangeable handoffs, so the worker half of the reduction could be
// switched off and the handoff half would still reduce: here it cannot.
func TestShapes_InterchangeableWorkersAlone(t *testing.T) {
	t.Parallel()
	cfg := mustConfig(t, shapesJSON([]string{shP, shD, shD},
		[]string{shH, `{"prompt_tokens": 32, "headroom_tokens": 256}`}, `"restart": 1, "cancel": 1`))
	for _, tc := range []struct {
		run     string
		on, off shapesCounts
	}{
		{"vllm", shapesCounts{27620, 81177, 21, 859}, shapesCounts{55025, 161959, 21, 1667}},
		{"sglang", shapesCounts{95534, 288990, 25, 2082}, shapesCounts{190973, 577744, 25, 4144}},
	} {
		t.Run(tc.run, func(t *testing.T) { shapesSymmetry(t, cfg, tc.run, tc.on, tc.off) })
	}
}

// The reverse: two identical handoffs on two decode workers that differ
// in their slots alone (one slot holds one request at a time): the only
// symmetry is the exchange of the handoffs. A reduction that took these
// workers for interchangeable would merge states that behave differently.
func TestShapes_InterchangeableHandoffsAlone(t *testing.T) {
	t.Parallel()
	cfg := mustConfig(t, shapesJSON([]string{shP, shD, shF}, []string{shH, shH}, `"restart": 1, "cancel": 1`))
	for _, tc := range []struct {
		run     string
		on, off shapesCounts
	}{
		{"vllm", shapesCounts{27882, 82299, 21, 843}, shapesCounts{55697, 164390, 21, 1667}},
		{"sglang", shapesCounts{87655, 262042, 25, 2007}, shapesCounts{175210, 523733, 25, 3988}},
	} {
		t.Run(tc.run, func(t *testing.T) { shapesSymmetry(t, cfg, tc.run, tc.on, tc.off) })
	}
}

// The decode worker of headroom-binds.json has room (blocks and slots) for
// both handoffs at once but admission headroom for one: an engine that
// holds headroom from reservation (SGLang) must make the second wait until
// the first frees its headroom, under either policy, and both must still
// succeed when nothing goes wrong. An engine that holds no headroom (vLLM)
// is not limited by it. Dropping the headroom term of admission
// (Tx.CanReserve) lets both reserve at once: CapacityRespected reports it
// and the pinned counts change.
func TestShapes_HeadroomBindsAdmission(t *testing.T) {
	t.Parallel()
	binds := shapesLoad(t, "headroom-binds.json")
	const d = 1 // the decode worker
	wc := binds.World.Workers[d]
	if wc.Role != model.DecodeWorker || wc.Headroom != binds.World.Handoffs[0].HeadroomTokens || wc.Slots < 2 {
		t.Fatalf("headroom-binds.json: worker %d is not a decode worker with two slots and headroom for one handoff", d)
	}
	ample := *binds
	ample.World.Workers = slices.Clone(binds.World.Workers)
	ample.World.Workers[d].Headroom = 2 * wc.Headroom
	faulty := *binds
	faulty.Budget = budgetOf(t, "restart=1", "cancel=1", "early_timer=1")

	// held counts the handoffs holding a reservation or an activated
	// request on the decode worker: both hold its headroom.
	held := func(s *system.State) int {
		n := 0
		for h := range binds.World.Handoffs {
			if x := &s.W.H[h]; int(x.Decode) == d && x.Dst != model.DstNone {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		run           string
		headroom      bool // the engine holds headroom from reservation
		binds, ample  shapesCounts
		faultyHeldMax int
	}{
		{"sglang", true, shapesCounts{84, 182, 20, 1}, shapesCounts{120, 288, 20, 1}, 1},
		{"sglang-source-first", true, shapesCounts{49, 91, 16, 1}, shapesCounts{55, 110, 16, 1}, 1},
		{"vllm", false, shapesCounts{55, 110, 16, 1}, shapesCounts{55, 110, 16, 1}, 2},
	} {
		t.Run(tc.run, func(t *testing.T) {
			c := shapesNew(t, binds, tc.run, true)
			a := shapesNew(t, &ample, tc.run, true)
			rb, nb := shapesExplore(t, c, Limits{Workers: 2, Liveness: true})
			ra, na := shapesExplore(t, a, Limits{Workers: 2, Liveness: true})
			if !rb.Complete || !ra.Complete || nb != tc.binds || na != tc.ample {
				t.Errorf("binding headroom %+v (pinned %+v), ample %+v (pinned %+v)", nb, tc.binds, na, tc.ample)
			}
			if tc.headroom == (nb == na) {
				t.Errorf("binding and ample headroom give %+v and %+v: headroom matters=%v, want %v", nb, na, nb != na, tc.headroom)
			}
			// Fault-free: never both held where headroom binds, one
			// waiting for the other's headroom, and every quiescent
			// state a success on both sides of both handoffs.
			most, waited, quiet := 0, 0, 0
			shapesBFS(t, c, func(s *system.State) {
				most = max(most, held(s))
				tx := model.Tx{W: &s.W}
				for h := range binds.World.Handoffs {
					if x := &s.W.H[h]; x.Pending && int(x.Decode) == d && held(s) == 1 && !tx.CanReserve(h) {
						waited++
					}
				}
				if quiescent, _ := c.Quiescence(s); quiescent {
					quiet++
					for h := range binds.World.Handoffs {
						if o := s.W.H[h].Outcome; o[model.SourceSide] != model.OutcomeOK || o[model.DestinationSide] != model.OutcomeOK {
							t.Fatalf("fault-free, yet handoff %d ended %v:\n%s", h, o, strings.Join(c.DescribeState(s), "\n"))
						}
					}
				}
			})
			mostAmple := 0
			shapesBFS(t, a, func(s *system.State) { mostAmple = max(mostAmple, held(s)) })
			if quiet == 0 || mostAmple != 2 {
				t.Fatalf("%d quiescent states; with ample headroom at most %d handoffs held at once, want 2", quiet, mostAmple)
			}
			if tc.headroom && (most != 1 || waited == 0) {
				t.Errorf("binding headroom: up to %d handoffs held at once (want 1), %d states where one waits for the other's headroom (want some)", most, waited)
			}
			if !tc.headroom && most != 2 {
				t.Errorf("an engine without headroom held at most %d handoffs at once, want 2", most)
			}
			// With faults (restart, cancel, early timers) too.
			most = 0
			shapesBFS(t, shapesNew(t, &faulty, tc.run, true), func(s *system.State) { most = max(most, held(s)) })
			if most != tc.faultyHeldMax {
				t.Errorf("with faults: up to %d handoffs held at once, want %d", most, tc.faultyHeldMax)
			}
		})
	}
}
