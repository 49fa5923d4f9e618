package system

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// apply gives an action its physical meaning. side is the role of the
// machine that emitted it; the model checks the command reaches a worker
// of the role it needs.
func apply(tx *model.Tx, side model.Side, h int, a action, cause model.Cause) {
	switch a {
	case aSrcAcceptRequest, aDstAcceptRequest:
		tx.AcceptRequest(h, side)
	case aSrcComplete, aDstComplete:
		tx.Complete(h, side)
	case aSrcStartPrefill:
		tx.StartPrefill(h, side)
	case aSrcStopPrefill:
		tx.StopPrefill(h, side)
	case aSrcPinSource:
		tx.PinSource(h, side)
	case aSrcRegisterSource:
		tx.RegisterSource(h, side)
	case aSrcFenceSource:
		tx.FenceSource(h, side)
	case aSrcReleaseSource:
		tx.ReleaseSource(h, side, cause)
	case aSrcPublishCached:
		tx.PublishCached(h, side)
	case aSrcReportComputeDone:
		tx.ReportComputeDone(h, side)
	case aSrcAnnouncePinned:
		tx.AnnouncePinned(h, side)
	case aSrcStartPush:
		tx.StartTransfer(h, side, model.SourceSide)
	case aSrcArmLease:
		tx.Arm(h, model.TimerLease)
	case aSrcRenewLease:
		// Renewal has no safety meaning in the untimed model: any armed
		// timer may fire at any moment (docs/lifecycle.md section 3).
	case aSrcDisarmLease:
		tx.Disarm(h, model.TimerLease)
	case aSrcArmBootstrap:
		tx.Arm(h, model.TimerBootstrap)
	case aSrcDisarmBootstrap:
		tx.Disarm(h, model.TimerBootstrap)
	case aSrcSendReceiveCompleted:
		tx.Send(h, model.DestinationSide, model.MsgReceiveCompleted)
	case aSrcSendCancelled, aDstSendCancelled:
		tx.Send(h, side.Other(), model.MsgCancelled)
	case aSrcArmTransferDeadline:
		tx.Arm(h, model.TimerPush)
	case aSrcDisarmTransferDeadline:
		tx.Disarm(h, model.TimerPush)
	case aDstArmTransferDeadline:
		tx.Arm(h, model.TimerPull)
	case aDstDisarmTransferDeadline:
		tx.Disarm(h, model.TimerPull)
	case aSrcReportReleased:
		tx.ReportSourceOutcome(h, side, true)
	case aSrcReportAborted:
		tx.ReportSourceOutcome(h, side, false)

	case aDstRequestReservation:
		tx.RequestReservation(h, side)
	case aDstWithdrawReservation:
		tx.WithdrawReservation(h, side)
	case aDstRegisterDestination:
		tx.RegisterDestination(h, side)
	case aDstStartPull:
		tx.StartTransfer(h, side, model.DestinationSide)
	case aDstFenceDestination:
		tx.FenceDestination(h, side)
	case aDstReleaseDestination:
		tx.ReleaseDestination(h, side, cause)
	case aDstActivateDestination:
		tx.ActivateDestination(h, side)
	case aDstPublishStored:
		tx.PublishStored(h, side)
	case aDstReleaseActive:
		tx.ReleaseActive(h, side)
	case aDstArmHeartbeat:
		tx.Arm(h, model.TimerHeartbeat)
	case aDstDisarmHeartbeat:
		tx.Disarm(h, model.TimerHeartbeat)
	case aDstSendLeaseRenewed:
		tx.Send(h, model.SourceSide, model.MsgLeaseRenewed)
	case aDstArmReservationTimer:
		tx.Arm(h, model.TimerReservation)
	case aDstDisarmReservationTimer:
		tx.Disarm(h, model.TimerReservation)
	case aDstSendDestinationReserved:
		tx.Send(h, model.SourceSide, model.MsgDestinationReserved)
	case aDstSendReaderCompleted:
		tx.Send(h, model.SourceSide, model.MsgReaderCompleted)
	case aDstReportDecodeDone:
		tx.ReportDecodeOutcome(h, side, true)
	case aDstReportDecodeFailed:
		tx.ReportDecodeOutcome(h, side, false)
	default:
		panic(fmt.Sprintf("checker: action %s has no physical meaning", a))
	}
}

// Coverage counts, per role, how often each row fired. When Log is set it
// also records every firing, for traces.
type Coverage struct {
	Rows [2][]uint64
	Log  *[]Firing
	// Fired is the invariants' triggers that fired (model.Triggers): a
	// report names the invariants whose trigger never did.
	Fired model.Triggers
}

// Firing is one row of a role machine firing.
type Firing struct {
	Role     spec.Role
	Handoff  int
	From, To uint8
	Event    uint8
	Row      int
	// Actions is the row's actions: the protocol's own table, to be
	// read, never written (a firing logged costs no copy of them).
	Actions []action
}

