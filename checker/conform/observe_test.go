package conform

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/handoffcheck/handoffcheck/checker/cluster"
	"github.com/handoffcheck/handoffcheck/checker/obslog"
	"github.com/handoffcheck/handoffcheck/checker/system"
	"github.com/handoffcheck/handoffcheck/model"
	"github.com/handoffcheck/handoffcheck/spec"
)

// TestObserve_AsWrittenBefore holds obslog.Observe, written out for
// speed, to the closures' version it replaced (kept below) on every move
// of random walks through one attempt's world, faults included, both
// policies on both engines: the same labels in the same order. It holds
// the stepper's Apply and JudgeApplied, which conform's search takes
// moves with, to Force on the same moves: the same state, triggers,
// firings and violation.
func TestObserve_AsWrittenBefore(t *testing.T) {
	for _, pol := range []string{"source-first", "destination-first"} {
		for _, eng := range []model.Engine{model.VLLM, model.SGLang} {
			cfg := cluster.DefaultConfig()
			if err := cfg.SetPolicy(pol); err != nil {
				t.Fatal(err)
			}
			cfg.Engine = eng
			p := system.Generated()
			budget := system.Budget{}
			for f := range budget {
				budget[f] = system.MaxBudget
			}
			chk, err := system.New(p, &system.Config{World: *cfg.AttemptWorld(1, 0), Budget: budget, Renewal: cfg.Renewal, Commands: cfg.Commands},
				system.Run{Name: "observe", Policy: cfg.SpecPolicy(), Engine: eng})
			if err != nil {
				t.Fatal(err)
			}
			step := cluster.NewStepper(chk, system.NewCoverage(p.Spec()))
			rng := rand.New(rand.NewPCG(uint64(len(pol)), uint64(eng)))
			var moves []system.Move
			compared, labelled := 0, 0
			for walk := range 300 {
				wc := cfg.AttemptWorld(model.Tokens(513+rng.IntN(4096)), model.Tokens(512*rng.IntN(2)))
				if err := wc.Prepare(); err != nil {
					t.Fatal(err)
				}
				st := step.Initial(wc)
				for range 80 {
					moves = step.Moves(&st, moves[:0])
					for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
						if cluster.Evicts(chk, &st, sd) {
							moves = append(moves, cluster.Evict(sd))
						}
					}
					if len(moves) == 0 {
						break
					}
					for _, m := range moves {
						applied := st
						step.Apply(&st, &applied, m)
						fired, firings := step.Fired(), slices.Clone(step.Firings())
						judged := step.JudgeApplied(&st, &applied, m)
						next := st
						v := step.Force(&next, m)
						if applied != next || fired != step.Fired() || !reflect.DeepEqual(firings, step.Firings()) || !reflect.DeepEqual(judged, v) {
							t.Fatalf("%s %s walk %d, move %v: Apply and JudgeApplied differ from Force (violation %v against %v)", pol, eng, walk, m, judged, v)
						}
						if v != nil {
							continue
						}
						got := obslog.Observe(nil, 0, &st, &next, m, step.Firings())
						want := observeWrittenBefore(nil, 0, &st, &next, m, step.Firings())
						if !slices.Equal(got, want) {
							t.Fatalf("%s %s walk %d, move %v: got %v, want %v", pol, eng, walk, m, got, want)
						}
						compared++
						if len(got) > 0 {
							labelled++
						}
					}
					// Mostly the protocol's own moves: a fault taken at
					// every turn ends most walks within a few steps.
					m := moves[rng.IntN(len(moves))]
					for try := 0; try < 8; try++ {
						if _, fault := m.Kind.Spends(); !fault {
							break
						}
						m = moves[rng.IntN(len(moves))]
					}
					next := st
					if v := step.Force(&next, m); v != nil {
						break
					}
					st = next
				}
			}
			if compared < 10000 || labelled < 1000 {
				t.Fatalf("%s %s: %d moves compared, %d with labels: too few to hold the two alike", pol, eng, compared, labelled)
			}
		}
	}
}

// refBySide, refSideOf, refReg, refIndexed and refEventKinds are the
// helpers observeWrittenBefore read.
func refBySide(s model.Side) obslog.Who {
	if s == model.SourceSide {
		return obslog.BySource
	}
	return obslog.ByDestination
}

