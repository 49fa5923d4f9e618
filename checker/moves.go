package checker

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/handoffcheck/handoffcheck/machines"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// MoveKind is what the environment does in one step.
type MoveKind uint8

// The moves. Protocol moves are what the routers, schedulers, transfer
// engine, transport and timers do on their own; fault moves are optional
// and bounded by the budget.
const (
	_ MoveKind = iota
	MvRoutePrefill
	MvDeliverRequest
	MvRouteDecode
	MvReserve
	MvRefuse
	MvAdmit
	MvCompute
	MvTransfer
	MvDeliver
	MvTimer
	MvPromote
	MvDecodeFinish
	MvDeliverCancel
	MvPeerRestarted
	MvFreeBackground
	// faults
	MvDuplicate
	MvLose
	MvCancel
	MvAbort
	MvFailTransfer
	MvRestart
	MvNoShow
	MvOccupy
	numMoveKinds
)

var moveNames = [...]string{"", "route-prefill", "deliver-request", "route-decode", "reserve", "refuse", "admit", "compute",
	"transfer", "deliver", "timer", "promote", "decode-finish", "deliver-cancel", "peer-restarted", "free-background",
	"duplicate", "lose", "cancel", "abort", "fail-transfer", "restart", "no-show", "occupy"}

func (k MoveKind) String() string { return moveNames[k] }

// Fault reports whether the move is an optional environment fault.
func (k MoveKind) Fault() bool { return k >= MvDuplicate }

// Move is one step of the environment. H is the handoff (-1 for worker
// moves), Arg the worker, side, timer or receiving side, and Msg the
// message for deliveries.
type Move struct {
	Kind MoveKind
	H    int8
	Arg  int8
	Msg  model.Msg
}

var sideNames = [2]string{"source", "destination"}

func (m Move) String() string {
	var b strings.Builder
	b.WriteString(m.Kind.String())
	if m.H >= 0 {
		fmt.Fprintf(&b, " h=%d", m.H)
	}
	switch m.Kind {
	case MvRoutePrefill, MvRouteDecode, MvFreeBackground, MvRestart, MvOccupy:
		fmt.Fprintf(&b, " worker=%d", m.Arg)
	case MvDeliver, MvDuplicate, MvLose:
		fmt.Fprintf(&b, " to=%s msg=%s", sideNames[m.Arg], m.Msg)
	case MvTimer:
		fmt.Fprintf(&b, " timer=%s", model.Timer(m.Arg))
	case MvDeliverCancel, MvPeerRestarted, MvAbort:
		fmt.Fprintf(&b, " side=%s", sideNames[m.Arg])
	}
	return b.String()
}

// ParseMove reads the String form of a move. It is the step syntax of
// scenario files and trace files.
func ParseMove(s string) (Move, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return Move{}, fmt.Errorf("empty move")
	}
	m := Move{H: -1}
	for k := MoveKind(1); k < numMoveKinds; k++ {
		if moveNames[k] == fields[0] {
			m.Kind = k
		}
	}
	if m.Kind == 0 {
		return Move{}, fmt.Errorf("unknown move %q (want one of %s)", fields[0], strings.Join(moveNames[1:], ", "))
	}
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		key, val, ok := strings.Cut(f, "=")
		if !ok {
			return Move{}, fmt.Errorf("argument %q is not key=value", f)
		}
		if seen[key] {
			return Move{}, fmt.Errorf("argument %q given twice", key)
		}
		seen[key] = true
		switch key {
		case "h", "worker":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 || n >= model.MaxWorkers {
				return Move{}, fmt.Errorf("%s=%q is not a small non-negative number", key, val)
			}
			if key == "h" {
				m.H = int8(n)
			} else {
				m.Arg = int8(n)
			}
		case "to", "side":
			i := indexOf(sideNames[:], val)
			if i < 0 {
				return Move{}, fmt.Errorf("%s=%q is not source or destination", key, val)
			}
			m.Arg = int8(i)
		case "msg":
			found := false
			for x := model.Msg(1); x < model.NumMsgs; x++ {
				if x.String() == val {
					m.Msg, found = x, true
				}
			}
			if !found {
				return Move{}, fmt.Errorf("msg=%q is not a message kind", val)
			}
		case "timer":
			found := false
			for t := model.Timer(0); t < model.NumTimers; t++ {
				if t.String() == val {
					m.Arg, found = int8(t), true
				}
			}
			if !found {
				return Move{}, fmt.Errorf("timer=%q is not lease, bootstrap, heartbeat or reservation", val)
			}
		default:
			return Move{}, fmt.Errorf("unknown argument %q", key)
		}
	}
	want := map[MoveKind][]string{
		MvRoutePrefill: {"h", "worker"}, MvRouteDecode: {"h", "worker"}, MvFreeBackground: {"worker"}, MvRestart: {"worker"}, MvOccupy: {"worker"},
		MvDeliver: {"h", "to", "msg"}, MvDuplicate: {"h", "to", "msg"}, MvLose: {"h", "to", "msg"}, MvTimer: {"h", "timer"},
		MvDeliverCancel: {"h", "side"}, MvPeerRestarted: {"h", "side"}, MvAbort: {"h", "side"},
	}[m.Kind]
	if want == nil {
		want = []string{"h"}
	}
	for _, k := range want {
		if !seen[k] {
			return Move{}, fmt.Errorf("%s needs %s=", m.Kind, k)
		}
	}
	if len(seen) != len(want) {
		return Move{}, fmt.Errorf("%s takes only %s", m.Kind, strings.Join(want, ", "))
	}
	return m, nil
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}

