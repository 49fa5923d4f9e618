package checker

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/spec"
)

// longEnv is set by make test-long (which CI runs as its own step): the
// tests that take minutes on every core run only then, so that make test
// stays within a few minutes on two cores. Without it they skip and say
// which target runs them.
const longEnv = "HANDOFFCHECK_LONG"

// longOnly skips t unless make test-long runs it.
func longOnly(t *testing.T, what string) {
	t.Helper()
	if os.Getenv(longEnv) == "" {
		t.Skipf("%s: make test-long runs it (%s=1; CI runs it too)", what, longEnv)
	}
}

// onceMap computes a value once per key, for every test that asks for it,
// concurrently or not: tests asking different questions of the same
// exploration share it rather than each running it again.
type onceMap[T any] struct {
	mu sync.Mutex
	m  map[string]*onceValue[T]
}

type onceValue[T any] struct {
	once sync.Once
	v    T
}

func (o *onceMap[T]) get(key string, f func() T) T {
	o.mu.Lock()
	if o.m == nil {
		o.m = map[string]*onceValue[T]{}
	}
	e := o.m[key]
	if e == nil {
		e = &onceValue[T]{}
		o.m[key] = e
	}
	o.mu.Unlock()
	e.once.Do(func() { e.v = f() })
	return e.v
}

// fullSearches are explorations without any reduction, which the
// reduction tests (persistent sets, sleep sets, sleep sets alone) all
// hold their searches to. The key names the configuration file, the spec
// and the run, and the workers: the same key is the same search. A Result
// is only read after it is made.
var fullSearches onceMap[*Result]

func fullSearch(key string, c *Checker, workers int) *Result {
	return fullSearches.get(fmt.Sprintf("%s/%d", key, workers), func() *Result {
		return c.checkRun(context.Background(), Limits{Workers: workers}, nil)
	})
}

// reducedSearches are explorations with a reduction, by the same key as
// fullSearches and the whole of the limits: the tests that hold the
// reduction to the full search on every configuration and the one that
// holds its coverage of the triggers to the full search's
// (TestVacuity_ReductionFiresWhatTheFullSearchFires) ask about the same
// searches.
var reducedSearches onceMap[*Result]

func reducedSearch(key string, c *Checker, lim Limits) *Result {
	return reducedSearches.get(fmt.Sprintf("%s/%+v", key, lim), func() *Result {
		return c.checkRun(context.Background(), lim, nil)
	})
}

// fullMutants are the mutants' results without reduction on a
// configuration file (its first two runs, safety only), which the
// persistent-set and sleep-set tests both compare against.
var fullMutants onceMap[[]mutantResult]

func fullMutate(file string, cfg *system.Config, mutants []spec.Mutant) []mutantResult {
	return fullMutants.get(fmt.Sprintf("%s/%d", file, len(mutants)), func() []mutantResult {
		return Mutate(context.Background(), cfg, mutants, Limits{}, runtime.GOMAXPROCS(0), nil)
	})
}

// mutationResults are the mutants' results on the embedded mutation
// configuration with liveness, as TestMutate_Score and the sample of
// every eighth mutant (TestMutate_SampleKeepsTheGoldenVerdicts) judge
// them, by mutant name. make test-long runs both: the sample reads what
// the score computed, and each runs alone too.
var mutationResults struct {
	sync.Mutex
	m map[string]mutantResult
}

// mutationResultsOf returns the results of mutants, in their order,
// checking only those no test has checked yet. Each mutant's result is
// its own: checking it among others or alone gives the same.
func mutationResultsOf(t *testing.T, mutants []spec.Mutant) []mutantResult {
	t.Helper()
	cfg, err := system.ParseConfig("mutation.json", ConfigJSON("mutation.json"))
	if err != nil {
		t.Fatal(err)
	}
	mutationResults.Lock()
	defer mutationResults.Unlock()
	if mutationResults.m == nil {
		mutationResults.m = map[string]mutantResult{}
	}
	var todo []spec.Mutant
	for _, m := range mutants {
		if _, ok := mutationResults.m[m.Name]; !ok {
			todo = append(todo, m)
		}
	}
	for _, r := range Mutate(context.Background(), cfg, todo, Limits{MaxStates: 2000000, Liveness: true}, runtime.GOMAXPROCS(0), nil) {
		mutationResults.m[r.Mutant.Name] = r
	}
	out := make([]mutantResult, len(mutants))
	for i, m := range mutants {
		out[i] = mutationResults.m[m.Name]
	}
	return out
}

