package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/props"
	"github.com/handoffcheck/handoffcheck/checker/repro"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/spec"
)

var checkCommand = &command{
	name:    "check",
	args:    "[flags]",
	summary: "explore every ordering of a configuration's moves (or seeded random walks) and check every invariant",
	detail: "Without --config it explores the embedded default configuration: both policies, every fault kind,\n" +
		"liveness included. See docs/cli.md for the exit codes, refused flag combinations and the memory bound.",
	exits: []exitDoc{
		{exitOK, "no violation (the report says whether the exploration was complete or cut by a bound)"},
		{exitViolation, "an invariant (or an always property of --props) is violated: the report names it and shows the shortest trace;\n" +
			"     or a sometimes property of --props is not reached"},
		{exitUsage, ""},
		{exitInterrupted, ""},
	},
	run: cmdCheck,
}

func init() { registerCommand(checkCommand) }

// machineMemory is the memory the default --max-memory is derived from
// (a variable so that help goldens do not depend on the machine).
var machineMemory = checker.MachineMemory

// defaultSchedule is --schedule's default, the schedule the walks' zero
// Limits.Schedule names (the CLI's tests hold the two equal). A walk's
// reproduction names its schedule only when it is another.
const defaultSchedule = "positions"

type checkFlags struct {
	config, specFile, policy, runs, maxMemory, progress, traceOut, sched              string
	spillDir, bitstate, checkpoint, resume, shard, out, fromTrace, reproDir           string
	propsFile, witnessDir                                                             string
	checkpointEvery                                                                   time.Duration
	asJSON, stats, speedup, exact, liveness, swarm, mermaid, timing, full, por, sleep bool
	fair                                                                              bool
	maxStates, maxDepth, workers, walks, steps                                        int
	seed                                                                              uint64
}

