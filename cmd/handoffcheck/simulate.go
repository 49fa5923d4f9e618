package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/props"
	"github.com/handoffcheck/handoffcheck/checker/sim"
	"github.com/handoffcheck/handoffcheck/checker/sim/faultplan"
	"github.com/handoffcheck/handoffcheck/checker/sim/plot"
	"github.com/handoffcheck/handoffcheck/checker/sim/workload"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

var simulateCommand = &command{
	name:    "simulate",
	args:    "[--config FILE] [--workload FILE] [--faults FILE | --faults-seed N] [--spec FILE] [flags]",
	summary: "run the verified machines on a virtual clock over a workload and judge every step and the timed properties",
	detail: "Without --config and --workload it runs the embedded default configuration and workload.\n" +
		"Every step is a move of the composed system, judged by every invariant; BoundedReclaim is\n" +
		"judged on the clock and stranded block-seconds are measured. --out DIR writes timeline.json,\n" +
		"plots (SVG and PNG) and report.html; --compare runs the workload under both policies\n" +
		"(source-first on vLLM, destination-first on SGLang) and plots them side by side;\n" +
		"--policy disabled --compare runs the legacy disaggregated path beside both.\n" +
		"--policy disabled is the legacy disaggregated path (prefill frees its KV at completion,\n" +
		"decode allocates at admission); --policy aggregated serves each request on one worker.",
	exits: []exitDoc{
		{exitOK, "the run ended with every invariant holding"},
		{exitViolation, "an invariant or a timed property broke: the report names it and shows the request's history"},
		{exitUsage, "bad usage or bad input (configuration, workload or fault plan: file:line and what was expected)"},
		{exitInterrupted, ""},
	},
	run: cmdSimulate,
}

var timelineCommand = &command{
	name:    "timeline",
	args:    "--scenario NAME --out DIR [--compare] [--policy P] [--spec FILE]",
	summary: "simulate a named scenario and write its timeline, plots and report",
	exits: []exitDoc{
		{exitOK, "the scenario ran with every invariant holding and its files were written"},
		{exitViolation, "an invariant or a timed property broke"},
		{exitUsage, ""},
		{exitInterrupted, ""},
	},
	run: cmdTimeline,
}

func init() {
	registerCommand(simulateCommand)
	registerCommand(timelineCommand)
}

// simInputs is one run's inputs: configuration, a way to open the
// workload afresh (--compare reads it twice), and the faults.
type simInputs struct {
	cfg      *cluster.Config
	open     func() (cluster.Source, error)
	faults   []cluster.Fault
	faultFre bool
	proto    *system.Protocol
	// untilUS ends the run with handoffs unresolved (sim.Options.UntilUS).
	untilUS int64
	// keepGoing runs past violations (sim.Options.KeepGoing).
	keepGoing bool
	// log is where the run's observation log goes ("": with --out, into
	// DIR/log.jsonl; else nowhere); records the kinds it keeps.
	log     string
	records obslog.KindSet
	// props are judged on the run's clock as well as at every step.
	props *props.Set
}

