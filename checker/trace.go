package checker

import (
	"fmt"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// TraceStep is one step of a counterexample: the move, the rows it fired,
// the effects judged, and the state after it.
type TraceStep struct {
	Move   system.Move
	Fired  []system.Firing
	State  []string
	Failed bool // the step on which the invariant failed
}

// Counterexample is the shortest trace from the initial state to a
// violation, rebuilt by replaying the moves on concrete states.
type Counterexample struct {
	Violation *model.Violation
	Initial   []string
	Steps     []TraceStep
	// Loop, for a liveness violation, is the cycle of steps the trap
	// states repeat without ever reaching a drained state.
	Loop []TraceStep
	// Shrunk is set for a random walk shrunk by delta debugging: short,
	// but not proven shortest as a breadth-first trace is.
	Shrunk bool
	// From > 0 says the search started after the first From steps (a
	// trace's, Limits.From): they are the trace's, and only the steps
	// after them are the search's shortest.
	From int
	// Fair, for a fair-liveness violation (fair.go), says what its run
	// never does ("drain", "meet Q"): its loop is weakly fair, and
	// without a loop the run ends where nothing but faults can happen.
	Fair string
}

// Describe renders a firing: "h0 source Pinned --ReaderCompleted--> Released [ReleaseSource, ...] (row 15)".
func (c *Checker) describeFiring(f system.Firing) string {
	acts := make([]string, len(f.Actions))
	for i, a := range f.Actions {
		acts[i] = a.String()
	}
	return fmt.Sprintf("h%d %s %s --%s--> %s [%s] (row %d)", f.Handoff, f.Role,
		c.Protocol().StateName(f.Role, f.From), system.EventName(f.Role, f.Event), c.Protocol().StateName(f.Role, f.To), strings.Join(acts, ", "), f.Row)
}

// pathTo lists the ids from the root to id.
func (e *exploration) pathTo(id uint32) []uint32 {
	var p []uint32
	for {
		p = append(p, id)
		if id == 0 {
			break
		}
		id, _ = e.links.get(id)
	}
	for i, j := 0, len(p)-1; i < j; i, j = i+1, j-1 {
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// keysAlong replays a path of ids in canonical space: each id's key is its
// parent's key with the recorded move applied.
func (e *exploration) keysAlong(path []uint32) []system.Key {
	c := e.c
	keys := []system.Key{e.rootKey}
	var ms system.MoveSet
	for _, id := range path[1:] {
		var s system.State
		c.UnpackTo(&keys[len(keys)-1], &s)
		c.Enabled(&s, &ms)
		t := s
		tx := model.Tx{W: &t.W}
		_, via := e.links.get(id)
		c.ApplyTx(&t, &tx, ms.M[via], nil, ms.Stuck)
		keys = append(keys, c.Key(&t))
	}
	return keys
}

// concreteStep finds a move from a concrete state whose canonical
// successor is want (and, when inv is set, which violates inv), applies it
// and records what happened. With inv set it also returns the violation as
// seen on the concrete state, so that its handoff and worker numbers match
// the trace.
func (c *Checker) concreteStep(s *system.State, want *system.Key, inv string) (TraceStep, bool) {
	step, _, ok := c.concreteStepV(s, want, inv)
	return step, ok
}

func (c *Checker) concreteStepV(s *system.State, want *system.Key, inv string) (TraceStep, *model.Violation, bool) {
	var ms system.MoveSet
	c.Enabled(s, &ms)
	for i := 0; i < ms.N; i++ {
		var t system.State
		j, log := c.applyLogged(s, &t, &ms, i)
		var v *model.Violation
		if inv != "" {
			v = c.JudgeStep(s, &t, &j, ms.M[i])
			if v == nil {
				v = c.CheckState(&t)
			}
			if v == nil || v.Invariant != inv {
				continue
			}
		}
		k := c.Key(&t)
		if want != nil && k != *want {
			continue
		}
		step := TraceStep{Move: ms.M[i], Fired: log, State: c.DescribeState(&t)}
		*s = t
		return step, v, true
	}
	return TraceStep{}, nil, false
}

// applyLogged takes move i of ms from s into t, recording the rows it
// fires, and returns the step's journal and the rows: how a trace's
// steps are taken again on concrete states.
func (c *Checker) applyLogged(s, t *system.State, ms *system.MoveSet, i int) (model.Journal, []system.Firing) {
	*t = *s
	tx := model.Tx{W: &t.W}
	var log []system.Firing
	cov := system.NewCoverage(c.Protocol().Spec())
	cov.Log = &log
	c.ApplyTx(t, &tx, ms.M[i], cov, ms.Stuck)
	return tx.J, log
}

// counterexample rebuilds the trace of a violation found at f.
func (e *exploration) counterexample(f *found) *Counterexample {
	c := e.c
	path := e.pathTo(f.pid)
	keys := e.keysAlong(path)
	s := c.Initial()
	ce := &Counterexample{Violation: f.v, Initial: c.DescribeState(&s)}
	for i := 1; i < len(keys); i++ {
		step, ok := c.concreteStep(&s, &keys[i], "")
		if !ok {
			panic("checker: cannot replay the trace: the step function is not deterministic")
		}
		ce.Steps = append(ce.Steps, step)
	}
	if f.move >= 0 {
		// The failing move from the last canonical state, found again on
		// the concrete state by its outcome.
		var last system.State
		c.UnpackTo(&keys[len(keys)-1], &last)
		var ms system.MoveSet
		c.Enabled(&last, &ms)
		t := last
		tx := model.Tx{W: &t.W}
		c.ApplyTx(&t, &tx, ms.M[f.move], nil, ms.Stuck)
		k := c.Key(&t)
		step, v, ok := c.concreteStepV(&s, &k, f.v.Invariant)
		if !ok {
			panic("checker: cannot replay the failing step")
		}
		ce.Violation = v
		step.Failed = true
		ce.Steps = append(ce.Steps, step)
	} else {
		if f.v.Invariant == model.NameQuiescence {
			if _, v := c.Quiescence(&s); v != nil {
				ce.Violation = v
			}
		} else if v := c.CheckState(&s); v != nil && v.Invariant == f.v.Invariant {
			ce.Violation = v
		}
		if len(ce.Steps) > 0 {
			ce.Steps[len(ce.Steps)-1].Failed = true
		}
	}
	return ce
}

// Format renders a counterexample as text: the violation, the initial
// state, then each step with the rows it fired and only the lines of the
// state that changed.
func (c *Checker) formatCounterexample(ce *Counterexample) string {
	return c.formatCounterexampleFull(ce, false)
}

// formatCounterexampleFull is formatCounterexample that, with full, prints
// every line of the state after each step instead of the changed fields.
func (c *Checker) formatCounterexampleFull(ce *Counterexample, full bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "VIOLATION %s\n  %s\n", ce.Violation.Invariant, ce.Violation.Error())
	fmt.Fprintf(&b, "attempts: %s\n", strings.Join(c.Attempts(), " "))
	if ce.Fair != "" {
		entered := len(ce.Steps)
		for i, st := range ce.Steps {
			if st.Failed {
				entered = i + 1
			}
		}
		if len(ce.Loop) > 0 {
			fmt.Fprintf(&b, "a weakly fair run (%s; after step %d a fair run need never %s), then a loop of %s in which every process moves or is disabled somewhere, that never does:\n",
				plural(len(ce.Steps), "step"), entered, ce.Fair, plural(len(ce.Loop), "step"))
		} else {
			fmt.Fprintf(&b, "a run (%s; after step %d a fair run need never %s) that ends where nothing but faults can happen, and never does:\n",
				plural(len(ce.Steps), "step"), entered, ce.Fair)
		}
	} else if len(ce.Loop) > 0 {
		entered := len(ce.Steps)
		for i, st := range ce.Steps {
			if st.Failed {
				entered = i + 1
			}
		}
		fmt.Fprintf(&b, "trace into the trap (%s, entered at step %d), then a loop of %s that never drains:\n",
			plural(len(ce.Steps), "step"), entered, plural(len(ce.Loop), "step"))
	} else if ce.From > 0 {
		kind := "shortest"
		if ce.Shrunk {
			kind = "shrunk"
		}
		fmt.Fprintf(&b, "trace (%d steps): the %s the search started after, then the %s from there:\n",
			len(ce.Steps), plural(ce.From, "step"), kind)
	} else if ce.Shrunk {
		fmt.Fprintf(&b, "shrunk trace (%d steps):\n", len(ce.Steps))
	} else {
		fmt.Fprintf(&b, "shortest trace (%d steps):\n", len(ce.Steps))
	}
	b.WriteString("  initial:\n")
	for _, l := range ce.Initial {
		fmt.Fprintf(&b, "      %s\n", l)
	}
	prev := ce.Initial
	write := func(i int, st TraceStep) {
		mark := ""
		if st.Failed {
			mark = "   <-- " + ce.Violation.Invariant
		}
		fmt.Fprintf(&b, "  %d. %s%s\n", i+1, st.Move, mark)
		for _, f := range st.Fired {
			fmt.Fprintf(&b, "      fired %s\n", c.describeFiring(f))
		}
		for j, l := range st.State {
			if full || j >= len(prev) {
				fmt.Fprintf(&b, "      %s\n", l)
			} else if d := ChangedFields(prev[j], l); d != "" {
				fmt.Fprintf(&b, "      %s\n", d)
			}
		}
		prev = st.State
	}
	for i, st := range ce.Steps {
		if ce.From > 0 && i == ce.From {
			b.WriteString("  (the search started here)\n")
		}
		write(i, st)
	}
	if len(ce.Loop) > 0 {
		b.WriteString("  loop:\n")
		for i, st := range ce.Loop {
			write(len(ce.Steps)+i, st)
		}
		fmt.Fprintf(&b, "  (back to the state after step %d; the loop repeats forever)\n", len(ce.Steps))
	}
	return b.String()
}

// ChangedFields compares two renderings of the same handoff or worker
// ("h0 source=Idle prefill=0 ...") and returns the name with only the
// fields that changed: new values as key=value, fields that went away as
// -key. It returns "" when nothing changed.
func ChangedFields(prev, now string) string {
	if prev == now {
		return ""
	}
	pf, nf := strings.Fields(prev), strings.Fields(now)
	if len(pf) == 0 || len(nf) == 0 || pf[0] != nf[0] {
		return now
	}
	old := map[string]string{}
	var oldKeys []string
	for _, f := range pf[1:] {
		k, v, _ := strings.Cut(f, "=")
		old[k] = v
		oldKeys = append(oldKeys, k)
	}
	seen := map[string]bool{}
	var parts []string
	for _, f := range nf[1:] {
		k, v, _ := strings.Cut(f, "=")
		seen[k] = true
		if ov, ok := old[k]; !ok || ov != v {
			parts = append(parts, f)
		}
	}
	for _, k := range oldKeys {
		if !seen[k] {
			parts = append(parts, "-"+k)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return nf[0] + ": " + strings.Join(parts, " ")
}

// plural renders a count with its noun: "1 step", "7 steps".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