// Event ids of the fixed vocabulary.
const (
	evSrcRequestArrived     = uint8(machines.SourceEventRequestArrived)
	evSrcDestinationReserve = uint8(machines.SourceEventDestinationReserved)
	evSrcPrefillPinned      = uint8(machines.SourceEventPrefillPinned)
	evSrcTransferDone       = uint8(machines.SourceEventTransferDone)
	evSrcTransferFailed     = uint8(machines.SourceEventTransferFailed)
	evSrcReaderCompleted    = uint8(machines.SourceEventReaderCompleted)
	evSrcLeaseRenewed       = uint8(machines.SourceEventLeaseRenewed)
	evSrcLeaseExpired       = uint8(machines.SourceEventLeaseExpired)
	evSrcBootstrapExpired   = uint8(machines.SourceEventBootstrapExpired)
	evSrcCancelled          = uint8(machines.SourceEventCancelled)
	evSrcClientCancelled    = uint8(machines.SourceEventClientCancelled)
	evSrcLocalAbort         = uint8(machines.SourceEventLocalAbort)
	evSrcPeerRestarted      = uint8(machines.SourceEventPeerRestarted)

	evDstRouted             = uint8(machines.DestinationEventDestinationRouted)
	evDstReserved           = uint8(machines.DestinationEventDestinationReserved)
	evDstRefused            = uint8(machines.DestinationEventReservationRefused)
	evDstTransferDone       = uint8(machines.DestinationEventTransferDone)
	evDstTransferFailed     = uint8(machines.DestinationEventTransferFailed)
	evDstReceiveCompleted   = uint8(machines.DestinationEventReceiveCompleted)
	evDstHeartbeatDue       = uint8(machines.DestinationEventHeartbeatDue)
	evDstReservationExpired = uint8(machines.DestinationEventReservationExpired)
	evDstDecodeFinished     = uint8(machines.DestinationEventDecodeFinished)
	evDstCancelled          = uint8(machines.DestinationEventCancelled)
	evDstClientCancelled    = uint8(machines.DestinationEventClientCancelled)
	evDstLocalAbort         = uint8(machines.DestinationEventLocalAbort)
	evDstPeerRestarted      = uint8(machines.DestinationEventPeerRestarted)
	evDstRestarted          = uint8(machines.DestinationEventRestarted)
	evSrcRestarted          = uint8(machines.SourceEventRestarted)
)

