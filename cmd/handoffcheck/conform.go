package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/conform"
	"github.com/handoffcheck/handoffcheck/checker/conform/mocker"
	"github.com/handoffcheck/handoffcheck/checker/props"
	"github.com/handoffcheck/handoffcheck/checker/repro"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/spec"
)

var conformCommand = &command{
	name:    "conform",
	args:    "[--from handoffcheck|mocker] [--spec FILE] [--config FILE] [--bound N] [--max-faults N] [--open] [--props FILE] [--clock-error DUR] [--json] [--repro DIR] LOG...",
	summary: "judge a running system's observation logs against the spec and the model",
	detail: "Takes one log, or one per process (handoffcheck.log/v1, docs/conform.md), and decides\n" +
		"whether a behavior of the tables in the model explains every fact, with every invariant\n" +
		"holding along it. Only each process's own order counts: the judge searches the\n" +
		"interleavings between processes. Unlogged steps (kinds a process does not record) are\n" +
		"searched, at most --bound between two explained facts of an attempt, and unlogged\n" +
		"faults at most --max-faults per attempt. --from mocker reads logs shaped like the dynamo\n" +
		"mocker's offline replay bookkeeping (docs/conform.md), judges what they mean, and judges\n" +
		"the mocker by its own bookkeeping rules (in-flight counts, phases, priorities). --clock-error\n" +
		"DUR says every fact's stamp is within DUR of when its step took effect, on one clock all\n" +
		"the processes share (one host, as a live run on loopback; or clocks synchronized within a\n" +
		"known bound): a fact stamped more than 2*DUR before another process's is then explained\n" +
		"before it (without it, the stamps only choose the reading order). --repro DIR\n" +
		"writes a rejection's reproduction (docs/conform.md): a trace of the attempt's world that\n" +
		"replay judges, a README and a Go test.",
	exits: []exitDoc{
		{exitOK, "every fact is explained, and every attempt finished and returned everything (or --open)"},
		{exitViolation, "a fact no behavior explains: the report names it (file:line), the invariant it breaks (with --props, the property) or what the tables allowed instead, and the attempt's explained prefix; with --from mocker, or a line where the mocker breaks its own bookkeeping rules, with the rule"},
		{exitUsage, "bad usage or a malformed log (file:line and what was expected)"},
		{exitInconclusive, "the bound cut the search before a fact was explained or refuted"},
	},
	run: cmdConform,
}

func init() { registerCommand(conformCommand) }

