package checker

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

// Starting from a trace's state: a reviewer who holds an incident's trace
// asks what else can happen from where it ends. The searches, walks and
// steps by hand of a checker started after a path of moves begin at the state
// the path reaches, and every counterexample they find begins with the
// path's own steps, so that the trace they write replays from the run's
// initial state like any other.

// startAfter moves the checker's start to the state the moves reach from
// the run's initial state. A move that is not enabled where it is taken,
// or a step that violates an invariant on the way, is an error: the search
// would start past a violation it does not report.
func (c *Checker) startAfter(moves []system.Move) error {
	c.start, c.prefix = nil, nil
	s := c.Initial()
	var steps []TraceStep
	for i, m := range moves {
		r, err := c.Apply(&s, m)
		if err != nil {
			return fmt.Errorf("%w: the trace's step %d (%s): %v", system.ErrConfig, i+1, m, err)
		}
		if r.Violation != nil {
			return fmt.Errorf("%w: the trace's step %d (%s) already violates %s: the search would start past it", system.ErrConfig, i+1, m, r.Violation.Invariant)
		}
		steps = append(steps, TraceStep{Move: m, Fired: r.Fired, State: c.DescribeState(&s)})
	}
	st := s
	init := c.System.Initial()
	c.initialText = c.DescribeState(&init)
	c.start, c.prefix = &st, steps
	return nil
}

// Initial is the state the checker's searches, walks and steps by hand start
// from: the run's initial state, or the state a started-after path
// reached.
func (c *Checker) Initial() system.State {
	if c.start != nil {
		return *c.start
	}
	return c.System.Initial()
}

// startedAfter is how many moves of a path the checker starts after (0:
// it starts at the run's initial state).
func (c *Checker) startedAfter() int { return len(c.prefix) }

// withPrefix puts the started-after path's steps before a counterexample's
// own, and the run's initial state at its start.
func (c *Checker) withPrefix(ce *Counterexample) {
	if ce == nil || c.prefix == nil {
		return
	}
	ce.Steps = append(append([]TraceStep(nil), c.prefix...), ce.Steps...)
	ce.Initial = c.initialText
	ce.From = len(c.prefix)
}
