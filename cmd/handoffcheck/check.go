package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/machines/interp"
	"github.com/handoffcheck/handoffcheck/spec"
)

func init() {
	register("check", "explore every ordering (or random walks) of a configuration and check every invariant", cmdCheck)
}

type checkFlags struct {
	config, specFile, policy, runs, maxMemory, progress, traceOut         string
	asJSON, stats, speedup, exact, liveness, swarm, mermaid, timing, full bool
	maxStates, maxDepth, workers, walks, steps                            int
	seed                                                                  uint64
}

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	var f checkFlags
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.StringVar(&f.config, "config", "", "configuration file (JSON); default: the embedded default configuration")
	fs.StringVar(&f.specFile, "spec", "", "run a spec variant (JSON, as written by 'handoffcheck spec') through the table interpreter instead of the generated machines")
	fs.StringVar(&f.policy, "policy", "all", "policies to check: source-first, destination-first or all")
	fs.StringVar(&f.runs, "run", "", "comma-separated run names to check (default: every run of the policies)")
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON report instead of text")
	fs.BoolVar(&f.stats, "stats", false, "print measurements: rates, bytes per state, memory")
	fs.BoolVar(&f.timing, "timing", true, "show elapsed times, rates and memory (--timing=false: byte-identical reports for the same inputs)")
	fs.BoolVar(&f.speedup, "speedup", false, "with --stats: explore each run again on one worker and print the speed-up of all workers over one")
	fs.IntVar(&f.maxStates, "max-states", 0, "stop after the BFS level that reaches this many distinct states (0: no bound)")
	fs.IntVar(&f.maxDepth, "max-depth", 0, "do not explore deeper than this (0: no bound)")
	fs.StringVar(&f.maxMemory, "max-memory", "", "stop after the level whose memory estimate passes this, e.g. 2GiB (default: no bound)")
	fs.IntVar(&f.workers, "workers", 0, "goroutines that expand states (0: all cores)")
	fs.BoolVar(&f.exact, "exact", false, "store full states instead of 64-bit fingerprints (no collisions, more memory)")
	fs.BoolVar(&f.liveness, "liveness", true, "check EventuallyDrained on the explored graph")
	fs.IntVar(&f.walks, "walks", 0, "randomized mode: run this many seeded random walks instead of exhaustive search")
	fs.IntVar(&f.steps, "steps", 200, "randomized mode: most moves per walk")
	fs.Uint64Var(&f.seed, "seed", 1, "randomized mode: seed; walk i uses seed+i")
	fs.BoolVar(&f.swarm, "swarm", false, "randomized mode: give each walk a random subset of fault kinds")
	fs.BoolVar(&f.mermaid, "mermaid", false, "also print each counterexample as a Mermaid sequenceDiagram")
	fs.BoolVar(&f.full, "full-states", false, "print every resource after each step of a counterexample, not only what changed")
	fs.StringVar(&f.progress, "progress", "auto", "progress on stderr every few seconds: auto (only on a terminal), always or never")
	fs.StringVar(&f.traceOut, "trace-out", "", "write the first counterexample as a trace file (JSON Lines) for 'handoffcheck replay'")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "handoffcheck check: "+format+"\n", a...)
		return exitUsage
	}
	cfg := checker.DefaultConfig()
	configJSON := checker.DefaultConfigJSON()
	if f.config != "" {
		data, err := os.ReadFile(f.config)
		if err != nil {
			return bad("%v", err)
		}
		if cfg, err = checker.ParseConfig(f.config, data); err != nil {
			return bad("%v", err)
		}
		configJSON = data
	}
	proto := checker.Generated()
	var variant *spec.Spec
	if f.specFile != "" {
		data, err := os.ReadFile(f.specFile)
		if err != nil {
			return bad("%v", err)
		}
		s, err := spec.Parse(f.specFile, data)
		if err != nil {
			return bad("%v", err)
		}
		it, err := interp.New(s)
		if err != nil {
			return bad("%s: %v", f.specFile, err)
		}
		variant = s
		if proto, err = checker.FromStepper(f.specFile, s, it); err != nil {
			return bad("%s: %v", f.specFile, err)
		}
	}
	var policies []spec.Policy
	if f.policy != "all" {
		p, err := spec.ParsePolicy(f.policy)
		if err != nil {
			return bad("--policy %q: want source-first, destination-first or all", f.policy)
		}
		policies = []spec.Policy{p}
	}
	if f.runs != "" {
		var kept []checker.Run
		for _, name := range strings.Split(f.runs, ",") {
			i := slices.IndexFunc(cfg.Runs, func(r checker.Run) bool { return r.Name == name })
			if i < 0 {
				var names []string
				for _, r := range cfg.Runs {
					names = append(names, r.Name)
				}
				return bad("--run %q: the configuration has runs %s", name, strings.Join(names, ", "))
			}
			kept = append(kept, cfg.Runs[i])
		}
		cfg.Runs = kept
	}
	mem, err := parseBytes(f.maxMemory)
	if err != nil {
		return bad("--max-memory %q: %v", f.maxMemory, err)
	}
	if f.maxStates < 0 || f.maxDepth < 0 || f.workers < 0 || f.walks < 0 || f.steps <= 0 {
		return bad("--max-states, --max-depth, --workers and --walks must not be negative, --steps must be positive")
	}
	if f.progress != "auto" && f.progress != "always" && f.progress != "never" {
		return bad("--progress %q: want auto, always or never", f.progress)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// saveTrace writes the first counterexample for replay.
	saveTrace := func(run checker.Run, attempts []string, ce *checker.Counterexample) {
		if f.traceOut == "" || ce == nil {
			return
		}
		out, err := os.Create(f.traceOut)
		if err == nil {
			err = checker.WriteTrace(out, configJSON, variant, run.Name, attempts, ce)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "handoffcheck check: --trace-out: %v\n", err)
			return
		}
		fmt.Fprintf(stderr, "counterexample written to %s (handoffcheck replay %s)\n", f.traceOut, f.traceOut)
		f.traceOut = ""
	}
	if f.walks > 0 {
		return walkMode(ctx, &f, cfg, proto, policies, stdout, stderr, saveTrace)
	}
	var progress func(checker.Progress)
	if f.progress == "always" || (f.progress == "auto" && isTerminal(os.Stderr)) {
		progress = func(p checker.Progress) {
			fmt.Fprintf(stderr, "%s: %d states, %d distinct, depth %d, queue %d, %.0f states/s\n",
				p.Run, p.Transitions, p.States, p.Depth, p.Queue, float64(p.States)/p.Elapsed.Seconds())
		}
	}
	lim := checker.Limits{MaxStates: f.maxStates, MaxDepth: f.maxDepth, MaxMemory: mem, Workers: f.workers, Exact: f.exact, Liveness: f.liveness}
	rep, err := checker.Check(ctx, proto, cfg, policies, lim, progress)
	if err != nil {
		return bad("%v", err)
	}
	if f.speedup && ctx.Err() == nil {
		// The speed-up of all cores over one, measured in the same process
		// right after: the same runs again on one worker.
		one := lim
		one.Workers = 1
		base, err := checker.Check(ctx, proto, cfg, policies, one, nil)
		if err == nil {
			rep.SetBaseline(base)
		}
	}
	if f.asJSON {
		out, err := rep.JSON()
		if err != nil {
			return bad("%v", err)
		}
		fmt.Fprintln(stdout, string(out))
	} else {
		fmt.Fprint(stdout, rep.Text(checker.TextOptions{Stats: f.stats, NoTiming: !f.timing, FullStates: f.full}))
		if f.mermaid {
			fmt.Fprint(stdout, rep.Mermaid())
		}
		// Exhaustive search is deterministic: the same command finds the
		// same shortest trace; a trace file replays it without searching.
		for _, x := range rep.Runs {
			if x.Violation != nil {
				fmt.Fprintf(stdout, "reproduce: %s\n", reproduceExhaustive(&f, x.Run))
			}
		}
	}
	for i, x := range rep.Runs {
		if x.Violation != nil {
			saveTrace(x.Run, rep.Checker(i).Attempts(), x.Violation)
		}
	}
	if rep.Violated() {
		return exitViolation
	}
	return exitOK
}