func cmdConform(c *command, e *env, args []string) int {
	fs := c.flags()
	specFile := fs.String("spec", "", "judge against a spec file's tables (a variant) instead of the generated machines")
	configFile := fs.String("config", "", "the cluster's configuration (handoffcheck.sim/v1; default: the logs' header, else the embedded one)")
	bound := fs.Int("bound", conform.DefaultBound, "the most unlogged steps between two explained facts of an attempt")
	maxFaults := fs.Int("max-faults", conform.DefaultMaxFaults, "the most unlogged faults (lost or duplicated facts, hangs, slow cores) in one attempt")
	open := fs.Bool("open", false, "accept attempts still in flight when the logs end (a log cut from a running system)")
	propsFile := fs.String("props", "", "also require every state along an explanation to satisfy the always properties of this file (docs/props.md):\n"+
		"a log that only a behavior breaking one explains is rejected, naming the property; leads_to within is judged on the logs' time stamps\n"+
		"along each attempt's explanation, sometimes reached or not in this run")
	timeScale := fs.Float64("time-scale", 1, "with --props: how long a configured duration lasts on the logs' clock (a live run's --time-scale); a bound is judged on the time stamps divided by it")
	clockError := fs.Duration("clock-error", 0, "every fact's stamp is within this of when its step took effect, on one clock all the logs' processes share\n"+
		"(one host; or clocks synchronized within a known bound): a fact of one process stamped more than twice this before another's is explained before it;\n"+
		"every fact needs t_us, and a process's stamps may not go back (default: unset, the stamps only choose the reading order)")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	reproDir := fs.String("repro", "", "on a rejection, write its reproduction into this directory: a trace of the rejected attempt's world that replay judges\n"+
		"(ending in the invariant, under the tables with the row the logging system deviated in), a README telling it in words, and a Go test")
	from := fs.String("from", "handoffcheck", "the logs' format: handoffcheck (handoffcheck.log/v1) or mocker (the dynamo mocker's offline replay bookkeeping)")
	if code, ok := c.parse(e, fs, args, 1, -1); !ok {
		return code
	}
	if *from != "handoffcheck" && *from != "mocker" {
		return c.bad(e, "--from %q, want handoffcheck or mocker", *from)
	}
	if *bound < 1 || *bound > 250 {
		return c.bad(e, "--bound %d, want 1 to 250", *bound)
	}
	if *maxFaults < 0 || *maxFaults > 16 {
		return c.bad(e, "--max-faults %d, want 0 to 16", *maxFaults)
	}
	opt := conform.Options{Bound: *bound, MaxFaults: *maxFaults, Open: *open}
	if *maxFaults == 0 {
		opt.MaxFaults = -1
	}
	var variant *spec.Spec
	if *specFile != "" {
		p, sp, err := loadProtocol(e.ctx, *specFile)
		if err != nil {
			return c.bad(e, "%v", err)
		}
		opt.Protocol, variant = p, sp
	}
	if *reproDir != "" && *propsFile != "" {
		return c.bad(e, "--repro with --props: a reproduction's trace and test judge the built-in invariants only; give one of them")
	}
	if *reproDir != "" {
		if err := os.MkdirAll(*reproDir, 0o755); err != nil {
			return c.bad(e, "--repro: %v", err)
		}
	}
	if *configFile != "" {
		cfg, err := loadSimConfig(e.ctx, *configFile)
		if err != nil {
			return c.bad(e, "%v", err)
		}
		opt.Config = cfg
	}
	if *propsFile != "" {
		set, err := loadProps(e.ctx, *propsFile, "conform", props.CanWithin|props.Timed)
		if err != nil {
			return c.bad(e, "%v", err)
		}
		opt.Props = set
	}
	if setFlags(fs)["time-scale"] && *propsFile == "" {
		return c.bad(e, "--time-scale scales the time stamps a property's bound is judged on; want --props FILE with it")
	}
	if !(*timeScale > 0 && *timeScale <= 1000) {
		return c.bad(e, "--time-scale %g: want more than 0 and at most 1000", *timeScale)
	}
	opt.TimeScale = *timeScale
	if setFlags(fs)["clock-error"] {
		if *clockError < 0 {
			return c.bad(e, "--clock-error %s: want a duration of 0 or more (how far a stamp may be from its step)", *clockError)
		}
		opt.ClockError, opt.Clocked = *clockError, true
	}
	var in []conform.Input
	var conv []*converted
	var aggregated []*mocker.Result
	var opened []os.FileInfo
	var files []*inputFile
	for _, name := range fs.Args() {
		f, err := openInput(e.ctx, name)
		if err != nil {
			return c.bad(e, "%v", err)
		}
		defer f.Close()
		// The same file under two names (a repeated argument, a link)
		// would be judged as two logs whose facts happen twice. The judge
		// refuses a log whose content repeats another's; this names the
		// cause when it is one file.
		fi, err := f.f.Stat()
		if err != nil {
			return c.bad(e, "%v", err)
		}
		for k, o := range opened {
			if os.SameFile(o, fi) {
				return c.bad(e, "%s and %s are the same file: each log is given once", fs.Arg(k), name)
			}
		}
		opened = append(opened, fi)
		files = append(files, f)
		if *from == "mocker" {
			r, agg := mocker.Sniff(f)
			if agg {
				// An aggregated replay hands nothing off: no fact for
				// the judge, only the mocker's books to judge.
				res, err := mocker.Convert(r, name, io.Discard, nil)
				if err != nil && e.ctx.Err() != nil {
					printConformInterrupted(e.stdout, files)
					return exitInterrupted
				}
				if err != nil {
					return c.bad(e, "%v", err)
				}
				aggregated = append(aggregated, res)
				continue
			}
			cv := convertMocker(r, name)
			conv = append(conv, cv)
			in = append(in, conform.Input{Name: name, R: cv.r, LineOf: cv.lines.Of})
			continue
		}
		in = append(in, conform.Input{Name: name, R: f})
	}
	if len(aggregated) > 0 && len(in) > 0 {
		return c.bad(e, "aggregated and disaggregated replays are judged apart: give the logs of one replay")
	}
	if len(in) == 0 && opt.Props != nil {
		return c.bad(e, "--props: an aggregated replay hands nothing off, so there is no lifecycle state to judge the properties in; want the logs of a disaggregated replay")
	}
	var rep *conform.Report
	var err error
	if len(in) > 0 {
		rep, err = conform.Judge(in, opt)
	} else {
		rep = &conform.Report{Verdict: conform.Explained, Files: fs.Args(), Engine: aggregated[0].Engine, Bound: *bound, MaxFaults: *maxFaults}
	}
	if err != nil && e.ctx.Err() != nil {
		// A signal stopped the reading: what was read has no verdict.
		// (One that came after the last read leaves the verdict whole:
		// it is printed, and runContext makes the exit 3.)
		printConformInterrupted(e.stdout, files)
		return exitInterrupted
	}
	for _, cv := range conv {
		cv.r.Close()
		<-cv.done
		if cv.err != nil {
			// The bookkeeping log's own error names its line.
			return c.bad(e, "%v", cv.err)
		}
	}
	if err != nil {
		return c.bad(e, "%v", err)
	}
	var mocked *mocker.Result
	if *from == "mocker" {
		rs := aggregated
		for _, cv := range conv {
			rs = append(rs, cv.res)
		}
		mocked = mocker.Merge(rs...)
		mocked.Fold(rep)
	}
	if rep.Facts == 0 && rep.Rejection == nil && (mocked == nil || !mocked.Judged()) {
		// Logs of headers alone judge nothing: that is no pass, as
		// checking an empty selection of runs is none. (A mocker's
		// aggregated requests make no fact, but their books are judged.)
		return c.bad(e, "%s: the logs hold no fact after their headers: nothing was judged; want the log lines of a run", strings.Join(fs.Args(), " "))
	}
	if *asJSON {
		out := struct {
			*conform.Report
			Mocker *mockerJSON `json:"mocker,omitempty"`
		}{Report: rep}
		if mocked != nil {
			out.Mocker = &mockerJSON{Handoffs: mocked.Handoffs, AggregatedRequests: mocked.Requests, InFlightDivergences: len(mocked.Divergences),
				BookkeepingRejections: mocked.Rejections, BookkeepingRejection: mocked.Rejection}
			for _, d := range mocked.Divergences {
				out.Mocker.Divergences = append(out.Mocker.Divergences, divergenceJSON{Line: d.Line, Worker: d.Worker, Mocker: d.Mocker, Contract: d.Count})
			}
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintf(e.stdout, "%s\n", b)
	} else {
		rep.WriteText(e.stdout)
		if mocked != nil {
			mocked.WriteText(e.stdout)
		}
	}
	if *reproDir != "" && rep.Rejection != nil && rep.Verdict == conform.Rejected {
		saveConformRepro(e, *reproDir, opt.Protocol, variant, *specFile, rep.Rejection, "handoffcheck conform "+strings.Join(reproArgs(args), " "))
	}
	switch rep.Verdict {
	case conform.Rejected:
		return exitViolation
	case conform.Inconclusive:
		return exitInconclusive
	}
	return exitOK
}

// saveConformRepro writes a rejection's reproduction and says so on
// stderr; a reproduction that cannot be written is reported there, and
// the exit stays the rejection's.
func saveConformRepro(e *env, dir string, p *system.Protocol, variant *spec.Spec, specFile string, r *conform.Rejection, command string) {
	if p == nil {
		p = system.Generated()
	}
	if specFile != "" {
		if abs, err := filepath.Abs(specFile); err == nil {
			specFile = abs
		}
	}
	in := repro.RejectionInput{Protocol: p, Spec: variant, SpecFile: specFile, Rejection: r,
		Command: strings.TrimSpace(command)}
	res, err := repro.WriteRejection(dir, in)
	if err != nil {
		fmt.Fprintf(e.stderr, "handoffcheck: --repro: %v\n", err)
		return
	}
	switch {
	case res.Reproduced && res.Deviation != "":
		fmt.Fprintf(e.stderr, "reproduction of %s written to %s: %d steps under the tables with %s (%s)\n",
			res.Invariant, res.Dir, res.Steps, res.Deviation, strings.Join(res.Files(), ", "))
	case res.Reproduced:
		fmt.Fprintf(e.stderr, "reproduction of %s written to %s: %d steps (%s)\n", res.Invariant, res.Dir, res.Steps, strings.Join(res.Files(), ", "))
	case res.Steps > 0:
		fmt.Fprintf(e.stderr, "the rejected attempt's explanation written to %s: %d steps, no violating step (%s, %s)%s\n", res.Dir, res.Steps, repro.TraceFile, repro.ReadmeFile, sentence(res.Why))
	default:
		fmt.Fprintf(e.stderr, "no trace of the rejection, %s written to %s%s\n", repro.ReadmeFile, res.Dir, sentence(res.Why))
	}
}

// sentence is ". Why." after a clause, or "." when there is no why.
func sentence(why string) string {
	if why == "" {
		return "."
	}
	return ". " + strings.TrimSuffix(why, ".") + "."
}

// reproArgs is the command line without its --repro flag: the command
// that rejected the logs.
func reproArgs(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--repro" || a == "-repro":
			i++
		case strings.HasPrefix(a, "--repro=") || strings.HasPrefix(a, "-repro="):
		default:
			out = append(out, a)
		}
	}
	return out
}

