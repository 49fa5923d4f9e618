package system

import (
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// maxMoves bounds the moves one state enables. Per handoff at most 52:
// before the prefill is routed, routing to each of at most four workers
// and a cancel; after it, the request's delivery, routing decode to each
// of at most four workers and a no-show, one of reserve or refuse, one of
// admit or compute, the oldest command of each side's core, the transfer
// ending, failing or hanging, six kinds of fact in flight (four to the
// source, two to the destination) each delivered, duplicated or lost,
// promotion and decode's end, a cancel and a peer's restart delivered to
// each side, a deferred step per side, six timers, the cancel, an abort,
// an eviction and a delay per side. Times MaxHandoffs, plus restarts and
// background load per worker.
const maxMoves = 52*model.MaxHandoffs + 3*model.MaxWorkers + 16

// Parent links store a move's index in one byte.
var _ [256 - maxMoves]struct{}

// MoveSet is the moves enabled in a state, without allocation.
type MoveSet struct {
	N     int
	Stuck bool // nothing but timers can happen
	// waiting: the only protocol moves other than timers are transfers
	// ending; the hang fault is offered only then (see faults).
	waiting bool
	M       [maxMoves]Move
	// q is the transaction Enabled asks its questions through
	// (CanReserve, CanPromote, ...), which read its world only. It is kept
	// here rather than made per call: a transaction holds a journal of
	// several hundred bytes, which a new one zeroes on every state
	// expanded.
	q model.Tx
}

func (ms *MoveSet) add(m Move) {
	ms.M[ms.N] = m
	ms.N++
}

// Process says whether move i is one the system makes on its own, given
// that the first protocol moves are the protocol's (not a fault, and not
// a timer firing while something else could still happen), and if so the
// process that makes it, below 64: a search that judges weak fairness
// asks it instead of learning which actor makes which kind of move.
func (ms *MoveSet) Process(i, protocol int) (p uint8, own bool) {
	if i >= protocol || ms.M[i].Kind == MvTimer && !ms.Stuck {
		return 0, false
	}
	return ms.M[i].process(), true
}

// Enabled fills ms with the enabled moves, without allocation: protocol moves first, then the
// timers (any armed one when the system is stuck, within the early-timer
// budget otherwise), then faults. It returns how many are not faults.
func (c *System) Enabled(s *State, ms *MoveSet) (protocol int) {
	ms.Stuck = false
	ms.N = 0
	tx := &ms.q
	tx.W = &s.W
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
			ms.add(Move{Kind: mvDeliverRequest, H: hh})
		}
		if c.decodeRoutable(s, h) && c.can(s, spec.Destination, h, evDstRouted) {
			for _, w := range c.decode {
				ms.add(Move{Kind: MvRouteDecode, H: hh, Arg: int8(w)})
			}
		}
		if tx.CanReserve(h) && c.can(s, spec.Destination, h, evDstReserved) {
			ms.add(Move{Kind: mvReserve, H: hh})
		}
		if tx.CanRefuse(h) && c.can(s, spec.Destination, h, evDstRefused) {
			ms.add(Move{Kind: mvRefuse, H: hh})
		}
		if tx.CanAdmitPrefill(h) {
			ms.add(Move{Kind: MvAdmit, H: hh})
		}
		if x.Compute == model.ComputeRunning && c.can(s, spec.Source, h, evSrcPrefillPinned) {
			ms.add(Move{Kind: MvCompute, H: hh})
		}
		// The command path: a worker's scheduler core applies the oldest
		// command it holds for the handoff, in its own task.
		for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
			if x.Cmds[sd].Len() > 0 {
				ms.add(Move{Kind: mvApply, H: hh, Arg: int8(sd)})
			}
		}
		if tx.CanCompleteTransfer(h) && c.transferCanEnd(s, h, tx.TransferWouldSucceed(h)) {
			ms.add(Move{Kind: MvTransfer, H: hh})
		}
		for to := model.SourceSide; to <= model.DestinationSide; to++ {
			ch := &x.Ch[to]
			for i := 0; i < int(ch.N); i++ {
				if i == 0 || s.B.has(reorder) {
					ms.add(Move{Kind: MvDeliver, H: hh, Arg: int8(to), Msg: ch.M[i]})
				}
			}
		}
		if tx.CanPromote(h) {
			ms.add(Move{Kind: MvPromote, H: hh})
		}
		// A cancelled request's decode does not end by itself: its output
		// is unbounded in an untimed model (docs/lifecycle.md section 3), so only
		// the cancel on the request stream ends it.
		if x.Dst == model.DstActive && x.Running && !x.Cancelled && c.can(s, spec.Destination, h, evDstDecodeFinished) {
			ms.add(Move{Kind: mvDecodeFinish, H: hh})
		}
		for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
			r := roleOf(sd)
			if x.CancelPending[sd] && (c.terminal(s, r, h) || c.can(s, r, h, cancelEvent(sd))) {
				ms.add(Move{Kind: mvDeliverCancel, H: hh, Arg: int8(sd)})
			}
			if x.PeerGone[sd] && (c.terminal(s, r, h) || c.can(s, r, h, peerRestartedEvent(sd))) {
				ms.add(Move{Kind: mvPeerRestarted, H: hh, Arg: int8(sd)})
			}
		}
		// A deferred step: work a row queued, taken later on the side's
		// own, whenever its record's state has a row for it. No built-in
		// row does.
		for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
			if x.Worker(sd) >= 0 && c.can(s, roleOf(sd), h, deferredEvent(sd)) {
				ms.add(Move{Kind: mvDeferred, H: hh, Arg: int8(sd)})
			}
		}
	}
	for _, w := range c.decode {
		if s.W.W[w].Background > 0 {
			ms.add(Move{Kind: mvFreeBackground, H: -1, Arg: int8(w)})
		}
	}
	busy = ms.N
	ms.waiting = busy > 0
	for i := 0; i < busy; i++ {
		if ms.M[i].Kind != MvTransfer {
			ms.waiting = false
			break
		}
	}
	// Timers: any armed timer may fire at any moment. While the system can
	// still progress, a timer that fires is an early one and spends the
	// early-timer budget; when nothing else can happen, deadlines and
	// heartbeats fire freely: they are what ends (or keeps alive) the wait.
	stuck := busy == 0
	ms.Stuck = stuck
	if stuck || s.B.has(earlyTimer) {
		for h := 0; h < c.nH; h++ {
			x := &s.W.H[h]
			for t := model.Timer(0); t < model.NumTimers; t++ {
				if !x.Armed(t) || (t == model.TimerHeartbeat && !c.opts.Renewal) {
					continue
				}
				if c.can(s, roleOf(t.Side()), h, timerEvent(t)) {
					ms.add(Move{Kind: MvTimer, H: int8(h), Arg: int8(t)})
				}
			}
		}
	}
	protocol = ms.N
	c.faults(s, ms, tx)
	return protocol
}

// decodeRoutable reports whether the frontend would route decode now:
// source-first after the source answered with its pinned KV,
// destination-first once prefill was routed; never after a cancel, a
// no-show, or a source failure the frontend knows of.
func (c *System) decodeRoutable(s *State, h int) bool {
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
func (c *System) transferCanEnd(s *State, h int, done bool) bool {
	r, ev := transferEvent(s.W.H[h].Runner, done)
	return c.terminal(s, r, h) || c.can(s, r, h, ev)
}

// finished reports whether every record of a handoff that was placed is terminal.
func (c *System) finished(s *State, h int) bool {
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
func (c *System) hostsLive(s *State, w int) bool {
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
