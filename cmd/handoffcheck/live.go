package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/conform"
	"github.com/handoffcheck/handoffcheck/checker/live"
	"github.com/handoffcheck/handoffcheck/checker/props"
	"github.com/handoffcheck/handoffcheck/checker/sim/faultplan"
	"github.com/handoffcheck/handoffcheck/checker/sim/workload"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
	specpkg "github.com/handoffcheck/handoffcheck/spec"
)

var liveCommand = &command{
	name:    "live",
	args:    "[--config FILE] [--policy P] [--compare] [--engine E] [--workload FILE] [--faults FILE] [--proxy-seed N] [--time-scale X] [--adapt-scale=false] [--out DIR] [--spec FILE] [--props FILE] [--clock-error DUR] [--no-conform] [--repro DIR] [--json]",
	summary: "run the machines as real processes over loopback TCP, with real faults, and report what every worker held at the end",
	detail: "Starts a coordinator (the frontend, both routers and a fault proxy) in this process and one\n" +
		"process per worker (this binary's worker command), which talk over TCP on 127.0.0.1 in the\n" +
		"frame format of docs/live.md. Each worker runs the generated machines and keeps its ledgers\n" +
		"with the model's operations; timers run on the wall clock, every configured duration times\n" +
		"--time-scale. The fault plan is the simulator's (docs/faults.md): marks on a request strike\n" +
		"at their phase, a restart of a worker at its time (the process is killed with SIGKILL and\n" +
		"started again as a new generation). --proxy-seed adds random drops, duplicates and delays of\n" +
		"the facts the workers send each other. Every process writes its observation log into --out\n" +
		"(default: a new temporary directory), and the run's logs are judged by conform unless\n" +
		"--no-conform (with --props FILE, also by the file's properties, docs/props.md: a bound on the\n" +
		"clock is judged on the logs' time stamps divided by the time scale).\n" +
		"Without --workload it runs the embedded default: 1,000 requests with a kill and a restart,\n" +
		"a lost, a duplicated and a hung fact, and more (checker/live/default).\n" +
		"--policy disabled runs the legacy disaggregated path (the legacy tables, no pin and no\n" +
		"reservation) without faults, its logs not judged; --compare runs source-first and\n" +
		"destination-first (with --policy disabled, the legacy path too) on one fault-free workload.",
	exits: []exitDoc{
		{exitOK, "every request finished, every worker and router holds nothing, and the logs conform"},
		{exitViolation, "something is still held somewhere, an attempt was stuck with nothing left to happen (named with the invariant the simulator names for it), or the logs do not conform (with --props, a property the explanations would break is named)"},
		{exitUsage, ""},
		{exitInterrupted, "interrupted (SIGINT or SIGTERM): every process was stopped, and the report says what was held"},
		{exitInconclusive, "conform's search was cut by its bound, the processes fell further behind the clock than the run's deadlines absorb at every time scale tried (the report names the lateness), or attempts stopped making progress while the workers did not say they were stuck"},
	},
	run: cmdLive,
}

var workerCommand = &command{
	name:    "worker",
	args:    "--coordinator ADDR --worker N --gen G --config FILE [--log FILE] [--time-scale X] [--epoch NS] [--spec FILE]",
	summary: "run one worker process of a live run (live starts these itself)",
	exits: []exitDoc{
		{exitOK, "the coordinator drained the worker or closed its connection"},
		{exitUsage, ""},
	},
	run: cmdWorker,
}

func init() {
	registerCommand(liveCommand)
	registerCommand(workerCommand)
}

