package system

import (
	"fmt"
	"strings"

	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// Fault is a kind of fault the environment may commit (docs/lifecycle.md
// section 3). Each kind is bounded by its own budget; a fault's number is
// its budget slot.
type Fault uint8

// The fault kinds, in budget order. The names are also the keys of a
// Budget literal: Budget{Cancel: 2}. reorder and early_timer, spent by
// protocol moves taken out of order, are named only here: a driver asks
// Move.SpendsAt; so are the kinds no driver names (abort, duplicate,
// loss, no_show, delay, hang, background_load), which a configuration, a
// plan and a trace file name by their keys (ParseFault, ParseMove). A driver
// asks a kind's row instead of naming it: a judge of logs tells a
// duplicate from a loss by Delivers, a reproduction the no_show it leaves
// out of a trace by LeftOut.
const (
	duplicate Fault = iota
	loss
	reorder
	Cancel
	abort
	transferFailure
	Restart
	earlyTimer
	noShow
	backgroundLoad
	hang
	Evict
	delay
	// NumFaults is the number of fault kinds.
	NumFaults
)

// NumMoveKinds bounds the move kinds: the protocol moves, then one fault
// move per fault kind, numbered in budget order (Fault.Move). A kind spent
// by a protocol move taken out of order has no move of its own, and its
// number names none.
const NumMoveKinds = numProtocolMoveKinds + MoveKind(NumFaults)

// Move is the fault move that spends kind f's budget, 0 for a kind spent
// by a protocol move taken out of order (reorder, early_timer: their rows
// in FaultKinds have no Syntax). A fault kind's move needs no name of
// its own beyond its row: it is numbered after the protocol moves, in
// budget order.
func (f Fault) Move() MoveKind {
	if f >= NumFaults || FaultKinds[f].Syntax == "" {
		return 0
	}
	return numProtocolMoveKinds + MoveKind(f)
}

// faultKind describes one fault kind (a row of FaultKinds). Everything the checker does with a
// kind by name (configuration keys, budget packing, move names and syntax,
// swarm subsets, documentation) is derived from its row in FaultKinds;
// only enabling the fault (faults) and giving it effect (applyFault) are
// code.
type faultKind struct {
	// Config is the key of the kind in a configuration's "faults" object.
	Config string
	// Syntax is the step syntax (scenario and trace files) of the fault
	// move that spends the budget (Fault.Move), with placeholders:
	// "duplicate h=H to=S msg=M" (the keys and placeholders of the
	// protocol moves' arguments). Syntax is empty for a kind spent by a
	// protocol move taken out of order: reorder by a delivery of a fact
	// that is not the oldest in flight, early_timer by a timer that fires
	// while other moves are possible.
	Syntax string
	// Swarm lets a swarm walk switch the fault move off.
	Swarm bool
	// Meaning is what the fault is, in one line.
	Meaning string
	// Where a driver strikes a fault a plan schedules: at the request's
	// first state that offers the move (Offered, on the side the plan
	// names when the move takes one), in place of the protocol move
	// Instead when a driver is about to take it (on the fact the plan
	// names when the move takes one), or else, for a move on a worker,
	// at the plan's time; Phase lets a plan aim it at a request's side
	// instead, right after the side's worker logs a given fact (a
	// restart of that worker then; a kind struck where offered is
	// marked then, and strikes where the request next offers it). A
	// plan's line takes request for h, worker, side, and optionally to
	// and msg.
	Offered bool
	Instead MoveKind
	Phase   bool
	// Who strikes a kind struck where offered whose move names no side,
	// where the roles run as processes of their own: the frontend the
	// client talks to (Frontend: a cancel), or the side that runs the
	// request's transfer, once the transfer is all the request waits on
	// and until it ends (Runner: a hang). A kind whose move names a side
	// is struck by that side's worker.
	Frontend bool
	Runner   bool
	// Delivers is, for a kind struck in place of a delivery (Instead
	// MvDeliver), how many times the fact arrives when the fault strikes:
	// 0 when it is lost (a driver's proxy drops it, and the side it was
	// for may wait for good), 2 when it is delivered and kept in flight
	// (a proxy sends it twice). applyFault gives the kind this effect;
	// faults_test holds the two equal.
	Delivers uint8
	// What an observation log shows of the fault, which is what a judge of
	// logs may search for (docs/conform.md). Silent: its move makes no
	// fact any process logs, so a log shows it only by what then does not
	// happen; a judge counts it against the unlogged faults it allows
	// before it takes the move. Logs: the log kind of the fact its move
	// makes first, known before the move is taken, so a judge takes the
	// move only for that fact. Shown: the facts its move makes show it
	// happened, known only once it is taken (a transfer failed, a worker
	// restarted, released blocks removed). A kind with none of the three
	// looks in a log like a protocol move (a duplicate like a delivery).
	Silent bool
	Logs   string
	Shown  bool
	// Unplanned says why no plan schedules the kind ("": a plan may).
	Unplanned string
	// LeftOut lets a reproduction on a clock leave a fault of an
	// unplanned kind out of the trace it replays, where it refuses the
	// trace for any other: the fault only lets an untimed run reach what
	// a clock reaches without it (a decode never routed is how a timer
	// fires once nothing else can happen; a clock fires it at its
	// deadline, and the request is routed as any other).
	LeftOut bool
}

// FaultKinds is the fault vocabulary, indexed by Fault.
var FaultKinds = [NumFaults]faultKind{
	duplicate: {Config: "duplicate", Syntax: "duplicate h=H to=S msg=M", Swarm: true,
		Meaning: "the transport delivers a fact in flight and keeps it in flight", Instead: MvDeliver, Delivers: 2},
	loss: {Config: "loss", Syntax: "lose h=H to=S msg=M", Swarm: true,
		Meaning: "the transport drops a fact in flight", Instead: MvDeliver, Silent: true},
	reorder: {Config: "reorder",
		Meaning: "the transport delivers a fact that is not the oldest in flight", Unplanned: "facts are reordered by the simulator's latency jitter by themselves, not at a time of a plan; schedule a loss or a duplicate to disturb one fact"},
	Cancel: {Config: "cancel", Syntax: "cancel h=H", Swarm: true,
		Meaning: "the client cancels the request; the frontend cancels both request streams that exist", Offered: true, Phase: true, Frontend: true, Logs: "client_cancelled"},
	abort: {Config: "abort", Syntax: "abort h=H side=S", Swarm: true,
		Meaning: "either side aborts the request on its own, at any phase", Offered: true, Phase: true, Logs: "aborted"},
	transferFailure: {Config: "transfer_failure", Syntax: "fail-transfer h=H", Swarm: true,
		Meaning: "a running KV transfer fails on its own (network, timeout)", Instead: MvTransfer, Shown: true},
	Restart: {Config: "restart", Syntax: "restart worker=W", Swarm: true,
		Meaning: "a worker process restarts: its memory, registrations, in-flight requests and KV index go, its generation increases, routers learn a terminal outcome", Phase: true, Shown: true},
	earlyTimer: {Config: "early_timer",
		Meaning: "a lease, bootstrap or reservation deadline or a heartbeat fires while other moves are still possible", Unplanned: "timers fire on the simulator's clock when their deadlines pass; set the deadlines in the simulation's configuration instead"},
	noShow: {Config: "no_show", Syntax: "no-show h=H", Swarm: true,
		Meaning: "the frontend never routes decode", Silent: true, LeftOut: true, Unplanned: "whether the frontend ever routes decode is decided when it routes the request, not at a time of a plan; schedule a cancel or an abort instead"},
	backgroundLoad: {Config: "background_load", Syntax: "occupy worker=W", Swarm: true,
		Meaning: "other requests take a decode worker's configured background capacity at any moment", Silent: true, Unplanned: "the other requests of the workload are the load on a worker; put more requests in the workload instead"},
	hang: {Config: "hang", Syntax: "hang h=H", Swarm: true,
		Meaning: "a running KV transfer hangs: it neither completes nor fails until a registration it uses is fenced or closed", Offered: true, Runner: true, Silent: true},
	Evict: {Config: "evict", Syntax: "evict h=H side=S", Swarm: true,
		Meaning: "a worker's cache evicts the released blocks a handoff's side keeps there; Removed is published if the KV index advertised them", Offered: true, Phase: true, Shown: true},
	delay: {Config: "delay", Syntax: "delay h=H side=S", Swarm: true,
		Meaning: "a worker's scheduler core falls behind: the commands a side sends it for the handoff wait, and anything may happen before the core applies them", Offered: true, Phase: true, Silent: true},
}

func (f Fault) String() string {
	if f < NumFaults {
		return FaultKinds[f].Config
	}
	return fmt.Sprintf("Fault(%d)", uint8(f))
}

// faultConfigNames lists the configuration keys of every fault kind, in
// budget order.
func faultConfigNames() []string {
	names := make([]string, NumFaults)
	for f := range FaultKinds {
		names[f] = FaultKinds[f].Config
	}
	return names
}

// ParseFault finds a fault kind by its configuration key.
func ParseFault(name string) (Fault, bool) {
	for f := range FaultKinds {
		if FaultKinds[f].Config == name {
			return Fault(f), true
		}
	}
	return 0, false
}

// budgetBits is the width of one fault kind's slot in a packed budget.
const budgetBits = 4

// MaxBudget is the largest budget of one fault kind.
const MaxBudget = 1<<budgetBits - 1

// Every fault kind's slot fits in the one word of a Key the budget takes.
var _ [64 - budgetBits*NumFaults]struct{}

// Budget is what the environment may do wrong, per fault kind; a zero
// budget switches the kind off.
type Budget [NumFaults]uint8

// set sets the budget of the fault kind a configuration names.
func (b *Budget) set(name string, n uint) error {
	f, ok := ParseFault(name)
	if !ok {
		return fmt.Errorf("unknown fault %q (want %s)", name, strings.Join(faultConfigNames(), ", "))
	}
	if n > MaxBudget {
		return fmt.Errorf("fault budget %s=%d, at most %d", name, n, MaxBudget)
	}
	b[f] = uint8(n)
	return nil
}

// check refuses a budget that does not fit its slot: packed, it would
// spill into the next kind's slot and merge states with other budgets.
func (b *Budget) check() error {
	for f, n := range b {
		if n > MaxBudget {
			return fmt.Errorf("fault budget %s=%d, at most %d", Fault(f), n, MaxBudget)
		}
	}
	return nil
}

// pack is the budget as the environment's remaining budget. It assumes check.
func (b *Budget) pack() Remaining {
	var r Remaining
	for f, n := range b {
		r |= Remaining(n) << (budgetBits * f)
	}
	return r
}

// Remaining is the environment's remaining budget inside a State, packed
// budgetBits per fault kind in Fault order: it is its own key word, and
// spending or testing a kind touches only its slot.
type Remaining uint64

// has reports whether the environment may still commit a fault of kind f.
func (r Remaining) has(f Fault) bool { return r>>(budgetBits*f)&MaxBudget != 0 }

// Left is how many faults of kind f the environment may still commit.
func (r Remaining) Left(f Fault) int { return int(r >> (budgetBits * f) & MaxBudget) }

// spend uses one fault of kind f; the move that does it is enabled only
// when r.has(f).
func (r *Remaining) spend(f Fault) { *r -= 1 << (budgetBits * f) }

// budget unpacks the remaining budget.
func (r Remaining) budget() Budget {
	var b Budget
	for f := range b {
		b[f] = uint8(r.Left(Fault(f)))
	}
	return b
}

// factFaults are the budget slots of the kinds whose move takes a fact in
// flight (a duplicate, a loss): while none is left, faults skips the
// channels.
var factFaults = func() Remaining {
	var r Remaining
	for f := range NumFaults {
		if _, _, _, fact := f.Move().Names(); fact {
			r |= MaxBudget << (budgetBits * f)
		}
	}
	return r
}()

// faults adds the fault moves the state enables, each within its budget.
// The order is part of the exploration's determinism (traces and walks
// pick moves by index): per handoff the transport faults of each fact in
// flight, then cancel, abort, transfer failure, no-show, hang and the
// eviction of each side's kept blocks; then restarts and background load
// per worker.
//
// tx is Enabled's transaction on s, only asked (a transaction carries a
// journal, too large to make again for every state).
func (c *System) faults(s *State, ms *MoveSet, tx *model.Tx) {
	for h := 0; h < c.nH; h++ {
		x := &s.W.H[h]
		hh := int8(h)
		if s.B&factFaults != 0 {
			for to := model.SourceSide; to <= model.DestinationSide; to++ {
				ch := &x.Ch[to]
				for i := 0; i < int(ch.N); i++ {
					// A duplicate to a record that would not react is a
					// delivery: nothing to explore apart.
					if s.B.has(duplicate) && (!c.terminal(s, roleOf(to), h) || c.can(s, roleOf(to), h, msgEvent(to, ch.M[i]))) {
						ms.add(Move{Kind: duplicate.Move(), H: hh, Arg: int8(to), Msg: ch.M[i]})
					}
					if s.B.has(loss) {
						ms.add(Move{Kind: loss.Move(), H: hh, Arg: int8(to), Msg: ch.M[i]})
					}
				}
			}
		}
		if s.B.has(Cancel) && !x.Cancelled && !c.finished(s, h) {
			ms.add(Move{Kind: Cancel.Move(), H: hh})
		}
		if s.B.has(abort) {
			for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
				if x.Worker(sd) >= 0 && c.can(s, roleOf(sd), h, abortEvent(sd)) {
					ms.add(Move{Kind: abort.Move(), H: hh, Arg: int8(sd)})
				}
			}
		}
		if s.B.has(transferFailure) && x.Xfer == model.XferRunning && !x.Hung && c.transferCanEnd(s, h, false) {
			ms.add(Move{Kind: transferFailure.Move(), H: hh})
		}
		if s.B.has(noShow) && c.decodeRoutable(s, h) {
			ms.add(Move{Kind: noShow.Move(), H: hh})
		}
		// A hang is offered only where the system waits on transfers
		// alone. That loses no behaviour: a hang commutes with every
		// move but its own transfer's end (which it removes), so a hang
		// taken earlier is the same run with the hang taken later, at
		// the point where the transfer's end is all that could happen;
		// and only there does it change what is enabled (timers fire
		// freely once nothing else can happen). A transfer that will
		// fail anyway (a registration is gone) gains nothing by hanging.
		if s.B.has(hang) && ms.waiting && x.Xfer == model.XferRunning && !x.Hung && tx.TransferWouldSucceed(h) {
			ms.add(Move{Kind: hang.Move(), H: hh})
		}
		// An eviction commutes with every move but an allocation on the
		// same worker (which evicts kept blocks itself when it needs
		// room), a restart of that worker (which drops them anyway) and
		// the later steps of the record that kept them (which may
		// advertise them again). It clears what it advertised, so only
		// the last can change a verdict: the fault is offered while that
		// record is not terminal. A terminal record that still reacts (a
		// variant's row from a terminal state) sees only the evictions
		// allocations make.
		if s.B.has(Evict) {
			for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
				if tx.CanEvict(h, sd) && !c.terminal(s, roleOf(sd), h) {
					ms.add(Move{Kind: Evict.Move(), H: hh, Arg: int8(sd)})
				}
			}
		}
	}
	if s.B.has(delay) {
		c.delays(s, ms)
	}
	if s.B.has(Restart) {
		for w := 0; w < c.nW; w++ {
			if c.hostsLive(s, w) {
				ms.add(Move{Kind: Restart.Move(), H: -1, Arg: int8(w)})
			}
		}
	}
	if s.B.has(backgroundLoad) {
		for _, w := range c.decode {
			if tx.CanOccupyBackground(w) {
				ms.add(Move{Kind: backgroundLoad.Move(), H: -1, Arg: int8(w)})
			}
		}
	}
}

