package conform

import (
	"fmt"

	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/model"
)

// Each attempt is judged in a world of its own, so a bound only a whole
// worker's pool can break (CapacityRespected: the blocks of several
// attempts together) is judged here, on the sum of what the attempts'
// explanations hold on each worker. It is judged only where that sum is
// what the worker held: the configuration is given (the header's or
// --config: it says the capacities), the worker's process logs every fact
// that takes or returns blocks, and the attempt is followed by one
// explanation (an attempt searched in full counts for nothing until it
// ends: of its explanations none is the one). Slots and headroom are not
// summed: an attempt's own world always has a slot free, so its
// explanation takes one at activation where the worker may have made it
// wait.

// ledgerKinds are the facts that take or return what a worker holds.
var ledgerKinds = obslog.Of(obslog.Pinned, obslog.Reserved, obslog.Activated, obslog.PrefillStopped,
	obslog.SourceReleased, obslog.ReservationReleased, obslog.DecodeReleased)

// ledger is what the attempts hold on one worker.
type ledger struct {
	held model.Holdings
	// shared is the blocks of held that adopters share with the owners
	// of canonical blocks (adopt.go): the pool holds them once.
	shared model.Blocks
	// judged: the worker's capacity is known and its process logs every
	// ledger kind.
	judged   bool
	capacity model.Blocks
	worker   string
}

func (j *judge) initLedgers(explicit bool) {
	j.ledgers = make([]ledger, len(j.h.Processes))
	for i, p := range j.h.Processes {
		l := &j.ledgers[i]
		l.worker = p.Name
		switch p.Role {
		case obslog.RolePrefill:
			l.capacity = j.cfg.Prefill.CapacityBlocks
		case obslog.RoleDecode:
			l.capacity = j.cfg.Decode.CapacityBlocks
		default:
			continue
		}
		l.judged = explicit && p.Records&ledgerKinds == ledgerKinds
	}
}

// recount moves an attempt's share of its workers' ledgers to what its
// explanation n holds (nothing when n is nil) and judges the workers'
// capacity; it reports the violation at fact f, or nil.
func (j *judge) recount(a *attempt, n *node) *model.Violation {
	// Only a judged ledger is ever read (judge): the share of a worker
	// whose ledger is not judged (a log without its release facts, or
	// no configuration given) is not kept, and an attempt with no
	// judged worker costs nothing here, most of all on a milestones log.
	if !j.judged(a.p) && !j.judged(a.d) {
		return nil
	}
	var now [2]model.Holdings
	if n != nil {
		w := &n.st.W
		// A prefill's compute blocks are taken when the scheduler
		// admits it, which no fact says (the explanation admits it in
		// an unlogged step): they are not counted. The state is set so
		// for the count and put back (no copy of the world).
		src := w.H[0].Src
		if src == model.SrcActive {
			w.H[0].Src = model.SrcNone
		}
		hs := w.HandoffHoldings(0)
		w.H[0].Src = src
		now = [2]model.Holdings{hs[0], hs[1]}
	}
	var v *model.Violation
	for k, p := range []int{a.p, a.d} {
		if !j.judged(p) {
			continue
		}
		l := &j.ledgers[p]
		// Most facts change nothing the side holds: its share stays.
		if now[k] != a.held[k] {
			l.held = l.held.Minus(a.held[k]).Plus(now[k])
			a.held[k] = now[k]
		}
		if v == nil && n != nil {
			v = l.judge()
		}
	}
	return v
}

// judged reports whether process p's ledger is judged (-1: none).
func (j *judge) judged(p int) bool { return p >= 0 && j.ledgers[p].judged }

func (l *ledger) judge() *model.Violation {
	var why string
	switch used := l.held.Used() - l.shared; {
	case used > l.capacity && l.shared > 0:
		why = fmt.Sprintf("the attempts in flight hold %d blocks that no cache may evict (active, pinned, reserved; %d more that adopters share with canonical blocks, counted once), and the pool has %d", used, l.shared, l.capacity)
	case used > l.capacity:
		why = fmt.Sprintf("the attempts in flight hold %d blocks that no cache may evict (active, pinned, reserved), and the pool has %d", used, l.capacity)
	default:
		return nil
	}
	return &model.Violation{Invariant: model.NameCapacityRespected, Handoff: -1, Worker: -1, Detail: l.worker + ": " + why}
}