func cmdLive(c *command, e *env, args []string) int {
	fs := c.flags()
	configFile := fs.String("config", "", "cluster configuration (handoffcheck.sim/v1; default: the simulator's embedded one)")
	workloadFile := fs.String("workload", "", "workload (handoffcheck.workload/v1; default: the embedded live workload)")
	faultsFile := fs.String("faults", "", "fault plan (handoffcheck.faults/v1; default: the embedded plan when --workload is not given, else none)")
	proxySeed := fs.Uint64("proxy-seed", 0, "the proxy also drops, duplicates or delays facts at random with this seed (0: only the plan's)")
	proxyRate := fs.Float64("proxy-rate", 0.05, "with --proxy-seed: the fraction of facts it hits")
	proxyDelay := fs.Float64("proxy-max-delay-ms", 50, "with --proxy-seed: the longest delay, in configured milliseconds")
	scale := fs.Float64("time-scale", 0.01, "wall-clock time per configured time (0.001: a 30 s lease lasts 30 ms)")
	out := fs.String("out", "", "directory for the run's configuration and logs (default: a new temporary directory)")
	specFile := fs.String("spec", "", "run a spec file's tables (a variant) in every worker instead of the generated machines")
	noConform := fs.Bool("no-conform", false, "do not judge the run's logs")
	propsFile := fs.String("props", "", "judge the run's logs also by the properties of this file (docs/props.md): a log only a behavior breaking one explains is rejected, naming it; leads_to within on the logs' clock, sometimes reached or not in this run")
	clockError := fs.Duration("clock-error", 0, "judge the run's logs as conform --clock-error does: its processes share this host's clock, and a fact stamped more than\n"+
		"twice this before another process's is explained before it (docs/conform.md; 10ms covers how late a loaded host stamps a step; default: unset)")
	adapt := fs.Bool("adapt-scale", true, "run again at twice the time scale (up to 4 runs) when the processes fall further behind the clock than the deadlines absorb; false: one run, whose report says how late it was")
	policy := fs.String("policy", "", "override the configuration's policy: source-first, destination-first or disabled (the legacy disaggregated path: no fault plan, logs not judged)")
	compare := fs.Bool("compare", false, "run source-first and destination-first on the same workload, each into DIR/POLICY, and print a table of both; with --policy disabled, the legacy path beside them")
	engine := fs.String("engine", "", "override the configuration's engine: "+strings.Join(model.EngineNames(), ", "))
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	reproDir := fs.String("repro", "", "when conform rejects the run's logs, write the rejection's reproduction into this directory, as conform --repro does")
	untilMS := fs.Float64("until-ms", 0, "end the run this long after the first arrival (configured time) with handoffs unresolved: no later arrival, timed restart or client cancel, every unresolved attempt cut by a cancel and checked to release what it holds once (0: run the workload out)")
	if code, ok := c.parse(e, fs, args, 0, 0); !ok {
		return code
	}
	set := setFlags(fs)
	if set["until-ms"] && !(*untilMS > 0 && *untilMS < 1e12) {
		return c.bad(e, "--until-ms %v: want a time after 0 in milliseconds", *untilMS)
	}
	if !(*scale > 0) || *scale > 1000 {
		return c.bad(e, "--time-scale %g, want more than 0 and at most 1000", *scale)
	}
	if (set["proxy-rate"] || set["proxy-max-delay-ms"]) && !set["proxy-seed"] {
		return c.bad(e, "--proxy-rate and --proxy-max-delay-ms need --proxy-seed")
	}
	if *proxyRate < 0 || *proxyRate > 1 {
		return c.bad(e, "--proxy-rate %g, want 0 to 1", *proxyRate)
	}
	if *proxyDelay < 0 || *proxyDelay > 60_000 {
		return c.bad(e, "--proxy-max-delay-ms %g, want 0 to 60000", *proxyDelay)
	}
	cfg, err := loadSimConfig(e.ctx, *configFile)
	if err != nil {
		return c.bad(e, "%v", err)
	}
	if err := overrideSim(cfg, *policy, *engine, false, 0); err != nil {
		return c.bad(e, "%v", err)
	}
	if err := checkTimeScale(cfg, *scale); err != nil {
		return c.bad(e, "%v", err)
	}
	legacy := cfg.Policy == cluster.Disabled && !cfg.Aggregated
	if *reproDir != "" {
		// The reproduction is of the run's rejected log: one run, judged
		// by the built-in invariants.
		switch {
		case *compare:
			return c.bad(e, "--repro with --compare: a reproduction is of one run's rejection; run the policy alone")
		case *noConform || *propsFile != "":
			return c.bad(e, "--repro: a reproduction is of conform's rejection by the built-in invariants; not with --no-conform or --props")
		case cfg.Policy == cluster.Disabled || cfg.Aggregated:
			return c.bad(e, "--repro: the %s policy's logs are not judged", cfg.PolicyName())
		}
		if err := os.MkdirAll(*reproDir, 0o755); err != nil {
			return c.bad(e, "--repro: %v", err)
		}
	}
	judge := conform.Options{}
	if set["clock-error"] {
		switch {
		case *clockError < 0:
			return c.bad(e, "--clock-error %s: want a duration of 0 or more (how far a stamp may be from its step)", *clockError)
		case *noConform:
			return c.bad(e, "--clock-error: the clock orders the facts where conform judges the run's logs, which --no-conform turns off; want one of them")
		case cfg.Policy == cluster.Disabled || cfg.Aggregated:
			return c.bad(e, "--clock-error: the %s policy's logs are not judged; want source-first or destination-first", cfg.PolicyName())
		}
		judge.ClockError, judge.Clocked = *clockError, true
	}
	var pset *props.Set
	if *propsFile != "" {
		if pset, err = loadProps(e.ctx, *propsFile, "live", props.CanWithin|props.Timed); err != nil {
			return c.bad(e, "%v", err)
		}
		// The properties are judged where the logs are, by conform,
		// along the lifecycle's states: a run without them has none.
		switch {
		case *noConform:
			return c.bad(e, "--props: the properties are judged by conform on the run's logs, which --no-conform turns off; want one of them")
		case cfg.Policy == cluster.Disabled || cfg.Aggregated:
			return c.bad(e, "--props: the %s policy runs no handoff lifecycle, so there is no state to judge; want source-first or destination-first", cfg.PolicyName())
		}
	}
	pols := []string{"source-first", "destination-first"}
	if *compare {
		if set["policy"] && !legacy {
			return c.bad(e, "--compare runs both policies, and with --policy disabled the legacy path beside them; --policy %s would be ignored", *policy)
		}
		if legacy {
			pols = append([]string{cluster.Disabled}, pols...)
		}
		if set["faults"] || set["proxy-seed"] || set["spec"] {
			// The legacy path models no fault, and a comparison of runs
			// that strike different faults compares nothing.
			return c.bad(e, "--compare runs every policy on the same fault-free workload; --faults, --proxy-seed and --spec do not go with it")
		}
	}
	var src cluster.Source
	requests := 0
	var faults []cluster.Fault
	var rewind func() (cluster.Source, error)
	if *workloadFile == "" {
		rewind = func() (cluster.Source, error) {
			r, err := workload.NewReader(bytes.NewReader(live.DefaultWorkload()), "checker/live/default/workload.jsonl")
			if err != nil {
				return nil, err
			}
			return workloadSource{r}, nil
		}
		if requests, _, err = countWorkload(rewind); err != nil {
			return c.bad(e, "%v", err)
		}
		if src, err = rewind(); err != nil {
			return c.bad(e, "%v", err)
		}
		if !set["faults"] && !legacy && !*compare {
			p, err := faultplan.Parse(bytes.NewReader(live.DefaultFaults()), "checker/live/default/faults.jsonl")
			if err != nil {
				return c.bad(e, "%v", err)
			}
			faults = toSimFaults(p, "checker/live/default/faults.jsonl")
		}
	} else {
		if requests, _, err = countWorkload(func() (cluster.Source, error) { return openWorkload(e.ctx, *workloadFile) }); err != nil {
			return c.bad(e, "%v", err)
		}
		if requests == 0 {
			// A run of no request judges nothing: it is no pass.
			return c.bad(e, "%s", noRequests(*workloadFile))
		}
		// The run reads the file again; live.Run stops on the signal itself.
		if src, err = openWorkload(context.Background(), *workloadFile); err != nil {
			return c.bad(e, "%v", err)
		}
		rewind = func() (cluster.Source, error) { return openWorkload(context.Background(), *workloadFile) }
	}
	if set["faults"] {
		if faults, err = loadFaults(e.ctx, *faultsFile); err != nil {
			return c.bad(e, "%v", err)
		}
	}
	if err := checkFaultRequests(faults, requests); err != nil {
		return c.bad(e, "%v", err)
	}
	var proto *system.Protocol
	spec := ""
	if *specFile != "" {
		if proto, _, err = loadProtocol(e.ctx, *specFile); err != nil {
			return c.bad(e, "%v", err)
		}
		if spec, err = filepath.Abs(*specFile); err != nil {
			return c.bad(e, "%v", err)
		}
	}
	dir := *out
	if dir == "" {
		if dir, err = os.MkdirTemp("", "handoffcheck-live-"); err != nil {
			return c.bad(e, "%v", err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return c.bad(e, "cannot find this binary to start workers: %v", err)
	}
	if !*adapt {
		rewind = nil
	}
	opt := live.Options{Config: cfg, Workload: src, Rewind: rewind, Faults: faults, Scale: *scale, Dir: dir, SpecFile: spec, Protocol: proto,
		Spawn: &live.ExecSpawner{Path: self, Args: []string{"worker"}, Stderr: e.stderr}, Errors: e.stderr,
		UntilUS: int64(math.Round(*untilMS * 1000))}
	if set["proxy-seed"] {
		opt.Proxy = live.ProxyFaults{Seed: *proxySeed, Rate: *proxyRate, MaxDelayUS: int64(*proxyDelay * 1000)}
	}
	if !*compare {
		r, code := liveOnce(c, e, opt, *noConform, pset, judge)
		if r != nil {
			r.print(e, *asJSON)
		}
		if *reproDir != "" && r != nil && r.verdict != nil && r.verdict.Verdict == conform.Rejected && r.verdict.Rejection != nil {
			var variant *specpkg.Spec
			if *specFile != "" {
				_, variant, _ = loadProtocol(e.ctx, *specFile)
			}
			saveConformRepro(e, *reproDir, proto, variant, spec, r.verdict.Rejection, "handoffcheck live "+strings.Join(reproArgs(args), " "))
		}
		return code
	}
	// --compare: each policy on the same workload, each in a directory of
	// its own, its engine the policy's (as simulate --compare runs them).
	var runs []*liveRun
	worst := exitOK
	for _, pol := range pols {
		run := opt
		cfg := *cfg
		if err := overrideSim(&cfg, pol, engineFor(pol), false, 0); err != nil {
			return c.bad(e, "%v", err)
		}
		run.Config, run.Dir = &cfg, filepath.Join(dir, pol)
		if run.Workload, err = rewindOf(rewind, *workloadFile); err != nil {
			return c.bad(e, "%v", err)
		}
		r, code := liveOnce(c, e, run, *noConform, pset, judge)
		if r == nil {
			return code
		}
		if r.rep.Interrupted {
			// The runs not made are not reported; the one cut short is.
			r.print(e, *asJSON)
			return code
		}
		runs = append(runs, r)
		worst = max(worst, code)
	}
	if *asJSON {
		var all []liveJSON
		for _, r := range runs {
			all = append(all, liveJSON{r.rep, r.verdict})
		}
		b, _ := json.MarshalIndent(struct {
			Runs []liveJSON `json:"runs"`
		}{all}, "", "  ")
		fmt.Fprintf(e.stdout, "%s\n", b)
		return worst
	}
	var reps []*live.Report
	for i, r := range runs {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		r.print(e, false)
		reps = append(reps, r.rep)
	}
	fmt.Fprintln(e.stdout)
	live.WriteCompare(e.stdout, reps)
	return worst
}

// rewindOf gives the workload afresh for one run of --compare.
func rewindOf(rewind func() (cluster.Source, error), file string) (cluster.Source, error) {
	if rewind != nil {
		return rewind()
	}
	return openWorkload(context.Background(), file)
}

// liveRun is one live run's report and its logs' verdict (nil: not
// judged).
type liveRun struct {
	rep     *live.Report
	verdict *conform.Report
	legacy  bool // the legacy path's run: its logs are not judged
}

type liveJSON struct {
	*live.Report
	Conform *conform.Report `json:"conform,omitempty"`
}

func (r *liveRun) print(e *env, asJSON bool) {
	if asJSON {
		b, _ := json.MarshalIndent(liveJSON{r.rep, r.verdict}, "", "  ")
		fmt.Fprintf(e.stdout, "%s\n", b)
		return
	}
	r.rep.Write(e.stdout)
	if r.verdict != nil {
		r.verdict.WriteText(e.stdout)
	}
	if r.legacy {
		fmt.Fprintf(e.stdout, "conform: the logs are not judged: their header names the policy %s, the legacy path, to which the lifecycle's contract does not apply\n", cluster.Disabled)
	}
}

// liveOnce runs one live run and judges its logs (the legacy path's are
// not judged: the lifecycle's contract does not apply to them), and
// says the run's exit code; judge carries the clock error the logs are
// judged with, if any. A nil run: the run could not be made, or was
// interrupted while judging (both reported already).
func liveOnce(c *command, e *env, opt live.Options, noConform bool, pset *props.Set, judge conform.Options) (*liveRun, int) {
	rep, err := live.Run(e.ctx, opt)
	if err != nil {
		return nil, c.bad(e, "%v", err)
	}
	r := &liveRun{rep: rep, legacy: opt.Config.Policy == cluster.Disabled}
	if rep.Interrupted {
		return r, exitInterrupted
	}
	if !noConform && opt.Config.Policy != cluster.Disabled {
		var in []conform.Input
		var files []*inputFile
		for _, name := range rep.Logs {
			f, err := openInput(e.ctx, name)
			if err != nil {
				return nil, c.bad(e, "%v", err)
			}
			files = append(files, f)
			in = append(in, conform.Input{Name: name, R: f})
		}
		// The logs are judged against the tables the workers ran, and
		// the properties, if any.
		judge.Protocol, judge.Props, judge.TimeScale = opt.Protocol, pset, rep.Scale
		r.verdict, err = conform.Judge(in, judge)
		for _, f := range files {
			f.Close()
		}
		if err != nil && e.ctx.Err() != nil {
			// Stopped while judging: the run's report stands, the
			// logs have no verdict.
			rep.Write(e.stdout)
			printConformInterrupted(e.stdout, files)
			return nil, exitInterrupted
		}
		if err != nil {
			// A log a worker wrote that the reader refuses is a defect of
			// the run, not of the user's input.
			fmt.Fprintf(e.stderr, "handoffcheck live: the run's logs do not read: %v\n", err)
			return nil, exitViolation
		}
	}
	verdict := r.verdict
	switch {
	case len(rep.Findings) > 0:
		return r, exitViolation
	case verdict != nil && verdict.Verdict == conform.Rejected:
		return r, exitViolation
	case rep.Stall != nil && rep.Stall.Inconclusive:
		// Attempts stopped making progress, but the workers did not say
		// they were stuck: the run cannot tell that from a machine too
		// loaded to run its processes, and a verdict rests only on what
		// it observed.
		return r, exitInconclusive
	case !rep.Clean:
		return r, exitViolation
	case rep.TooLate:
		// Nothing held and nothing broken, but the outcome says more
		// about the machine's load than about the workload.
		return r, exitInconclusive
	case verdict != nil && verdict.Verdict == conform.Inconclusive:
		return r, exitInconclusive
	}
	return r, exitOK
}

// minTimerWall is the shortest wall-clock time a live run's timers may
// be scaled to. Below it, the delay of scheduling a process or a goroutine
// (a millisecond or more on a loaded machine) is as long as the timer
// itself: every deadline fires on arrival and nothing can succeed, so the
// run would describe the machine, not the protocol.
const minTimerWall = time.Millisecond

// checkTimeScale refuses a --time-scale that scales the configuration's
// shortest timer below minTimerWall.
func checkTimeScale(cfg *cluster.Config, scale float64) error {
	t := cfg.Timers
	timers := []struct {
		key string
		us  int64
	}{{"lease_ms", t.LeaseUS}, {"heartbeat_ms", t.HeartbeatUS}, {"bootstrap_ms", t.BootstrapUS}, {"reservation_ms", t.ReservationUS},
		{"transfer_deadline_ms", t.TransferDeadlineUS}, {"health_check_ms", cfg.HealthCheckUS}}
	short := timers[0]
	for _, x := range timers[1:] {
		if x.us < short.us {
			short = x
		}
	}
	wallUS := float64(short.us) * scale
	if wallUS >= float64(minTimerWall.Microseconds()) {
		return nil
	}
	return fmt.Errorf("--time-scale %g: the configuration's shortest timer, %s %g, would last %.3g ms on the wall clock; "+
		"want at least %g ms, below which scheduling delay alone fires every timer (a --time-scale of at least %.3g)",
		scale, short.key, float64(short.us)/1000, wallUS/1000, float64(minTimerWall.Microseconds())/1000, float64(minTimerWall.Microseconds())/float64(short.us))
}

func cmdWorker(c *command, e *env, args []string) int {
	fs := c.flags()
	finish := live.WorkerFlags(fs)
	if code, ok := c.parse(e, fs, args, 0, 0); !ok {
		return code
	}
	a, err := finish()
	if err != nil {
		return c.bad(e, "%v", err)
	}
	var proto *system.Protocol
	if a.SpecFile != "" {
		if proto, _, err = loadProtocol(e.ctx, a.SpecFile); err != nil {
			return c.bad(e, "%v", err)
		}
	}
	if err := live.RunWorkerArgs(e.ctx, a, proto, e.stderr); err != nil {
		fmt.Fprintf(e.stderr, "handoffcheck worker %d: %v\n", a.Worker, err)
		return exitViolation
	}
	return exitOK
}
