package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/machines/interp"
)

func init() {
	register("replay", "replay a trace file step by step and judge every step", cmdReplay)
}

func cmdReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: handoffcheck replay FILE.jsonl")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "handoffcheck replay: want exactly one trace file")
		return exitUsage
	}
	file := fs.Arg(0)
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "handoffcheck replay: "+format+"\n", a...)
		return exitUsage
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return bad("%v", err)
	}
	tr, err := checker.ParseTrace(file, data)
	if err != nil {
		return bad("%v", err)
	}
	proto := checker.Generated()
	if tr.Spec != nil {
		it, err := interp.New(tr.Spec)
		if err != nil {
			return bad("%s: %v", file, err)
		}
		if proto, err = checker.FromStepper(file+" (spec)", tr.Spec, it); err != nil {
			return bad("%s: %v", file, err)
		}
	}
	var run checker.Run
	for _, r := range tr.Config.Runs {
		if r.Name == tr.Run {
			run = r
		}
	}
	c, err := checker.New(proto, tr.Config, run)
	if err != nil {
		return bad("%s: %v", file, err)
	}
	s := c.NewSession()
	prev := s.Describe()
	fmt.Fprintf(stdout, "replay %s: run %s (%s, engine %s), %d steps\n", file, run.Name, run.Policy, run.Engine, len(tr.Moves))
	fmt.Fprintf(stdout, "attempts: %s\n", strings.Join(c.Attempts(), " "))
	for _, l := range prev {
		fmt.Fprintf(stdout, "    %s\n", l)
	}
	for i, m := range tr.Moves {
		r, err := s.Apply(m)
		if err != nil {
			var enabled []string
			for _, e := range s.Moves() {
				enabled = append(enabled, e.String())
			}
			return bad("%s:%d: step %d: %v; enabled here: %v", file, tr.Lines[i], i+1, err, enabled)
		}
		for j, l := range s.FormatStep(r) {
			if j == 0 {
				l = fmt.Sprintf("%d. %s", i+1, l)
			}
			fmt.Fprintf(stdout, "  %s\n", l)
		}
		now := s.Describe()
		for j, l := range now {
			if j < len(prev) {
				if d := checker.ChangedFields(prev[j], l); d != "" {
					fmt.Fprintf(stdout, "      %s\n", d)
				}
			}
		}
		prev = now
		if r.Violation != nil {
			note := ""
			if tr.Violation == r.Violation.Invariant {
				note = " (the violation the trace records)"
			}
			fmt.Fprintf(stdout, "VIOLATION %s at step %d%s\n", r.Violation.Error(), i+1, note)
			return exitViolation
		}
	}
	if tr.Violation != "" {
		fmt.Fprintf(stdout, "no violation; the trace records %s, which did not happen\n", tr.Violation)
		return exitOK
	}
	fmt.Fprintln(stdout, "no violation")
	return exitOK
}