// goldenSurvivors reads the survivors TestMutate_Score's golden lists.
func goldenSurvivors(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "goldens", "mutation.txt"))
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(data), "\nsurvivors (")
	if !ok {
		t.Fatal("the mutation golden lists no survivors")
	}
	out := map[string]bool{}
	for _, line := range strings.Split(list, "\n")[1:] {
		name, ok := strings.CutPrefix(line, "  ")
		if !ok {
			break
		}
		out[name] = true
	}
	if len(out) == 0 {
		t.Fatal("the mutation golden lists no survivors")
	}
	return out
}

// mutateSampleEvery is the stride of the sample of mutants make test
// checks against the mutation golden; make test-long checks them all.
const mutateSampleEvery = 8

// Every eighth mutant of the built-in tables, against the mutation
// configuration with liveness as TestMutate_Score checks them all: each
// is killed or survives as the golden of all mutants says, none is
// undecided, and the sample's summary (its score, which invariant and
// which check killed how many, its survivors) is a golden of its own, so
// that a mutant killed by another invariant than before is seen too.
// Its 143 explorations are half a minute of CPU, the largest part of the
// package's: make test-long runs it (and CI), beside TestMutate_Score,
// whose results it reads rather than checking the mutants again.
// Rewrite with: go test ./checker -run TestMutate_SampleKeepsTheGoldenVerdicts -rewrite
func TestMutate_SampleKeepsTheGoldenVerdicts(t *testing.T) {
	longOnly(t, "every eighth mutant against the mutation goldens, half a minute of CPU (TestMutate_Score checks them all)")
	if testing.Short() {
		t.Skip("checks a hundred mutants")
	}
	all := spec.Mutants(spec.Default(), spec.Operators)
	var mutants []spec.Mutant
	for i := 0; i < len(all); i += mutateSampleEvery {
		mutants = append(mutants, all[i])
	}
	survivors := goldenSurvivors(t)
	golden, err := os.ReadFile(filepath.Join("..", "testdata", "goldens", "mutation.txt"))
	if err != nil {
		t.Fatal(err)
	}
	results := mutationResultsOf(t, mutants)
	killed, survived := 0, 0
	for _, r := range results {
		switch {
		case r.Bounded || !r.Checked:
			t.Errorf("%s: undecided", r.Mutant.Name)
		case r.Killed && survivors[r.Mutant.Name]:
			t.Errorf("%s: killed by %s in run %s, but the golden lists it as a survivor", r.Mutant.Name, r.Invariant, r.Run)
		case !r.Killed && !survivors[r.Mutant.Name]:
			t.Errorf("%s: survives, but the golden counts it killed", r.Mutant.Name)
		case r.Killed && !strings.Contains(string(golden), "\n  "+r.Invariant+" "):
			t.Errorf("%s: killed by %s, which the golden counts no kill for", r.Mutant.Name, r.Invariant)
		}
		if r.Killed {
			killed++
		} else {
			survived++
		}
	}
	t.Logf("%d of %d sampled mutants killed, %d survive, as the golden says", killed, len(results), survived)
	if killed == 0 || survived == 0 {
		t.Errorf("the sample has %d killed and %d survivors: it cannot tell a change of either kind", killed, survived)
	}
	got := mutationSummary(results)
	sample := filepath.Join("..", "testdata", "goldens", "mutation-sample.txt")
	if f := flag.Lookup("rewrite"); f != nil && f.Value.String() == "true" {
		if err := os.WriteFile(sample, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("summary of every %dth mutant changed (-golden +now):\n%s", mutateSampleEvery, diff)
	}
}
