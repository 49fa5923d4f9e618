package checker

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/spec"
)

// MutantResult is what the checker made of one broken table.
type MutantResult struct {
	Mutant spec.Mutant
	// Killed is set when some run found a violation.
	Killed    bool
	Run       string
	Invariant string
	Steps     int // length of the counterexample
	// Bounded is set when a run stopped at a bound without a violation:
	// the mutant is neither killed nor shown to survive.
	Bounded bool
	States  int // distinct states explored over all runs
}

// Mutate checks every mutant against every run of a configuration: a
// mutant is killed when some run finds a violation. Mutants run
// concurrently, one exploration each on one goroutine. The results are in
// the order of the mutants, whatever the scheduling.
func Mutate(ctx context.Context, cfg *Config, mutants []spec.Mutant, lim Limits, workers int, progress func(done, total int)) []MutantResult {
	lim.Workers = 1
	results := make([]MutantResult, len(mutants))
	var mu sync.Mutex
	done := 0
	parallel(max(workers, 1), len(mutants), func(i int) {
		if ctx.Err() != nil {
			return
		}
		results[i] = mutateOne(ctx, cfg, mutants[i], lim)
		if progress != nil {
			mu.Lock()
			done++
			progress(done, len(mutants))
			mu.Unlock()
		}
	})
	return results
}

func mutateOne(ctx context.Context, cfg *Config, m spec.Mutant, lim Limits) MutantResult {
	res := MutantResult{Mutant: m}
	it, err := interp.New(m.Spec)
	if err != nil {
		panic("checker: a validated mutant does not interpret: " + err.Error())
	}
	p, err := FromStepper(m.Name, m.Spec, it)
	if err != nil {
		// Outside the model's vocabulary: nothing to run. Mutants only
		// remove, swap or retarget, so this does not happen.
		panic("checker: mutant outside the vocabulary: " + err.Error())
	}
	for _, run := range cfg.Runs {
		c, err := New(p, cfg, run)
		if err != nil {
			panic(err)
		}
		r := c.Explore(ctx, lim, nil)
		res.States += r.Stats.States
		if r.Violation != nil {
			res.Killed, res.Run = true, run.Name
			res.Invariant, res.Steps = r.Violation.Violation.Invariant, len(r.Violation.Steps)
			return res
		}
		if !r.Complete {
			res.Bounded = true
		}
	}
	return res
}

// MutationSummary renders the score: overall, per operator, which
// invariants did the killing, and every mutant that survived.
func MutationSummary(results []MutantResult) string {
	var b strings.Builder
	killed, bounded := 0, 0
	type tally struct{ killed, total int }
	byOp := map[spec.Operator]*tally{}
	byInv := map[string]int{}
	var survivors []MutantResult
	for _, r := range results {
		t := byOp[r.Mutant.Operator]
		if t == nil {
			t = &tally{}
			byOp[r.Mutant.Operator] = t
		}
		t.total++
		switch {
		case r.Killed:
			killed++
			t.killed++
			byInv[r.Invariant]++
		case r.Bounded:
			bounded++
		default:
			survivors = append(survivors, r)
		}
	}
	fmt.Fprintf(&b, "mutation score: %d/%d mutants killed (%.1f%%)", killed, len(results), pct(killed, len(results)))
	if bounded > 0 {
		fmt.Fprintf(&b, ", %d undecided (an exploration hit a bound)", bounded)
	}
	b.WriteString("\n")
	for _, op := range spec.Operators {
		if t := byOp[op]; t != nil {
			fmt.Fprintf(&b, "  %-13s %d/%d killed\n", op, t.killed, t.total)
		}
	}
	var invs []string
	for inv := range byInv {
		invs = append(invs, inv)
	}
	sort.Slice(invs, func(i, j int) bool {
		if byInv[invs[i]] != byInv[invs[j]] {
			return byInv[invs[i]] > byInv[invs[j]]
		}
		return invs[i] < invs[j]
	})
	b.WriteString("killed by:\n")
	for _, inv := range invs {
		fmt.Fprintf(&b, "  %-30s %d\n", inv, byInv[inv])
	}
	if len(survivors) > 0 {
		fmt.Fprintf(&b, "survivors (%d): each is an equivalent change or a gap in what is checked:\n", len(survivors))
		for _, r := range survivors {
			fmt.Fprintf(&b, "  %s\n", r.Mutant.Name)
		}
	}
	return b.String()
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}