// msgEvent is the event a message becomes at its receiver.
func msgEvent(to model.Side, m model.Msg) uint8 {
	if to == model.SourceSide {
		switch m {
		case model.MsgDestinationReserved:
			return evSrcDestinationReserve
		case model.MsgReaderCompleted:
			return evSrcReaderCompleted
		case model.MsgLeaseRenewed:
			return evSrcLeaseRenewed
		case model.MsgCancelled:
			return evSrcCancelled
		}
	} else {
		switch m {
		case model.MsgReceiveCompleted:
			return evDstReceiveCompleted
		case model.MsgCancelled:
			return evDstCancelled
		}
	}
	panic(fmt.Sprintf("checker: message %s cannot go to the %s", m, to))
}

// timerEvent is the event a timer fires.
func timerEvent(t model.Timer) uint8 {
	switch t {
	case model.TimerLease:
		return evSrcLeaseExpired
	case model.TimerBootstrap:
		return evSrcBootstrapExpired
	case model.TimerHeartbeat:
		return evDstHeartbeatDue
	}
	return evDstReservationExpired
}

// causeOf is why a side releases, judged from the event that drove the step.
func causeOf(r spec.Role, ev uint8) model.Cause {
	if r == spec.Source {
		switch ev {
		case evSrcReaderCompleted, evSrcTransferDone:
			return model.CauseReaderAck
		case evSrcTransferFailed, evSrcCancelled, evSrcClientCancelled, evSrcLocalAbort, evSrcPeerRestarted:
			return model.CauseAbort
		case evSrcLeaseExpired, evSrcBootstrapExpired:
			return model.CauseExpiry
		}
		return model.CauseOther
	}
	switch ev {
	case evDstTransferDone, evDstTransferFailed, evDstCancelled, evDstClientCancelled, evDstLocalAbort, evDstPeerRestarted, evDstRefused:
		return model.CauseAbort
	case evDstReservationExpired:
		return model.CauseExpiry
	case evDstDecodeFinished:
		return model.CauseDecodeDone
	}
	return model.CauseOther
}

// Action ids of the vocabulary.
const (
	aSrcAcceptRequest        = Action(machines.SourceActionAcceptRequest)
	aSrcStartPrefill         = Action(machines.SourceActionStartPrefill)
	aSrcStopPrefill          = Action(machines.SourceActionStopPrefill)
	aSrcPinSource            = Action(machines.SourceActionPinSource)
	aSrcRegisterSource       = Action(machines.SourceActionRegisterSource)
	aSrcFenceSource          = Action(machines.SourceActionFenceSource)
	aSrcReleaseSource        = Action(machines.SourceActionReleaseSource)
	aSrcReportComputeDone    = Action(machines.SourceActionReportComputeDone)
	aSrcAnnouncePinned       = Action(machines.SourceActionAnnouncePinned)
	aSrcStartPush            = Action(machines.SourceActionStartPush)
	aSrcArmLease             = Action(machines.SourceActionArmLease)
	aSrcRenewLease           = Action(machines.SourceActionRenewLease)
	aSrcDisarmLease          = Action(machines.SourceActionDisarmLease)
	aSrcArmBootstrap         = Action(machines.SourceActionArmBootstrap)
	aSrcDisarmBootstrap      = Action(machines.SourceActionDisarmBootstrap)
	aSrcSendReceiveCompleted = Action(machines.SourceActionSendReceiveCompleted)
	aSrcSendCancelled        = Action(machines.SourceActionSendCancelled)
	aSrcReportReleased       = Action(machines.SourceActionReportSourceReleased)
	aSrcReportAborted        = Action(machines.SourceActionReportSourceAborted)
	aSrcComplete             = Action(machines.SourceActionComplete)

	aDstAcceptRequest           = Action(machines.NumSourceActions + int(machines.DestinationActionAcceptRequest))
	aDstRequestReservation      = Action(machines.NumSourceActions + int(machines.DestinationActionRequestReservation))
	aDstWithdrawReservation     = Action(machines.NumSourceActions + int(machines.DestinationActionWithdrawReservation))
	aDstRegisterDestination     = Action(machines.NumSourceActions + int(machines.DestinationActionRegisterDestination))
	aDstStartPull               = Action(machines.NumSourceActions + int(machines.DestinationActionStartPull))
	aDstFenceDestination        = Action(machines.NumSourceActions + int(machines.DestinationActionFenceDestination))
	aDstReleaseDestination      = Action(machines.NumSourceActions + int(machines.DestinationActionReleaseDestination))
	aDstActivateDestination     = Action(machines.NumSourceActions + int(machines.DestinationActionActivateDestination))
	aDstPublishStored           = Action(machines.NumSourceActions + int(machines.DestinationActionPublishStored))
	aDstReleaseActive           = Action(machines.NumSourceActions + int(machines.DestinationActionReleaseActive))
	aDstArmHeartbeat            = Action(machines.NumSourceActions + int(machines.DestinationActionArmHeartbeat))
	aDstDisarmHeartbeat         = Action(machines.NumSourceActions + int(machines.DestinationActionDisarmHeartbeat))
	aDstSendLeaseRenewed        = Action(machines.NumSourceActions + int(machines.DestinationActionSendLeaseRenewed))
	aDstArmReservationTimer     = Action(machines.NumSourceActions + int(machines.DestinationActionArmReservationTimer))
	aDstDisarmReservationTimer  = Action(machines.NumSourceActions + int(machines.DestinationActionDisarmReservationTimer))
	aDstSendDestinationReserved = Action(machines.NumSourceActions + int(machines.DestinationActionSendDestinationReserved))
	aDstSendReaderCompleted     = Action(machines.NumSourceActions + int(machines.DestinationActionSendReaderCompleted))
	aDstSendCancelled           = Action(machines.NumSourceActions + int(machines.DestinationActionSendCancelled))
	aDstReportDecodeDone        = Action(machines.NumSourceActions + int(machines.DestinationActionReportDecodeDone))
	aDstReportDecodeFailed      = Action(machines.NumSourceActions + int(machines.DestinationActionReportDecodeFailed))
	aDstComplete                = Action(machines.NumSourceActions + int(machines.DestinationActionComplete))
)

