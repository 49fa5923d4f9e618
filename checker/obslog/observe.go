package obslog

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// Label is one fact a step makes observable: its kind, the process that
// logs it (a router, or one side's worker) and its figures. Figures a
// kind does not carry are zero.
type Label struct {
	Kind Kind
	By   Who // ByRouter, BySource or ByDestination
	// Stage is the router stage of Routed: SourceSide for the prefill
	// router, DestinationSide for the decode router.
	Stage model.Side
	// The figures: 32 bits hold any a worker has, and keep small the
	// labels an explanation owes.
	Blocks, Pages, Slot, Headroom, Tokens int32
	Outcome                               model.Outcome
	Timer                                 model.Timer
}

func (l Label) String() string {
	var b strings.Builder
	b.WriteString(l.Kind.String())
	switch l.By {
	case BySource:
		b.WriteString(" by the prefill worker")
	case ByDestination:
		b.WriteString(" by the decode worker")
	default:
		b.WriteString(" by a router")
	}
	for _, f := range Kinds[l.Kind].Figures {
		switch f {
		case FigStage:
			fmt.Fprintf(&b, " stage=%s", stageName(l.Stage))
		case FigOutcome:
			fmt.Fprintf(&b, " outcome=%s", l.Outcome)
		case FigTimer:
			fmt.Fprintf(&b, " timer=%s", l.Timer)
		default:
			if v := l.figure(f); v != 0 || l.Kind != Routed {
				fmt.Fprintf(&b, " %s=%d", f, v)
			}
		}
	}
	return b.String()
}

func (l Label) figure(f Figure) int64 {
	switch f {
	case FigBlocks:
		return int64(l.Blocks)
	case FigPages:
		return int64(l.Pages)
	case FigSlot:
		return int64(l.Slot)
	case FigHeadroom:
		return int64(l.Headroom)
	case FigTokens:
		return int64(l.Tokens)
	}
	return 0
}

func stageName(s model.Side) string {
	if s == model.SourceSide {
		return "prefill"
	}
	return "decode"
}

func bySide(s model.Side) Who {
	if s == model.SourceSide {
		return BySource
	}
	return ByDestination
}