func cmdCheck(c *command, e *env, args []string) int {
	var f checkFlags
	fs := c.flags()
	mem := machineMemory()
	fs.StringVar(&f.config, "config", "", "configuration file (JSON); default: the embedded default configuration")
	fs.StringVar(&f.specFile, "spec", "", "run a spec variant (JSON, as written by 'handoffcheck spec') through the table interpreter instead of the generated machines")
	fs.StringVar(&f.policy, "policy", "all", "policies to check: source-first, destination-first or all")
	fs.StringVar(&f.runs, "run", "", "comma-separated run names to check, each once (default: every run of the selected policies)")
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON report instead of text (it always carries the measurements, unless --timing=false)")
	fs.BoolVar(&f.stats, "stats", false, "print measurements: rates, bytes per state, memory; with --walks: rows never fired, walk lengths, moves and faults by kind")
	fs.BoolVar(&f.timing, "timing", true, "show elapsed times, rates, memory and workers (--timing=false: byte-identical reports for the same inputs)")
	fs.BoolVar(&f.speedup, "speedup", false, "with --stats or --json: explore each run again on one worker and report the speed-up of all workers over one")
	fs.IntVar(&f.maxStates, "max-states", 0, "stop after the BFS level that reaches this many distinct states (0: no bound)")
	fs.IntVar(&f.maxDepth, "max-depth", 0, "do not explore deeper than this (0: no bound)")
	fs.StringVar(&f.maxMemory, "max-memory", "auto", fmt.Sprintf("stop before the process's resident memory passes this, e.g. 2GiB or 500MB; 0: no bound; auto: three quarters of this machine's memory (%s)", checker.FormatBytes(defaultMaxMemory(mem))))
	fs.StringVar(&f.spillDir, "spill-dir", "", "exhaustive mode: where large frontiers and trace links go as files while the run lasts (default: the system's temporary directory)")
	fs.StringVar(&f.bitstate, "bitstate", "", "exhaustive mode: keep a bit array of this size (e.g. 1GiB) instead of fingerprints: a few bits per state, far more states\n"+
		"in the same memory, some missed (the report estimates the coverage); no liveness")
	fs.StringVar(&f.checkpoint, "checkpoint", "", "exhaustive mode: write the search's state to this directory every --checkpoint-every, on Ctrl-C and at the end\n"+
		"(safety only: no liveness, no --exact)")
	fs.DurationVar(&f.checkpointEvery, "checkpoint-every", 10*time.Minute, "with --checkpoint: how often to write one")
	fs.StringVar(&f.resume, "resume", "", "exhaustive mode: continue each run from its checkpoint in this directory (a run without one starts afresh)")
	fs.IntVar(&f.workers, "workers", 0, "goroutines that expand states or run walks (0: all cores)")
	fs.BoolVar(&f.exact, "exact", false, "store full states instead of 64-bit fingerprints (no collisions, more memory)")
	fs.BoolVar(&f.liveness, "liveness", true, "check EventuallyDrained on the explored graph")
	fs.BoolVar(&f.fair, "fair", false, "also check EventuallyDrained's fair form: every weakly fair run drains, not only 'from every state a drained state can be\n"+
		"reached' (docs/props.md); symmetry reduction off")
	fs.BoolVar(&f.por, "por", true, "exhaustive mode: partial-order reduction: where one handoff's moves touch nothing shared, take only them:\n"+
		"the same verdicts (EventuallyDrained's too), quiescent states and traces from fewer states (--por=false: every ordering; --fair explores every ordering)")
	fs.BoolVar(&f.sleep, "sleep", false, "with the reduction: add sleep sets, which skip a move whose successor another order reaches. Slower on every\n"+
		"shipped configuration (docs/scale.md); not with --exact, --bitstate, --checkpoint or --resume; a search that must move to disk starts again without them")
	fs.IntVar(&f.walks, "walks", 0, "randomized mode: run this many seeded random walks per run instead of exhaustive search")
	fs.IntVar(&f.steps, "steps", 200, "randomized mode: most moves per walk")
	fs.Uint64Var(&f.seed, "seed", 1, "randomized mode: seed; walk i uses seed+i")
	fs.StringVar(&f.shard, "shard", "", "randomized mode: run shard K/M of the walks, walks [K*N/M, (K+1)*N/M) with their own seeds; 'handoffcheck merge'\n"+
		"makes one report of every shard's --json")
	fs.BoolVar(&f.swarm, "swarm", false, "randomized mode: give each walk a random subset of fault kinds")
	fs.StringVar(&f.sched, "schedule", defaultSchedule, "randomized mode: when walks commit faults: positions (each fault offered from its own step, drawn over\n"+
		"one and a half times a fault-free walk's length), uniform (faults drawn like any enabled move) or pct\n"+
		"(positions, and the handoffs moved by random priorities with change points)")
	fs.BoolVar(&f.mermaid, "mermaid", false, "also print each counterexample as a Mermaid sequenceDiagram")
	fs.BoolVar(&f.full, "full-states", false, "print every resource after each step of a counterexample, not only what changed")
	fs.StringVar(&f.progress, "progress", "auto", "exhaustive mode: progress on stderr every few seconds: auto (only on a terminal), always or never")
	fs.StringVar(&f.out, "out", "", "write the report to this file instead of standard output")
	fs.StringVar(&f.traceOut, "trace-out", "", "write the first counterexample as a trace file (JSON Lines) for 'handoffcheck replay'")
	fs.StringVar(&f.reproDir, "repro", "", "write a reproduction of the first counterexample into this directory: the trace minimized to the handoffs it needs,\n"+
		"a README telling it in words with the commands to run, and a Go test that fails while the tables allow it")
	fs.StringVar(&f.fromTrace, "from-trace", "", "start from where a trace file ends (before its violating step, when it records one): what else can happen\n"+
		"from an incident's state; the trace's configuration, spec and run are used, and counterexamples begin with its steps")
	fs.StringVar(&f.propsFile, "props", "", "also judge every state by the properties of this file (handoffcheck.props/v1, docs/props.md): always ones like\n"+
		"invariants, sometimes ones by their shortest witness; partial-order reduction off, symmetry off unless every property allows it")
	fs.StringVar(&f.witnessDir, "witness-dir", "", "with --props: write each sometimes property's shortest witness, and each violated leads_to property's fair run,\n"+
		"to this directory as a trace file for 'handoffcheck replay'")
	if code, ok := c.parse(e, fs, args, 0, 0); !ok {
		return code
	}
	if err := checkConflicts(&f, setFlags(fs)); err != nil {
		return c.bad(e, "%v", err)
	}
	var from *fromTrace
	if f.fromTrace != "" {
		var err error
		if from, err = readFromTrace(e, f.fromTrace); err != nil {
			return c.bad(e, "%v", err)
		}
	}
	maxMem, err := parseMaxMemory(f.maxMemory, mem)
	if err != nil {
		return c.bad(e, "--max-memory %q: %v", f.maxMemory, err)
	}
	if f.checkpoint != "" || f.resume != "" {
		// A checkpoint keeps no graph: liveness is off unless asked
		// for, and asking for it is refused (checkConflicts).
		f.liveness = false
	}
	var bitBytes int64
	if f.bitstate != "" {
		if bitBytes, err = parseBytes(f.bitstate); err != nil || bitBytes < 512 {
			return c.bad(e, "--bitstate %q: want a size of at least 512B, such as 256MiB or 4GiB", f.bitstate)
		}
		// A bit array keeps no graph: liveness is off unless asked for,
		// and asking for it is refused (checkConflicts).
		f.liveness = false
	}
	if f.maxStates < 0 || f.maxDepth < 0 || f.workers < 0 || f.walks < 0 || f.steps <= 0 {
		return c.bad(e, "--max-states, --max-depth, --workers and --walks must not be negative, --steps must be positive")
	}
	if f.progress != "auto" && f.progress != "always" && f.progress != "never" {
		return c.bad(e, "--progress %q: want auto, always or never", f.progress)
	}
	shard, shards := 0, 0
	if f.shard != "" {
		if _, err := fmt.Sscanf(f.shard, "%d/%d", &shard, &shards); err != nil || shards < 1 || shard < 0 || shard >= shards ||
			f.shard != fmt.Sprintf("%d/%d", shard, shards) {
			return c.bad(e, "--shard %q: want K/M with 0 <= K < M, such as 0/8", f.shard)
		}
	}
	// Every place the search writes to is tried before it starts: a
	// trace file or checkpoint that cannot be written would otherwise be
	// reported after the whole search, and a --resume that names no
	// directory would silently start afresh.
	if f.traceOut != "" {
		if err := writable(f.traceOut); err != nil {
			return c.bad(e, "--trace-out: %v", err)
		}
	}
	if f.reproDir != "" {
		if err := os.MkdirAll(f.reproDir, 0o755); err != nil {
			return c.bad(e, "--repro: %v", err)
		}
	}
	if f.resume != "" {
		if st, err := os.Stat(f.resume); err != nil || !st.IsDir() {
			return c.bad(e, "--resume %s: not a directory; want the --checkpoint directory of an earlier run", f.resume)
		}
	}
	if f.checkpoint != "" {
		if err := os.MkdirAll(f.checkpoint, 0o755); err != nil {
			return c.bad(e, "--checkpoint: %v", err)
		}
	}
	if f.out != "" {
		file, err := os.Create(f.out)
		if err != nil {
			return c.bad(e, "--out: %v", err)
		}
		defer file.Close()
		redirected := *e
		redirected.stdout = file
		e = &redirected
	}
	var (
		lc      loadedConfig
		proto   *system.Protocol
		variant *spec.Spec
		runs    []system.Run
	)
	if from != nil {
		lc, proto, variant, runs = from.config, from.proto, from.trace.Spec, from.runs
	} else {
		if lc, err = loadConfig(e.ctx, f.config, "default.json"); err != nil {
			return c.bad(e, "%v", err)
		}
		if proto, variant, err = loadProtocol(e.ctx, f.specFile); err != nil {
			return c.bad(e, "%v", err)
		}
		if runs, err = selectRuns(lc.cfg, f.runs, f.policy); err != nil {
			return c.bad(e, "%v", err)
		}
	}
	if from != nil && !f.asJSON {
		fmt.Fprintln(e.stdout, from.says)
	}
	if f.fair && !f.liveness {
		return c.bad(e, "--fair judges EventuallyDrained's fair form on the liveness graph, which --liveness=false, --bitstate, --checkpoint and --resume do not keep")
	}
	// leads_to is judged on the liveness graph of a complete search:
	// walks and searches that keep no graph refuse it at its line.
	driver, can := "check", props.CanLeadsTo
	if f.walks > 0 || !f.liveness {
		driver, can = "check without the liveness graph (--walks, --liveness=false, --bitstate, --checkpoint or --resume)", 0
	}
	set, err := loadProps(e.ctx, f.propsFile, driver, can)
	if err != nil {
		return c.bad(e, "%v", err)
	}
	if set != nil && (f.checkpoint != "" || f.resume != "") {
		// A resumed search would judge only the states after the
		// checkpoint: vacuity and sometimes verdicts need them all.
		return c.bad(e, "--props judges every state of one search, which --checkpoint and --resume split: give --props without them")
	}
	if set != nil && f.reproDir != "" {
		return c.bad(e, "--repro with --props: a reproduction's test judges the built-in invariants only; give --trace-out, and replay it with --props")
	}
	if set != nil && f.shard != "" {
		return c.bad(e, "--props with --shard: 'handoffcheck merge' does not combine the properties' verdicts of shards yet; run the walks in one process")
	}
	if f.witnessDir != "" {
		if set == nil || f.walks > 0 {
			return c.bad(e, "--witness-dir writes the witnesses of an exhaustive search's sometimes properties: give --props, and not --walks")
		}
		if err := os.MkdirAll(f.witnessDir, 0o755); err != nil {
			return c.bad(e, "--witness-dir: %v", err)
		}
	}
	opt := checker.TextOptions{Stats: f.stats, NoTiming: !f.timing, FullStates: f.full, Mermaid: f.mermaid}
	// saveTrace writes the first counterexample for replay.
	saveTrace := func(ch *checker.Checker, ce *checker.Counterexample) {
		if f.traceOut == "" || ce == nil {
			return
		}
		out, err := os.Create(f.traceOut)
		if err == nil {
			err = checker.WriteTrace(out, lc.json, variant, ch.Run().Name, ch.Attempts(), ce)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "handoffcheck check: --trace-out: %v\n", err)
			return
		}
		fmt.Fprintf(e.stderr, "counterexample written to %s (handoffcheck replay %s)\n", f.traceOut, f.traceOut)
		f.traceOut = ""
	}
	// saveRepro writes the first counterexample's reproduction.
	saveRepro := func(ch *checker.Checker, ce *checker.Counterexample, command string) {
		if f.reproDir == "" || ce == nil {
			return
		}
		in := repro.Input{Protocol: proto, Spec: variant, ConfigJSON: lc.json, Run: ch.Run(), Found: ce, Command: command}
		if f.specFile != "" {
			in.SpecFile, _ = filepath.Abs(f.specFile)
		}
		res, err := repro.Write(f.reproDir, in)
		if err != nil {
			fmt.Fprintf(e.stderr, "handoffcheck check: --repro: %v\n", err)
			return
		}
		fmt.Fprintf(e.stderr, "reproduction of %s written to %s: %d steps over %d of %d handoffs (%s)\n",
			res.Invariant, res.Dir, res.Steps, res.Handoffs, res.HandoffsBefore, strings.Join(res.Files(), ", "))
		f.reproDir = ""
	}
	if f.walks > 0 {
		cfg, pr := lc.cfg, (*propsRun)(nil)
		if set != nil {
			cfg, pr = withProps(set, lc.cfg, nil)
		}
		rep, err := checker.Check(e.ctx, proto, cfg, runs, checker.Limits{Walks: f.walks, Steps: f.steps, Seed: f.seed, Swarm: f.swarm,
			Schedule: f.sched, Workers: f.workers, Shard: shard, Shards: shards, From: from.moves()})
		if err != nil {
			return c.bad(e, "%v", err)
		}
		for i, x := range rep.Runs {
			if x.Violation != nil {
				rep.Reproduce[i] = reproduceWalk(&f, x.Run, x.Seed)
			}
		}
		var prep *propsReport
		if pr != nil {
			prep = pr.judgeWalks(rep)
		}
		if code := printReportProps(e, rep, opt, f.asJSON, prep); code != exitOK {
			return code
		}
		violated := false
		for i, x := range rep.Runs {
			saveTrace(rep.Checker(i), x.Violation)
			saveRepro(rep.Checker(i), x.Violation, rep.Reproduce[i])
			violated = violated || x.Violation != nil
		}
		return verdictCode(violated, rep.Interrupted)
	}
	var progress io.Writer
	if f.progress == "always" || (f.progress == "auto" && isTerminal(os.Stderr)) {
		progress = e.stderr
	}
	lim := checker.Limits{MaxStates: f.maxStates, MaxDepth: f.maxDepth, MaxMemory: maxMem, Workers: f.workers, Exact: f.exact, Liveness: f.liveness, Reduce: f.por && !f.fair, Sleep: f.sleep,
		SpillDir: f.spillDir, Bitstate: bitBytes, Checkpoint: f.checkpoint, CheckpointEvery: f.checkpointEvery, Resume: f.resume,
		From: from.moves(), FairDrained: f.fair, Speedup: f.speedup, Progress: progress}
	cfg, pr := lc.cfg, (*propsRun)(nil)
	if set != nil {
		cfg, pr = withProps(set, lc.cfg, &lim)
	}
	if f.fair && cfg.Symmetry {
		// Fairness tells the handoffs' and workers' moves apart, which
		// renaming them would merge.
		plain := *cfg
		plain.Symmetry = false
		cfg = &plain
	}
	rep, err := checker.Check(e.ctx, proto, cfg, runs, lim)
	if err != nil {
		return c.bad(e, "%v", err)
	}
	var prep *propsReport
	if pr != nil {
		for _, p := range set.Props {
			if p.Kind == props.Always {
				rep.Invariants = append(rep.Invariants, p.Name)
			}
		}
		ws := &witnessSearch{ctx: e.ctx, proto: proto, cfg: cfg, lim: lim, configJSON: lc.json, variant: variant, dir: f.witnessDir, full: f.full}
		if prep, err = pr.judgeExhaustive(rep, ws); err != nil {
			return c.bad(e, "%v", err)
		}
	}
	if code := printReportProps(e, rep, opt, f.asJSON, prep); code != exitOK {
		return code
	}
	if !f.asJSON {
		// Exhaustive search is deterministic: the same command finds the
		// same shortest trace; a trace file replays it without searching.
		for _, x := range rep.Runs {
			if x.Violation != nil {
				fmt.Fprintf(e.stdout, "reproduce: %s\n", reproduceExhaustive(&f, x.Run))
			}
		}
	}
	violated := false
	for i, x := range rep.Runs {
		saveTrace(rep.Checker(i), x.Violation)
		saveRepro(rep.Checker(i), x.Violation, strings.TrimSuffix(strings.SplitN(reproduceExhaustive(&f, x.Run), ";", 2)[0], " --trace-out "+x.Run.Name+".jsonl"))
		violated = violated || x.Violation != nil
	}
	return verdictCode(violated || prep.notReached() || prep.leadsToViolated(), rep.Interrupted)
}