// apply gives an action its physical meaning. side is the role of the
// machine that emitted it; the model checks the command reaches a worker
// of the role it needs.
func apply(tx *model.Tx, side model.Side, h int, a Action, cause model.Cause) {
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
		// timer may fire at any moment (LIFECYCLE.md section 3).
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
}

// Firing is one row of a role machine firing.
type Firing struct {
	Role     spec.Role
	Handoff  int
	From, To uint8
	Event    uint8
	Row      int
	Actions  []Action
}

func newCoverage(s *spec.Spec) *Coverage {
	return &Coverage{Rows: [2][]uint64{make([]uint64, len(s.Source.Rows)+1), make([]uint64, len(s.Destination.Rows)+1)}}
}

func (c *Coverage) add(o *Coverage) {
	for r := range c.Rows {
		for i, n := range o.Rows[r] {
			c.Rows[r][i] += n
		}
	}
}

// fire gives an event to a role machine and applies the actions of the
// row that fires. It reports false when the record is terminal or the
// event has no row in its state.
func (c *Checker) fire(s *State, tx *model.Tx, cov *Coverage, r spec.Role, h int, ev uint8) bool {
	st := s.rolePtr(r, h)
	if c.proto.Terminal(r, *st) {
		return false
	}
	t, ok := c.proto.Step(r, c.policy, *st, ev)
	if !ok {
		return false
	}
	if cov != nil {
		cov.Rows[r][t.Row]++
		if cov.Log != nil {
			*cov.Log = append(*cov.Log, Firing{Role: r, Handoff: h, From: *st, To: t.To, Event: ev, Row: int(t.Row), Actions: append([]Action(nil), t.Acts[:t.N]...)})
		}
	}
	*st = t.To
	side := model.Side(r)
	cause := causeOf(r, ev)
	for i := 0; i < int(t.N); i++ {
		apply(tx, side, h, t.Acts[i], cause)
	}
	return true
}

// can reports whether a role record would take an event now.
func (c *Checker) can(s *State, r spec.Role, h int, ev uint8) bool {
	st := s.Role(r, h)
	if c.proto.Terminal(r, st) {
		return false
	}
	_, ok := c.proto.Step(r, c.policy, st, ev)
	return ok
}

func (c *Checker) terminal(s *State, r spec.Role, h int) bool {
	return c.proto.Terminal(r, s.Role(r, h))
}

