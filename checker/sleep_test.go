package checker

import (
	"context"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/system"

	"github.com/handoffcheck/handoffcheck/model"
)

// TestSleep_IndependentMovesCommute holds the independence that sleep
// sets rest on to the model, on every state of small configurations (and
// the first states of larger ones): for every two moves judged
// independent, each is still enabled, under the same slot, after the
// other, and both orders reach the same state.
func TestSleep_IndependentMovesCommute(t *testing.T) {
	pairs := 0
	for _, tc := range []struct {
		file   string
		states int
	}{{"two-handoffs.json", 1 << 30}, {"headroom-binds.json", 1 << 30}, {"three-handoffs.json", 20000}} {
		cfg := testdataConfig(t, tc.file)
		for _, run := range cfg.Runs {
			c := checkerFor(t, system.Generated(), cfg, run.Name)
			for _, s := range porSample(c, tc.states) {
				var ms system.MoveSet
				var sm sleepMoves
				c.Enabled(&s, &ms)
				c.sleepInfo(&s, &ms, &sm)
				for i := 0; i < ms.N; i++ {
					for j := i + 1; j < ms.N; j++ {
						if !sm.independent(&ms, i, j) {
							continue
						}
						pairs++
						a, b := ms.M[i], ms.M[j]
						ab, okAB := sleepStep(c, &s, a, b)
						ba, okBA := sleepStep(c, &s, b, a)
						if !okAB || !okBA {
							t.Fatalf("%s %s: %s and %s judged independent, but one disables the other (%v, %v) in\n%s",
								tc.file, run.Name, a, b, okAB, okBA, strings.Join(c.DescribeState(&s), "\n"))
						}
						if kab, kba := c.Key(&ab), c.Key(&ba); kab != kba {
							t.Fatalf("%s %s: %s and %s judged independent, but the two orders differ from\n%s",
								tc.file, run.Name, a, b, strings.Join(c.DescribeState(&s), "\n"))
						}
					}
				}
			}
		}
	}
	if pairs < 10000 {
		t.Fatalf("only %d independent pairs seen", pairs)
	}
	t.Logf("%d independent pairs commute", pairs)
}

// sleepStep takes a then b from s; ok is false when b, under its slot,
// may no longer sleep or is not enabled after a.
func sleepStep(c *Checker, s *system.State, a, b system.Move) (system.State, bool) {
	t := *s
	var ms system.MoveSet
	c.Enabled(&t, &ms)
	tx := model.Tx{W: &t.W}
	c.ApplyTx(&t, &tx, a, nil, ms.Stuck)
	c.Enabled(&t, &ms)
	var sm sleepMoves
	c.sleepInfo(&t, &ms, &sm)
	for i := 0; i < ms.N; i++ {
		if sm.slot[i] >= 0 && ms.M[i] == b {
			tx = model.Tx{W: &t.W}
			c.ApplyTx(&t, &tx, b, nil, ms.Stuck)
			return t, true
		}
	}
	return t, false
}

// TestSleep_NamingFollowsCanonical checks the renaming of sleep sets:
// the moves that may sleep in a state, renamed as canonical renames the
// state, are those of its canonical form.
func TestSleep_NamingFollowsCanonical(t *testing.T) {
	renamed := 0
	everyRun(t, []string{"two-handoffs.json", "three-handoffs.json", "max-shape.json"}, func(file, run string, c *Checker) {
		if !c.Symmetric() {
			return
		}
		for _, s := range porSample(c, 3000) {
			k := c.Key(&s)
			var canon system.State
			c.UnpackTo(&k, &canon)
			var mine, theirs sleepSet
			var ms system.MoveSet
			var sm sleepMoves
			c.Enabled(&s, &ms)
			c.sleepInfo(&s, &ms, &sm)
			for i := 0; i < ms.N; i++ {
				if sl := sm.slot[i]; sl >= 0 {
					mine.add(int(sl))
				}
			}
			c.Enabled(&canon, &ms)
			c.sleepInfo(&canon, &ms, &sm)
			for i := 0; i < ms.N; i++ {
				if sl := sm.slot[i]; sl >= 0 {
					theirs.add(int(sl))
				}
			}
			if got := mine.renamed(c, &s); got != theirs {
				t.Fatalf("%s %s: renamed slots %x, canonical state's %x", file, run, got, theirs)
			}
			if mine != theirs {
				renamed++
			}
		}
	})
	if renamed == 0 {
		t.Fatal("no state was renamed: the test checks nothing")
	}
	t.Logf("%d states renamed", renamed)
}