func cmdSimulate(c *command, e *env, args []string) int {
	fs := c.flags()
	configFile := fs.String("config", "", "simulation configuration (JSON, schema handoffcheck.sim/v1; default: the embedded one)")
	workloadFile := fs.String("workload", "", "workload (JSON Lines, handoffcheck.workload/v1; default: the embedded one)")
	faultsFile := fs.String("faults", "", "fault plan (JSON Lines, handoffcheck.faults/v1)")
	faultsSeed := fs.Uint64("faults-seed", 0, "draw a fault plan with this seed (0: none); exclusive with --faults")
	faultsCount := fs.Int("faults-count", 20, "with --faults-seed: how many faults to draw")
	faultsKinds := fs.String("faults-kinds", strings.Join(faultplan.Kinds(), ","), "with --faults-seed: the kinds to draw from")
	policy := fs.String("policy", "", "override the configuration's policy: source-first, destination-first, disabled (the legacy disaggregated path) or aggregated (no disaggregation)")
	engine := fs.String("engine", "", "override the configuration's engine: "+strings.Join(model.EngineNames(), ", "))
	seed := fs.Uint64("seed", 0, "override the configuration's seed (latency jitter, random routers)")
	out := fs.String("out", "", "write timeline.json, plots and report.html into this directory")
	compare := fs.Bool("compare", false, "run under both policies and plot them side by side (needs --out); with --policy disabled, the legacy path beside both")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	specFile := fs.String("spec", "", "run a spec file's tables (a variant) instead of the generated machines")
	logFile := fs.String("log", "", "write the run's observation log (handoffcheck.log/v1) to this file (with --out: DIR/log.jsonl by default)")
	logRecords := fs.String("log-records", "all", "the kinds the log keeps: all, milestones, or a comma-separated list of kinds")
	propsFile := fs.String("props", "", "also judge every simulated step by the properties of this file (docs/props.md), over the view of the\n"+
		"request's window: one handoff and the workers it touches; leads_to within on the virtual clock, sometimes reached or not in this run")
	untilMS := fs.Float64("until-ms", 0, "end the run at this virtual time with handoffs unresolved: no later arrival or planned fault, every request in flight cut by a cancel and checked to release what it holds once (0: run the workload out)")
	keepGoing := fs.Bool("keep-going", false, "run past violations to the end of the workload, for a bug's cost at scale: a request that breaks an invariant\n"+
		"takes no further step and keeps what it holds, as a leak would; the summary counts the violations (the first is shown, and sets the exit code)")
	if code, ok := c.parse(e, fs, args, 0, 0); !ok {
		return code
	}
	set := setFlags(fs)
	if set["until-ms"] && !(*untilMS > 0 && *untilMS < 1e12) {
		return c.bad(e, "--until-ms %v: want a time after 0 in milliseconds", *untilMS)
	}
	records, err := obslog.ParseRecords(strings.Split(*logRecords, ","))
	if err != nil {
		return c.bad(e, "--log-records: %v", err)
	}
	if *compare && *logFile != "" {
		return c.bad(e, "--compare writes a log per policy into DIR/POLICY/log.jsonl; --log would be ambiguous")
	}
	if set["faults"] && set["faults-seed"] {
		return c.bad(e, "--faults and --faults-seed are exclusive")
	}
	if (set["faults-count"] || set["faults-kinds"]) && !set["faults-seed"] {
		return c.bad(e, "--faults-count and --faults-kinds need --faults-seed")
	}
	if *compare && *out == "" {
		return c.bad(e, "--compare needs --out DIR (it writes side-by-side plots)")
	}
	if *compare && set["policy"] && *policy != cluster.Disabled {
		return c.bad(e, "--compare runs both policies, and with --policy disabled the legacy path beside them; --policy %s would be ignored", *policy)
	}
	cfg, err := loadSimConfig(e.ctx, *configFile)
	if err != nil {
		return c.bad(e, "%v", err)
	}
	if err := overrideSim(cfg, *policy, *engine, set["seed"], *seed); err != nil {
		return c.bad(e, "%v", err)
	}
	if cfg.Aggregated && *logFile != "" {
		// The observation log records what the disaggregated workers
		// and routers observe; aggregated serving has neither. Its
		// per-request record is timeline.json.
		return c.bad(e, "--log: the %s policy runs no disaggregated handoff, so there is no observation log to write (--out writes each request's timeline); want source-first, destination-first or %s", cfg.PolicyName(), cluster.Disabled)
	}
	if *compare && cfg.Aggregated {
		return c.bad(e, "--compare: the configuration's policy is aggregated, which runs no handoff to compare; want --policy disabled or a disaggregated configuration")
	}
	if *keepGoing && (cfg.Policy == cluster.Disabled || cfg.Aggregated) {
		return c.bad(e, "--keep-going: the %s policy runs no handoff lifecycle whose violations a run could go past; want source-first or destination-first", cfg.PolicyName())
	}
	if set["until-ms"] && cfg.Policy == cluster.Disabled {
		return c.bad(e, "--until-ms: the %s policy runs no handoff lifecycle to tear down; want source-first or destination-first", cfg.PolicyName())
	}
	var pset *props.Set
	if *propsFile != "" {
		if pset, err = loadProps(e.ctx, *propsFile, "simulate", props.CanWithin|props.Timed); err != nil {
			return c.bad(e, "%v", err)
		}
		if cfg.Policy == cluster.Disabled || cfg.Aggregated {
			return c.bad(e, "--props: the %s policy runs no handoff lifecycle, so there is no state to judge; want source-first or destination-first", cfg.PolicyName())
		}
		if *keepGoing {
			return c.bad(e, "--keep-going with --props: a run's verdicts on the properties are of the run up to its first violation; want one or the other")
		}
		cfg.Judge = pset
	}
	in := simInputs{cfg: cfg, log: *logFile, records: records, untilUS: int64(math.Round(*untilMS * 1000)), props: pset, keepGoing: *keepGoing}
	if *specFile != "" {
		p, _, err := loadProtocol(e.ctx, *specFile)
		if err != nil {
			return c.bad(e, "%v", err)
		}
		in.proto = p
	}
	// The run reads the workload as it goes and stops on a signal itself
	// (sim.Run, with the figures so far); the reading up front stops at once.
	in.open = func() (cluster.Source, error) { return openWorkload(context.Background(), *workloadFile) }
	// Read the workload once up front so that a bad file is refused
	// before anything runs, and count its requests for a drawn plan.
	n, lastUS, err := countWorkload(func() (cluster.Source, error) { return openWorkload(e.ctx, *workloadFile) })
	if err != nil {
		return c.bad(e, "%v", err)
	}
	if n == 0 {
		// A run of no request judges nothing: it is no pass.
		return c.bad(e, "%s", noRequests(*workloadFile))
	}
	switch {
	case set["faults"]:
		in.faults, err = loadFaults(e.ctx, *faultsFile)
		if err == nil {
			err = checkFaultRequests(in.faults, n)
		}
	case set["faults-seed"]:
		in.faults, err = drawFaults(*faultsSeed, *faultsCount, strings.Split(*faultsKinds, ","), n, lastUS, cfg)
	}
	if err != nil {
		return c.bad(e, "%v", err)
	}
	return runSimulation(c, e, in, *out, *compare, *asJSON)
}

