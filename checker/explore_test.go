package checker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/handoffcheck/handoffcheck/checker/system"
)

func mustConfig(t testing.TB, js string) *system.Config {
	t.Helper()
	c, err := system.ParseConfig("test.json", []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// smallConfig is one handoff between one prefill and one decode worker,
// with duplicates and cancellation: the first configuration.
const smallConfig = `{
  "schema": "handoffcheck.config/v1",
  "runs": [
    {"name": "vllm", "policy": "source-first", "engine": "vllm"},
    {"name": "sglang", "policy": "destination-first", "engine": "sglang"},
    {"name": "trtllm", "policy": "source-first", "engine": "trtllm"}
  ],
  "workers": [
    {"role": "prefill", "capacity_blocks": 8},
    {"role": "decode", "capacity_blocks": 8, "slots": 2, "headroom_tokens": 1024, "prefix_hit_tokens": [16]}
  ],
  "handoffs": [{"prompt_tokens": 48, "headroom_tokens": 512}],
  "transfer": {"bytes_per_token": 131072, "block_size_tokens": 16},
  "faults": {"duplicate": 1, "cancel": 1, "early_timer": 1}
}`

// twoByTwo is two interchangeable handoffs and two interchangeable decode
// workers with loss, restarts and early expiry.
const twoByTwo = `{
  "schema": "handoffcheck.config/v1",
  "runs": [
    {"name": "vllm", "policy": "source-first", "engine": "vllm"},
    {"name": "sglang", "policy": "destination-first", "engine": "sglang"}
  ],
  "workers": [
    {"role": "prefill", "capacity_blocks": 8},
    {"role": "decode", "capacity_blocks": 6, "slots": 2, "headroom_tokens": 1024},
    {"role": "decode", "capacity_blocks": 6, "slots": 2, "headroom_tokens": 1024}
  ],
  "handoffs": [{"prompt_tokens": 48, "headroom_tokens": 512}, {"prompt_tokens": 48, "headroom_tokens": 512}],
  "transfer": {"bytes_per_token": 131072, "block_size_tokens": 16},
  "faults": {"loss": 1, "restart": 1, "early_timer": 1}
}`

// The exact number of distinct states of small configurations is pinned:
// a change of model, tables or exploration that changes a count must be
// explained in the commit that changes it. Each count must also be the
// same in exact mode (full keys, no collisions) as with fingerprints, and
// the same for one worker as for two.
func TestExplore_PinnedCounts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		config      string
		run         string
		symmetry    bool
		states      int
		transitions int64
		depth       int
	}{
		{smallConfig, "vllm", true, 563, 1154, 15},
		{smallConfig, "sglang", true, 897, 2000, 16},
		{smallConfig, "trtllm", true, 137, 275, 10},
		{twoByTwo, "vllm", true, 11358, 35209, 20},
		{twoByTwo, "sglang", true, 33126, 100640, 24},
		{twoByTwo, "vllm", false, 44949, 139455, 20},
		{twoByTwo, "sglang", false, 132019, 401162, 24},
	}
	for _, tc := range cases {
		cfg := mustConfig(t, tc.config)
		cfg.Symmetry = tc.symmetry
		name := fmt.Sprintf("%s-%d-handoffs-symmetry-%v", tc.run, len(cfg.World.Handoffs), tc.symmetry)
		t.Run(name, func(t *testing.T) {
			var run system.Run
			for _, r := range cfg.Runs {
				if r.Name == tc.run {
					run = r
				}
			}
			c, err := New(system.Generated(), cfg, run)
			if err != nil {
				t.Fatal(err)
			}
			type counts struct {
				States      int
				Transitions int64
				Depth       int
				Complete    bool
				Violation   bool
			}
			want := counts{tc.states, tc.transitions, tc.depth, true, false}
			for _, lim := range []Limits{
				{Workers: 1, Liveness: true},
				{Workers: 2, Liveness: true},
				{Workers: 2, Liveness: true, Exact: true},
				{Workers: 1},
			} {
				r := c.checkRun(context.Background(), lim, nil)
				got := counts{r.Stats.States, r.Stats.Transitions, r.Stats.Depth, r.Complete, r.Violation != nil}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("workers=%d exact=%v liveness=%v (-want +got):\n%s", lim.Workers, lim.Exact, lim.Liveness, diff)
				}
			}
		})
	}
}

// Symmetry keeps one state per orbit of interchangeable handoffs and
// workers: with two of each the reduction approaches 2!·2! = 4.
// threeHandoffs is three interchangeable handoffs on one decode worker.
const threeHandoffs = `{
  "schema": "handoffcheck.config/v1",
  "runs": [{"name": "vllm", "policy": "source-first", "engine": "vllm"}],
  "workers": [
    {"role": "prefill", "capacity_blocks": 10},
    {"role": "decode", "capacity_blocks": 9, "slots": 2, "headroom_tokens": 0}
  ],
  "handoffs": [{"prompt_tokens": 48}, {"prompt_tokens": 48}, {"prompt_tokens": 48}],
  "transfer": {"bytes_per_token": 131072, "block_size_tokens": 16},
  "faults": {"cancel": 1}
}`

