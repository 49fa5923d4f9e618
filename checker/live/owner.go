package live

import (
	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
)

// Who takes a move of an attempt's world in a live run: the process whose
// state and ledgers the move changes. Every process steps its own window
// onto each of its attempts with the checker's moves, but takes only the
// moves it owns; the others reach it as frames (a fact, a route, a
// cancel, a peer's restart) or not at all.
type owner uint8

const (
	ownRouter owner = iota
	ownSource
	ownDestination
	ownNobody // environment faults: a live run's faults are real
)

func sideOwner(s model.Side) owner {
	if s == model.SourceSide {
		return ownSource
	}
	return ownDestination
}

// ownerOf is who takes a move: the composed system's answer
// (system.Move.Taker), in live's processes.
func ownerOf(m system.Move, x *model.Handoff) owner {
	sd, router, ok := m.Taker(x)
	switch {
	case !ok:
		return ownNobody
	case router:
		return ownRouter
	}
	return sideOwner(sd)
}

var sideNames = [2]string{"source", "destination"}

func msgNamed(name string) (model.Msg, bool) {
	for m := model.Msg(1); m < model.NumMsgs; m++ {
		if m.String() == name {
			return m, true
		}
	}
	return 0, false
}

func regNamed(name string) (model.Reg, bool) {
	for r := model.RegNone; r <= model.RegClosed; r++ {
		if r.String() == name {
			return r, true
		}
	}
	return 0, false
}

func srcHoldNamed(name string) (model.SrcHold, bool) {
	for h := model.SrcNone; h <= model.SrcPinned; h++ {
		if h.String() == name {
			return h, true
		}
	}
	return 0, false
}

func dstHoldNamed(name string) (model.DstHold, bool) {
	for h := model.DstNone; h <= model.DstActive; h++ {
		if h.String() == name {
			return h, true
		}
	}
	return 0, false
}

// stepper takes the moves of attempts' windows: the composed system, the
// rows that fired in the last step, and the facts a step made observable.
type stepper struct {
	steps *cluster.Stepper
	chk   *system.System
	cov   *system.Coverage
	lbls  []obslog.Label
	cfg   *cluster.Config
	// worlds are the prepared world configurations by prompt size and
	// prefix hit.
	worlds map[[2]model.Tokens]*model.Config
	// ms is the moves the window last asked about (enables) enables.
	ms system.MoveSet
}

// newStepper steps windows of cfg with p's tables (nil: the generated
// machines).
func newStepper(p *system.Protocol, cfg *cluster.Config) (*stepper, error) {
	if p == nil {
		p = system.Generated()
	}
	chk, err := cfg.Checker(p)
	if err != nil {
		return nil, err
	}
	s := &stepper{chk: chk, cov: system.NewCoverage(p.Spec()), cfg: cfg, worlds: map[[2]model.Tokens]*model.Config{}}
	s.steps = cluster.NewStepper(chk, s.cov)
	return s, nil
}

// enables says whether st enables m with its fault budget whole (as
// Step asks it, refilling st's budget), and keeps the moves st enables
// (enabled) until the next question. A worker asks it before a step:
// the moves it scheduled for attempts waiting for room are refused when
// another attempt took the room first, most of them under load, and a
// refusal by Step costs an error's text; the moves st enables then are
// the ones to schedule next.
func (s *stepper) enables(st *system.State, m system.Move) bool {
	return s.steps.Enables(st, m, &s.ms)
}

// enabled is the moves the state last asked about (enables) enables.
func (s *stepper) enabled() []system.Move { return s.ms.M[:s.ms.N] }

// world is the world configuration of an attempt of a prompt's size
// whose decode worker holds hit tokens of its prefix
// (cluster.Config.AttemptWorld), prepared. Every attempt of that size
// and hit shares it: what differs between them in it is only what the window
// shows held outside the attempt, which the window sets before each of
// the attempt's steps (cluster.Window.Project), and a world
// configuration is large enough that making one per attempt cost the
// workers a tenth of their time.
func (s *stepper) world(prompt, hit model.Tokens) (*model.Config, error) {
	key := [2]model.Tokens{prompt, hit}
	if wc := s.worlds[key]; wc != nil {
		return wc, nil
	}
	wc := s.cfg.AttemptWorld(prompt, hit)
	if err := wc.Prepare(); err != nil {
		return nil, err
	}
	s.worlds[key] = wc
	return wc, nil
}

// take takes a move of a window: Step, which refuses a move the window
// does not enable, or, forced, Apply, for a move whose preconditions
// live in another process. The window's step invariants are not judged:
// it holds the peer's side only as this process last heard of it, and an
// invariant across both sides is the conformance judge's to decide, from
// every process's log. It reports whether the move was taken.
func (s *stepper) take(st *system.State, m system.Move, force bool) bool {
	if force {
		s.steps.Force(st, m)
		return true
	}
	_, ok := s.steps.Step(st, m)
	return ok
}

// observed is the facts the last step made observable to the process
// that logs as by.
func (s *stepper) observed(before, after *system.State, m system.Move, by obslog.Who) []obslog.Label {
	s.lbls = s.lbls[:0]
	for _, l := range s.steps.Observe(before, after, m) {
		if l.By == by {
			s.lbls = append(s.lbls, l)
		}
	}
	return s.lbls
}
