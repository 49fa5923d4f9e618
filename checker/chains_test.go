package checker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/spec"
)

// drainChains on graphs small enough to see: a chain that reaches a
// drained state proves every state on it; one that closes a cycle or ends
// in a state with no own move leaves all of its states open, and so does
// every chain that runs into them.
func TestDrainChains_ResolveEachState(t *testing.T) {
	const none = -1
	for _, tc := range []struct {
		name    string
		next    []int // the chain's next state, none for no own move
		drained []bool
		open    int
	}{
		{"a path into a drained state", []int{1, 2, none}, []bool{false, false, true}, 0},
		{"chains that join before draining", []int{2, 2, 3, none}, []bool{false, false, false, true}, 0},
		{"a drained state that still moves", []int{1, 0}, []bool{true, false}, 0},
		{"a cycle and the chain into it", []int{1, 2, 1}, []bool{false, false, false}, 3},
		{"a self-loop", []int{0, 0}, []bool{false, false}, 2},
		{"a dead end that is not drained", []int{1, none, none}, []bool{false, false, true}, 2},
		{"some drain, some do not", []int{1, 4, 3, 2, none}, []bool{false, false, false, false, true}, 2},
	} {
		var edges [][2]uint32
		for f, to := range tc.next {
			if to != none {
				edges = append(edges, [2]uint32{uint32(f), uint32(to)})
			}
		}
		for _, workers := range []int{1, 2} {
			open, err := drainChains(len(tc.next), workers, eachEdgeOf(edges), tc.drained)
			if err != nil || open != tc.open {
				t.Errorf("%s, %d workers: %d states open (%v), want %d", tc.name, workers, open, err, tc.open)
			}
		}
	}
}

// eachEdgeOf reads edges the way edgeLog.eachIn does: in parts, each
// part a run of them.
func eachEdgeOf(edges [][2]uint32) func(parts int, f func(part int, from, to uint32)) error {
	return func(parts int, f func(part int, from, to uint32)) error {
		for i, e := range edges {
			f(i*parts/max(len(edges), 1), e[0], e[1])
		}
		return nil
	}
}

// The workers resolving chains at once, in blocks small enough that
// their paths run into each other's all the time, find each state's
// outcome as one worker following every chain alone does: on random
// graphs of chains that drain, close cycles (some through several
// blocks) and end in dead ends.
func TestDrainChains_SharedWorkersAgree(t *testing.T) {
	old := chainBlock
	chainBlock = 3
	defer func() { chainBlock = old }()
	rng := rand.New(rand.NewPCG(7, 11))
	for round := 0; round < 200; round++ {
		n := 2 + rng.IntN(400)
		next := make([]int, n)
		drained := make([]bool, n)
		var edges [][2]uint32
		for i := range next {
			drained[i] = rng.IntN(9) == 0
			switch k := rng.IntN(12); {
			case k == 0:
				next[i] = -1
			case k < 4:
				// Backwards, to close cycles.
				next[i] = rng.IntN(i + 1)
			default:
				next[i] = rng.IntN(n)
			}
			if next[i] >= 0 {
				edges = append(edges, [2]uint32{uint32(i), uint32(next[i])})
			}
		}
		want := 0
		for i := range next {
			// Follow the chain for up to n steps: it drains if it meets a
			// drained state before a dead end, and it cycles otherwise.
			v, drains := i, false
			for step := 0; step <= n && v >= 0; step++ {
				if drained[v] {
					drains = true
					break
				}
				v = next[v]
			}
			if !drains {
				want++
			}
		}
		for _, workers := range []int{1, 2, 3, 8} {
			open, err := drainChains(n, workers, eachEdgeOf(edges), drained)
			if err != nil || open != want {
				t.Fatalf("round %d, %d states, %d workers: %d open (%v), want %d", round, n, workers, open, err, want)
			}
		}
	}
}