func cmdTimeline(c *command, e *env, args []string) int {
	fs := c.flags()
	scenario := fs.String("scenario", "", "the scenario: "+scenarioNames())
	out := fs.String("out", "", "directory for timeline.json, plots and report.html")
	compare := fs.Bool("compare", false, "run under both policies and plot them side by side")
	policy := fs.String("policy", "source-first", "the policy: source-first, destination-first or disabled (the legacy path, of a scenario without faults); with --compare only disabled, which runs the legacy path beside both")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	specFile := fs.String("spec", "", "run a spec file's tables (a variant) instead of the generated machines")
	if code, ok := c.parse(e, fs, args, 0, 0); !ok {
		return code
	}
	if *scenario == "" || *out == "" {
		return c.bad(e, "want --scenario NAME and --out DIR")
	}
	if *compare && setFlags(fs)["policy"] && *policy != cluster.Disabled {
		return c.bad(e, "--compare runs both policies, and with --policy disabled the legacy path beside them; --policy %s would be ignored", *policy)
	}
	sc, err := sim.LookupScenario(*scenario)
	if err != nil {
		return c.bad(e, "%v", err)
	}
	var proto *system.Protocol
	if *specFile != "" {
		if proto, _, err = loadProtocol(e.ctx, *specFile); err != nil {
			return c.bad(e, "%v", err)
		}
	}
	if *compare {
		pols := []string{"source-first", "destination-first"}
		if setFlags(fs)["policy"] {
			pols = append([]string{cluster.Disabled}, pols...)
		}
		return runScenarioCompare(c, e, sc, *out, *asJSON, pols, proto)
	}
	cfg, reqs, faults, err := sc.Setup(*policy)
	if err != nil {
		return c.bad(e, "%v", err)
	}
	in := simInputs{cfg: cfg, faults: faults, faultFre: sc.FaultFree, records: obslog.All, proto: proto,
		open: func() (cluster.Source, error) { return &sim.SliceSource{Reqs: reqs}, nil }}
	return runSimulation(c, e, in, *out, false, *asJSON)
}

