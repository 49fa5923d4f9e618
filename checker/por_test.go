package checker

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"

	"github.com/handoffcheck/handoffcheck/spec"
)

// porPairWith explores a run without partial-order reduction and with
// the reduction lim asks for (persistent sets, or sleep sets too), and
// checks what the reduction promises: the same verdict (the same
// invariant, when one breaks), every quiescent state kept, no more
// states, and a counterexample no longer than the full search's.
//
// The full search is shared (fullSearch) by every test that holds a
// reduction to it: what names the configuration file, spec and run.
func porPairWith(t *testing.T, c *Checker, what string, lim Limits) (full, reduced *Result) {
	t.Helper()
	full = fullSearch(what, c, lim.Workers)
	reduced = reducedSearch(what, c, lim)
	t.Logf("%s: %d states, %d transitions without reduction; %d states, %d transitions with it",
		what, full.Stats.States, full.Stats.Transitions, reduced.Stats.States, reduced.Stats.Transitions)
	name := func(r *Result) string {
		if r.Violation == nil {
			return "no violation"
		}
		return r.Violation.Violation.Invariant
	}
	switch {
	case !full.Complete && full.Violation == nil:
		t.Fatalf("%s: the full search did not finish: %s", what, full.StopDetail)
	case name(full) != name(reduced):
		t.Errorf("%s: %s without reduction, %s with it", what, name(full), name(reduced))
	case full.Violation == nil && full.DeadEnds != reduced.DeadEnds:
		t.Errorf("%s: %d quiescent states without reduction, %d with it", what, full.DeadEnds, reduced.DeadEnds)
	case full.Violation == nil && reduced.Stats.States > full.Stats.States:
		t.Errorf("%s: %d states reduced, %d full", what, reduced.Stats.States, full.Stats.States)
	case full.Violation != nil && len(reduced.Violation.Steps) > len(full.Violation.Steps):
		t.Errorf("%s: a trace of %d steps with reduction, %d without:\n%s", what,
			len(reduced.Violation.Steps), len(full.Violation.Steps), c.formatCounterexample(reduced.Violation))
	}
	if !reduced.Reduction || full.Reduction {
		t.Errorf("%s: Reduction reported %v and %v", what, full.Reduction, reduced.Reduction)
	}
	if full.Violation == nil {
		// A row fires in the reduced search exactly when it fires in the
		// full one: the coverage findings are the same.
		for r := range full.Coverage.Rows {
			for i, n := range full.Coverage.Rows[r] {
				if (n > 0) != (reduced.Coverage.Rows[r][i] > 0) {
					t.Errorf("%s: %s row %d fired %d times without reduction, %d with it", what, spec.Role(r), i, n, reduced.Coverage.Rows[r][i])
				}
			}
		}
	}
	return full, reduced
}

func testdataConfig(t *testing.T, name string) *system.Config {
	t.Helper()
	return loadConfigFile(t, filepath.Join("..", "testdata", "configs", name))
}

// Every configuration in testdata, every run: the same verdict and the
// same quiescent states with reduction as without. Two of the largest are
// left to make por-check (minutes to an hour each, on every core);
// max-shape.json has no verdict of a whole search to compare: its full
// search does not finish on one machine (its vllm run has 31 million
// states at depth 12, each level three times the last), and it is checked
// by bounded search and walks instead (TestShapes_MaximalShape).
// two-handoffs.json is where the reduction has room, and it must take
// something away there.
func TestPOR_SameVerdictsOnEveryConfiguration(t *testing.T) {
	t.Parallel()
	porConfigurations(t, Limits{Reduce: true})
}

// porConfigurations compares, on every configuration the test above
// names, the full search with one reduced by lim.
func porConfigurations(t *testing.T, lim Limits) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "configs", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatal("no configurations", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		workers := 1
		switch name {
		case "max-shape.json":
			continue
		case "scale.json", "three-handoffs.json":
			if os.Getenv("HANDOFFCHECK_POR_ALL") == "" {
				continue
			}
			workers = 0
		case "broken.json":
			// Refused, by design: no verdict to compare.
			continue
		}
		cfg := testdataConfig(t, name)
		for _, run := range cfg.Runs {
			c := checkerFor(t, system.Generated(), cfg, run.Name)
			l := lim
			l.Workers = workers
			full, reduced := porPairWith(t, c, name+" "+run.Name, l)
			if name == "two-handoffs.json" && (reduced.Stats.Reduced == 0 || reduced.Stats.States >= full.Stats.States) {
				t.Errorf("%s %s: the reduction took nothing away: %d states of %d", name, run.Name, reduced.Stats.States, full.Stats.States)
			}
		}
	}
}

