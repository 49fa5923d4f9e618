package system

import (
	"slices"

	"github.com/handoffcheck/handoffcheck/machines"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// The seam: what a driver that runs the composed system on its own
// schedule (the simulator, on a virtual clock) needs beyond the
// explorer's Initial, MovesInto, Step and CheckState. A driver chooses which
// enabled move happens when; the protocol, the physics and the invariants
// stay here, written once.

// NewCoverage counts row firings of a spec's tables; set Log to record
// every firing with its actions.
func NewCoverage(s *spec.Spec) *Coverage { return newCoverage(s) }

// Terminal reports whether a role record has finished: its side reported
// its terminal outcome.
func (c *System) Terminal(s *State, r spec.Role, h int) bool { return c.terminal(s, r, h) }

// Finished reports whether every record of a handoff that was placed is
// terminal.
func (c *System) Finished(s *State, h int) bool { return c.finished(s, h) }

// Budget is the run's full fault budget: a driver that schedules faults
// itself refills a state with it before each step, so that every fault
// and reordering it chooses is enabled.
func (c *System) Budget() Remaining { return c.budget }

// MovesInto appends the moves a state enables to buf, in a fixed order; a
// nil buf gives a new list, and a driver that asks it for every state it
// judges passes the one it reuses.
func (c *System) MovesInto(s *State, buf []Move) []Move {
	var ms MoveSet
	c.Enabled(s, &ms)
	return append(buf, ms.M[:ms.N]...)
}

// EventName names an event of a role.
func EventName(r spec.Role, ev uint8) string {
	if r == spec.Source {
		return machines.SourceEvent(ev).String()
	}
	return machines.DestinationEvent(ev).String()
}

// WaitsForCapacity reports whether side sd of handoff x waits for its
// worker to free capacity, with none of the moves that would take it
// among scheduled: the source's queued prefill (admit), the
// destination's pending reservation or decode not yet running (reserve,
// refuse, promote). A timed driver offers such a side's moves again when
// its worker frees some, instead of learning which kinds take capacity.
func WaitsForCapacity(x *model.Handoff, sd model.Side, scheduled []Move) bool {
	if sd == model.SourceSide {
		return x.Compute == model.ComputeQueued && !slices.ContainsFunc(scheduled, func(m Move) bool { return m.Kind == MvAdmit })
	}
	return (x.Pending || (x.Dst == model.DstActive && !x.Running)) &&
		!slices.ContainsFunc(scheduled, func(m Move) bool {
			return m.Kind == mvReserve || m.Kind == mvRefuse || m.Kind == MvPromote
		})
}