// walkMode runs seeded random walks on each selected run.
func walkMode(ctx context.Context, f *checkFlags, cfg *checker.Config, proto *checker.Protocol, policies []spec.Policy, stdout, stderr io.Writer,
	saveTrace func(checker.Run, []string, *checker.Counterexample)) int {
	violated := false
	type jsonWalk struct {
		Run       string   `json:"run"`
		Walks     int      `json:"walks"`
		Moves     int64    `json:"moves"`
		Distinct  int      `json:"distinct_states"`
		ElapsedMS float64  `json:"elapsed_ms"`
		Failing   int      `json:"failing_walk"`
		Seed      uint64   `json:"seed,omitempty"`
		Faults    []string `json:"faults,omitempty"`
		Invariant string   `json:"invariant,omitempty"`
		Detail    string   `json:"detail,omitempty"`
		Trace     []string `json:"trace,omitempty"`
		Reproduce string   `json:"reproduce,omitempty"`
	}
	var out []jsonWalk
	for _, run := range cfg.Runs {
		if len(policies) > 0 && !slices.Contains(policies, run.Policy) {
			continue
		}
		c, err := checker.New(proto, cfg, run)
		if err != nil {
			fmt.Fprintf(stderr, "handoffcheck check: %v\n", err)
			return exitUsage
		}
		r := c.Walk(ctx, checker.WalkOptions{Seed: f.seed, Walks: f.walks, Steps: f.steps, Swarm: f.swarm, Workers: f.workers})
		jw := jsonWalk{Run: run.Name, Walks: r.Walks, Moves: r.Moves, Distinct: r.Distinct,
			ElapsedMS: float64(r.Elapsed.Microseconds()) / 1e3, Failing: r.Failing}
		mode := "random walks"
		if f.swarm {
			mode = "swarm walks"
		}
		verdict := "no violation"
		if r.Violation != nil {
			violated = true
			verdict = "VIOLATION " + r.Violation.Violation.Invariant
			jw.Seed, jw.Faults = r.Seed, r.Faults
			jw.Invariant, jw.Detail = r.Violation.Violation.Invariant, r.Violation.Violation.Detail
			for _, st := range r.Violation.Steps {
				jw.Trace = append(jw.Trace, st.Move.String())
			}
			jw.Reproduce = reproduce(f, run, r.Seed)
			saveTrace(run, c.Attempts(), r.Violation)
		}
		out = append(out, jw)
		if f.asJSON {
			continue
		}
		fmt.Fprintf(stdout, "run %s (%s, engine %s): %d %s of up to %d moves (seed %d): %s\n",
			run.Name, run.Policy, run.Engine, r.Walks, mode, f.steps, f.seed, verdict)
		if f.timing {
			fmt.Fprintf(stdout, "  %d moves, %d distinct states visited, elapsed %s\n", r.Moves, r.Distinct, r.Elapsed.Round(1e6))
		} else {
			fmt.Fprintf(stdout, "  %d moves, %d distinct states visited\n", r.Moves, r.Distinct)
		}
		if r.Violation != nil {
			fmt.Fprintf(stdout, "  walk %d failed after %d moves (faults: %s); shrunk to %d steps\n",
				r.Failing, r.Original, strings.Join(r.Faults, ", "), len(r.Violation.Steps))
			fmt.Fprintf(stdout, "  reproduce: %s\n", jw.Reproduce)
			fmt.Fprint(stdout, indentText(c.FormatCounterexampleFull(r.Violation, f.full), "  "))
			if f.mermaid {
				fmt.Fprintf(stdout, "```mermaid\n%s```\n", c.MermaidSequence(r.Violation))
			}
		}
	}
	if f.asJSON {
		data, _ := json.MarshalIndent(map[string]any{"mode": "walks", "runs": out}, "", "  ")
		fmt.Fprintln(stdout, string(data))
	}
	if violated {
		return exitViolation
	}
	return exitOK
}