// transferEvent is the event the runner of a transfer gets when it ends.
func transferEvent(runner model.Side, done bool) (spec.Role, uint8) {
	if runner == model.SourceSide {
		if done {
			return spec.Source, evSrcTransferDone
		}
		return spec.Source, evSrcTransferFailed
	}
	if done {
		return spec.Destination, evDstTransferDone
	}
	return spec.Destination, evDstTransferFailed
}

// maxMoves bounds the moves one state enables. Per handoff at most about
// 55 (routing to every worker, eight facts in flight each delivered,
// duplicated or lost, four timers, the faults), times MaxHandoffs, plus
// restarts and background load per worker.
const maxMoves = 56*model.MaxHandoffs + 3*model.MaxWorkers + 16

// Parent links store a move's index in one byte.
var _ [256 - maxMoves]struct{}

// moveSet is the moves enabled in a state, without allocation.
type moveSet struct {
	n     int
	stuck bool // nothing but timers can happen
	m     [maxMoves]Move
}

func (ms *moveSet) add(m Move) {
	ms.m[ms.n] = m
	ms.n++
}

// Moves lists the moves enabled in a state, in a fixed order.
func (c *Checker) Moves(s *State) []Move {
	var ms moveSet
	c.moves(s, &ms)
	return append([]Move(nil), ms.m[:ms.n]...)
}

// moves fills ms with the enabled moves: protocol moves first, then the
// timers (any armed one when the system is stuck, within the early-timer
// budget otherwise), then faults. It returns how many are not faults.
func (c *Checker) moves(s *State, ms *moveSet) (protocol int) {
	ms.stuck = false
	ms.n = 0
	tx := model.Tx{W: &s.W}
	busy := 0 // protocol moves other than timers: the system is not stuck
	for h := 0; h < c.nH; h++ {
		x := &s.W.H[h]
		hh := int8(h)
		if x.Prefill < 0 && !x.Cancelled {
			for _, w := range c.prefill {
				ms.add(Move{Kind: MvRoutePrefill, H: hh, Arg: int8(w)})
			}
		}
		if x.Prefill >= 0 && !x.RequestDelivered && c.can(s, spec.Source, h, evSrcRequestArrived) {
			ms.add(Move{Kind: MvDeliverRequest, H: hh})
		}
		if c.decodeRoutable(s, h) && c.can(s, spec.Destination, h, evDstRouted) {
			for _, w := range c.decode {
				ms.add(Move{Kind: MvRouteDecode, H: hh, Arg: int8(w)})
			}
		}
		if c.world.Engine != model.TRTLLM && tx.CanReserve(h) && c.can(s, spec.Destination, h, evDstReserved) {
			ms.add(Move{Kind: MvReserve, H: hh})
		}
		if c.world.Engine == model.TRTLLM && x.Pending && c.can(s, spec.Destination, h, evDstRefused) {
			ms.add(Move{Kind: MvRefuse, H: hh})
		}
		if tx.CanAdmitPrefill(h) {
			ms.add(Move{Kind: MvAdmit, H: hh})
		}
		if x.Compute == model.ComputeRunning && c.can(s, spec.Source, h, evSrcPrefillPinned) {
			ms.add(Move{Kind: MvCompute, H: hh})
		}
		if x.Xfer == model.XferRunning && c.transferCanEnd(s, h, tx.TransferWouldSucceed(h)) {
			ms.add(Move{Kind: MvTransfer, H: hh})
		}
		for to := model.SourceSide; to <= model.DestinationSide; to++ {
			ch := &x.Ch[to]
			for i := 0; i < int(ch.N); i++ {
				if i == 0 || s.B.Reorder > 0 {
					ms.add(Move{Kind: MvDeliver, H: hh, Arg: int8(to), Msg: ch.M[i]})
				}
			}
		}
		if tx.CanPromote(h) {
			ms.add(Move{Kind: MvPromote, H: hh})
		}
		// A cancelled request's decode does not end by itself: its output
		// is unbounded in an untimed model (LIFECYCLE.md section 3), so only
		// the cancel on the request stream ends it.
		if x.Dst == model.DstActive && x.Running && !x.Cancelled && c.can(s, spec.Destination, h, evDstDecodeFinished) {
			ms.add(Move{Kind: MvDecodeFinish, H: hh})
		}
		for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
			r := spec.Role(sd)
			if x.CancelPending[sd] && (c.terminal(s, r, h) || c.can(s, r, h, cancelEvent(sd))) {
				ms.add(Move{Kind: MvDeliverCancel, H: hh, Arg: int8(sd)})
			}
			if x.PeerGone[sd] && (c.terminal(s, r, h) || c.can(s, r, h, peerRestartedEvent(sd))) {
				ms.add(Move{Kind: MvPeerRestarted, H: hh, Arg: int8(sd)})
			}
		}
	}
	for _, w := range c.decode {
		if s.W.W[w].Background > 0 {
			ms.add(Move{Kind: MvFreeBackground, H: -1, Arg: int8(w)})
		}
	}
	busy = ms.n
	// Timers: any armed timer may fire at any moment. While the system can
	// still progress, a timer that fires is an early one and spends the
	// early-timer budget; when nothing else can happen, deadlines and
	// heartbeats fire freely: they are what ends (or keeps alive) the wait.
	stuck := busy == 0
	ms.stuck = stuck
	if stuck || s.B.EarlyTimer > 0 {
		for h := 0; h < c.nH; h++ {
			x := &s.W.H[h]
			for t := model.Timer(0); t < model.NumTimers; t++ {
				if !x.Armed(t) || (t == model.TimerHeartbeat && !c.opts.Renewal) {
					continue
				}
				if c.can(s, spec.Role(t.Side()), h, timerEvent(t)) {
					ms.add(Move{Kind: MvTimer, H: int8(h), Arg: int8(t)})
				}
			}
		}
	}
	protocol = ms.n
	c.faults(s, ms)
	return protocol
}