func scenarioNames() string {
	var names []string
	for _, sc := range sim.Scenarios {
		names = append(names, sc.Name)
	}
	return strings.Join(names, ", ")
}

// runSimulation runs one configuration (or both policies with compare),
// prints the report and writes the files.
func runSimulation(c *command, e *env, in simInputs, out string, compare, asJSON bool) int {
	if !compare {
		res, tl, code := simulateOnce(c, e, in, out)
		if res == nil {
			return code
		}
		if out != "" {
			if _, err := plot.WriteDir(tl, out); err != nil {
				return c.bad(e, "writing plots: %v", err)
			}
		}
		printSim(e, []*sim.Result{res}, asJSON)
		return code
	}
	pols := []string{"source-first", "destination-first"}
	if in.cfg.Policy == cluster.Disabled {
		pols = append([]string{cluster.Disabled}, pols...)
	}
	return runCompare(c, e, out, asJSON, pols, func(pol string) (simInputs, error) {
		cfg := *in.cfg
		if err := overrideSim(&cfg, pol, engineFor(pol), false, 0); err != nil {
			return simInputs{}, err
		}
		run := in
		run.cfg = &cfg
		return run, nil
	})
}

func runScenarioCompare(c *command, e *env, sc *sim.Scenario, out string, asJSON bool, pols []string, proto *system.Protocol) int {
	return runCompare(c, e, out, asJSON, pols, func(pol string) (simInputs, error) {
		cfg, reqs, faults, err := sc.Setup(pol)
		return simInputs{cfg: cfg, faults: faults, faultFre: sc.FaultFree, records: obslog.All, proto: proto,
			open: func() (cluster.Source, error) { return &sim.SliceSource{Reqs: reqs}, nil }}, err
	})
}

// runCompare runs the inputs each policy gives, each into its own
// directory, then plots them side by side.
func runCompare(c *command, e *env, out string, asJSON bool, pols []string, inputs func(policy string) (simInputs, error)) int {
	var results []*sim.Result
	var tls []*sim.Timeline
	worst := exitOK
	for _, pol := range pols {
		in, err := inputs(pol)
		if err != nil {
			return c.bad(e, "%v", err)
		}
		res, tl, code := simulateOnce(c, e, in, filepath.Join(out, pol))
		if res == nil {
			return code
		}
		results, tls = append(results, res), append(tls, tl)
		worst = max(worst, code)
	}
	return finishCompare(c, e, results, tls, out, asJSON, worst)
}

func finishCompare(c *command, e *env, results []*sim.Result, tls []*sim.Timeline, out string, asJSON bool, code int) int {
	for i, tl := range tls {
		if _, err := plot.WriteDir(tl, filepath.Join(out, results[i].Summary.Policy)); err != nil {
			return c.bad(e, "writing plots: %v", err)
		}
	}
	if len(tls) == 2 {
		if _, err := plot.WriteCompare(tls[0], tls[1], out); err != nil {
			return c.bad(e, "writing plots: %v", err)
		}
	} else {
		// The legacy path (the first run) beside each lifecycle policy.
		for i := 1; i < len(tls); i++ {
			dir := filepath.Join(out, results[0].Summary.Policy+"-vs-"+results[i].Summary.Policy)
			if _, err := plot.WriteCompare(tls[0], tls[i], dir); err != nil {
				return c.bad(e, "writing plots: %v", err)
			}
		}
	}
	printSim(e, results, asJSON)
	return code
}

func engineFor(policy string) string {
	if policy == "destination-first" {
		return "sglang"
	}
	return "vllm"
}

