// Package obslog is the observation log: what a running system (an
// engine, a simulator, a mocker, the live workers) writes about the
// handoffs it runs, one fact per line, in the vocabulary of the lifecycle
// and its resources (docs/conform.md). It holds the format (a versioned
// JSON Lines file, handoffcheck.log/v1), its streaming reader and writer,
// and Observe, the one mapping from a step of the composed system to the
// facts a process would log about it: a writer that runs the machines
// logs what Observe says, and the conformance judge (package
// checker/conform) asks Observe which steps explain a logged fact.
package obslog

import (
	"fmt"
	"strings"
)

// Kind is the kind of one observed fact.
type Kind uint8

// The kinds, in the order Observe lists the facts of one step, which is
// the order a process logs the facts of one step in: what it learned
// first (a receipt, a deadline, a transfer's end), then what it took,
// then what it let go, then what it published, then its outcome.
const (
	_ Kind = iota
	Routed
	ClientCancelled
	RequestAccepted
	PrefillDispatched
	Cancelled
	Aborted
	LeaseRenewed
	LeaseExpired
	ReservationExpired
	DeadlineExpired
	TransferDone
	TransferFailed
	ReceiveCompleted
	ReaderCompleted
	DecodeFinished
	Reserved
	Registered
	Pinned
	TransferStarted
	Activated
	PrefillStopped
	SourceReleased
	ReservationReleased
	DecodeReleased
	Stored
	Removed
	OutcomeReported
	WorkerRestarted
	NumKinds
)

// Who is the process that logs a fact: a router (the prefill or decode
// router, or the frontend), or the worker of one side of the handoff.
type Who uint8

const (
	// ByRouter: a router or the frontend.
	ByRouter Who = iota
	// BySource: the prefill worker of the attempt.
	BySource
	// ByDestination: the decode worker of the attempt.
	ByDestination
	// BySide: the worker of either side, whichever the fact is about.
	BySide
)

var whoNames = [...]string{"a router", "the prefill worker", "the decode worker", "either worker"}

func (w Who) String() string { return whoNames[w] }

// Figure is a resource figure a fact may carry.
type Figure uint8

const (
	FigBlocks Figure = iota
	FigPages
	FigSlot
	FigHeadroom
	FigTokens
	FigOutcome
	FigStage
	FigTimer
	numFigures
)

var figureKeys = [numFigures]string{"blocks", "pages", "slot", "headroom", "tokens", "outcome", "stage", "timer"}

func (f Figure) String() string { return figureKeys[f] }

// KindInfo is one entry of the vocabulary: its name in a log, who logs it,
// the figures it carries, and what it means.
type KindInfo struct {
	Name    string
	Who     Who
	Figures []Figure
	// Milestone: one of the coarse facts a log of milestones keeps.
	Milestone bool
	Doc       string
}