// printReportProps prints a report (exhaustive or of walks) followed by
// the properties' verdicts (nil: no --props), in text or as one JSON
// object with a "properties" field.
func printReportProps(e *env, rep *checker.Report, opt checker.TextOptions, asJSON bool, prep *propsReport) int {
	out, err := rep.Render(opt, asJSON)
	if err == nil && !asJSON {
		fmt.Fprint(e.stdout, string(out))
		if prep != nil {
			fmt.Fprint(e.stdout, prep.text())
		}
		return exitOK
	}
	if err == nil && prep != nil {
		out, err = appendJSONField(out, "properties", prep)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "handoffcheck: %v\n", err)
		return exitUsage
	}
	fmt.Fprintln(e.stdout, string(out))
	return exitOK
}

// verdictCode is the exit code of a verdict: a violation found counts
// even when the check was then interrupted.
func verdictCode(violated, interrupted bool) int {
	switch {
	case violated:
		return exitViolation
	case interrupted:
		return exitInterrupted
	}
	return exitOK
}

// checkConflicts refuses flags that would be ignored or contradict each
// other: every flag given is honoured or refused, never dropped.
func checkConflicts(f *checkFlags, set map[string]bool) error {
	exhaustiveOnly := []string{"max-states", "max-depth", "max-memory", "exact", "liveness", "speedup", "progress", "spill-dir", "bitstate",
		"checkpoint", "checkpoint-every", "resume", "por", "sleep", "fair"}
	walkOnly := []string{"steps", "seed", "swarm", "schedule", "shard"}
	if f.fromTrace != "" {
		for _, n := range []string{"config", "spec", "run", "policy", "checkpoint", "resume"} {
			if set[n] {
				return fmt.Errorf("--%s with --from-trace: the trace carries its configuration, spec and run, and a search started after it is not checkpointed", n)
			}
		}
	}
	if f.walks > 0 {
		for _, n := range exhaustiveOnly {
			if set[n] {
				return fmt.Errorf("--%s applies to exhaustive search, not to --walks", n)
			}
		}
	} else {
		for _, n := range walkOnly {
			if set[n] {
				return fmt.Errorf("--%s applies to random walks: give --walks N", n)
			}
		}
	}
	// An explicit --liveness asks for the graph these searches do not
	// keep; --liveness=false only says what they do anyway.
	if f.bitstate != "" && (f.exact || f.liveness && set["liveness"]) {
		return fmt.Errorf("--bitstate keeps bits, not states: it takes neither --exact nor --liveness (EventuallyDrained needs the graph of a fingerprint search)")
	}
	if (f.checkpoint != "" || f.resume != "") && (f.exact || f.liveness && set["liveness"]) {
		return fmt.Errorf("--checkpoint and --resume keep fingerprints or bits and no liveness graph: they take neither --exact nor --liveness")
	}
	if set["por"] && f.por && f.fair {
		return fmt.Errorf("--por keeps EventuallyDrained's verdict, not the weakly fair runs --fair judges: give --por=false with --fair, or leave --por out")
	}
	if f.sleep && (!f.por || f.liveness) {
		return fmt.Errorf("--sleep adds sleep sets to the reduction: give --liveness=false, and not --por=false")
	}
	if f.sleep && (f.exact || f.bitstate != "" || f.checkpoint != "" || f.resume != "") {
		return fmt.Errorf("--sleep keeps a sleep set beside each fingerprint in memory: it takes neither --exact, --bitstate, --checkpoint nor --resume")
	}
	if set["checkpoint-every"] && (f.checkpoint == "" || f.checkpointEvery <= 0) {
		return fmt.Errorf("--checkpoint-every needs --checkpoint and a positive duration such as 10m")
	}
	if f.speedup && !f.stats && !f.asJSON {
		return fmt.Errorf("--speedup is reported with --stats or --json: give one of them")
	}
	if f.stats && !f.timing && f.walks == 0 {
		// Walk statistics are counts, the same on every run: only
		// exhaustive search's are measured.
		return fmt.Errorf("--stats prints measured figures, which --timing=false leaves out: give one of them")
	}
	if f.speedup && !f.timing {
		return fmt.Errorf("--speedup is a measured figure, which --timing=false leaves out: give one of them")
	}
	return nil
}

