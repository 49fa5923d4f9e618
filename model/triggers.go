package model

import "github.com/handoffcheck/handoffcheck/spec"

// Triggers is a set of the events that make invariants' antecedents hold.
// A search ORs into it what every transition fired, so that a report can
// say which invariants were exercised and which held only because their
// trigger never happened (vacuously). One bit per effect kind, one per
// resource beginning and one per resource ending, and the events only the
// checker sees (a stale fact delivered, a quiescent state, the liveness
// check).
type Triggers uint64

const (
	// Bits 0..31 are the effect kinds (1 << kind).
	trigBeganBase = 32
	trigEndedBase = trigBeganBase + int(NumRes)
	trigNextBase  = trigEndedBase + int(NumRes)
)

const (
	// TrigFailedTransfer: a step recorded an effect of a transfer that
	// had failed (a pin ended, pages were freed or the destination
	// activated after it failed).
	TrigFailedTransfer Triggers = 1 << (trigNextBase + iota)
	// TrigStaleDelivery: a fact was delivered to a record that had
	// already finished (the checker's AttemptIsolation judges it).
	TrigStaleDelivery
	// TrigQuiescent: a quiescent state was judged.
	TrigQuiescent
	// TrigFaultFreeQuiescent: a quiescent state reached without any
	// fault was judged.
	TrigFaultFreeQuiescent
	// TrigLiveness: the explored graph was judged for liveness.
	TrigLiveness
	trigEnd
)

// trigBits is how many bits the triggers use (a test holds it to trigEnd).
const trigBits = trigNextBase + 5

// A kind must fit below the resource bits, and every bit in the word.
var (
	_ = [trigBeganBase - int(EffRemoved) - 1]struct{}{}
	_ = [64 - trigBits]struct{}{}
)

// KindFired is the trigger of an effect kind.
func KindFired(k EffectKind) Triggers { return 1 << k }

// BeganFired is the trigger of a resource beginning.
func BeganFired(r Res) Triggers { return 1 << (trigBeganBase + int(r)) }

// EndedFired is the trigger of a resource ending.
func EndedFired(r Res) Triggers { return 1 << (trigEndedBase + int(r)) }

// Fired is the triggers a step's effects fire. The search calls it on
// every transition: one pass over the effects the step invariants have
// just read, still in cache.
func (j *Journal) Fired() Triggers {
	var t Triggers
	if j.Stale {
		t |= TrigStaleDelivery
	}
	for i := 0; i < j.N; i++ {
		e := &j.E[i]
		t |= 1 << e.Kind
		// Only EffBegin and EffEnd name a resource (the others leave Res
		// zero, which is ResCompute).
		switch e.Kind {
		case EffBegin:
			t |= 1 << (trigBeganBase + int(e.Res))
		case EffEnd:
			t |= 1 << (trigEndedBase + int(e.Res))
		}
		if e.Xfer == XferFailed {
			t |= TrigFailedTransfer
		}
	}
	return t
}

// Trigger is what exercises an invariant: the events whose occurrence it
// judges (its antecedent). An invariant that is not an implication, one
// that judges every state whatever happened, is Unconditional instead.
type Trigger struct {
	// Fires holds the events of which any one exercises the invariant.
	Fires Triggers
	// Never says what did not happen when none of them fired, e.g. "no
	// transfer started".
	Never string
	// Unconditional says why the invariant has no trigger (what it
	// judges every time); Fires is then empty.
	Unconditional string
	// Inapplicable, when set, says why a configuration leaves the
	// invariant nothing to judge whatever fires ("" when it applies);
	// Unless says which configurations those are, for the docs.
	Inapplicable func(*Config) string
	Unless       string
}

// Exercised reports whether an invariant's trigger fired in a run that
// fired these triggers, under this configuration; why is what did not
// happen when it did not. An unconditional invariant is always exercised.
func (inv *Invariant) Exercised(fired Triggers, cfg *Config) (ok bool, why string) {
	t := &inv.Trigger
	if t.Unconditional != "" {
		return true, ""
	}
	if t.Inapplicable != nil && cfg != nil {
		if why := t.Inapplicable(cfg); why != "" {
			return false, why
		}
	}
	if fired&t.Fires != 0 {
		return true, ""
	}
	return false, t.Never
}

// triggerWellFormed reports whether an invariant has a trigger or says
// why it is unconditional, and not both.
func (t *Trigger) wellFormed() bool {
	if t.Unconditional != "" {
		return t.Fires == 0 && t.Never == "" && t.Inapplicable == nil && t.Unless == ""
	}
	return t.Fires != 0 && t.Never != "" && t.Fires&^(trigEnd-1) == 0 && (t.Inapplicable == nil) == (t.Unless == "")
}

func notDestinationFirst(c *Config) string {
	if c.Policy != spec.DestinationFirst {
		return "the policy is not destination-first"
	}
	return ""
}

func exemptEngine(c *Config) string {
	if c.Engine.Traits().ExemptFromFaultFreeCompletion() {
		return "the engine cannot reserve, so it is exempt"
	}
	return ""
}