// delays adds the delay faults. A delay changes only what the commands
// sent after it do, and commutes with every move that sends none at its
// side: a delay taken earlier is the same run as the delay taken just
// before the move that sends the command. So a delay of a side's core is
// offered only where an enabled move would fire a row that sends that
// core a command it would otherwise apply at once, and only while the
// core keeps up (not slow, nothing queued for the handoff).
func (c *System) delays(s *State, ms *MoveSet) {
	var want [model.MaxHandoffs][2]bool
	if c.DelayAnywhere {
		for h := 0; h < c.nH; h++ {
			for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
				want[h][sd] = c.atOnce[sd] && s.W.H[h].Worker(sd) >= 0 && !c.terminal(s, roleOf(sd), h)
			}
		}
	}
	for i := 0; i < ms.N; i++ {
		r, h, ev, ok := c.firedBy(s, ms.M[i])
		if !ok {
			continue
		}
		t, ok := c.proto.step(r, c.policy, s.Role(r, h), ev)
		if !ok {
			continue
		}
		for j := 0; j < int(t.N); j++ {
			if k := commandOf[t.Acts[j]]; k >= 0 {
				ck := &commandKinds[k]
				if c.cmds[ck.side][ck.cmd] == cmdAtOnce && sideOf(r) == ck.side {
					want[h][ck.side] = true
				}
			}
		}
	}
	for h := 0; h < c.nH; h++ {
		x := &s.W.H[h]
		for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
			if want[h][sd] && !x.Slow[sd] && x.Cmds[sd].Len() == 0 {
				ms.add(Move{Kind: delay.Move(), H: int8(h), Arg: int8(sd)})
			}
		}
	}
}