func cancelEvent(sd model.Side) uint8 {
	if sd == model.SourceSide {
		return evSrcClientCancelled
	}
	return evDstClientCancelled
}

func peerRestartedEvent(sd model.Side) uint8 {
	if sd == model.SourceSide {
		return evSrcPeerRestarted
	}
	return evDstPeerRestarted
}

func abortEvent(sd model.Side) uint8 {
	if sd == model.SourceSide {
		return evSrcLocalAbort
	}
	return evDstLocalAbort
}

// decodeRoutable reports whether the frontend would route decode now:
// source-first after the source answered with its pinned KV,
// destination-first once prefill was routed; never after a cancel, a
// no-show, or a source failure the frontend knows of.
func (c *Checker) decodeRoutable(s *State, h int) bool {
	x := &s.W.H[h]
	if x.Decode >= 0 || x.Cancelled || x.NoShow || x.SourceFailed || x.Prefill < 0 {
		return false
	}
	if c.policy == spec.SourceFirst {
		return x.Announced
	}
	return true
}

// transferCanEnd reports whether the runner can be told the outcome (or is
// gone, in which case nobody is told).
func (c *Checker) transferCanEnd(s *State, h int, done bool) bool {
	r, ev := transferEvent(s.W.H[h].Runner, done)
	return c.terminal(s, r, h) || c.can(s, r, h, ev)
}

func (c *Checker) faults(s *State, ms *moveSet) {
	for h := 0; h < c.nH; h++ {
		x := &s.W.H[h]
		hh := int8(h)
		if s.B.Duplicate > 0 || s.B.Loss > 0 {
			for to := model.SourceSide; to <= model.DestinationSide; to++ {
				ch := &x.Ch[to]
				for i := 0; i < int(ch.N); i++ {
					if s.B.Duplicate > 0 && !c.terminal(s, spec.Role(to), h) {
						ms.add(Move{Kind: MvDuplicate, H: hh, Arg: int8(to), Msg: ch.M[i]})
					}
					if s.B.Loss > 0 {
						ms.add(Move{Kind: MvLose, H: hh, Arg: int8(to), Msg: ch.M[i]})
					}
				}
			}
		}
		if s.B.Cancel > 0 && !x.Cancelled && !c.finished(s, h) {
			ms.add(Move{Kind: MvCancel, H: hh})
		}
		if s.B.Abort > 0 {
			for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
				if x.Worker(sd) >= 0 && c.can(s, spec.Role(sd), h, abortEvent(sd)) {
					ms.add(Move{Kind: MvAbort, H: hh, Arg: int8(sd)})
				}
			}
		}
		if s.B.TransferFailure > 0 && x.Xfer == model.XferRunning && c.transferCanEnd(s, h, false) {
			ms.add(Move{Kind: MvFailTransfer, H: hh})
		}
		if s.B.NoShow > 0 && c.decodeRoutable(s, h) {
			ms.add(Move{Kind: MvNoShow, H: hh})
		}
	}
	if s.B.Restart > 0 {
		for w := 0; w < c.nW; w++ {
			if c.hostsLive(s, w) {
				ms.add(Move{Kind: MvRestart, H: -1, Arg: int8(w)})
			}
		}
	}
	if s.B.BackgroundLoad > 0 {
		tx := model.Tx{W: &s.W}
		for _, w := range c.decode {
			if tx.CanOccupyBackground(w) {
				ms.add(Move{Kind: MvOccupy, H: -1, Arg: int8(w)})
			}
		}
	}
}