// chainPair runs a search the way check does by default (drain chains
// on the reduced graph) and one that keeps every edge of every ordering,
// as the search that judges a trap does, and holds them to the same
// answer: the same verdict and trace, the same quiescent states and rows
// fired, EventuallyDrained judged in both, and no more states.
func chainPair(t *testing.T, c *Checker, what string) (chains, every *Result) {
	t.Helper()
	chains = c.checkRun(context.Background(), Limits{Liveness: true, Reduce: true, Workers: 1}, nil)
	every = c.checkRun(context.Background(), Limits{Liveness: true, everyEdge: true, Workers: 1}, nil)
	text := func(r *Result) string {
		if r.Violation == nil {
			return "no violation"
		}
		return r.Violation.Violation.Invariant + "\n" + c.formatCounterexample(r.Violation)
	}
	if a, b := text(chains), text(every); a != b {
		t.Errorf("%s: with drain chains:\n%s\nkeeping every edge:\n%s", what, a, b)
	}
	if chains.Liveness != every.Liveness || chains.Stats.States > every.Stats.States {
		t.Errorf("%s: judged %v/%v, %d/%d states with chains and every edge", what,
			chains.Liveness, every.Liveness, chains.Stats.States, every.Stats.States)
	}
	if every.ChainsOpen != 0 || every.Reduction {
		t.Errorf("%s: a search keeping every edge says %d chains were open, reduction %v", what, every.ChainsOpen, every.Reduction)
	}
	if every.Violation == nil {
		if chains.DeadEnds != every.DeadEnds {
			t.Errorf("%s: %d quiescent states with chains, %d keeping every edge", what, chains.DeadEnds, every.DeadEnds)
		}
		for r := range every.Coverage.Rows {
			for i, n := range every.Coverage.Rows[r] {
				if (n > 0) != (chains.Coverage.Rows[r][i] > 0) {
					t.Errorf("%s: %s row %d fired %d times keeping every edge, %d with chains", what, spec.Role(r), i, n, chains.Coverage.Rows[r][i])
				}
			}
		}
	}
	return chains, every
}

// Every small configuration and every shipped variant: drain chains on
// the reduced graph give the verdict that keeping every edge of every
// ordering gives. A protocol that can get stuck for good leaves chains
// open (a chain is a path, and none drains from a trap), and the search
// that starts again finds the trap. The reduction must take something
// away on two-handoffs.json, or it is not what is being compared.
func TestDrainChains_SameVerdictAsEveryEdge(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"small.json", "two-handoffs.json", "hang.json", "decode-first.json", "delay.json", "grouped-pair.json", "headroom-binds.json"} {
		cfg := testdataConfig(t, name)
		for _, run := range cfg.Runs {
			chains, every := chainPair(t, checkerFor(t, system.Generated(), cfg, run.Name), name+" "+run.Name)
			if chains.ChainsOpen != 0 {
				t.Errorf("%s %s: the built-in tables drain, but %d chains stopped short", name, run.Name, chains.ChainsOpen)
			}
			if name == "two-handoffs.json" && (chains.Stats.Reduced == 0 || chains.Stats.States >= every.Stats.States) {
				t.Errorf("%s %s: the reduction took nothing away: %d states of %d", name, run.Name, chains.Stats.States, every.Stats.States)
			}
		}
	}
	cfg := testdataConfig(t, "small.json")
	broken := 0
	for _, name := range sortedKeys(shippedVariants(t)) {
		p := interpreted(t, shippedVariants(t)[name])
		for _, run := range []string{"vllm", "sglang"} {
			if _, every := chainPair(t, checkerFor(t, p, cfg, run), fmt.Sprintf("small.json %s %s", name, run)); every.Violation != nil {
				broken++
			}
		}
	}
	if broken < 10 {
		t.Errorf("only %d variant runs break an invariant on small.json: the comparison has no teeth", broken)
	}
	chains, _ := chainPair(t, rearmChecker(t), "rearm-reservation sglang")
	if chains.ChainsOpen == 0 || chains.Violation == nil || chains.Violation.Violation.Invariant != "EventuallyDrained" {
		t.Errorf("rearm-reservation: %d chains open, violation %v: want a trap found by the second search", chains.ChainsOpen, chains.Violation)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Every eighth mutant of the built-in tables on the two-handoff
// configuration, its first two runs, liveness on: killed with drain chains
// on the reduced graph exactly when killed keeping every edge of every
// ordering, with a trace no longer. As with safety alone, the first
// invariant found may differ (the reduced search meets the violations in
// another order). make test-long (and CI) runs it.
func TestDrainChains_MutantsCaughtEitherWay(t *testing.T) {
	longOnly(t, "drain chains on the reduced graph held to every edge on every eighth mutant, minutes of CPU")
	t.Parallel()
	cfg := testdataConfig(t, "two-handoffs.json")
	cfg.Runs = cfg.Runs[:2]
	all := spec.Mutants(spec.Default(), spec.Operators)
	var mutants []spec.Mutant
	for i := 0; i < len(all); i += 8 {
		mutants = append(mutants, all[i])
	}
	every := Mutate(context.Background(), cfg, mutants, Limits{Liveness: true, everyEdge: true}, runtime.GOMAXPROCS(0), nil)
	chains := Mutate(context.Background(), cfg, mutants, Limits{Liveness: true, Reduce: true}, runtime.GOMAXPROCS(0), nil)
	sameKills(t, every, chains)
	trapped := 0
	for _, f := range every {
		if f.Invariant == "EventuallyDrained" {
			trapped++
		}
	}
	t.Logf("%d mutants killed by EventuallyDrained keeping every edge", trapped)
}
