package cluster

import (
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Stepper takes the moves of requests' worlds for a driver: the composed
// system, the rows the last move fired and the facts it made observable.
// Every driver steps through one, so that what a step is (a full fault
// budget, the firings kept, the facts logged) has one definition.
type Stepper struct {
	chk    *system.System
	cov    *system.Coverage
	fires  []system.Firing
	labels []obslog.Label
	// fired is the invariants' triggers the last move fired (Fired).
	fired model.Triggers
	// tx is the last Apply's transaction, for JudgeApplied.
	tx model.Tx
}

// NewStepper steps with chk, counting rows in cov (which logs each step's
// firings into the stepper).
func NewStepper(chk *system.System, cov *system.Coverage) *Stepper {
	s := &Stepper{chk: chk, cov: cov}
	cov.Log = &s.fires
	return s
}

// Checker is the composed system the stepper steps.
func (s *Stepper) Checker() *system.System { return s.chk }

// Coverage is the rows the stepper's moves fired.
func (s *Stepper) Coverage() *system.Coverage { return s.cov }

// refill gives the world its whole fault budget before a move: a driver's
// environment strikes faults when its plan or its world says, not when a
// budget allows, and a budget spent by one move must not hide the next
// move's faults.
func (s *Stepper) refill(st *system.State) {
	st.B = s.chk.Budget()
	s.fires = s.fires[:0]
}

// Step takes move m if st enables it, judging the step's invariants; it
// reports false, with st unchanged, when st does not.
func (s *Stepper) Step(st *system.State, m system.Move) (*model.Violation, bool) {
	s.refill(st)
	j, v, err := s.chk.Step(st, m, s.cov)
	s.fired = j.Fired()
	return v, err == nil
}

// Force applies move m whether or not st enables it, for a move whose
// preconditions hold outside the world (another process, the plan),
// judging the step's invariants: what the environment does on its own
// schedule whatever the protocol's state (a worker restarting, a cache
// evicting the blocks a finished side keeps). The refilled budget has
// room for a fault move.
func (s *Stepper) Force(st *system.State, m system.Move) *model.Violation {
	s.refill(st)
	before := *st
	tx := model.Tx{W: &st.W}
	s.chk.ApplyTx(st, &tx, m, s.cov, true)
	v := s.chk.JudgeStep(&before, st, &tx.J, m)
	s.fired = tx.J.Fired()
	return v
}

// Apply takes move m into st, a copy of before whose budget is whole,
// as Force does, but does not judge the step's invariants: a driver that
// tries many moves and keeps few (conform's search, which keeps only the
// moves that explain a fact or log nothing) judges only those it keeps,
// with JudgeApplied, before it applies another. Fired and Firings are
// the step's, as after Force.
func (s *Stepper) Apply(before, st *system.State, m system.Move) {
	s.refill(st)
	// Only the journal's first N effects are ever read: a transaction
	// reused is cleared by its count, not by its 48 effects.
	s.tx.W, s.tx.J.N = &st.W, 0
	s.chk.ApplyTx(st, &s.tx, m, s.cov, true)
	s.fired = s.tx.J.Fired()
}

// JudgeApplied is the violation of the step the last Apply took, from
// before to st (neither changed since): what Force would have returned.
func (s *Stepper) JudgeApplied(before, st *system.State, m system.Move) *model.Violation {
	return s.chk.JudgeStep(before, st, &s.tx.J, m)
}

// Fired is the invariants' triggers the last Step or Force fired
// (model.Triggers; none when Step refused the move): a driver notes them
// (Exercise) for the invariants its run exercised.
func (s *Stepper) Fired() model.Triggers { return s.fired }

// Firings is the rows the last Step or Force fired.
func (s *Stepper) Firings() []system.Firing { return s.fires }

// Observe is the facts the last move, from before to after, made
// observable (obslog.Observe), every process's.
func (s *Stepper) Observe(before, after *system.State, m system.Move) []obslog.Label {
	s.labels = obslog.Observe(s.labels[:0], 0, before, after, m, s.fires)
	return s.labels
}

// Initial is the world of one request of world configuration wc before
// its first move, its fault budget whole.
func (s *Stepper) Initial(wc *model.Config) system.State {
	st := s.chk.Initial()
	st.W = model.NewWorld(wc)
	st.B = s.chk.Budget()
	return st
}

// Enables says whether st enables m with its fault budget whole
// (refilled in st), as Step asks it, and leaves in ms every move st
// enables: a driver that asks before a step has the moves to schedule
// next when the answer is no, without an allocation.
func (s *Stepper) Enables(st *system.State, m system.Move, ms *system.MoveSet) bool {
	st.B = s.chk.Budget()
	s.chk.Enabled(st, ms)
	for i := 0; i < ms.N; i++ {
		if ms.M[i] == m {
			return true
		}
	}
	return false
}

// Moves appends to buf the moves st enables with its fault budget whole
// (refilled in st).
func (s *Stepper) Moves(st *system.State, buf []system.Move) []system.Move {
	st.B = s.chk.Budget()
	return s.chk.MovesInto(st, buf)
}
