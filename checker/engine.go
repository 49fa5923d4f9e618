package checker

import "github.com/handoffcheck/handoffcheck/checker/system"

// Checker is the search over one run of the composed system: the
// explorer, walks and sessions are its methods; the states, moves and
// invariants they work on are the system's (checker/system).
type Checker struct {
	*system.System
	// start, when set, is where searches, walks and sessions start: the
	// state after prefix (from.go); initialText describes the run's own
	// initial state, which counterexamples then start from.
	start       *system.State
	prefix      []TraceStep
	initialText []string
}

// New prepares a run of a configuration with a protocol.
func New(p *system.Protocol, cfg *system.Config, run system.Run) (*Checker, error) {
	s, err := system.New(p, cfg, run)
	if err != nil {
		return nil, err
	}
	return &Checker{System: s}, nil
}