func refSideOf(by obslog.Who) model.Side {
	if by == obslog.BySource {
		return model.SourceSide
	}
	return model.DestinationSide
}

func refReg(x *model.Handoff, sd model.Side) model.Reg {
	if sd == model.SourceSide {
		return x.SrcReg
	}
	return x.DstReg
}

func refIndexed(x *model.Handoff, sd model.Side) bool {
	if sd == model.SourceSide {
		return x.SrcIndexed
	}
	return x.Published
}

var refEventKinds = func() (t [2][256]obslog.Kind) {
	for sd := model.SourceSide; sd <= model.DestinationSide; sd++ {
		r := spec.Source
		if sd == model.DestinationSide {
			r = spec.Destination
		}
		for ev := 0; ev < 256; ev++ {
			var k obslog.Kind
			switch system.EventName(r, uint8(ev)) {
			case "Cancelled", "ClientCancelled":
				k = obslog.Cancelled
			case "LocalAbort":
				k = obslog.Aborted
			case "LeaseRenewed":
				k = obslog.LeaseRenewed
			case "LeaseExpired":
				k = obslog.LeaseExpired
			case "ReservationExpired":
				k = obslog.ReservationExpired
			case "BootstrapExpired", "TransferTimeout":
				k = obslog.DeadlineExpired
			case "ReaderCompleted":
				k = obslog.ReaderCompleted
			case "ReceiveCompleted":
				k = obslog.ReceiveCompleted
			case "TransferDone":
				if sd == model.DestinationSide {
					k = obslog.ReceiveCompleted
				}
			case "DecodeFinished":
				k = obslog.DecodeFinished
			}
			t[sd][ev] = k
		}
	}
	return t
}()