// defaultMaxMemory is the bound on resident memory an exploration gets
// when none is asked for (--max-memory auto), on a machine with this much
// memory (checker.MachineMemory): three quarters of it, leaving room for
// the rest of the machine (0, no bound, when the memory is unknown).
func defaultMaxMemory(machine uint64) int64 {
	return int64(machine / 4 * 3)
}

// parseMaxMemory reads --max-memory: auto (three quarters of the
// machine's memory), 0 (no bound) or a size.
func parseMaxMemory(s string, machine uint64) (int64, error) {
	switch s {
	case "auto":
		return defaultMaxMemory(machine), nil
	case "0":
		return 0, nil
	}
	return parseBytes(s)
}

// parseBytes reads a size such as 512MiB, 2GiB, 500MB or 1000000 (bytes).
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}
	num, mult := s, int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a positive size such as 512MiB, 2GiB or 500MB, 0 for no bound, or auto")
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("too large: at most %d bytes", int64(math.MaxInt64))
	}
	return n * mult, nil
}

// reproduceExhaustive is the one-line command that finds a run's
// counterexample again and writes it for replay.
func reproduceExhaustive(f *checkFlags, run system.Run) string {
	parts := []string{"handoffcheck check"}
	if f.fromTrace != "" {
		parts = append(parts, "--from-trace "+f.fromTrace)
	}
	if f.config != "" {
		parts = append(parts, "--config "+f.config)
	}
	if f.specFile != "" {
		parts = append(parts, "--spec "+f.specFile)
	}
	if f.propsFile != "" {
		parts = append(parts, "--props "+f.propsFile)
	}
	if f.fair {
		parts = append(parts, "--fair")
	}
	if f.fromTrace == "" {
		parts = append(parts, "--run "+run.Name)
	}
	parts = append(parts, "--trace-out "+run.Name+".jsonl")
	// check exits 1 on the violation, so the replay follows with ";".
	replay := "handoffcheck replay "
	if f.propsFile != "" {
		replay += "--props " + f.propsFile + " "
	}
	return strings.Join(parts, " ") + "; " + replay + run.Name + ".jsonl"
}

