package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/spec"
)

var mutateCommand = &command{
	name:    "mutate",
	args:    "[flags]",
	summary: "break the built-in tables one row at a time and report how many mutants the checker kills",
	detail: "Without --config each mutant is checked against the embedded mutation configuration\n" +
		"(checker/mutation.json: one handoff, one prefill and one decode worker, every fault kind, four runs).",
	exits: []exitDoc{
		{exitOK, "the score was measured (survivors do not change the exit code)"},
		{exitUsage, ""},
		{exitInterrupted, "interrupted (Ctrl-C): the score covers the mutants checked and says how many were not"},
	},
	run: cmdMutate,
}

func init() { registerCommand(mutateCommand) }

func cmdMutate(c *command, e *env, args []string) int {
	fs := c.flags()
	configFile := fs.String("config", "", "configuration to check each mutant against (default: the embedded mutation configuration)")
	ops := fs.String("operators", "drop-action,swap-actions,ignore,retarget,move-publish", "mutation operators, comma-separated, each once")
	maxStates := fs.Int("max-states", 2000000, "per run, stop an exploration after the level that reaches this many states")
	liveness := fs.Bool("liveness", true, "also kill mutants that break EventuallyDrained")
	por := fs.Bool("por", true, "with --liveness=false: partial-order reduction in each mutant's search (the same kills and traces, fewer states)")
	workers := fs.Int("workers", 0, "mutants checked at once (0: all cores)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	timed := fs.Bool("timed", false, "run every surviving mutant through the simulator's fault scenarios and kill those that break an invariant or a timed property on the clock")
	if code, ok := c.parse(e, fs, args, 0, 0); !ok {
		return code
	}
	var operators []spec.Operator
	seen := map[string]bool{}
	for _, o := range strings.Split(*ops, ",") {
		if seen[o] {
			return c.bad(e, "--operators: %q is named twice (each mutant would be counted twice)", o)
		}
		seen[o] = true
		found := false
		for _, known := range spec.Operators {
			if string(known) == o {
				operators, found = append(operators, known), true
			}
		}
		if !found {
			return c.bad(e, "--operators: %q is not one of drop-action, swap-actions, ignore, retarget, move-publish", o)
		}
	}
	if *maxStates <= 0 || *workers < 0 {
		return c.bad(e, "--max-states must be positive and --workers not negative")
	}
	lc, err := loadConfig(e.ctx, *configFile, "mutation.json")
	if err != nil {
		return c.bad(e, "%v", err)
	}
	mutants := spec.Mutants(spec.Default(), operators)
	var progress func(int, int)
	if isTerminal(os.Stderr) {
		progress = func(done, total int) {
			if done%50 == 0 || done == total {
				fmt.Fprintf(e.stderr, "%d/%d mutants checked\n", done, total)
			}
		}
	}
	results := checker.Mutate(e.ctx, lc.cfg, mutants, checker.Limits{MaxStates: *maxStates, Liveness: *liveness, Reduce: *por && !*liveness}, *workers, progress)
	out, interrupted, err := results.Render(*asJSON)
	if err != nil {
		return c.bad(e, "%v", err)
	}
	if interrupted || !*timed {
		if *asJSON {
			fmt.Fprintln(e.stdout, string(out))
		} else {
			fmt.Fprint(e.stdout, string(out))
		}
		if interrupted {
			return exitInterrupted
		}
		return exitOK
	}
	// The untimed score, as text: the JSON form of the timed run is the
	// combined one.
	summary, _, _ := results.Render(false)
	var untimed untimedScore
	for _, r := range results {
		if r.Checked {
			untimed.checked++
		}
		if r.Killed {
			untimed.killed++
		}
		if r.Checked && !r.Killed && !r.Bounded {
			untimed.survivors = append(untimed.survivors, r.Mutant)
		}
	}
	return mutateTimed(c, e, string(summary), untimed, *workers, *asJSON)
}

// untimedScore is what the timed run takes from the untimed one: the
// mutants it checked and killed, and the survivors to run on the clock.
type untimedScore struct {
	checked, killed int
	survivors       []spec.Mutant
}

// mutateTimed runs the untimed survivors on the clock and reports the
// combined score after summary, the untimed one.
func mutateTimed(c *command, e *env, summary string, score untimedScore, workers int, asJSON bool) int {
	survivors := score.survivors
	if workers == 0 {
		workers = runtime.NumCPU()
	}
	timed, err := sim.MutateTimed(e.ctx, survivors, workers)
	if err != nil && e.ctx.Err() == nil {
		return c.bad(e, "%v", err)
	}
	if e.ctx.Err() != nil {
		fmt.Fprint(e.stdout, summary)
		fmt.Fprintln(e.stdout, "interrupted: the timed runs did not finish")
		return exitInterrupted
	}
	untimed, checked := score.killed, score.checked
	onClock := 0
	for _, t := range timed {
		if t.Killed {
			onClock++
		}
	}
	if asJSON {
		type jt struct {
			Mutant    string `json:"mutant"`
			Killed    bool   `json:"killed"`
			Scenario  string `json:"scenario,omitempty"`
			Policy    string `json:"policy,omitempty"`
			Invariant string `json:"invariant,omitempty"`
			Detail    string `json:"detail,omitempty"`
			Reason    string `json:"reason,omitempty"`
		}
		out := struct {
			Checked       int  `json:"checked"`
			KilledUntimed int  `json:"killed_untimed"`
			KilledTimed   int  `json:"killed_timed"`
			Survivors     []jt `json:"timed"`
		}{Checked: checked, KilledUntimed: untimed, KilledTimed: onClock}
		for _, t := range timed {
			j := jt{t.Mutant.Name, t.Killed, t.Scenario, t.Policy, t.Invariant, t.Detail, ""}
			if !t.Killed {
				j.Reason = sim.Equivalent[t.Mutant.Name]
			}
			out.Survivors = append(out.Survivors, j)
		}
		data, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return c.bad(e, "%v", err)
		}
		fmt.Fprintln(e.stdout, string(data))
		return exitOK
	}
	fmt.Fprint(e.stdout, summary)
	fmt.Fprintf(e.stdout, "on the clock (%s; the checker's four runs): %d of %d survivors killed\n", strings.Join(sim.TimedScenarios, ", "), onClock, len(timed))
	for _, t := range timed {
		if t.Killed {
			fmt.Fprintf(e.stdout, "  killed %s: %s under %s breaks %s\n", t.Mutant.Name, t.Scenario, t.Policy, t.Invariant)
		}
	}
	fmt.Fprintf(e.stdout, "combined score: %d/%d mutants killed (%.1f%%)\n", untimed+onClock, checked, 100*float64(untimed+onClock)/float64(max(checked, 1)))
	if left := len(timed) - onClock; left > 0 {
		fmt.Fprintf(e.stdout, "survivors on the clock too (%d):\n", left)
		for _, t := range timed {
			if !t.Killed {
				why := sim.Equivalent[t.Mutant.Name]
				if why == "" {
					why = "no reason given yet"
				}
				fmt.Fprintf(e.stdout, "  %s: %s\n", t.Mutant.Name, why)
			}
		}
	}
	return exitOK
}