// observeWrittenBefore is obslog.Observe as it was written with closures.
func observeWrittenBefore(out []obslog.Label, h int, before, after *system.State, m system.Move, fs []system.Firing) []obslog.Label {
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
		if k := refEventKinds[sd][f.Event]; k != 0 {
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
	add := func(l obslog.Label) {
		// A side whose process restarted forgot the attempt: the new
		// process logs nothing more of it (a transfer that ends later
		// ends unobserved by it).
		if l.By != obslog.ByRouter && b.Outcome[refSideOf(l.By)] == model.OutcomeForgotten {
			return
		}
		out = append(out, l)
	}
	const src, dst = model.SourceSide, model.DestinationSide
	// In vocabulary order, and within a kind the prefill side's first.
	if b.Prefill < 0 && a.Prefill >= 0 {
		add(obslog.Label{Kind: obslog.Routed, By: obslog.ByRouter, Stage: src, Tokens: d(src, func(w *model.Worker) int64 { return int64(w.PrefillTokens) })})
	}
	if b.Decode < 0 && a.Decode >= 0 {
		add(obslog.Label{Kind: obslog.Routed, By: obslog.ByRouter, Stage: dst, Blocks: d(dst, func(w *model.Worker) int64 { return int64(w.BookedBlocks) })})
	}
	if !b.Cancelled && a.Cancelled {
		add(obslog.Label{Kind: obslog.ClientCancelled, By: obslog.ByRouter})
	}
	for sd := src; sd <= dst; sd++ {
		if !b.Accepted[sd] && a.Accepted[sd] {
			add(obslog.Label{Kind: obslog.RequestAccepted, By: refBySide(sd)})
		}
	}
	if b.Compute == model.ComputeNone && a.Compute != model.ComputeNone {
		add(obslog.Label{Kind: obslog.PrefillDispatched, By: obslog.BySource})
	}
	event := func(k obslog.Kind) {
		if (evs[0]|evs[1])&(1<<k) == 0 {
			return
		}
		for sd := src; sd <= dst; sd++ {
			if evs[sd]&(1<<k) != 0 {
				add(obslog.Label{Kind: k, By: refBySide(sd)})
			}
		}
	}
	if anyEv {
		event(obslog.Cancelled)
		event(obslog.Aborted)
		event(obslog.LeaseRenewed)
		event(obslog.LeaseExpired)
		event(obslog.ReservationExpired)
		if m.Kind == system.MvTimer {
			for sd := src; sd <= dst; sd++ {
				if evs[sd]&(1<<obslog.DeadlineExpired) != 0 {
					add(obslog.Label{Kind: obslog.DeadlineExpired, By: refBySide(sd), Timer: model.Timer(m.Arg)})
				}
			}
		}
	}
	xfer := func(k obslog.Kind, to model.Xfer, started bool) {
		for sd := src; sd <= dst; sd++ {
			if a.Runner != sd {
				continue
			}
			if started && b.Xfer == model.XferNone && a.Xfer != model.XferNone || !started && b.Xfer != to && a.Xfer == to {
				add(obslog.Label{Kind: k, By: refBySide(sd)})
			}
		}
	}
	xfer(obslog.TransferDone, model.XferDone, false)
	xfer(obslog.TransferFailed, model.XferFailed, false)
	if anyEv {
		event(obslog.ReceiveCompleted)
		event(obslog.ReaderCompleted)
		event(obslog.DecodeFinished)
	}
	if b.Dst == model.DstNone && a.Dst == model.DstReserved {
		add(obslog.Label{Kind: obslog.Reserved, By: obslog.ByDestination,
			Pages:    d(dst, func(w *model.Worker) int64 { return int64(w.Reserved) }),
			Slot:     d(dst, func(w *model.Worker) int64 { return int64(w.SlotsUsed) }),
			Headroom: d(dst, func(w *model.Worker) int64 { return int64(w.HeadroomUsed) })})
	}
	for sd := src; sd <= dst; sd++ {
		if refReg(b, sd) == model.RegNone && refReg(a, sd) == model.RegValid {
			add(obslog.Label{Kind: obslog.Registered, By: refBySide(sd)})
		}
	}
	if b.Src != model.SrcPinned && a.Src == model.SrcPinned {
		add(obslog.Label{Kind: obslog.Pinned, By: obslog.BySource, Blocks: d(src, func(w *model.Worker) int64 { return int64(w.Pinned) })})
	}
	xfer(obslog.TransferStarted, 0, true)
	if b.Dst != model.DstActive && a.Dst == model.DstActive {
		add(obslog.Label{Kind: obslog.Activated, By: obslog.ByDestination})
	}
	if b.Src == model.SrcActive && a.Src == model.SrcNone {
		add(obslog.Label{Kind: obslog.PrefillStopped, By: obslog.BySource, Blocks: -d(src, func(w *model.Worker) int64 { return int64(w.Active) })})
	}
	if b.Src == model.SrcPinned && a.Src != model.SrcPinned {
		add(obslog.Label{Kind: obslog.SourceReleased, By: obslog.BySource, Blocks: -d(src, func(w *model.Worker) int64 { return int64(w.Pinned) })})
	}
	if b.Dst == model.DstReserved && a.Dst == model.DstNone {
		add(obslog.Label{Kind: obslog.ReservationReleased, By: obslog.ByDestination, Pages: -d(dst, func(w *model.Worker) int64 { return int64(w.Reserved) })})
	}
	if b.Dst == model.DstActive && a.Dst == model.DstNone {
		add(obslog.Label{Kind: obslog.DecodeReleased, By: obslog.ByDestination, Blocks: -d(dst, func(w *model.Worker) int64 { return int64(w.Active) })})
	}
	for _, k := range [2]obslog.Kind{obslog.Stored, obslog.Removed} {
		for sd := src; sd <= dst; sd++ {
			bi, ai := refIndexed(b, sd), refIndexed(a, sd)
			if bi != ai && ai == (k == obslog.Stored) {
				n := d(sd, func(w *model.Worker) int64 { return int64(w.StoredBlocks) })
				add(obslog.Label{Kind: k, By: refBySide(sd), Blocks: max(n, -n)})
			}
		}
	}
	for sd := src; sd <= dst; sd++ {
		if b.Outcome[sd] == model.OutcomeNone && a.Outcome[sd] != model.OutcomeNone {
			add(obslog.Label{Kind: obslog.OutcomeReported, By: refBySide(sd), Outcome: a.Outcome[sd]})
		}
	}
	return out
}
