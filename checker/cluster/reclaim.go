package cluster

import (
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/machines"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// The timed obligations a side owes once an attempt is over for it, the
// same in every driver on a clock: the simulator opens and judges them on
// its virtual clock, live names them when its attempts stop making
// progress. NameBoundedReclaim is a timed property of docs/lifecycle.md
// section 4; NameBoundedGiveUp goes beyond the contract's list.
const (
	NameBoundedReclaim = "BoundedReclaim"
	NameBoundedGiveUp  = "BoundedGiveUp"
)

// Holds is what a side owes back and a word for it. Without decode, what
// BoundedReclaim asks once the peer reached its terminal outcome:
// everything the side holds for the attempt (the source: its compute, its
// pin, its router's booking and its in-flight count; the destination,
// until it activated: its reservation or its queued request for one, its
// router's booking and its in-flight count; an activated destination
// decodes on, and what it then holds is the request's). With decode, what
// BoundedGiveUp asks: everything it holds for the request, an activated
// destination's decode included.
func Holds(x *model.Handoff, sd model.Side, decode bool) (bool, string) {
	if sd == model.SourceSide {
		switch {
		case x.Src == model.SrcPinned:
			return true, "its pinned source blocks"
		case x.Src == model.SrcActive || x.Compute == model.ComputeQueued || x.Compute == model.ComputeRunning:
			return true, "its prefill compute"
		case x.Life[model.ResPrefillBooking] == model.Held:
			return true, "its prefill router booking"
		case x.InFlight[model.SourceSide]:
			return true, "the request, counted in flight"
		}
		return false, ""
	}
	switch {
	case decode && x.Dst == model.DstActive:
		return true, "its active decode blocks"
	case decode && x.Running:
		return true, "its decode slot"
	case !decode && (x.Dst == model.DstActive || x.Activated):
		return false, ""
	case x.Dst == model.DstReserved:
		return true, "its destination reservation"
	case x.Pending:
		return true, "its queued reservation request"
	case x.Life[model.ResDecodeBooking] == model.Held:
		return true, "its decode router booking"
	case x.InFlight[model.DestinationSide]:
		return true, "the request, counted in flight"
	}
	return false, ""
}

// GivesUp reports whether a row took an event by which its own side learns
// the attempt is over: the client's cancel reaching it, its own abort, the
// failure of the transfer it runs, its core refusing to reserve, or one of
// its own deadlines (a heartbeat is not one). The row may ignore the
// event; BoundedGiveUp then judges what the side keeps holding.
func GivesUp(f *system.Firing) bool {
	if f.Role == spec.Source {
		switch machines.SourceEvent(f.Event) {
		case machines.SourceEventClientCancelled, machines.SourceEventLocalAbort, machines.SourceEventTransferFailed,
			machines.SourceEventLeaseExpired, machines.SourceEventBootstrapExpired, machines.SourceEventTransferTimeout:
			return true
		}
		return false
	}
	switch machines.DestinationEvent(f.Event) {
	case machines.DestinationEventClientCancelled, machines.DestinationEventLocalAbort, machines.DestinationEventTransferFailed,
		machines.DestinationEventReservationRefused,
		machines.DestinationEventReservationExpired, machines.DestinationEventTransferTimeout:
		return true
	}
	return false
}