func newCoverage(s *spec.Spec) *Coverage {
	return &Coverage{Rows: [2][]uint64{make([]uint64, len(s.Source.Rows)+1), make([]uint64, len(s.Destination.Rows)+1)}}
}

// fire gives an event to a role machine and applies the actions of the
// row that fires. It reports false when the event has no row in the
// record's state. A terminal record fires the rows its state has: the
// built-in tables give it none, a variant may let a side that already
// reported its outcome keep reacting (spec.Validate), and the invariants
// judge what it does.
func (c *System) fire(s *State, tx *model.Tx, cov *Coverage, r spec.Role, h int, ev uint8) bool {
	st := s.rolePtr(r, h)
	t, ok := c.proto.step(r, c.policy, *st, ev)
	if !ok {
		return false
	}
	if cov != nil {
		cov.Rows[r][t.Row]++
		if cov.Log != nil {
			*cov.Log = append(*cov.Log, Firing{Role: r, Handoff: h, From: *st, To: t.To, Event: ev, Row: int(t.Row), Actions: t.Acts[:t.N:t.N]})
		}
	}
	*st = t.To
	side := sideOf(r)
	cause := causeOf(r, ev)
	// A command the core applies at once is answered after the row.
	var answered [maxActions]uint8
	n := 0
	for i := 0; i < int(t.N); i++ {
		a := t.Acts[i]
		k := commandOf[a]
		if k < 0 || c.cmds[commandKinds[k].side][commandKinds[k].cmd] == cmdDirect {
			apply(tx, side, h, a, cause)
			continue
		}
		ck := &commandKinds[k]
		if c.cmds[ck.side][ck.cmd] == cmdQueued || s.W.H[h].Slow[ck.side] {
			tx.QueueCommand(h, side, ck.side, ck.cmd, cause)
			continue
		}
		if applied, ok := tx.RunCommand(h, side, ck.side, ck.cmd, cause); ok {
			answered[n] = answer(ck.side, ck.cmd, applied)
			n++
		}
	}
	for _, ev := range answered[:n] {
		c.fire(s, tx, cov, r, h, ev)
	}
	return true
}

// can reports whether a role record would take an event now: its state
// has a row for it, terminal or not.
func (c *System) can(s *State, r spec.Role, h int, ev uint8) bool {
	return c.rows[r][s.Role(r, h)]>>ev&1 != 0
}

// terminal reports whether a role record has finished: its side reported
// its terminal outcome. Everything that asks whether a side is done
// (Quiescence, drained states, the records the invariants read, restarts)
// asks this, whether or not the state still has rows.
func (c *System) terminal(s *State, r spec.Role, h int) bool {
	return c.terminals[r]>>s.Role(r, h)&1 != 0
}

// Step applies a move to a state in place and returns the step's journal.
// It returns an error when the move is not one the state enables.
func (c *System) Step(s *State, m Move, cov *Coverage) (model.Journal, *model.Violation, error) {
	var ms MoveSet
	c.Enabled(s, &ms)
	ok := false
	for i := 0; i < ms.N; i++ {
		if ms.M[i] == m {
			ok = true
			break
		}
	}
	if !ok {
		return model.Journal{}, nil, fmt.Errorf("move %q is not enabled here", m)
	}
	before := *s
	tx := model.Tx{W: &s.W}
	c.ApplyTx(s, &tx, m, cov, ms.Stuck)
	v := c.JudgeStep(&before, s, &tx.J, m)
	return tx.J, v, nil
}

// staleDelivery reports whether move m, taken from state before, delivers
// a fact (or its duplicate) to a record that has already finished: the
// steps AttemptIsolation judges (model.Journal.Stale).
func (c *System) staleDelivery(before *State, m Move) bool {
	return (m.Kind == MvDeliver || m.Kind == duplicate.Move()) && c.terminal(before, roleOf(model.Side(m.Arg)), int(m.H))
}

// JudgeStep runs the step invariants, and AttemptIsolation for a late
// delivery (j.Stale, which ApplyTx sets).
func (c *System) JudgeStep(before, after *State, j *model.Journal, m Move) *model.Violation {
	// StepClear passes nearly every step in one pass over its effects;
	// CheckStep says which half objects to one it does not pass.
	if !model.StepClear(&after.W, j) {
		if v := model.CheckStep(&after.W, j); v != nil {
			return v
		}
	}
	if j.Stale {
		idx := 0
		ch := &before.W.H[m.H].Ch[m.Arg]
		for i := 0; i < int(ch.N); i++ {
			if ch.M[i] == m.Msg {
				idx = i
			}
		}
		if m.Kind == duplicate.Move() {
			idx = -1
		}
		var v *model.Violation
		if idx >= 0 {
			v = model.AttemptIsolation(&before.W, &after.W, int(m.H), model.Side(m.Arg), idx)
		} else if !sameDuplicated(&before.W, &after.W, m) {
			v = &model.Violation{Invariant: model.NameAttemptIsolation, Handoff: int(m.H), Worker: -1,
				Detail: "a duplicate of a stale fact changed the world", Check: "a duplicate of a stale fact changed the world"}
		}
		if v == nil && (before.Src != after.Src || before.Dst != after.Dst) {
			v = &model.Violation{Invariant: model.NameAttemptIsolation, Handoff: int(m.H), Worker: -1,
				Detail: "a stale fact changed a role machine", Check: "a stale fact changed a role machine"}
		}
		return v
	}
	return nil
}