// Sleep sets keep what the reduction promises (porPair): on every
// configuration, every shipped variant and every eighth mutant, the same
// verdicts as the full search.
func TestSleep_SameVerdictsOnEveryConfiguration(t *testing.T) {
	t.Parallel()
	porConfigurations(t, Limits{Reduce: true, Sleep: true})
}

func TestSleep_SameVerdictsOnEveryVariant(t *testing.T) {
	t.Parallel()
	for _, file := range porConfigs() {
		porVariants(t, file, Limits{Reduce: true, Sleep: true})
	}
}

func TestSleep_MutantsCaughtEitherWay(t *testing.T) {
	longOnly(t, "the search with sleep sets held to the full one on every eighth mutant, minutes of CPU")
	t.Parallel()
	porMutantsOnConfigs(t, Limits{Reduce: true, Sleep: true})
}

// On two handoffs, sleep sets put moves to sleep and wake states up,
// take fewer transitions than persistent sets alone, and give the same
// figures on one worker and on two.
func TestSleep_TakesTransitionsAwayDeterministically(t *testing.T) {
	t.Parallel()
	cfg := testdataConfig(t, "two-handoffs.json")
	woken := 0
	for _, run := range cfg.Runs {
		c := checkerFor(t, system.Generated(), cfg, run.Name)
		// The searches on one worker are the ones the reduction tests
		// compare on every configuration (reducedSearch).
		what := "two-handoffs.json " + run.Name
		plain := reducedSearch(what, c, Limits{Workers: 1, Reduce: true})
		one := reducedSearch(what, c, Limits{Workers: 1, Reduce: true, Sleep: true})
		two := c.checkRun(context.Background(), Limits{Workers: 2, Reduce: true, Sleep: true}, nil)
		if !one.Sleep || one.Stats.Slept == 0 || one.Stats.Transitions >= plain.Stats.Transitions {
			t.Errorf("%s: sleep sets on %v, %d moves asleep, %d transitions against %d without them",
				run.Name, one.Sleep, one.Stats.Slept, one.Stats.Transitions, plain.Stats.Transitions)
		}
		a, b := one.Stats, two.Stats
		if a.States != b.States || a.Transitions != b.Transitions || a.Slept != b.Slept || a.Woken != b.Woken || one.DeadEnds != two.DeadEnds {
			t.Errorf("%s: one worker %+v, two %+v", run.Name, a, b)
		}
		woken += a.Woken
	}
	if woken == 0 {
		t.Error("no state was woken: the wake entries are not exercised")
	}
}

// A violation found with sleep sets has the same trace on one worker as
// on two, and the full search's.
func TestSleep_SameTraceOnAnyWorkers(t *testing.T) {
	t.Parallel()
	cfg := testdataConfig(t, "two-handoffs.json")
	found := 0
	for name, s := range shippedVariants(t) {
		p := interpreted(t, s)
		c := checkerFor(t, p, cfg, "vllm")
		ctx := context.Background()
		full := fullSearch("two-handoffs.json "+name+" vllm", c, 1)
		one := c.checkRun(ctx, Limits{Workers: 1, Reduce: true, Sleep: true}, nil)
		two := c.checkRun(ctx, Limits{Workers: 2, Reduce: true, Sleep: true}, nil)
		if full.Violation == nil {
			continue
		}
		found++
		want := c.formatCounterexample(full.Violation)
		if one.Violation == nil || two.Violation == nil {
			t.Fatalf("%s: violation lost with sleep sets", name)
		}
		if got := c.formatCounterexample(one.Violation); got != want {
			t.Errorf("%s: one worker's trace\n%s\nthe full search's\n%s", name, got, want)
		}
		if got := c.formatCounterexample(two.Violation); got != want {
			t.Errorf("%s: two workers' trace\n%s\nthe full search's\n%s", name, got, want)
		}
	}
	if found == 0 {
		t.Fatal("no variant breaks an invariant: the test checks nothing")
	}
}

