package conform

import (
	"fmt"
	"slices"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
)

// physics gives a fact the model's own operation, where it has one: what
// the worker physically did when it logged the fact, whatever its tables
// say. When no behavior of the tables explains a fact, the judge performs
// this operation in the states that explained the facts before it and
// names the invariant it breaks there; a fact the physics allows and the
// tables refuse is a protocol deviation, reported with what the tables
// allowed instead.
var physics = [obslog.NumKinds]func(tx *model.Tx, sd model.Side, f *obslog.Fact){
	obslog.RequestAccepted:   func(tx *model.Tx, sd model.Side, _ *obslog.Fact) { tx.AcceptRequest(0, sd) },
	obslog.PrefillDispatched: func(tx *model.Tx, sd model.Side, _ *obslog.Fact) { tx.StartPrefill(0, sd) },
	obslog.Reserved: func(tx *model.Tx, sd model.Side, _ *obslog.Fact) {
		if !tx.W.H[0].Pending {
			tx.RequestReservation(0, sd)
		}
		tx.Reserve(0)
	},
	obslog.Registered: func(tx *model.Tx, sd model.Side, _ *obslog.Fact) {
		if sd == model.SourceSide {
			tx.RegisterSource(0, sd)
		} else {
			tx.RegisterDestination(0, sd)
		}
	},
	obslog.Pinned:          func(tx *model.Tx, sd model.Side, _ *obslog.Fact) { tx.PinSource(0, sd) },
	obslog.TransferStarted: func(tx *model.Tx, sd model.Side, _ *obslog.Fact) { tx.StartTransfer(0, sd, sd) },
	obslog.TransferDone:    func(tx *model.Tx, _ model.Side, _ *obslog.Fact) { tx.CompleteTransfer(0) },
	obslog.TransferFailed:  func(tx *model.Tx, _ model.Side, _ *obslog.Fact) { tx.FailTransfer(0) },
	obslog.Activated:       func(tx *model.Tx, sd model.Side, _ *obslog.Fact) { tx.ActivateDestination(0, sd) },
	obslog.Stored: func(tx *model.Tx, sd model.Side, _ *obslog.Fact) {
		if sd == model.SourceSide {
			tx.PublishCached(0, sd)
		} else {
			tx.PublishStored(0, sd)
		}
	},
	obslog.PrefillStopped: func(tx *model.Tx, sd model.Side, _ *obslog.Fact) { tx.StopPrefill(0, sd) },
	// The cause of a release is what the source had learned by then, as
	// its own log says (releaseCause).
	obslog.SourceReleased:      func(tx *model.Tx, sd model.Side, f *obslog.Fact) { tx.ReleaseSource(0, sd, model.Cause(f.Timer)) },
	obslog.ReservationReleased: func(tx *model.Tx, sd model.Side, _ *obslog.Fact) { tx.ReleaseDestination(0, sd, model.CauseAbort) },
	obslog.DecodeReleased:      func(tx *model.Tx, sd model.Side, _ *obslog.Fact) { tx.ReleaseActive(0, sd) },
	obslog.OutcomeReported: func(tx *model.Tx, sd model.Side, f *obslog.Fact) {
		ok := f.Outcome == model.OutcomeOK
		if sd == model.SourceSide {
			tx.ReportSourceOutcome(0, sd, ok)
		} else {
			tx.ReportDecodeOutcome(0, sd, ok)
		}
	},
}