// reproduceWalk is the one-line command that runs the failing walk alone.
func reproduceWalk(f *checkFlags, run system.Run, seed uint64) string {
	parts := []string{"handoffcheck check"}
	if f.fromTrace != "" {
		parts = append(parts, "--from-trace "+f.fromTrace)
	}
	if f.config != "" {
		parts = append(parts, "--config "+f.config)
	}
	if f.specFile != "" {
		parts = append(parts, "--spec "+f.specFile)
	}
	if f.propsFile != "" {
		parts = append(parts, "--props "+f.propsFile)
	}
	if f.fromTrace == "" {
		parts = append(parts, "--run "+run.Name)
	}
	parts = append(parts, "--walks 1", fmt.Sprintf("--steps %d", f.steps), fmt.Sprintf("--seed %d", seed))
	if f.swarm {
		parts = append(parts, "--swarm")
	}
	if f.sched != defaultSchedule {
		parts = append(parts, "--schedule "+f.sched)
	}
	return strings.Join(parts, " ")
}

// writable says why a file could not be written at path, without
// changing it: its folder must exist and take a new file, and the path
// must not be a directory.
func writable(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory; want a file name", path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cannot write %s: folder %s does not exist", path, dir)
	}
	if !st.IsDir() {
		return fmt.Errorf("cannot write %s: %s is not a folder", path, dir)
	}
	probe, err := os.CreateTemp(dir, ".handoffcheck-probe-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %v", path, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