// porConfigs are the configurations the variants and mutants are
// compared on: two handoffs with the small configuration's faults, and
// with make por-check also with every fault kind but restart (which
// turns the reduction off).
func porConfigs() []string {
	if os.Getenv("HANDOFFCHECK_POR_ALL") != "" {
		return []string{"two-handoffs.json", "two-handoffs-faults.json"}
	}
	return []string{"two-handoffs.json"}
}

// Every shipped variant, on the two-handoff configuration: broken or
// not, the same verdict with reduction as without, and no longer a trace.
func TestPOR_SameVerdictsOnEveryVariant(t *testing.T) {
	t.Parallel()
	for _, file := range porConfigs() {
		porVariants(t, file, Limits{Reduce: true})
	}
}

func porVariants(t *testing.T, file string, lim Limits) {
	cfg := testdataConfig(t, file)
	broken := 0
	lim.Workers = 1
	for name, s := range shippedVariants(t) {
		p := interpreted(t, s)
		for _, run := range []string{"vllm", "sglang"} {
			full, _ := porPairWith(t, checkerFor(t, p, cfg, run), file+" "+name+" "+run, lim)
			if full.Violation != nil {
				broken++
			}
		}
	}
	if broken < 10 {
		t.Errorf("only %d variant runs break an invariant: the comparison has no teeth", broken)
	}
}

// Every mutant of the built-in tables, on the two-handoff configuration,
// safety only: killed with reduction exactly when killed without it,
// with a trace no longer. The first invariant found may differ: the
// reduced search meets the violations in another order (each one it
// finds is a state or step of the full search too). make test-long (and
// CI) checks every eighth mutant; make por-check (HANDOFFCHECK_POR_ALL=1)
// all.
func TestPOR_MutantsCaughtEitherWay(t *testing.T) {
	longOnly(t, "the reduced search held to the full one on every eighth mutant, minutes of CPU")
	t.Parallel()
	porMutantsOnConfigs(t, Limits{Reduce: true})
}

// porMutantsOnConfigs compares the mutants on porConfigs' configurations,
// their first two runs, with the reduction lim asks for.
func porMutantsOnConfigs(t *testing.T, lim Limits) {
	if testing.Short() {
		t.Skip("checks mutants twice")
	}
	for _, file := range porConfigs() {
		cfg := testdataConfig(t, file)
		cfg.Runs = cfg.Runs[:2]
		porMutants(t, file, cfg, lim)
	}
}

func porMutants(t *testing.T, file string, cfg *system.Config, lim Limits) {
	all := spec.Mutants(spec.Default(), spec.Operators)
	mutants := all
	if os.Getenv("HANDOFFCHECK_POR_ALL") == "" {
		mutants = nil
		for i := 0; i < len(all); i += 8 {
			mutants = append(mutants, all[i])
		}
	}
	full := fullMutate(file, cfg, mutants)
	reduced := Mutate(context.Background(), cfg, mutants, lim, runtime.GOMAXPROCS(0), nil)
	sameKills(t, full, reduced)
}

// sameKills holds the mutants' results with reduction to those without:
// each killed exactly when killed without it, with a trace no longer;
// the first invariant found may differ (the reduced search meets the
// violations in another order), and is logged. At least half must be
// killed, or the comparison has no teeth. It returns how many were.
func sameKills(t *testing.T, full, reduced []mutantResult) int {
	t.Helper()
	killed, other := 0, 0
	for i := range full {
		f, r := full[i], reduced[i]
		if f.Killed {
			killed++
		}
		switch {
		case f.Killed != r.Killed:
			t.Errorf("%s: killed %v (%s) without reduction, %v (%s) with it", f.Mutant.Name, f.Killed, f.Invariant, r.Killed, r.Invariant)
		case r.Steps > f.Steps:
			t.Errorf("%s: a trace of %d steps with reduction, %d without", f.Mutant.Name, r.Steps, f.Steps)
		case f.Invariant != r.Invariant:
			other++
			t.Logf("%s: %s first without reduction (%d steps), %s with it (%d steps)", f.Mutant.Name, f.Invariant, f.Steps, r.Invariant, r.Steps)
		}
	}
	t.Logf("%d of %d mutants killed either way; %d first by another invariant with reduction", killed, len(full), other)
	if killed < len(full)/2 {
		t.Errorf("only %d of %d mutants killed: the comparison has no teeth", killed, len(full))
	}
	return killed
}