// reproduceExhaustive is the one-line command that finds a run's
// counterexample again and writes it for replay.
func reproduceExhaustive(f *checkFlags, run checker.Run) string {
	parts := []string{"handoffcheck check"}
	if f.config != "" {
		parts = append(parts, "--config "+f.config)
	}
	if f.specFile != "" {
		parts = append(parts, "--spec "+f.specFile)
	}
	parts = append(parts, "--run "+run.Name, "--trace-out "+run.Name+".jsonl")
	// check exits 1 on the violation, so the replay follows with ";".
	return strings.Join(parts, " ") + "; handoffcheck replay " + run.Name + ".jsonl"
}

// reproduce is the one-line command that runs the failing walk alone.
func reproduce(f *checkFlags, run checker.Run, seed uint64) string {
	parts := []string{"handoffcheck check"}
	if f.config != "" {
		parts = append(parts, "--config "+f.config)
	}
	if f.specFile != "" {
		parts = append(parts, "--spec "+f.specFile)
	}
	parts = append(parts, "--run "+run.Name, "--walks 1", fmt.Sprintf("--steps %d", f.steps), fmt.Sprintf("--seed %d", seed))
	if f.swarm {
		parts = append(parts, "--swarm")
	}
	return strings.Join(parts, " ")
}

func indentText(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// parseBytes reads a size such as 512MiB, 2GiB or 1000000.
func parseBytes(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	var n int64
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n <= 0 || fmt.Sprint(n) != s {
		return 0, fmt.Errorf("want a positive size such as 512MiB or 2GiB")
	}
	return n * mult, nil
}
