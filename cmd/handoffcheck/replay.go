package main

import (
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker"
	"github.com/handoffcheck/handoffcheck/checker/props"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
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
	set, err := loadProps(e.ctx, *propsFile, "replay", props.CanLeadsTo)
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
	lt := leadsToOf(set, tr.Violation)
	if lt == nil && tr.Violation != "" && !builtinInvariant(tr.Violation) {
		return bad("%s records %s, which is no built-in invariant: give the properties file that names it with --props", file, tr.Violation)
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
	s := c.Initial()
	prev := c.DescribeState(&s)
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
	var loopStart system.State
	drainedOnLoop := false
	// sides is P and Q of the leads_to property the trace records, at
	// each state from the initial one.
	var sides [][2]uint64
	noteSides := func(st *system.State) error {
		if lt == nil {
			return nil
		}
		p, q, err := lt.Sides(c.System, st)
		sides = append(sides, [2]uint64{p, q})
		return err
	}
	fmt.Fprintf(stdout, "replay %s: run %s (%s, engine %s), %d steps\n", file, run.Name, run.Policy, run.Engine, len(tr.Moves))
	fmt.Fprintf(stdout, "attempts: %s\n", strings.Join(c.Attempts(), " "))
	for _, l := range prev {
		fmt.Fprintf(stdout, "    %s\n", l)
	}
	noteReached(&s, 0)
	if err := noteSides(&s); err != nil {
		return bad("%v", err)
	}
	for i, m := range tr.Moves {
		r, err := c.Apply(&s, m)
		if err != nil {
			// One enabled move per line: they are read to find the one
			// the trace should have taken.
			enabled := "nothing is enabled here"
			if moves := c.MovesInto(&s, nil); len(moves) > 0 {
				var b strings.Builder
				b.WriteString("enabled here:")
				for _, e := range moves {
					b.WriteString("\n  " + e.String())
				}
				enabled = b.String()
			}
			return bad("%s:%d: step %d: %v; %s", file, tr.Lines[i], i+1, err, enabled)
		}
		for j, l := range c.FormatStep(r) {
			if j == 0 {
				l = fmt.Sprintf("%d. %s", i+1, l)
			}
			fmt.Fprintf(stdout, "  %s\n", l)
		}
		now := c.DescribeState(&s)
		for j, l := range now {
			if j < len(prev) {
				if d := checker.ChangedFields(prev[j], l); d != "" {
					fmt.Fprintf(stdout, "      %s\n", d)
				}
			}
		}
		prev = now
		noteReached(&s, i+1)
		if err := noteSides(&s); err != nil {
			return bad("%v", err)
		}
		if tr.LoopFrom > 0 && i+1 == tr.LoopFrom {
			atLoop = c.Key(&s)
			loopStart = s
			fmt.Fprintln(stdout, "  loop:")
		}
		if tr.LoopFrom > 0 && i+1 > tr.LoopFrom && c.Drained(&s) {
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
	if lt != nil {
		return replayLeadsTo(stdout, c, tr, lt, sides, loopStart, atLoop, &s)
	}
	if tr.LoopFrom > 0 {
		// A liveness counterexample: the steps show a way into the trap
		// and a loop inside it. Replay checks what one path can show: the
		// loop returns to where it started and passes no drained state.
		// That nothing can ever drain from there is the search's finding.
		if c.Key(&s) == atLoop && !drainedOnLoop {
			fmt.Fprintf(stdout, "VIOLATION %s: steps %d-%d return to the state after step %d without draining: the loop can repeat forever (the search found no way out of it)\n",
				tr.Violation, tr.LoopFrom+1, len(tr.Moves), tr.LoopFrom)
			fmt.Fprintln(stdout, fairness(c, loopStart, tr.Moves[tr.LoopFrom:]))
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

// leadsToOf is the leads_to property of the set a trace records as its
// violation (nil: none, or no set).
func leadsToOf(set *props.Set, name string) *props.Property {
	if set == nil || name == "" {
		return nil
	}
	for _, p := range set.Props {
		if p.Name == name && p.Kind == props.LeadsTo && p.Within == 0 {
			return p
		}
	}
	return nil
}

// ends reports whether a run may end at state st: nothing but faults can
// happen there, so no process is obliged to move.
func ends(c *checker.Checker, st *system.State) bool {
	enabled, _ := c.Unfair(*st, nil)
	return len(enabled) == 0
}

// builtinInvariant reports whether name is a built-in invariant's.
func builtinInvariant(name string) bool {
	if name == model.NameQuiescence || name == model.NameFaultFreeCompletion || name == model.NameEventuallyDrained {
		return true
	}
	return slices.Contains(model.SafetyInvariants, name)
}

// fairness says whether a loop, replayed from state s, is a weakly fair
// run of the system's own moves.
func fairness(c *checker.Checker, s system.State, loop []system.Move) string {
	unfair, own := c.Unfair(s, loop)
	switch {
	case !own:
		return "the loop takes a fault or an early timer: the environment need not repeat it"
	case len(unfair) > 0:
		return "the loop is not weakly fair: " + strings.Join(unfair, ", ") + " stay enabled and never move in it"
	}
	return "the loop is weakly fair: every process moves in it or is disabled somewhere on it"
}

// replayLeadsTo judges a trace that records a leads_to property's
// violation: P holds of some handoff at a step after which Q never holds
// of it, and the run either ends where nothing but faults can happen or
// repeats a weakly fair loop. sides is P and Q at each state, from the
// initial one.
func replayLeadsTo(stdout io.Writer, c *checker.Checker, tr *checker.Trace, p *props.Property, sides [][2]uint64, loopStart system.State, atLoop system.Key, s *system.State) int {
	// From which state on is the obligation of each handoff pending to
	// the end: P held there, and Q at no state after it (on a loop, nor
	// at any state the loop repeats).
	from := -1
	var handoff uint64
	last := len(sides) - 1
	for bit := uint64(1); bit < 1<<4; bit <<= 1 {
		for i := 0; i <= last; i++ {
			if sides[i][0]&bit == 0 {
				continue
			}
			lo := i
			if tr.LoopFrom > 0 {
				lo = min(i, tr.LoopFrom)
			}
			met := false
			for j := lo; j <= last; j++ {
				met = met || sides[j][1]&bit != 0
			}
			if !met {
				if from < 0 || i < from {
					from, handoff = i, bit
				}
				break
			}
		}
	}
	which := ""
	if p.PerHandoff && from >= 0 {
		which = fmt.Sprintf(" of handoff %d", bits.TrailingZeros64(handoff))
	}
	switch {
	case from < 0:
		fmt.Fprintf(stdout, "no violation; leads_to %s: Q holds after every state where P does on this trace\n", p.Name)
		return exitOK
	case tr.LoopFrom > 0 && c.Key(s) != atLoop:
		fmt.Fprintf(stdout, "no violation; the loop recorded after step %d does not return to where it started\n", tr.LoopFrom)
		return exitOK
	case tr.LoopFrom > 0:
		unfair, own := c.Unfair(loopStart, tr.Moves[tr.LoopFrom:])
		if !own || len(unfair) > 0 {
			fmt.Fprintf(stdout, "no violation; %s\n", fairness(c, loopStart, tr.Moves[tr.LoopFrom:]))
			return exitOK
		}
		verb := "return"
		if tr.LoopFrom+1 == len(tr.Moves) {
			verb = "returns"
		}
		fmt.Fprintf(stdout, "VIOLATION %s: P holds%s at step %d and Q never after; %s %s to the state after step %d: the loop can repeat forever\n",
			p.Name, which, from, stepSpan(tr.LoopFrom+1, len(tr.Moves)), verb, tr.LoopFrom)
		fmt.Fprintln(stdout, fairness(c, loopStart, tr.Moves[tr.LoopFrom:]))
		return exitViolation
	case ends(c, s):
		fmt.Fprintf(stdout, "VIOLATION %s: P holds%s at step %d and Q never after; the run ends after step %d, where nothing but faults can happen\n",
			p.Name, which, from, len(tr.Moves))
		return exitViolation
	}
	fmt.Fprintf(stdout, "no violation; leads_to %s: P holds%s at step %d and Q not yet, but the run can go on\n", p.Name, which, from)
	return exitOK
}