// finished reports whether every record of a handoff that was placed is terminal.
func (c *Checker) finished(s *State, h int) bool {
	x := &s.W.H[h]
	if x.Prefill < 0 {
		return false
	}
	if !c.terminal(s, spec.Source, h) {
		return false
	}
	return x.Decode < 0 || c.terminal(s, spec.Destination, h)
}

// hostsLive reports whether a worker hosts a live role record.
func (c *Checker) hostsLive(s *State, w int) bool {
	for h := 0; h < c.nH; h++ {
		x := &s.W.H[h]
		if int(x.Prefill) == w && !c.terminal(s, spec.Source, h) {
			return true
		}
		if int(x.Decode) == w && !c.terminal(s, spec.Destination, h) {
			return true
		}
	}
	return false
}

// Step applies a move to a state in place and returns the step's journal.
// It returns an error when the move is not one the state enables.
func (c *Checker) Step(s *State, m Move, cov *Coverage) (model.Journal, *model.Violation, error) {
	var ms moveSet
	c.moves(s, &ms)
	ok := false
	for i := 0; i < ms.n; i++ {
		if ms.m[i] == m {
			ok = true
			break
		}
	}
	if !ok {
		return model.Journal{}, nil, fmt.Errorf("move %q is not enabled here", m)
	}
	before := *s
	tx := model.Tx{W: &s.W}
	c.apply(s, &tx, m, cov, ms.stuck)
	v := c.judgeStep(&before, s, &tx.J, m)
	return tx.J, v, nil
}

// judgeStep runs the step invariants, and AttemptIsolation for a late delivery.
func (c *Checker) judgeStep(before, after *State, j *model.Journal, m Move) *model.Violation {
	if v := model.CheckStep(&after.W, j); v != nil {
		return v
	}
	if (m.Kind == MvDeliver || m.Kind == MvDuplicate) && c.terminal(before, spec.Role(m.Arg), int(m.H)) {
		idx := 0
		ch := &before.W.H[m.H].Ch[m.Arg]
		for i := 0; i < int(ch.N); i++ {
			if ch.M[i] == m.Msg {
				idx = i
			}
		}
		want := before.W
		if m.Kind == MvDuplicate {
			want.H[m.H].Ch[m.Arg].Send(m.Msg) // kept: nothing may change at all
			idx = -1
		}
		var v *model.Violation
		if idx >= 0 {
			v = model.AttemptIsolation(&before.W, &after.W, int(m.H), model.Side(m.Arg), idx)
		} else if want != after.W {
			v = &model.Violation{Invariant: model.NameAttemptIsolation, Handoff: int(m.H), Worker: -1, Detail: "a duplicate of a stale fact changed the world"}
		}
		if v == nil && (before.Src != after.Src || before.Dst != after.Dst) {
			v = &model.Violation{Invariant: model.NameAttemptIsolation, Handoff: int(m.H), Worker: -1, Detail: "a stale fact changed a role machine"}
		}
		return v
	}
	return nil
}