// printConformInterrupted is the partial report of a judge stopped by a
// signal: how far each log was read, and that no verdict was reached.
func printConformInterrupted(w io.Writer, files []*inputFile) {
	fmt.Fprintln(w, "conform: interrupted by a signal before a verdict; read so far:")
	for _, f := range files {
		fmt.Fprintf(w, "  %s: %d lines (%d bytes)\n", f.name, f.lines, f.bytes)
	}
	fmt.Fprintln(w, "verdict: none: the facts after these were not read, and the ones read were not all judged")
}

type mockerJSON struct {
	Handoffs            int              `json:"handoffs"`
	AggregatedRequests  int              `json:"aggregated_requests,omitempty"`
	InFlightDivergences int              `json:"in_flight_divergences"`
	Divergences         []divergenceJSON `json:"divergences,omitempty"`
	// The places the mocker broke its own bookkeeping rules: how many,
	// and the first.
	BookkeepingRejections int                `json:"bookkeeping_rejections"`
	BookkeepingRejection  *conform.Rejection `json:"bookkeeping_rejection,omitempty"`
}

type divergenceJSON struct {
	Line     int    `json:"line"`
	Worker   string `json:"worker"`
	Mocker   int    `json:"mocker_in_flight"`
	Contract int    `json:"contract_in_flight"`
}

// converted is a mocker log being converted, streamed to the judge.
type converted struct {
	r     *io.PipeReader
	lines *mocker.Lines
	done  chan struct{}
	res   *mocker.Result
	err   error
}

func convertMocker(f io.Reader, name string) *converted {
	pr, pw := io.Pipe()
	cv := &converted{r: pr, lines: &mocker.Lines{}, done: make(chan struct{}), res: &mocker.Result{}}
	go func() {
		defer close(cv.done)
		res, err := mocker.Convert(f, name, pw, cv.lines)
		if err != nil {
			cv.err = err
			pw.CloseWithError(err)
			return
		}
		cv.res = res
		pw.Close()
	}()
	return cv
}
