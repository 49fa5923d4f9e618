package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/conform"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
)

var conformCommand = &command{
	name:    "conform",
	args:    "[--spec FILE] [--config FILE] [--bound N] [--max-faults N] [--open] [--json] LOG...",
	summary: "judge a running system's observation logs against the spec and the model",
	detail: "Takes one log, or one per process (handoffcheck.log/v1, docs/conform.md), and decides\n" +
		"whether a behavior of the tables in the model explains every fact, with every invariant\n" +
		"holding along it. Only each process's own order counts: the judge searches the\n" +
		"interleavings between processes. Unlogged steps (kinds a process does not record) are\n" +
		"searched, at most --bound between two explained facts of an attempt, and unlogged\n" +
		"faults at most --max-faults per attempt.",
	exits: []exitDoc{
		{exitOK, "every fact is explained, and every attempt finished and returned everything (or --open)"},
		{exitViolation, "a fact no behavior explains: the report names it (file:line), the invariant it breaks or what the tables allowed instead, and the attempt's explained prefix"},
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
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	if code, ok := c.parse(e, fs, args, 1, -1); !ok {
		return code
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
	if *specFile != "" {
		p, _, err := loadProtocol(*specFile)
		if err != nil {
			return c.bad(e, "%v", err)
		}
		opt.Protocol = p
	}
	if *configFile != "" {
		cfg, err := loadSimConfig(*configFile)
		if err != nil {
			return c.bad(e, "%v", err)
		}
		opt.Config = cfg
	}
	var in []conform.Input
	for _, name := range fs.Args() {
		f, err := os.Open(name)
		if err != nil {
			return c.bad(e, "%v", err)
		}
		defer f.Close()
		in = append(in, conform.Input{Name: name, R: f})
	}
	rep, err := conform.Judge(in, opt)
	if err != nil {
		if errors.Is(err, obslog.ErrLog) || errors.Is(err, conform.ErrInput) {
			return c.bad(e, "%v", err)
		}
		return c.bad(e, "%v", err)
	}
	if *asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintf(e.stdout, "%s\n", b)
	} else {
		printConform(e.stdout, rep)
	}
	switch rep.Verdict {
	case conform.Rejected:
		return exitViolation
	case conform.Inconclusive:
		return exitInconclusive
	}
	return exitOK
}

func printConform(w io.Writer, r *conform.Report) {
	fmt.Fprintf(w, "conform %s (%s on %s): %d facts, %d attempts, %d restarts\n",
		strings.Join(r.Files, " "), r.Policy, r.Engine, r.Facts, r.Attempts, r.Restarts)
	fmt.Fprintf(w, "search: at most %d unlogged steps between facts and %d unlogged faults per attempt; "+
		"the explanations took %d unlogged steps (longest gap %d) and %d unlogged faults; the bound was reached in %d attempts; at most %d attempts open at once\n",
		r.Bound, r.MaxFaults, r.Unlogged, r.LongestGap, r.FaultsUsed, r.BoundReached, r.PeakOpen)
	x := r.Rejection
	if x == nil {
		fmt.Fprintf(w, "verdict: explained: a behavior of the tables explains every fact, every invariant holding along it\n")
		return
	}
	fmt.Fprintf(w, "verdict: %s at %s:%d\n", r.Verdict, x.File, x.Line)
	fmt.Fprintf(w, "  fact: %s\n", x.Fact)
	if x.Invariant != "" {
		fmt.Fprintf(w, "  invariant: %s\n", x.Invariant)
	}
	fmt.Fprintf(w, "  %s\n", x.Detail)
	if len(x.Allowed) > 0 {
		fmt.Fprintf(w, "  the tables allowed instead:\n")
		for _, a := range x.Allowed {
			fmt.Fprintf(w, "    %s\n", a)
		}
	}
	fmt.Fprintf(w, "  explained before it: %d facts of the logs", x.Prefix)
	if len(x.Explained) > 0 {
		fmt.Fprintf(w, "; the attempt's explained prefix:\n")
		for _, l := range x.Explained {
			fmt.Fprintf(w, "    %s\n", l)
		}
	} else {
		fmt.Fprintln(w)
	}
}