// apply performs a move that the state enables.
func (c *Checker) apply(s *State, tx *model.Tx, m Move, cov *Coverage, stuck bool) {
	h := int(m.H)
	switch m.Kind {
	case MvRoutePrefill:
		tx.RoutePrefill(h, int(m.Arg))
	case MvDeliverRequest:
		tx.DeliverRequest(h)
		c.fire(s, tx, cov, spec.Source, h, evSrcRequestArrived)
	case MvRouteDecode:
		tx.RouteDecode(h, int(m.Arg))
		c.fire(s, tx, cov, spec.Destination, h, evDstRouted)
	case MvReserve:
		tx.Reserve(h)
		c.fire(s, tx, cov, spec.Destination, h, evDstReserved)
	case MvRefuse:
		tx.Refuse(h)
		c.fire(s, tx, cov, spec.Destination, h, evDstRefused)
	case MvAdmit:
		tx.AdmitPrefill(h)
	case MvCompute:
		tx.FinishCompute(h)
		c.fire(s, tx, cov, spec.Source, h, evSrcPrefillPinned)
	case MvTransfer, MvFailTransfer:
		if m.Kind == MvTransfer {
			tx.CompleteTransfer(h)
		} else {
			s.B.TransferFailure--
			tx.FailTransfer(h)
		}
		x := &s.W.H[h]
		r, ev := transferEvent(x.Runner, x.Xfer == model.XferDone)
		c.fire(s, tx, cov, r, h, ev)
	case MvDeliver, MvDuplicate:
		to := model.Side(m.Arg)
		ch := &s.W.H[h].Ch[to]
		if m.Kind == MvDuplicate {
			s.B.Duplicate--
		} else {
			for i := 0; i < int(ch.N); i++ {
				if ch.M[i] == m.Msg {
					if i > 0 {
						s.B.Reorder--
					}
					ch.Take(i)
					break
				}
			}
		}
		c.fire(s, tx, cov, spec.Role(to), h, msgEvent(to, m.Msg))
	case MvLose:
		s.B.Loss--
		ch := &s.W.H[h].Ch[m.Arg]
		for i := 0; i < int(ch.N); i++ {
			if ch.M[i] == m.Msg {
				ch.Take(i)
				break
			}
		}
	case MvTimer:
		t := model.Timer(m.Arg)
		if !stuck {
			s.B.EarlyTimer--
		}
		if t != model.TimerHeartbeat {
			// Deadlines are one-shot; heartbeats are periodic.
			tx.Disarm(h, t)
		}
		c.fire(s, tx, cov, spec.Role(t.Side()), h, timerEvent(t))
	case MvPromote:
		tx.Promote(h)
	case MvDecodeFinish:
		c.fire(s, tx, cov, spec.Destination, h, evDstDecodeFinished)
	case MvDeliverCancel:
		tx.CancelDelivered(h, model.Side(m.Arg))
		c.fire(s, tx, cov, spec.Role(m.Arg), h, cancelEvent(model.Side(m.Arg)))
	case MvPeerRestarted:
		s.W.H[h].PeerGone[m.Arg] = false
		c.fire(s, tx, cov, spec.Role(m.Arg), h, peerRestartedEvent(model.Side(m.Arg)))
	case MvFreeBackground:
		tx.FreeBackground(int(m.Arg))
	case MvCancel:
		s.B.Cancel--
		tx.ClientCancel(h)
	case MvAbort:
		s.B.Abort--
		c.fire(s, tx, cov, spec.Role(m.Arg), h, abortEvent(model.Side(m.Arg)))
	case MvRestart:
		s.B.Restart--
		w := int(m.Arg)
		for hh := 0; hh < c.nH; hh++ {
			x := &s.W.H[hh]
			if int(x.Prefill) == w {
				c.fire(s, tx, cov, spec.Source, hh, evSrcRestarted)
			}
			if int(x.Decode) == w {
				c.fire(s, tx, cov, spec.Destination, hh, evDstRestarted)
			}
		}
		tx.Restart(w)
	case MvNoShow:
		s.B.NoShow--
		tx.NoShow(h)
	case MvOccupy:
		s.B.BackgroundLoad--
		tx.OccupyBackground(int(m.Arg))
	default:
		panic(fmt.Sprintf("checker: unknown move %v", m))
	}
}
