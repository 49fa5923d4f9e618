package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/spec"
)

func init() {
	register("mutate", "break the built-in tables one row at a time and report how many mutants the checker kills", cmdMutate)
}

func cmdMutate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mutate", flag.ContinueOnError)
	configFile := fs.String("config", "", "configuration to check each mutant against (default: testdata/configs/small.json's shape, embedded)")
	ops := fs.String("operators", "drop-action,swap-actions,ignore,retarget", "mutation operators, comma-separated")
	maxStates := fs.Int("max-states", 2000000, "per run, stop an exploration after the level that reaches this many states")
	liveness := fs.Bool("liveness", true, "also kill mutants that break EventuallyDrained")
	workers := fs.Int("workers", 0, "mutants checked at once (0: all cores)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "handoffcheck mutate: "+format+"\n", a...)
		return exitUsage
	}
	cfg, err := checker.ParseConfig("mutation.json", checker.MutationConfigJSON())
	if err != nil {
		return bad("%v", err)
	}
	if *configFile != "" {
		data, err := os.ReadFile(*configFile)
		if err != nil {
			return bad("%v", err)
		}
		if cfg, err = checker.ParseConfig(*configFile, data); err != nil {
			return bad("%v", err)
		}
	}
	var operators []spec.Operator
	for _, o := range strings.Split(*ops, ",") {
		found := false
		for _, known := range spec.Operators {
			if string(known) == o {
				operators, found = append(operators, known), true
			}
		}
		if !found {
			return bad("--operators: %q is not one of drop-action, swap-actions, ignore, retarget", o)
		}
	}
	if *maxStates <= 0 || *workers < 0 {
		return bad("--max-states must be positive and --workers not negative")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	mutants := spec.Mutants(spec.Default(), operators)
	var progress func(int, int)
	if isTerminal(os.Stderr) {
		progress = func(done, total int) {
			if done%50 == 0 || done == total {
				fmt.Fprintf(stderr, "%d/%d mutants checked\n", done, total)
			}
		}
	}
	results := checker.Mutate(ctx, cfg, mutants, checker.Limits{MaxStates: *maxStates, Liveness: *liveness}, *workers, progress)
	if ctx.Err() != nil {
		return bad("interrupted")
	}
	if *asJSON {
		type jm struct {
			Mutant    string `json:"mutant"`
			Operator  string `json:"operator"`
			Killed    bool   `json:"killed"`
			Undecided bool   `json:"undecided,omitempty"`
			Run       string `json:"run,omitempty"`
			Invariant string `json:"invariant,omitempty"`
			Steps     int    `json:"trace_steps,omitempty"`
			States    int    `json:"states"`
		}
		var out []jm
		killed := 0
		for _, r := range results {
			if r.Killed {
				killed++
			}
			out = append(out, jm{r.Mutant.Name, string(r.Mutant.Operator), r.Killed, r.Bounded, r.Run, r.Invariant, r.Steps, r.States})
		}
		data, _ := json.MarshalIndent(map[string]any{"killed": killed, "total": len(results), "mutants": out}, "", "  ")
		fmt.Fprintln(stdout, string(data))
	} else {
		fmt.Fprint(stdout, checker.MutationSummary(results))
	}
	return exitOK
}
