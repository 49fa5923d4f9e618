package checker

import (
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Checker is the search over one run of the composed system: the
// explorer, walks and steps by hand (Apply) are its methods; the states, moves and
// invariants they work on are the system's (checker/system).
type Checker struct {
	*system.System
	// start, when set, is where searches, walks and steps by hand start: the
	// state after prefix (from.go); initialText describes the run's own
	// initial state, which counterexamples then start from.
	start       *system.State
	prefix      []TraceStep
	initialText []string
	// judge is the configuration's judge of every state (Config.Judge),
	// which checkStateFrom asks after the state invariants.
	judge system.StateJudge
}

// checkStateFrom is CheckState on a successor s of a state parent that
// passed it, prec being parent's records: the state invariants judge only
// what the step changed (model.StateClearFrom), all of them only when that
// objects, so that the violation reported is CheckState's own; then the
// configuration's judge, as CheckState asks it.
func (c *Checker) checkStateFrom(s, parent *system.State, prec *model.Records) *model.Violation {
	rec := c.Records(s)
	if !model.StateClearFrom(&parent.W, &s.W, prec, &rec) {
		if v := model.CheckState(&s.W, &rec); v != nil {
			return v
		}
	}
	if c.judge == nil {
		return nil
	}
	return c.judge.Judge(c.System, s)
}

// New prepares a run of a configuration with a protocol.
func New(p *system.Protocol, cfg *system.Config, run system.Run) (*Checker, error) {
	s, err := system.New(p, cfg, run)
	if err != nil {
		return nil, err
	}
	return &Checker{System: s, judge: cfg.Judge}, nil
}