// sameDuplicated reports whether the world after a duplicate of a stale
// fact is the world before: the duplicate is sent, and the original kept,
// so nothing may change at all. Only the handoff it is sent on is copied
// to add it (a whole world is 592 bytes, copied on every such step).
func sameDuplicated(before, after *model.World, m Move) bool {
	want := before.H[m.H]
	want.Ch[m.Arg].Send(m.Msg)
	return model.SameHandoff(&want, &after.H[m.H]) && model.SameBut(before, after, int(m.H))
}

// ApplyTx performs a move that the state enables, in a transaction the
// caller holds (Step and Apply are it for one move). A fault move first spends
// its kind's budget; reorder and early_timer are spent where a protocol
// move happens out of order.
func (c *System) ApplyTx(s *State, tx *model.Tx, m Move, cov *Coverage, stuck bool) {
	tx.J.Stale = c.staleDelivery(s, m)
	if f, ok := m.Kind.Spends(); ok {
		s.B.spend(f)
		c.applyFault(s, tx, m, cov)
		return
	}
	h := int(m.H)
	switch m.Kind {
	case MvRoutePrefill:
		tx.RoutePrefill(h, int(m.Arg))
	case mvDeliverRequest:
		tx.DeliverRequest(h)
		c.fire(s, tx, cov, spec.Source, h, evSrcRequestArrived)
	case MvRouteDecode:
		tx.RouteDecode(h, int(m.Arg))
		c.fire(s, tx, cov, spec.Destination, h, evDstRouted)
	case mvReserve:
		tx.Reserve(h)
		c.fire(s, tx, cov, spec.Destination, h, evDstReserved)
	case mvRefuse:
		tx.Refuse(h)
		c.fire(s, tx, cov, spec.Destination, h, evDstRefused)
	case MvAdmit:
		tx.AdmitPrefill(h)
	case MvCompute:
		tx.FinishCompute(h)
		c.fire(s, tx, cov, spec.Source, h, evSrcPrefillPinned)
	case MvTransfer:
		tx.CompleteTransfer(h)
		c.transferEnded(s, tx, cov, h)
	case MvDeliver:
		to := model.Side(m.Arg)
		if tx.Receive(h, to, m.Msg) > 0 {
			s.B.spend(reorder)
		}
		c.fire(s, tx, cov, roleOf(to), h, msgEvent(to, m.Msg))
	case MvTimer:
		t := model.Timer(m.Arg)
		if !stuck {
			s.B.spend(earlyTimer)
		}
		if t != model.TimerHeartbeat {
			// Deadlines are one-shot; heartbeats are periodic.
			tx.Disarm(h, t)
		}
		c.fire(s, tx, cov, roleOf(t.Side()), h, timerEvent(t))
	case MvPromote:
		tx.Promote(h)
	case mvDecodeFinish:
		c.fire(s, tx, cov, spec.Destination, h, evDstDecodeFinished)
	case mvDeliverCancel:
		tx.CancelDelivered(h, model.Side(m.Arg))
		c.fire(s, tx, cov, roleOf(model.Side(m.Arg)), h, cancelEvent(model.Side(m.Arg)))
	case mvPeerRestarted:
		tx.PeerRestartNoticed(h, model.Side(m.Arg))
		c.fire(s, tx, cov, roleOf(model.Side(m.Arg)), h, peerRestartedEvent(model.Side(m.Arg)))
	case mvFreeBackground:
		tx.FreeBackground(int(m.Arg))
	case mvApply:
		c.applyCommand(s, tx, cov, h, model.Side(m.Arg))
	case mvDeferred:
		c.fire(s, tx, cov, roleOf(model.Side(m.Arg)), h, deferredEvent(model.Side(m.Arg)))
	default:
		panic(fmt.Sprintf("checker: unknown move %v", m))
	}
}

// transferEnded tells the runner of a transfer that just ended how it ended.
func (c *System) transferEnded(s *State, tx *model.Tx, cov *Coverage, h int) {
	x := &s.W.H[h]
	r, ev := transferEvent(x.Runner, x.Xfer == model.XferDone)
	c.fire(s, tx, cov, r, h, ev)
}