// A search with sleep sets that must move to disk, or that meets more
// sets than it can name, starts again without them, says why, and gives
// the figures of the search with persistent sets alone.
func TestSleep_StartsAgainWithout(t *testing.T) {
	cfg := testdataConfig(t, "two-handoffs.json")
	c := checkerFor(t, system.Generated(), cfg, "vllm")
	ctx := context.Background()
	disk := c.checkRun(ctx, Limits{Workers: 1, Reduce: true, Sleep: true, DiskAfter: 2000}, nil)
	want := c.checkRun(ctx, Limits{Workers: 1, Reduce: true, DiskAfter: 2000}, nil)
	if disk.SleepDropped != sleepDroppedDisk || disk.Sleep || disk.Stats.DiskAt == 0 {
		t.Errorf("disk: dropped %q, sleep %v, on disk at %d", disk.SleepDropped, disk.Sleep, disk.Stats.DiskAt)
	}
	if disk.Stats.States != want.Stats.States || disk.Stats.Transitions != want.Stats.Transitions || !disk.Complete {
		t.Errorf("disk: %d states, %d transitions; without sleep sets %d, %d", disk.Stats.States, disk.Stats.Transitions,
			want.Stats.States, want.Stats.Transitions)
	}
	old := sleepSetsNamed
	sleepSetsNamed = 2
	defer func() { sleepSetsNamed = old }()
	full := c.checkRun(ctx, Limits{Workers: 1, Reduce: true, Sleep: true}, nil)
	plain := c.checkRun(ctx, Limits{Workers: 1, Reduce: true}, nil)
	if full.SleepDropped != sleepDroppedFull || full.Sleep || full.Stats.States != plain.Stats.States || !full.Complete {
		t.Errorf("sets: dropped %q, sleep %v, %d states against %d", full.SleepDropped, full.Sleep, full.Stats.States, plain.Stats.States)
	}
}

// Sleep sets alone (no persistent sets) cut transitions, never states:
// the search must reach every state of the full search, the same count.
// For that, a state expanded before a path with a smaller set reaches
// it is woken. On these configurations no state is lost even with the
// wake entries dropped (tried): the other paths reach them. So the test
// also requires some state to be woken, so that the wake entries run.
func TestSleep_AloneReachEveryState(t *testing.T) {
	t.Parallel()
	woken := 0
	everyRun(t, []string{"two-handoffs.json", "two-handoffs-faults.json", "headroom-binds.json"}, func(file, run string, c *Checker) {
		ctx := context.Background()
		full := fullSearch(file+" "+run, c, 1)
		alone := c.checkRun(ctx, Limits{Workers: 1, Reduce: true, Sleep: true, sleepAlone: true}, nil)
		if alone.Stats.States != full.Stats.States || alone.DeadEnds != full.DeadEnds || !alone.Complete {
			t.Errorf("%s %s: %d states and %d quiescent with sleep sets alone, %d and %d without",
				file, run, alone.Stats.States, alone.DeadEnds, full.Stats.States, full.DeadEnds)
		}
		t.Logf("%s %s: %d transitions with sleep sets alone, %d without; %d asleep, %d woken", file, run,
			alone.Stats.Transitions, full.Stats.Transitions, alone.Stats.Slept, alone.Stats.Woken)
		woken += alone.Stats.Woken
	})
	if woken == 0 {
		t.Error("no state was woken")
	}
}

// everyRun calls f with a checker for every run of each configuration.
func everyRun(t *testing.T, files []string, f func(file, run string, c *Checker)) {
	t.Helper()
	for _, file := range files {
		cfg := testdataConfig(t, file)
		for _, run := range cfg.Runs {
			f(file, run.Name, checkerFor(t, system.Generated(), cfg, run.Name))
		}
	}
}