// simulateOnce runs one simulation and writes its timeline.json into dir
// (when given). It returns nil and an exit code when the run could not be
// made.
func simulateOnce(c *command, e *env, in simInputs, dir string) (*sim.Result, *sim.Timeline, int) {
	src, err := in.open()
	if err != nil {
		return nil, nil, c.bad(e, "%v", err)
	}
	var tlFile *os.File
	var rec *sim.Recorder
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, c.bad(e, "%v", err)
		}
		if tlFile, err = os.Create(filepath.Join(dir, "timeline.json")); err != nil {
			return nil, nil, c.bad(e, "%v", err)
		}
		defer tlFile.Close()
		rec = sim.NewRecorder(tlFile)
	}
	opt := sim.Options{Faults: in.faults, Timeline: rec, FaultFree: in.faultFre, Protocol: in.proto, UntilUS: in.untilUS, KeepGoing: in.keepGoing}
	if in.props != nil {
		opt.Props = props.NewClock(in.props)
	}
	logPath := in.log
	if logPath == "" && dir != "" && !in.cfg.Aggregated {
		logPath = filepath.Join(dir, "log.jsonl")
	}
	if logPath != "" {
		lf, err := os.Create(logPath)
		if err != nil {
			return nil, nil, c.bad(e, "%v", err)
		}
		defer lf.Close()
		records := in.records
		if records == 0 {
			records = obslog.All
		}
		if opt.Log, err = obslog.NewWriter(lf, in.cfg.LogHeader(records)); err != nil {
			return nil, nil, c.bad(e, "%v", err)
		}
		defer func() {
			if err := opt.Log.Flush(); err != nil {
				fmt.Fprintf(e.stderr, "handoffcheck simulate: writing %s: %v\n", logPath, err)
			}
		}()
	}
	start := time.Now()
	if f, ok := e.stderr.(*os.File); ok && isTerminal(f) {
		opt.Progress = func(p sim.Progress) {
			if time.Since(start) > time.Second {
				fmt.Fprintf(e.stderr, "\r%s virtual, %d requests arrived, %d done, %d events", fmtVirtual(p.NowUS), p.Arrived, p.Completed, p.Events)
			}
		}
	}
	res, err := sim.Run(e.ctx, in.cfg, src, opt)
	if opt.Progress != nil && time.Since(start) > time.Second {
		fmt.Fprintln(e.stderr)
	}
	if err != nil {
		return nil, nil, c.bad(e, "%v", err)
	}
	var tl *sim.Timeline
	if rec != nil {
		if err := rec.Err(); err != nil {
			return nil, nil, c.bad(e, "writing %s: %v", filepath.Join(dir, "timeline.json"), err)
		}
		tl = rec.Timeline()
	}
	switch {
	case res.Violation != nil:
		return res, tl, exitViolation
	case res.Interrupted || errors.Is(e.ctx.Err(), context.Canceled):
		return res, tl, exitInterrupted
	}
	return res, tl, exitOK
}

func fmtVirtual(us int64) string { return fmt.Sprintf("%.3fs", float64(us)/1e6) }

func loadSimConfig(ctx context.Context, file string) (*cluster.Config, error) {
	if file == "" {
		return cluster.DefaultConfig(), nil
	}
	data, err := readInput(ctx, file)
	if err != nil {
		return nil, err
	}
	return cluster.ParseConfig(file, data)
}

// overrideSim applies the command line's policy, engine and seed.
func overrideSim(cfg *cluster.Config, policy, engine string, setSeed bool, seed uint64) error {
	if policy != "" {
		if err := cfg.SetPolicy(policy); err != nil {
			return err
		}
	}
	if engine != "" {
		e, err := model.ParseEngine(engine)
		if err != nil {
			return fmt.Errorf("--engine: %v", err)
		}
		cfg.Engine = e
	}
	if setSeed {
		cfg.Seed = seed
	}
	return nil
}

// workloadSource adapts a workload reader to the simulator.
type workloadSource struct{ r *workload.Reader }

