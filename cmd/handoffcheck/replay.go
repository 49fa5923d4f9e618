package main

import (
	"fmt"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/props"
	"github.com/handoffcheck/handoffcheck/checker/system"
)

var replayCommand = &command{
	name:    "replay",
	args:    "FILE.jsonl",
	summary: "replay a trace file step by step and judge every step",
	exits: []exitDoc{
		{exitOK, "every step replayed and none violated an invariant"},
		{exitViolation, "a step violates an invariant"},
		{exitUsage, "bad usage, a bad trace file, or a step that is not enabled where it is taken"},
	},
	run: cmdReplay,
}

func init() { registerCommand(replayCommand) }

func cmdReplay(cmd *command, e *env, args []string) int {
	fs := cmd.flags()
	propsFile := fs.String("props", "", "also judge every step by the properties of this file (docs/props.md): an always one that fails is a violation,\n"+
		"a sometimes one is reported at the first step where it holds")
	if code, ok := cmd.parse(e, fs, args, 0, -1); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return cmd.bad(e, "want exactly one trace file, got %d arguments", fs.NArg())
	}
	stdout := e.stdout
	file := fs.Arg(0)
	bad := func(format string, a ...any) int { return cmd.bad(e, format, a...) }
	set, err := loadProps(e.ctx, *propsFile, "replay", 0)
	if err != nil {
		return bad("%v", err)
	}
	data, err := readInput(e.ctx, file)
	if err != nil {
		return bad("%v", err)
	}
	tr, proto, run, err := traceRun(file, data)
	if err != nil {
		return bad("%v", err)
	}
	cfg := tr.Config
	if set != nil {
		judged := *cfg
		judged.Judge = set
		cfg = &judged
	}
	c, err := checker.New(proto, cfg, run)
	if err != nil {
		return bad("%s: %v", file, err)
	}
	// reachedAt is the first step at which each sometimes property held
	// (0: the initial state; -1: not yet).
	var reachedAt []int
	noteReached := func(st *system.State, step int) {
		if set == nil {
			return
		}
		if reachedAt == nil {
			reachedAt = make([]int, len(set.Props))
			for i := range reachedAt {
				reachedAt[i] = -1
			}
		}
		for i, o := range set.Judgement(c.System, st) {
			if p := set.Props[i]; p.Kind == props.Sometimes && reachedAt[i] < 0 && o.Holds && o.Err == nil {
				reachedAt[i] = step
				fmt.Fprintf(stdout, "  sometimes %s reached at step %d\n", p.Name, step)
			}
		}
	}
	s := c.NewSession()
	prev := s.Describe()
	defer func() {
		if set == nil {
			return
		}
		for i, p := range set.Props {
			if p.Kind == props.Sometimes && reachedAt[i] < 0 {
				fmt.Fprintf(stdout, "sometimes %s: not reached on this trace\n", p.Name)
			}
		}
	}()
	var atLoop system.Key
	drainedOnLoop := false
	fmt.Fprintf(stdout, "replay %s: run %s (%s, engine %s), %d steps\n", file, run.Name, run.Policy, run.Engine, len(tr.Moves))
	fmt.Fprintf(stdout, "attempts: %s\n", strings.Join(c.Attempts(), " "))
	for _, l := range prev {
		fmt.Fprintf(stdout, "    %s\n", l)
	}
	noteReached(s.State(), 0)
	for i, m := range tr.Moves {
		r, err := s.Apply(m)
		if err != nil {
			// One enabled move per line: they are read to find the one
			// the trace should have taken.
			enabled := "nothing is enabled here"
			if moves := s.Moves(); len(moves) > 0 {
				var b strings.Builder
				b.WriteString("enabled here:")
				for _, e := range moves {
					b.WriteString("\n  " + e.String())
				}
				enabled = b.String()
			}
			return bad("%s:%d: step %d: %v; %s", file, tr.Lines[i], i+1, err, enabled)
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
		noteReached(s.State(), i+1)
		if tr.LoopFrom > 0 && i+1 == tr.LoopFrom {
			atLoop = c.Key(s.State())
			fmt.Fprintln(stdout, "  loop:")
		}
		if tr.LoopFrom > 0 && i+1 > tr.LoopFrom && s.Drained() {
			drainedOnLoop = true
		}
		if r.Violation != nil {
			note := ""
			if tr.Violation == r.Violation.Invariant {
				note = " (the violation the trace records)"
			}
			fmt.Fprintf(stdout, "VIOLATION %s at step %d%s\n", r.Violation.Error(), i+1, note)
			return exitViolation
		}
	}
	if tr.LoopFrom > 0 {
		// A liveness counterexample: the steps show a way into the trap
		// and a loop inside it. Replay checks what one path can show: the
		// loop returns to where it started and passes no drained state.
		// That nothing can ever drain from there is the search's finding.
		if c.Key(s.State()) == atLoop && !drainedOnLoop {
			fmt.Fprintf(stdout, "VIOLATION %s: steps %d-%d return to the state after step %d without draining: the loop can repeat forever (the search found no way out of it)\n",
				tr.Violation, tr.LoopFrom+1, len(tr.Moves), tr.LoopFrom)
			return exitViolation
		}
		fmt.Fprintf(stdout, "no violation; the loop recorded after step %d does not return to where it started without draining\n", tr.LoopFrom)
		return exitOK
	}
	if tr.Violation != "" {
		fmt.Fprintf(stdout, "no violation; the trace records %s, which did not happen\n", tr.Violation)
		return exitOK
	}
	fmt.Fprintln(stdout, "no violation")
	return exitOK
}