// firedBy is the event a move gives a role record, if it gives one:
// what apply and applyFault fire for it.
func (c *System) firedBy(s *State, m Move) (r spec.Role, h int, ev uint8, ok bool) {
	h = int(m.H)
	sd := model.Side(m.Arg)
	tx := model.Tx{W: &s.W}
	switch m.Kind {
	case mvDeliverRequest:
		return spec.Source, h, evSrcRequestArrived, true
	case MvRouteDecode:
		return spec.Destination, h, evDstRouted, true
	case mvReserve:
		return spec.Destination, h, evDstReserved, true
	case mvRefuse:
		return spec.Destination, h, evDstRefused, true
	case MvCompute:
		return spec.Source, h, evSrcPrefillPinned, true
	case MvTransfer, transferFailure.Move():
		r, ev = transferEvent(s.W.H[h].Runner, m.Kind == MvTransfer && tx.TransferWouldSucceed(h))
		return r, h, ev, true
	case MvDeliver, duplicate.Move():
		return roleOf(sd), h, msgEvent(sd, m.Msg), true
	case MvTimer:
		t := model.Timer(m.Arg)
		return roleOf(t.Side()), h, timerEvent(t), true
	case mvDecodeFinish:
		return spec.Destination, h, evDstDecodeFinished, true
	case mvDeliverCancel:
		return roleOf(sd), h, cancelEvent(sd), true
	case mvPeerRestarted:
		return roleOf(sd), h, peerRestartedEvent(sd), true
	case mvDeferred:
		return roleOf(sd), h, deferredEvent(sd), true
	case abort.Move():
		return roleOf(sd), h, abortEvent(sd), true
	case mvApply:
		q := &s.W.H[h].Cmds[sd]
		return roleOf(sd), h, answer(sd, q.Q[0], tx.WouldApply(h, sd, q.Q[0])), true
	}
	return 0, 0, 0, false
}