// Observe lists, in vocabulary order, the facts that a step of handoff h
// from before to after by move m, firing the rows fs, makes observable.
// It reads only the physical world and the rows that fired: which
// protocol state a side is in is never observable, what it does is.
// Steps of a worker's restart are not observed: the restarted process
// logs only worker_restarted, and what the restart takes from the attempt
// follows from it.
//
// conform asks it of every move it tries, so it is written out without
// closures: a step whose record is unchanged (only events fired) reads
// only the events, and a worker's figures are read only for the labels
// that carry one.
func Observe(out []Label, h int, before, after *system.State, m system.Move, fs []system.Firing) []Label {
	if m.Kind == system.Restart.Move() {
		return out
	}
	b, a := &before.W.H[h], &after.W.H[h]
	// evs is the event-driven kinds, a bit per kind, per side: two words
	// to clear for every step tried, not a table.
	var evs [2]uint32
	for i := range fs {
		f := &fs[i]
		if f.Handoff != h || (f.From == f.To && len(f.Actions) == 0) {
			continue // an ignore row changes nothing anyone would log
		}
		sd := model.SourceSide
		if f.Role == spec.Destination {
			sd = model.DestinationSide
		}
		if k := eventKinds[sd][f.Event]; k != 0 {
			evs[sd] |= 1 << k
		}
	}
	anyEv := evs[0]|evs[1] != 0
	// Every label below is a change of the handoff's record, or an event
	// a row fired: a step that changes neither logs nothing.
	changed := *b != *a
	if !anyEv && !changed {
		return out
	}
	// gone[sd]: side sd's process restarted and forgot the attempt: the
	// new process logs nothing more of it (a transfer that ends later
	// ends unobserved by it). A router's labels are always logged.
	o := observer{out: out, gone: [2]bool{b.Outcome[0] == model.OutcomeForgotten, b.Outcome[1] == model.OutcomeForgotten}}
	const src, dst = model.SourceSide, model.DestinationSide
	if !changed {
		// Only events: the labels of a changed record are all absent.
		o.events(&evs, Cancelled, ReservationExpired)
		o.deadline(&evs, m)
		o.events(&evs, ReceiveCompleted, DecodeFinished)
		return o.out
	}
	// In vocabulary order, and within a kind the prefill side's first.
	if b.Prefill < 0 && a.Prefill >= 0 {
		var n int32
		if x, y := sideWorker(b, a, before, after, src); x != nil {
			n = int32(int64(y.PrefillTokens) - int64(x.PrefillTokens))
		}
		o.add(Label{Kind: Routed, By: ByRouter, Stage: src, Tokens: n})
	}
	if b.Decode < 0 && a.Decode >= 0 {
		var n int32
		if x, y := sideWorker(b, a, before, after, dst); x != nil {
			n = int32(int64(y.BookedBlocks) - int64(x.BookedBlocks))
		}
		o.add(Label{Kind: Routed, By: ByRouter, Stage: dst, Blocks: n})
	}
	if !b.Cancelled && a.Cancelled {
		o.add(Label{Kind: ClientCancelled, By: ByRouter})
	}
	for sd := src; sd <= dst; sd++ {
		if !b.Accepted[sd] && a.Accepted[sd] {
			o.add(Label{Kind: RequestAccepted, By: bySide(sd)})
		}
	}
	if b.Compute == model.ComputeNone && a.Compute != model.ComputeNone {
		o.add(Label{Kind: PrefillDispatched, By: BySource})
	}
	if anyEv {
		o.events(&evs, Cancelled, ReservationExpired)
		o.deadline(&evs, m)
	}
	// The transfer's runner logs its start and end.
	runs := a.Runner == src || a.Runner == dst
	if runs && b.Xfer != model.XferDone && a.Xfer == model.XferDone {
		o.add(Label{Kind: TransferDone, By: bySide(a.Runner)})
	}
	if runs && b.Xfer != model.XferFailed && a.Xfer == model.XferFailed {
		o.add(Label{Kind: TransferFailed, By: bySide(a.Runner)})
	}
	if anyEv {
		o.events(&evs, ReceiveCompleted, DecodeFinished)
	}
	if b.Dst == model.DstNone && a.Dst == model.DstReserved {
		var pages, slot, head int32
		if x, y := sideWorker(b, a, before, after, dst); x != nil {
			pages = int32(int64(y.Reserved) - int64(x.Reserved))
			slot = int32(int64(y.SlotsUsed) - int64(x.SlotsUsed))
			head = int32(int64(y.HeadroomUsed) - int64(x.HeadroomUsed))
		}
		o.add(Label{Kind: Reserved, By: ByDestination, Pages: pages, Slot: slot, Headroom: head})
	}
	if b.SrcReg == model.RegNone && a.SrcReg == model.RegValid {
		o.add(Label{Kind: Registered, By: BySource})
	}
	if b.DstReg == model.RegNone && a.DstReg == model.RegValid {
		o.add(Label{Kind: Registered, By: ByDestination})
	}
	if b.Src != model.SrcPinned && a.Src == model.SrcPinned {
		var n int32
		if x, y := sideWorker(b, a, before, after, src); x != nil {
			n = int32(int64(y.Pinned) - int64(x.Pinned))
		}
		o.add(Label{Kind: Pinned, By: BySource, Blocks: n})
	}
	if runs && b.Xfer == model.XferNone && a.Xfer != model.XferNone {
		o.add(Label{Kind: TransferStarted, By: bySide(a.Runner)})
	}
	if b.Dst != model.DstActive && a.Dst == model.DstActive {
		o.add(Label{Kind: Activated, By: ByDestination})
	}
	if b.Src == model.SrcActive && a.Src == model.SrcNone {
		var n int32
		if x, y := sideWorker(b, a, before, after, src); x != nil {
			n = int32(int64(y.Active) - int64(x.Active))
		}
		o.add(Label{Kind: PrefillStopped, By: BySource, Blocks: -n})
	}
	if b.Src == model.SrcPinned && a.Src != model.SrcPinned {
		var n int32
		if x, y := sideWorker(b, a, before, after, src); x != nil {
			n = int32(int64(y.Pinned) - int64(x.Pinned))
		}
		o.add(Label{Kind: SourceReleased, By: BySource, Blocks: -n})
	}
	if b.Dst == model.DstReserved && a.Dst == model.DstNone {
		var n int32
		if x, y := sideWorker(b, a, before, after, dst); x != nil {
			n = int32(int64(y.Reserved) - int64(x.Reserved))
		}
		o.add(Label{Kind: ReservationReleased, By: ByDestination, Pages: -n})
	}
	if b.Dst == model.DstActive && a.Dst == model.DstNone {
		var n int32
		if x, y := sideWorker(b, a, before, after, dst); x != nil {
			n = int32(int64(y.Active) - int64(x.Active))
		}
		o.add(Label{Kind: DecodeReleased, By: ByDestination, Blocks: -n})
	}
	// Stored when a side's blocks become indexed, removed when they stop
	// being: the source's own index, the destination's publication.
	srcFrom, dstFrom := b.SrcIndexed, b.Published
	srcTo, dstTo := a.SrcIndexed, a.Published
	if srcFrom != srcTo || dstFrom != dstTo {
		for _, k := range [2]Kind{Stored, Removed} {
			if srcFrom != srcTo && srcTo == (k == Stored) {
				o.add(Label{Kind: k, By: BySource, Blocks: storedGrew(sideWorker(b, a, before, after, src))})
			}
			if dstFrom != dstTo && dstTo == (k == Stored) {
				o.add(Label{Kind: k, By: ByDestination, Blocks: storedGrew(sideWorker(b, a, before, after, dst))})
			}
		}
	}
	for sd := src; sd <= dst; sd++ {
		if b.Outcome[sd] == model.OutcomeNone && a.Outcome[sd] != model.OutcomeNone {
			o.add(Label{Kind: OutcomeReported, By: bySide(sd), Outcome: a.Outcome[sd]})
		}
	}
	return o.out
}