// With three interchangeable handoffs the orbits have up to 3! = 6
// states; the reduction must be at least 4×, with the same verdict.
func TestExplore_SymmetryThreeHandoffs(t *testing.T) {
	cfg := mustConfig(t, threeHandoffs)
	c, _ := New(system.Generated(), cfg, cfg.Runs[0])
	with := c.checkRun(context.Background(), Limits{}, nil)
	plain := *cfg
	plain.Symmetry = false
	p, _ := New(system.Generated(), &plain, cfg.Runs[0])
	without := p.checkRun(context.Background(), Limits{}, nil)
	ratio := float64(without.Stats.States) / float64(with.Stats.States)
	t.Logf("three handoffs: %d states with symmetry, %d without, %.2f×", with.Stats.States, without.Stats.States, ratio)
	if ratio < 4 {
		t.Errorf("reduction %.2f×, want ≥ 4×", ratio)
	}
	if !with.Complete || !without.Complete || (with.Violation == nil) != (without.Violation == nil) {
		t.Errorf("verdicts differ")
	}
}

func TestExplore_SymmetryReduces(t *testing.T) {
	cfg := mustConfig(t, twoByTwo)
	for _, run := range cfg.Runs {
		c, _ := New(system.Generated(), cfg, run)
		with := c.checkRun(context.Background(), Limits{}, nil)
		plain := *cfg
		plain.Symmetry = false
		c2, _ := New(system.Generated(), &plain, run)
		without := c2.checkRun(context.Background(), Limits{}, nil)
		if ratio := float64(without.Stats.States) / float64(with.Stats.States); ratio < 3.5 {
			t.Errorf("%s: symmetry reduces %d to %d states, ratio %.2f, want ≥ 3.5", run.Name, without.Stats.States, with.Stats.States, ratio)
		}
		if (with.Violation == nil) != (without.Violation == nil) || !with.Complete || !without.Complete {
			t.Errorf("%s: verdicts differ with and without symmetry", run.Name)
		}
	}
}

func TestExplore_Limits(t *testing.T) {
	cfg := mustConfig(t, twoByTwo)
	c, _ := New(system.Generated(), cfg, cfg.Runs[0])
	r := c.checkRun(context.Background(), Limits{MaxStates: 1000, Liveness: true}, nil)
	if r.Complete || r.StopReason == "" || r.Stats.States < 1000 || r.Liveness {
		t.Errorf("max-states: complete=%v stop=%q states=%d liveness=%v", r.Complete, r.StopReason, r.Stats.States, r.Liveness)
	}
	r = c.checkRun(context.Background(), Limits{MaxDepth: 3}, nil)
	if r.Complete || r.Stats.Depth != 3 {
		t.Errorf("max-depth: complete=%v depth=%d", r.Complete, r.Stats.Depth)
	}
	r = c.checkRun(context.Background(), Limits{MaxMemory: 1}, nil)
	if r.Complete || r.StopReason != "max-memory" {
		t.Errorf("max-memory: complete=%v stop=%q", r.Complete, r.StopReason)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r = c.checkRun(ctx, Limits{}, nil)
	if r.Complete || r.StopReason != "interrupted" {
		t.Errorf("interrupt: complete=%v stop=%q", r.Complete, r.StopReason)
	}
}

func TestEventuallyDrained_Graph(t *testing.T) {
	// 0 → 1 → 2 (drained); 0 → 3 ⇄ 4: 3 and 4 can never drain.
	from := []uint32{0, 1, 0, 3, 4}
	to := []uint32{1, 2, 3, 4, 3}
	drained := []bool{false, false, true, false, false}
	trapped := func() []uint32 {
		// The edges as a search leaves them: in a log, here in memory.
		var l edgeLog
		for i := range from {
			l.append(from[i], to[i])
		}
		got, err := eventuallyDrained(5, 1, l.eachIn, drained)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if diff := cmp.Diff([]uint32{3, 4}, trapped()); diff != "" {
		t.Errorf("trapped states (-want +got):\n%s", diff)
	}
	// With a way out of the cycle, nothing is trapped.
	from = append(from, 4)
	to = append(to, 2)
	if got := trapped(); len(got) != 0 {
		t.Errorf("trapped %v, want none", got)
	}
}

// The liveness pass shares its work among the workers (the edges read in
// parts, the backward search level by level): on a graph large enough to
// be cut into parts and with levels of several blocks, every number of
// workers finds the same trapped states as a plain search from the
// drained states over the reversed edges.
func TestEventuallyDrained_WorkersAgree(t *testing.T) {
	const n, m = 200_000, 1_600_000
	rng := rand.New(rand.NewPCG(7, 11))
	// Past the spill limit: the first edges are read back from a file.
	dir := &spillDir{parent: t.TempDir()}
	l := edgeLog{recordLog{dir: dir}}
	defer dir.remove()
	defer l.close()
	rev := make([][]uint32, n)
	for i := 0; i < m; i++ {
		// Mostly forward edges, as a breadth-first search leaves them,
		// so that some states have no way to a drained one.
		f := uint32(rng.IntN(n))
		t := uint32(min(n-1, max(0, int(f)+rng.IntN(64)-8)))
		l.append(f, t)
		rev[t] = append(rev[t], f)
	}
	drained := make([]bool, n)
	for i := range drained {
		drained[i] = rng.IntN(500) == 0
	}
	can := slices.Clone(drained)
	var stack []uint32
	for id, d := range drained {
		if d {
			stack = append(stack, uint32(id))
		}
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, u := range rev[v] {
			if !can[u] {
				can[u] = true
				stack = append(stack, u)
			}
		}
	}
	var want []uint32
	for id, ok := range can {
		if !ok {
			want = append(want, uint32(id))
		}
	}
	if len(want) == 0 || len(want) == n || l.base == 0 {
		t.Fatalf("%d of %d states trapped, %d edges on file: the graph does not test the pass", len(want), n, l.base)
	}
	for _, workers := range []int{1, 2, 4} {
		got, err := eventuallyDrained(n, workers, l.eachIn, drained)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d workers: %d trapped states, want %d", workers, len(got), len(want))
		}
	}
}
