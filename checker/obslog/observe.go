package obslog

import (
	"fmt"
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
func Observe(out []Label, h int, before, after *system.State, m system.Move, fs []system.Firing) []Label {
	if m.Kind == system.Restart.Move() {
		return out
	}
	b, a := &before.W.H[h], &after.W.H[h]
	bw, aw := &before.W.W, &after.W.W
	// evs is the event-driven kinds, a bit per kind, per side: two words
	// to clear for every step tried, not a table.
	var evs [2]uint32
	for _, f := range fs {
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
	if !anyEv && *b == *a {
		return out
	}
	// ws is each side's worker, before and after (nil: none).
	var ws [2][2]*model.Worker
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		w := a.Worker(sd)
		if w < 0 {
			w = b.Worker(sd)
		}
		if w >= 0 {
			ws[sd] = [2]*model.Worker{&bw[w], &aw[w]}
		}
	}
	// d is how much a figure of side sd's worker grew in the step.
	d := func(sd model.Side, get func(*model.Worker) int64) int32 {
		if ws[sd][0] == nil {
			return 0
		}
		return int32(get(ws[sd][1]) - get(ws[sd][0]))
	}
	add := func(l Label) {
		// A side whose process restarted forgot the attempt: the new
		// process logs nothing more of it (a transfer that ends later
		// ends unobserved by it).
		if l.By != ByRouter && b.Outcome[sideOf(l.By)] == model.OutcomeForgotten {
			return
		}
		out = append(out, l)
	}
	const src, dst = model.SourceSide, model.DestinationSide
	// In vocabulary order, and within a kind the prefill side's first.
	if b.Prefill < 0 && a.Prefill >= 0 {
		add(Label{Kind: Routed, By: ByRouter, Stage: src, Tokens: d(src, func(w *model.Worker) int64 { return int64(w.PrefillTokens) })})
	}
	if b.Decode < 0 && a.Decode >= 0 {
		add(Label{Kind: Routed, By: ByRouter, Stage: dst, Blocks: d(dst, func(w *model.Worker) int64 { return int64(w.BookedBlocks) })})
	}
	if !b.Cancelled && a.Cancelled {
		add(Label{Kind: ClientCancelled, By: ByRouter})
	}
	for sd := src; sd <= dst; sd++ {
		if !b.Accepted[sd] && a.Accepted[sd] {
			add(Label{Kind: RequestAccepted, By: bySide(sd)})
		}
	}
	if b.Compute == model.ComputeNone && a.Compute != model.ComputeNone {
		add(Label{Kind: PrefillDispatched, By: BySource})
	}
	event := func(k Kind) {
		if (evs[0]|evs[1])&(1<<k) == 0 {
			return
		}
		for sd := src; sd <= dst; sd++ {
			if evs[sd]&(1<<k) != 0 {
				add(Label{Kind: k, By: bySide(sd)})
			}
		}
	}
	if anyEv {
		event(Cancelled)
		event(Aborted)
		event(LeaseRenewed)
		event(LeaseExpired)
		event(ReservationExpired)
		if m.Kind == system.MvTimer {
			for sd := src; sd <= dst; sd++ {
				if evs[sd]&(1<<DeadlineExpired) != 0 {
					add(Label{Kind: DeadlineExpired, By: bySide(sd), Timer: model.Timer(m.Arg)})
				}
			}
		}
	}
	xfer := func(k Kind, to model.Xfer, started bool) {
		for sd := src; sd <= dst; sd++ {
			if a.Runner != sd {
				continue
			}
			if started && b.Xfer == model.XferNone && a.Xfer != model.XferNone || !started && b.Xfer != to && a.Xfer == to {
				add(Label{Kind: k, By: bySide(sd)})
			}
		}
	}
	xfer(TransferDone, model.XferDone, false)
	xfer(TransferFailed, model.XferFailed, false)
	if anyEv {
		event(ReceiveCompleted)
		event(ReaderCompleted)
		event(DecodeFinished)
	}
	if b.Dst == model.DstNone && a.Dst == model.DstReserved {
		add(Label{Kind: Reserved, By: ByDestination,
			Pages:    d(dst, func(w *model.Worker) int64 { return int64(w.Reserved) }),
			Slot:     d(dst, func(w *model.Worker) int64 { return int64(w.SlotsUsed) }),
			Headroom: d(dst, func(w *model.Worker) int64 { return int64(w.HeadroomUsed) })})
	}
	for sd := src; sd <= dst; sd++ {
		if reg(b, sd) == model.RegNone && reg(a, sd) == model.RegValid {
			add(Label{Kind: Registered, By: bySide(sd)})
		}
	}
	if b.Src != model.SrcPinned && a.Src == model.SrcPinned {
		add(Label{Kind: Pinned, By: BySource, Blocks: d(src, func(w *model.Worker) int64 { return int64(w.Pinned) })})
	}
	xfer(TransferStarted, 0, true)
	if b.Dst != model.DstActive && a.Dst == model.DstActive {
		add(Label{Kind: Activated, By: ByDestination})
	}
	if b.Src == model.SrcActive && a.Src == model.SrcNone {
		add(Label{Kind: PrefillStopped, By: BySource, Blocks: -d(src, func(w *model.Worker) int64 { return int64(w.Active) })})
	}
	if b.Src == model.SrcPinned && a.Src != model.SrcPinned {
		add(Label{Kind: SourceReleased, By: BySource, Blocks: -d(src, func(w *model.Worker) int64 { return int64(w.Pinned) })})
	}
	if b.Dst == model.DstReserved && a.Dst == model.DstNone {
		add(Label{Kind: ReservationReleased, By: ByDestination, Pages: -d(dst, func(w *model.Worker) int64 { return int64(w.Reserved) })})
	}
	if b.Dst == model.DstActive && a.Dst == model.DstNone {
		add(Label{Kind: DecodeReleased, By: ByDestination, Blocks: -d(dst, func(w *model.Worker) int64 { return int64(w.Active) })})
	}
	for _, k := range [2]Kind{Stored, Removed} {
		for sd := src; sd <= dst; sd++ {
			bi, ai := indexed(b, sd), indexed(a, sd)
			if bi != ai && ai == (k == Stored) {
				n := d(sd, func(w *model.Worker) int64 { return int64(w.StoredBlocks) })
				add(Label{Kind: k, By: bySide(sd), Blocks: max(n, -n)})
			}
		}
	}
	for sd := src; sd <= dst; sd++ {
		if b.Outcome[sd] == model.OutcomeNone && a.Outcome[sd] != model.OutcomeNone {
			add(Label{Kind: OutcomeReported, By: bySide(sd), Outcome: a.Outcome[sd]})
		}
	}
	return out
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

func reg(x *model.Handoff, sd model.Side) model.Reg {
	if sd == model.SourceSide {
		return x.SrcReg
	}
	return x.DstReg
}

func indexed(x *model.Handoff, sd model.Side) bool {
	if sd == model.SourceSide {
		return x.SrcIndexed
	}
	return x.Published
}

// Observe keeps a step's event-driven kinds in a bit per kind.
var _ [32 - NumKinds]struct{}