func (w workloadSource) Next() (cluster.Request, error) {
	q, err := w.r.Next()
	if err != nil {
		return cluster.Request{}, err
	}
	r := cluster.Request{Index: q.Index, ID: q.ID, ArrivalUS: q.ArrivalUS, PromptTokens: model.Tokens(q.PromptTokens),
		OutputTokens: model.Tokens(q.OutputTokens), PrefixGroup: q.PrefixGroup, PrefixTokens: model.Tokens(q.PrefixTokens), CancelUS: -1}
	if q.HasCancel {
		r.CancelUS = q.CancelUS
	}
	return r, nil
}

func openWorkload(ctx context.Context, file string) (cluster.Source, error) {
	if file == "" {
		return workloadSource{workload.Default()}, nil
	}
	f, err := openInput(ctx, file)
	if err != nil {
		return nil, err
	}
	// The file stays open for the run: the process ends with it.
	r, err := workload.NewReader(f, file)
	if err != nil {
		f.Close()
		return nil, err
	}
	return workloadSource{r}, nil
}

// countWorkload reads a workload through, refusing it at its first bad
// line, and counts its requests and finds its last arrival.
func countWorkload(open func() (cluster.Source, error)) (int, int64, error) {
	src, err := open()
	if err != nil {
		return 0, 0, err
	}
	n, last := 0, int64(0)
	for {
		r, err := src.Next()
		if err == io.EOF {
			return n, last, nil
		}
		if err != nil {
			return 0, 0, err
		}
		n, last = n+1, r.ArrivalUS
	}
}

// noRequests refuses a workload without a request: a run of it would
// judge nothing and pass.
func noRequests(file string) string {
	return fmt.Sprintf("%s: the workload has no request (a header alone): nothing would be judged; want at least one request line", file)
}

// checkFaultRequests refuses a fault aimed at a request the workload does
// not have: it could never strike, and would only be counted as finding
// nothing to strike.
func checkFaultRequests(faults []cluster.Fault, requests int) error {
	for _, f := range faults {
		if f.Request >= requests {
			return fmt.Errorf("%s:%d: %w: the fault aims at request %d, but the workload has %s (0 to %d); want a request of the workload",
				f.File, f.Line, faultplan.ErrFaultPlan, f.Request, countOf(requests, "request"), requests-1)
		}
	}
	return nil
}

func loadFaults(ctx context.Context, file string) ([]cluster.Fault, error) {
	data, err := readInput(ctx, file)
	if err != nil {
		return nil, err
	}
	p, err := faultplan.Parse(bytes.NewReader(data), file)
	if err != nil {
		return nil, err
	}
	return toSimFaults(p, file), nil
}

// drawFaults draws a plan whose faults fall within the workload's
// arrivals (at least one second of them).
func drawFaults(seed uint64, n int, kinds []string, requests int, lastUS int64, cfg *cluster.Config) ([]cluster.Fault, error) {
	p, err := faultplan.Draw(seed, n, requests, cfg.NumWorkers(), kinds, max(lastUS, 1_000_000))
	if err != nil {
		return nil, fmt.Errorf("--faults-seed: %w", err)
	}
	return toSimFaults(p, "--faults-seed"), nil
}

func toSimFaults(p *faultplan.Plan, file string) []cluster.Fault {
	out := make([]cluster.Fault, len(p.Faults))
	for i, f := range p.Faults {
		out[i] = cluster.Fault{File: file, Line: f.Line, AtUS: f.AtUS, Kind: f.Kind, Request: f.Request, Worker: f.Worker, To: f.To, Side: f.Side, Msg: f.Msg, After: f.After, AfterSide: f.AfterSide}
	}
	return out
}

// printSim prints the summaries (one per run) and any violation; the
// report renders itself (sim.WriteResults).
func printSim(e *env, results []*sim.Result, asJSON bool) {
	if err := sim.WriteResults(e.stdout, results, asJSON); err != nil {
		fmt.Fprintf(e.stderr, "handoffcheck simulate: %v\n", err)
	}
}
