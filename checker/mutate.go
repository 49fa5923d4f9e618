package checker

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"sync"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/spec"
)

// mutantResult is what the checker made of one broken table.
type mutantResult struct {
	Mutant spec.Mutant
	// Killed is set when some run found a violation.
	Killed    bool
	Run       string
	Invariant string
	// Check is which check inside the invariant failed (model.Violation.Check).
	Check string
	Steps int // length of the counterexample
	// Bounded is set when a run stopped at a bound without a violation:
	// the mutant is neither killed nor shown to survive.
	Bounded bool
	States  int // distinct states explored over all runs
	// Checked is false for a mutant an interrupt kept from being judged.
	Checked bool
}

// Mutate checks every mutant against every run of a configuration: a
// mutant is killed when some run finds a violation. Mutants run
// concurrently, one exploration each on one goroutine. The results are in
// the order of the mutants, whatever the scheduling, and render
// themselves (Render).
func Mutate(ctx context.Context, cfg *system.Config, mutants []spec.Mutant, lim Limits, workers int, progress func(done, total int)) mutantResults {
	lim.Workers = 1
	// Each mutant's exploration is small and short-lived: with the default
	// collector pacing, a good part of the time went to collecting the
	// level buffers of a heap that never grows large. Twice the pace saves
	// about a tenth of the time for a few tens of MiB.
	defer debug.SetGCPercent(debug.SetGCPercent(200))
	results := make(mutantResults, len(mutants))
	for i := range results {
		results[i].Mutant = mutants[i]
	}
	var mu sync.Mutex
	done := 0
	parallel(max(workers, 1), len(mutants), func(i int) {
		if ctx.Err() != nil {
			return
		}
		r := mutateOne(ctx, cfg, mutants[i], lim)
		if ctx.Err() != nil && !r.Killed {
			// Stopped mid-exploration: neither killed nor survived.
			r = mutantResult{Mutant: mutants[i]}
		}
		results[i] = r
		if progress != nil {
			mu.Lock()
			done++
			progress(done, len(mutants))
			mu.Unlock()
		}
	})
	return results
}

func mutateOne(ctx context.Context, cfg *system.Config, m spec.Mutant, lim Limits) mutantResult {
	res := mutantResult{Mutant: m, Checked: true}
	it, err := interp.New(m.Spec)
	if err != nil {
		panic("checker: a validated mutant does not interpret: " + err.Error())
	}
	p, err := system.FromStepper(m.Name, m.Spec, it)
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
		r := c.checkRun(ctx, lim, nil)
		res.States += r.Stats.States
		if r.Violation != nil {
			res.Killed, res.Run = true, run.Name
			v := r.Violation.Violation
			res.Invariant, res.Check, res.Steps = v.Invariant, v.Check, len(r.Violation.Steps)
			return res
		}
		if !r.Complete {
			res.Bounded = true
		}
	}
	return res
}

// mutantResults are the results of a run of mutants, in the mutants'
// order.
type mutantResults []mutantResult

// Render renders the results, as one JSON object or as the summary for
// people, and says whether an interrupt kept some mutant from being
// checked: what a run of mutants reports, asked together.
func (results mutantResults) Render(asJSON bool) (out []byte, interrupted bool, err error) {
	if asJSON {
		out, err = mutationJSON(results)
	} else {
		out = []byte(mutationSummary(results))
	}
	return out, mutationInterrupted(results), err
}

// mutationSummary renders the score: overall, per operator, which
// invariants and which checks inside them did the killing, and every
// mutant that survived. Counting checks, not only invariants, makes a
// check whose removal another check of the same invariant would cover
// still visible in the summary.
func mutationSummary(results []mutantResult) string {
	var b strings.Builder
	killed, bounded, checked := 0, 0, 0
	type tally struct{ killed, total int }
	byOp := map[spec.Operator]*tally{}
	byInv := map[string]int{}
	byCheck := map[string]map[string]int{}
	var survivors []mutantResult
	for _, r := range results {
		if !r.Checked {
			continue
		}
		checked++
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
			if byCheck[r.Invariant] == nil {
				byCheck[r.Invariant] = map[string]int{}
			}
			byCheck[r.Invariant][r.Check]++
		case r.Bounded:
			bounded++
		default:
			survivors = append(survivors, r)
		}
	}
	fmt.Fprintf(&b, "mutation score: %d/%d mutants killed (%.1f%%)", killed, checked, pct(killed, checked))
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
		checks := make([]string, 0, len(byCheck[inv]))
		for c := range byCheck[inv] {
			checks = append(checks, c)
		}
		n := byCheck[inv]
		sort.Slice(checks, func(i, j int) bool {
			if n[checks[i]] != n[checks[j]] {
				return n[checks[i]] > n[checks[j]]
			}
			return checks[i] < checks[j]
		})
		for _, c := range checks {
			fmt.Fprintf(&b, "    %4d  %s\n", n[c], c)
		}
	}
	if len(survivors) > 0 {
		fmt.Fprintf(&b, "survivors (%d): each is an equivalent change or a gap in what is checked:\n", len(survivors))
		for _, r := range survivors {
			fmt.Fprintf(&b, "  %s\n", r.Mutant.Name)
		}
	}
	if n := len(results) - checked; n > 0 {
		fmt.Fprintf(&b, "interrupted: %d of %d mutants not checked; the score covers the %d checked\n", n, len(results), checked)
	}
	return b.String()
}

// mutationJSON renders the results as one object: the score over the
// mutants checked, and each mutant.
func mutationJSON(results []mutantResult) ([]byte, error) {
	type jm struct {
		Mutant    string `json:"mutant"`
		Operator  string `json:"operator"`
		Checked   bool   `json:"checked"`
		Killed    bool   `json:"killed"`
		Undecided bool   `json:"undecided,omitempty"`
		Run       string `json:"run,omitempty"`
		Invariant string `json:"invariant,omitempty"`
		Check     string `json:"check,omitempty"`
		Steps     int    `json:"trace_steps,omitempty"`
		States    int    `json:"states"`
	}
	out := struct {
		Killed      int  `json:"killed"`
		Checked     int  `json:"checked"`
		Total       int  `json:"total"`
		Interrupted bool `json:"interrupted,omitempty"`
		Mutants     []jm `json:"mutants"`
	}{Total: len(results), Mutants: []jm{}}
	for _, r := range results {
		if r.Checked {
			out.Checked++
		}
		if r.Killed {
			out.Killed++
		}
		out.Mutants = append(out.Mutants, jm{r.Mutant.Name, string(r.Mutant.Operator), r.Checked, r.Killed, r.Bounded, r.Run, r.Invariant, r.Check, r.Steps, r.States})
	}
	out.Interrupted = out.Checked < out.Total
	return json.MarshalIndent(out, "", "  ")
}

// mutationInterrupted reports whether some mutant was not checked.
func mutationInterrupted(results []mutantResult) bool {
	for _, r := range results {
		if !r.Checked {
			return true
		}
	}
	return false
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}
