package checker

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// StepResult is what one move did.
type StepResult struct {
	Move      system.Move
	Fired     []system.Firing
	Journal   model.Journal
	Violation *model.Violation
	// Triggers is the invariants' triggers the move fired (model.Triggers).
	Triggers model.Triggers
}

// Apply steps a run by hand, one move at a time, from the checker's
// Initial state: the engine of scenario files, of trace replay and of the
// explorer. Every step is judged by the same invariants the search uses.
// It performs a move if the state enables it; the state is unchanged and
// an error returned otherwise. A violation is reported in the result; the
// state still advances, so that a scenario can show what follows.
func (c *Checker) Apply(s *system.State, m system.Move) (StepResult, error) {
	var log []system.Firing
	cov := system.NewCoverage(c.Protocol().Spec())
	cov.Log = &log
	j, v, err := c.Step(s, m, cov)
	if err != nil {
		return StepResult{}, err
	}
	trig := j.Fired()
	if v == nil {
		v = c.CheckState(s)
	}
	if v == nil {
		var quiescent bool
		if quiescent, v = c.Quiescence(s); quiescent {
			trig |= c.quiescenceFired(s)
		}
	}
	return StepResult{Move: m, Fired: log, Journal: j, Violation: v, Triggers: trig}, nil
}

// FormatStep renders a step result: the move, the rows it fired and the
// violation, if any.
func (c *Checker) FormatStep(r StepResult) []string {
	out := []string{r.Move.String()}
	for _, f := range r.Fired {
		out = append(out, "  fired "+c.describeFiring(f))
	}
	if r.Violation != nil {
		out = append(out, fmt.Sprintf("  VIOLATION %s", r.Violation.Error()))
	}
	return out
}
