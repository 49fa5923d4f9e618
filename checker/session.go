package checker

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Session steps one run by hand, one move at a time: the engine of
// scenario files and of trace replay. Every step is judged by the same
// invariants the explorer uses.
type Session struct {
	c *Checker
	s system.State
}

// NewSession starts a session in the initial state.
func (c *Checker) NewSession() *Session {
	return &Session{c: c, s: c.Initial()}
}

// State is the session's current state: the checker's DescribeState,
// Moves and Drained read it.
func (s *Session) State() *system.State { return &s.s }

// checker is the checker the session steps.
func (s *Session) checker() *Checker { return s.c }

// StepResult is what one move did.
type StepResult struct {
	Move      system.Move
	Fired     []system.Firing
	Journal   model.Journal
	Violation *model.Violation
	// Triggers is the invariants' triggers the move fired (model.Triggers).
	Triggers model.Triggers
}

// Apply performs a move if the state enables it; the state is unchanged
// and an error returned otherwise. A violation is reported in the result;
// the state still advances, so that a scenario can show what follows.
func (s *Session) Apply(m system.Move) (StepResult, error) {
	var log []system.Firing
	cov := system.NewCoverage(s.c.Protocol().Spec())
	cov.Log = &log
	stale := s.c.StaleDelivery(&s.s, m)
	j, v, err := s.c.Step(&s.s, m, cov)
	if err != nil {
		return StepResult{}, err
	}
	trig := j.Fired()
	if stale {
		trig |= model.TrigStaleDelivery
	}
	if v == nil {
		v = s.c.CheckState(&s.s)
	}
	if v == nil {
		var quiescent bool
		if quiescent, v = s.c.Quiescence(&s.s); quiescent {
			trig |= s.c.quiescenceFired(&s.s)
		}
	}
	return StepResult{Move: m, Fired: log, Journal: j, Violation: v, Triggers: trig}, nil
}

// FormatStep renders a step result: the move, the rows it fired and the
// violation, if any.
func (s *Session) FormatStep(r StepResult) []string {
	out := []string{r.Move.String()}
	for _, f := range r.Fired {
		out = append(out, "  fired "+s.c.describeFiring(f))
	}
	if r.Violation != nil {
		out = append(out, fmt.Sprintf("  VIOLATION %s", r.Violation.Error()))
	}
	return out
}
