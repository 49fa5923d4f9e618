package checker

import (
	"context"

	"github.com/handoffcheck/handoffcheck/checker/system"
)

// shortenReduced shortens a counterexample of a reduced search. The
// reduction takes a handoff's own moves first, so the breadth-first trace
// to a violation may carry moves of another handoff that the violation
// does not need; those are dropped while the rest still breaks the same
// invariant first. The result is marked shrunk: no longer proven shortest.
func (c *Checker) shortenReduced(ce *Counterexample) *Counterexample {
	if ce == nil || len(ce.Steps) == 0 || ce.Violation == nil {
		return ce
	}
	moves := make([]system.Move, len(ce.Steps))
	for i := range ce.Steps {
		moves[i] = ce.Steps[i].Move
	}
	sh := c.shrink(moves, ce.Violation.Invariant)
	if sh.Violation == nil || sh.Violation.Invariant != ce.Violation.Invariant || len(sh.Steps) >= len(ce.Steps) {
		return ce
	}
	return sh
}

// confirmShortest gives a reduced search's violation the trace the full
// search would give. The reduced search reached a violation L steps
// deep, and that trace is a path of the full state graph too, so the
// full search meets its first violation while expanding a level no
// deeper than L: the full search bounded there is the full search up to
// its first violation, and reports what it would (the same invariant,
// the same shortest trace). A reduced search that finds nothing needs
// no second search; one that finds a violation costs at most the full
// search's way to it on top.
func (c *Checker) confirmShortest(ctx context.Context, lim Limits, r *Result) {
	full := lim
	full.Reduce = false
	full.Checkpoint, full.Resume = "", ""
	full.MaxDepth = len(r.Violation.Steps) + 1
	if lim.MaxDepth > 0 {
		full.MaxDepth = min(full.MaxDepth, lim.MaxDepth)
	}
	f := c.explore(ctx, full, nil)
	r.Stats.ConfirmStates = f.Stats.States
	if f.Violation != nil {
		r.Violation = f.Violation
	}
}
