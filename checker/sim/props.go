package sim

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/model"
)

// Properties of a file judged on the clock (Options.Props). Each request
// is a subject of the clock: its states are those of its window, the view
// its always properties are judged on, stamped with the virtual time of
// the step that made them. A request's attempts (a retry) are one subject:
// an attempt retires, which closes its obligations (met or missed), before
// the next one arrives.

// observeProps judges the state a step of r made on the clock. An
// expression that cannot be evaluated there is a violation of its
// property.
func (s *Sim) observeProps(r *request) *model.Violation {
	p, err := s.clock.Observe(s.chk, &r.st, r.Index, s.now, s.now)
	if err != nil {
		return &model.Violation{Invariant: p.Name, Handoff: 0, Worker: -1, Detail: err.Error()}
	}
	return nil
}

// missed fails the run at the first obligation the clock found missed:
// at its deadline when the clock passed it, or when its request (r) was
// gone with it open.
func (s *Sim) missed(r *request) {
	ms := s.clock.Take()
	if len(ms) == 0 || s.stop {
		return
	}
	if s.kept == nil {
		// The run stops at the first.
		ms = ms[:1]
	}
	for _, m := range ms {
		q := r
		if q == nil {
			q = s.active[m.Subject]
		}
		at := m.Deadline
		if m.GoneAt >= 0 {
			at = m.GoneAt
		}
		now := s.now
		s.now = at
		s.fail(q, m.Prop.Name, m.Detail())
		s.now = now
		if s.stop {
			return
		}
	}
}

// withProps adds the properties' verdicts on the run to its result.
func (s *Sim) withProps(res *Result) *Result {
	if s.clock == nil {
		return res
	}
	violated := ""
	if res.Violation != nil {
		violated = res.Violation.Invariant
	}
	res.Props = s.clock.Report(violated, func(i int) string { return fmt.Sprintf("request %d", i) })
	return res
}

// withInvariants adds to a run's result the built-in invariants it
// exercised (cluster.Exercise): those whose trigger its steps fired.
func (s *Sim) withInvariants(res *Result) *Result {
	violated := ""
	if res.Violation != nil {
		violated = res.Violation.Invariant
	}
	res.Invariants = s.ex.Report(cluster.TimedInvariants(s.faultFree), s.cfg.AttemptWorld(0, 0), violated, func(i int) string { return fmt.Sprintf("request %d", i) })
	if s.kept != nil && !s.stop {
		// The run went past its violations to the end of the workload.
		res.Invariants.Stopped = false
	}
	return res
}