// physical performs a fact's operation in a node's world and judges the
// step and the state; nil when it breaks nothing or has no operation.
func (j *judge) physical(a *attempt, n *node, f *obslog.Fact) (v *model.Violation) {
	op := physics[f.Kind]
	if op == nil && f.Kind != obslog.Removed {
		return nil
	}
	sd := model.SourceSide
	if j.h.Processes[f.Proc].Role == obslog.RoleDecode {
		sd = model.DestinationSide
	}
	if f.Kind == obslog.Removed {
		// Removed is published only for what the index advertises: the
		// model's eviction never publishes it otherwise, so a Removed of
		// blocks not advertised is judged here.
		x := &n.st.W.H[0]
		if x.Worker(sd) < 0 || sd == model.SourceSide && x.SrcIndexed || sd == model.DestinationSide && x.Published {
			return nil
		}
		return &model.Violation{Invariant: model.NameIndexMatchesCache, Handoff: 0, Worker: -1,
			Detail: fmt.Sprintf("%s publishes Removed for blocks of the attempt the index does not advertise (never stored, or already removed): nothing is Removed that was not Stored", j.h.Processes[f.Proc].Name)}
	}
	// A fact that gives its own version of one the explanation owes (an
	// outcome other than the tables') stands instead of the step that
	// owes it: judge it where that step had not happened.
	// A fact that is the one owed, figures and all, is no other version:
	// its effect is the step's, already in the node's state, and it only
	// comes out of order (the process owes another fact first), which
	// the report says; its operation is not performed twice.
	for _, l := range n.owed[:n.owedN] {
		if l.By != obslog.ByRouter && j.logger(a, &l) == f.Proc && matches(f, &l) {
			return nil
		}
	}
	for _, l := range n.owed[:n.owedN] {
		if l.Kind == f.Kind && l.By != obslog.ByRouter && j.logger(a, &l) == f.Proc {
			// Back to before the step that owes it.
			for n.parent != nil && slices.Contains(n.owed[:n.owedN], l) {
				n = n.parent
			}
			break
		}
	}
	st := *n.st
	if st.W.H[0].Worker(sd) < 0 {
		return nil
	}
	defer func() {
		// An operation the model refuses outright in this state (it
		// guards its own preconditions) names no invariant.
		if recover() != nil {
			v = nil
		}
	}()
	tx := model.Tx{W: &st.W}
	if f.Kind == obslog.SourceReleased {
		g := *f
		g.Timer = model.Timer(j.releaseCause(a, n, f.Proc))
		f = &g
	}
	before := st.W.H[0]
	op(&tx, sd, f)
	if v = model.CheckStep(&st.W, &tx.J); v != nil {
		if v.Invariant == model.NameNoStoredBeforeActivation && sd == model.DestinationSide && before.Dst != model.DstActive {
			// The model's check reads both conditions at once: say the
			// one that fails here.
			v.Detail = fmt.Sprintf("%s publishes Stored for pages it has not activated (the destination holds %s pages, the transfer is %s): a destination publishes Stored only after activation", j.h.Processes[f.Proc].Name, before.Dst, before.Xfer)
		}
		return v
	}
	if v = j.chk.CheckState(&st); v != nil {
		return v
	}
	if f.Kind == obslog.OutcomeReported {
		// A side that reported its terminal outcome takes no more steps:
		// what it still holds is never returned.
		x := &st.W.H[0]
		held := ""
		switch {
		case sd == model.SourceSide && x.Src == model.SrcPinned:
			held = "its pinned blocks"
		case sd == model.SourceSide && x.Src == model.SrcActive:
			held = "its compute blocks"
		case sd == model.DestinationSide && x.Dst == model.DstReserved:
			held = "its reserved pages"
		case sd == model.DestinationSide && x.Dst == model.DstActive:
			held = "its active blocks"
		}
		if held != "" {
			return &model.Violation{Invariant: model.NameQuiescence, Handoff: 0, Worker: -1,
				Detail: fmt.Sprintf("%s reports its terminal outcome while it still holds %s: a finished side takes no more steps, so they are never returned", j.h.Processes[f.Proc].Name, held)}
		}
	}
	return nil
}

// releaseCause is why a source may say it released: what its own facts
// before the release (those the node explained) say it learned. A log
// that records none of the facts that say it (the mocker's bookkeeping
// logs no receipts) cannot tell: the release is then taken for the one
// the world allows, the reader's acknowledgement of a completed transfer
// or else an abort, so that a fact out of place there is blamed on what
// the log lacks rather than on a cause it never wrote down.
func (j *judge) releaseCause(a *attempt, n *node, proc int) model.Cause {
	cause := model.CauseOther
	if !j.h.Processes[proc].Records.Has(obslog.ReaderCompleted) {
		if n.st.W.H[0].Xfer == model.XferDone {
			cause = model.CauseReaderAck
		} else {
			cause = model.CauseAbort
		}
	}
	for s := range a.slots {
		if a.slots[s].proc != proc {
			continue
		}
		for _, f := range a.slots[s].facts[:n.pos[s]] {
			switch f.Kind {
			case obslog.ReaderCompleted, obslog.TransferDone:
				cause = model.CauseReaderAck
			case obslog.Cancelled, obslog.Aborted, obslog.TransferFailed:
				cause = model.CauseAbort
			case obslog.LeaseExpired, obslog.DeadlineExpired:
				cause = model.CauseExpiry
			}
		}
	}
	return cause
}