// Kinds is the vocabulary (docs/conform.md lists it, generated from here).
var Kinds = [NumKinds]KindInfo{
	Routed: {Name: "routed", Who: ByRouter, Figures: []Figure{FigStage, FigTokens, FigBlocks}, Milestone: true,
		Doc: "a router chose the attempt's worker (stage prefill or decode, `to` the worker) and booked it: `tokens` of prefill compute load, or `blocks` of decode estimate"},
	ClientCancelled: {Name: "client_cancelled", Who: ByRouter,
		Doc: "the client aborted the request; the frontend cancels the request streams that exist"},
	RequestAccepted: {Name: "request_accepted", Who: BySide,
		Doc: "the worker counted the request in flight"},
	PrefillDispatched: {Name: "prefill_dispatched", Who: BySource,
		Doc: "the prefill was dispatched to the scheduler"},
	Cancelled: {Name: "cancelled", Who: BySide,
		Doc: "the worker took a cancel: the client's, on the request stream, or its peer's `Cancelled` fact"},
	Aborted: {Name: "aborted", Who: BySide,
		Doc: "the worker aborted the attempt on its own"},
	LeaseRenewed: {Name: "lease_renewed", Who: BySource,
		Doc: "the source took a heartbeat that renews its lease"},
	LeaseExpired: {Name: "lease_expired", Who: BySource,
		Doc: "the source lease ran out and the source acted on it"},
	ReservationExpired: {Name: "reservation_expired", Who: ByDestination,
		Doc: "the destination's reservation deadline passed and it acted on it"},
	DeadlineExpired: {Name: "deadline_expired", Who: BySide, Figures: []Figure{FigTimer},
		Doc: "another deadline of the worker passed and it acted on it: `timer` is bootstrap, push-deadline or pull-deadline"},
	Reserved: {Name: "reserved", Who: ByDestination, Figures: []Figure{FigPages, FigSlot, FigHeadroom}, Milestone: true,
		Doc: "the destination reserved: `pages` of delta pages, `slot` decode slots, `headroom` tokens of admission headroom"},
	Registered: {Name: "registered", Who: BySide,
		Doc: "the worker registered the attempt's blocks for the transfer"},
	Pinned: {Name: "pinned", Who: BySource, Figures: []Figure{FigBlocks}, Milestone: true,
		Doc: "prefill finished and its `blocks` are pinned for the handoff"},
	TransferStarted: {Name: "transfer_started", Who: BySide,
		Doc: "the worker that runs the transfer (the pulling destination, the pushing source) started it"},
	TransferDone: {Name: "transfer_done", Who: BySide,
		Doc: "the transfer its runner ran read and wrote every block"},
	TransferFailed: {Name: "transfer_failed", Who: BySide,
		Doc: "the transfer failed, timed out or hit a fence"},
	ReceiveCompleted: {Name: "receive_completed", Who: ByDestination,
		Doc: "the destination learned its KV is valid (its own pull ended, or the pushing source told it)"},
	ReaderCompleted: {Name: "reader_completed", Who: BySource,
		Doc: "the source learned the reads of its blocks are over"},
	Activated: {Name: "activated", Who: ByDestination, Milestone: true,
		Doc: "the destination's received pages became active: decode may run; with `adopted_blocks` and `canonical`, it adopted the canonical blocks attempt `canonical` holds for that many blocks of the prompt prefix and freed its duplicates (engines that adopt at activation)"},
	Stored: {Name: "stored", Who: BySide, Figures: []Figure{FigBlocks},
		Doc: "the worker published `Stored` to the KV index for `blocks` of the attempt"},
	DecodeFinished: {Name: "decode_finished", Who: ByDestination, Milestone: true,
		Doc: "decode produced its last token"},
	PrefillStopped: {Name: "prefill_stopped", Who: BySource, Figures: []Figure{FigBlocks},
		Doc: "the prefill was stopped before its pin and its compute `blocks` freed"},
	SourceReleased: {Name: "source_released", Who: BySource, Figures: []Figure{FigBlocks}, Milestone: true,
		Doc: "the source's pin ended: its `blocks` left `pinned_source`"},
	ReservationReleased: {Name: "reservation_released", Who: ByDestination, Figures: []Figure{FigPages},
		Doc: "the destination returned reserved `pages` that never activated"},
	DecodeReleased: {Name: "decode_released", Who: ByDestination, Figures: []Figure{FigBlocks},
		Doc: "the destination returned its active `blocks` after decode"},
	Removed: {Name: "removed", Who: BySide, Figures: []Figure{FigBlocks},
		Doc: "the worker published `Removed` for `blocks` of the attempt that the index advertised"},
	OutcomeReported: {Name: "outcome_reported", Who: BySide, Figures: []Figure{FigOutcome},
		Doc: "the worker reported its terminal `outcome` (ok, failed) to its router"},
	WorkerRestarted: {Name: "worker_restarted", Who: BySide,
		Doc: "the worker's process restarted: the line's `gen` is the new generation; it names no attempt"},
}

func (k Kind) String() string {
	if k > 0 && k < NumKinds {
		return Kinds[k].Name
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// KindNamed finds a kind by its name in a log.
func KindNamed(name string) (Kind, bool) {
	k, ok := kindByName[name]
	return k, ok
}

// kindByName is the kinds by name, for a reader's every line.
var kindByName = func() map[string]Kind {
	m := map[string]Kind{}
	for k := Kind(1); k < NumKinds; k++ {
		m[Kinds[k].Name] = k
	}
	return m
}()

// AttemptKindNames lists, in order, the kinds a worker logs about an
// attempt: what a phase of a handoff can be named by.
func AttemptKindNames() []string {
	var out []string
	for k := Kind(1); k < NumKinds; k++ {
		if Kinds[k].Who != ByRouter && k != WorkerRestarted {
			out = append(out, Kinds[k].Name)
		}
	}
	return out
}

// KindNames lists the kinds' names in order.
func KindNames() []string {
	out := make([]string, 0, NumKinds-1)
	for k := Kind(1); k < NumKinds; k++ {
		out = append(out, Kinds[k].Name)
	}
	return out
}

// Milestones lists the kinds a log of milestones keeps.
func Milestones() []Kind {
	var out []Kind
	for k := Kind(1); k < NumKinds; k++ {
		if Kinds[k].Milestone {
			out = append(out, k)
		}
	}
	return out
}

// KindSet is a set of kinds.
type KindSet uint64

// All is every kind.
const All = KindSet(1<<NumKinds - 2)

func (s KindSet) Has(k Kind) bool { return s&(1<<k) != 0 }

// Of makes a set.
func Of(ks ...Kind) KindSet {
	var s KindSet
	for _, k := range ks {
		s |= 1 << k
	}
	return s
}

// Names lists the set's kinds.
func (s KindSet) Names() []string {
	var out []string
	for k := Kind(1); k < NumKinds; k++ {
		if s.Has(k) {
			out = append(out, Kinds[k].Name)
		}
	}
	return out
}

func (s KindSet) String() string { return strings.Join(s.Names(), ",") }