// observer collects a step's labels, leaving out those of a side whose
// process forgot the attempt.
type observer struct {
	out  []Label
	gone [2]bool
}

func (o *observer) add(l Label) {
	if l.By != ByRouter && o.gone[sideOf(l.By)] {
		return
	}
	o.out = append(o.out, l)
}

// events adds the event-driven kinds from lo to hi that fired, in
// vocabulary order, the prefill side's first within a kind.
func (o *observer) events(evs *[2]uint32, lo, hi Kind) {
	for set := (evs[0] | evs[1]) & (1<<(hi+1) - 1<<lo); set != 0; set &= set - 1 {
		k := Kind(bits.TrailingZeros32(set))
		if evs[0]&(1<<k) != 0 {
			o.add(Label{Kind: k, By: BySource})
		}
		if evs[1]&(1<<k) != 0 {
			o.add(Label{Kind: k, By: ByDestination})
		}
	}
}

// deadline adds the sides' deadline_expired, which only a timer's move
// fires, with the timer it names.
func (o *observer) deadline(evs *[2]uint32, m system.Move) {
	if m.Kind != system.MvTimer {
		return
	}
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		if evs[sd]&(1<<DeadlineExpired) != 0 {
			o.add(Label{Kind: DeadlineExpired, By: bySide(sd), Timer: model.Timer(m.Arg)})
		}
	}
}

// sideWorker is side sd's worker before and after the step (nil, nil:
// none): the one the record names after it, else before it. Read only
// for a label with a figure: most steps make none.
func sideWorker(b, a *model.Handoff, before, after *system.State, sd model.Side) (x, y *model.Worker) {
	w := a.Worker(sd)
	if w < 0 {
		w = b.Worker(sd)
	}
	if w < 0 {
		return nil, nil
	}
	return &before.W.W[w], &after.W.W[w]
}

// storedGrew is how many blocks a side's worker's index changed by (x
// before the step, y after), as a count: stored and removed both name a
// positive number.
func storedGrew(x, y *model.Worker) int32 {
	if x == nil {
		return 0
	}
	n := int32(int64(y.StoredBlocks) - int64(x.StoredBlocks))
	return max(n, -n)
}

// eventKinds is, per side, the event-driven kind each of its role's
// events makes observable (0: none): Observe looks an event up here
// rather than by its name for every row that fires.
var eventKinds = func() (t [2][256]Kind) {
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		r := spec.Source
		if sd == model.DestinationSide {
			r = spec.Destination
		}
		for ev := 0; ev < 256; ev++ {
			var k Kind
			switch system.EventName(r, uint8(ev)) {
			case "Cancelled", "ClientCancelled":
				k = Cancelled
			case "LocalAbort":
				k = Aborted
			case "LeaseRenewed":
				k = LeaseRenewed
			case "LeaseExpired":
				k = LeaseExpired
			case "ReservationExpired":
				k = ReservationExpired
			case "BootstrapExpired", "TransferTimeout":
				k = DeadlineExpired
			case "ReaderCompleted":
				k = ReaderCompleted
			case "ReceiveCompleted":
				k = ReceiveCompleted
			case "TransferDone":
				if sd == model.DestinationSide {
					k = ReceiveCompleted
				}
			case "DecodeFinished":
				k = DecodeFinished
			}
			t[sd][ev] = k
		}
	}
	return t
}()

func sideOf(by Who) model.Side {
	if by == BySource {
		return model.SourceSide
	}
	return model.DestinationSide
}

// Observe keeps a step's event-driven kinds in a bit per kind.
var _ [32 - NumKinds]struct{}