// applyFault gives a fault move its effect. The budget was spent by apply.
func (c *System) applyFault(s *State, tx *model.Tx, m Move, cov *Coverage) {
	h := int(m.H)
	switch m.Kind {
	case duplicate.Move():
		// Delivered and kept in flight.
		c.fire(s, tx, cov, roleOf(model.Side(m.Arg)), h, msgEvent(model.Side(m.Arg), m.Msg))
	case loss.Move():
		tx.Lose(h, model.Side(m.Arg), m.Msg)
	case Cancel.Move():
		tx.ClientCancel(h)
	case abort.Move():
		c.fire(s, tx, cov, roleOf(model.Side(m.Arg)), h, abortEvent(model.Side(m.Arg)))
	case transferFailure.Move():
		tx.FailTransfer(h)
		c.transferEnded(s, tx, cov, h)
	case Restart.Move():
		// A finished record is forgotten without a step: only the live
		// ones take their Restarted row.
		w := int(m.Arg)
		for hh := 0; hh < c.nH; hh++ {
			x := &s.W.H[hh]
			if int(x.Prefill) == w && !c.terminal(s, spec.Source, hh) {
				c.fire(s, tx, cov, spec.Source, hh, evSrcRestarted)
			}
			if int(x.Decode) == w && !c.terminal(s, spec.Destination, hh) {
				c.fire(s, tx, cov, spec.Destination, hh, evDstRestarted)
			}
		}
		tx.Restart(w)
	case noShow.Move():
		tx.NoShow(h)
	case backgroundLoad.Move():
		tx.OccupyBackground(int(m.Arg))
	case hang.Move():
		tx.HangTransfer(h)
	case Evict.Move():
		tx.Evict(h, model.Side(m.Arg))
	case delay.Move():
		tx.Delay(h, model.Side(m.Arg))
	default:
		panic(fmt.Sprintf("checker: unknown move %v", m))
	}
}
