package model

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/handoffcheck/handoffcheck/spec"
)

// The operations of ops.go do the physics and record the effects the step
// invariants judge. These tests hold each operation to exactly the effects
// it records and exactly the counters and facts it changes, so that a
// dropped statement, a wrong flag or an off-by-one in ops.go fails here
// even where no invariant would notice it on the histories of
// invariants_test.go.

// path is the happy path of handoff h, source first, one step per stage:
// after upTo(h, n) the handoff has gone through the first n stages.
func path(h int) []func(*Tx) {
	return []func(*Tx){
		func(tx *Tx) { tx.RoutePrefill(h, pw(tx)); tx.DeliverRequest(h) },
		func(tx *Tx) { tx.AcceptRequest(h, SourceSide); tx.StartPrefill(h, SourceSide) },
		func(tx *Tx) {
			tx.FinishCompute(h)
			tx.PinSource(h, SourceSide)
			tx.RegisterSource(h, SourceSide)
			tx.ReportComputeDone(h, SourceSide)
			tx.PublishCached(h, SourceSide)
			tx.AnnouncePinned(h, SourceSide)
		},
		func(tx *Tx) {
			tx.RouteDecode(h, dw(tx))
			tx.AcceptRequest(h, DestinationSide)
			tx.RequestReservation(h, DestinationSide)
		},
		func(tx *Tx) { tx.Reserve(h); tx.RegisterDestination(h, DestinationSide) },
		func(tx *Tx) { tx.StartTransfer(h, DestinationSide, DestinationSide) },
		func(tx *Tx) { tx.CompleteTransfer(h) },
		func(tx *Tx) { tx.ActivateDestination(h, DestinationSide); tx.PublishStored(h, DestinationSide) },
	}
}

// The stages of path, by how many steps reach them.
const (
	stRouted = iota + 1
	stComputing
	stPinned
	stDecodeRouted
	stReserved
	stPulling
	stReceived
	stActivated
)

// upTo is the first n steps of handoff h's happy path, then more steps.
func upTo(h, n int, more ...func(*Tx)) []func(*Tx) {
	return append(path(h)[:n:n], more...)
}

// conf builds a configuration maker for the op tables: testConfig's shape
// with the policy, engine, handoffs, slots and change given.
func conf(p spec.Policy, e Engine, n, slots int, mod func(*Config)) func(*testing.T, bool) *Config {
	return func(t *testing.T, decodeFirst bool) *Config {
		t.Helper()
		return shapedConfig(t, p, e, n, slots, decodeFirst, mod)
	}
}

var (
	vllm1   = conf(spec.SourceFirst, VLLM, 1, 2, nil)
	sglang1 = conf(spec.SourceFirst, SGLang, 1, 2, nil)
	trtllm1 = conf(spec.SourceFirst, TRTLLM, 1, 2, nil)
	// smallPool2: two handoffs, room on the prefill worker for one compute.
	smallPool2 = conf(spec.SourceFirst, VLLM, 2, 2, smallPrefillPool)
	// oneSlot2: two handoffs, vLLM, one decode request slot.
	oneSlot2 = conf(spec.SourceFirst, VLLM, 2, 1, nil)
	// background1: decode worker with 4 background blocks and a slot from the start.
	background1 = conf(spec.SourceFirst, VLLM, 1, 2, func(c *Config) {
		for i := range c.Workers {
			if c.Workers[i].Role == DecodeWorker {
				c.Workers[i].BackgroundBlocks, c.Workers[i].BackgroundSlots, c.Workers[i].BackgroundAtStart = 4, 1, true
			}
		}
	})
	// windowed1: a grouped profile with a sliding-window group: a handoff
	// computes in 6 blocks and pins 4 (3 full-attention blocks, 1 window
	// block); it locks 1 prefix block and reserves 3.
	windowed1 = conf(spec.SourceFirst, VLLM, 1, 2, func(c *Config) {
		b, yes := Bytes(1000), true
		c.Linear = nil
		c.Grouped = &GroupedProfile{Role: "prefill", VLLMVersion: "0.32.0", Groups: []Group{
			{Name: "full", Kind: FullAttention, BlockSize: 16, TransferBytesPerBlock: &b, PrefixCacheable: &yes},
			{Name: "window", Kind: SlidingWindow, BlockSize: 16, Window: 16, TransferBytesPerBlock: &b, PrefixCacheable: &yes},
		}}
	})
	// checkpointed1: a vLLM 0.32.0 profile whose Mamba-type group takes a
	// checkpoint block. The 48-token prompt backs off to T = 47: full
	// attention ceil(47/16) = 3 blocks, the Mamba group its running block
	// and its checkpoint block: computes 5, pins 4, and the checkpoint
	// block goes to the cache at completion.
	checkpointed1 = conf(spec.SourceFirst, VLLM, 1, 2, func(c *Config) {
		b, yes := Bytes(1000), true
		c.Linear = nil
		c.Grouped = &GroupedProfile{Role: "prefill", VLLMVersion: "0.32.0", Groups: []Group{
			{Name: "full", Kind: FullAttention, BlockSize: 16, TransferBytesPerBlock: &b, PrefixCacheable: &yes},
			{Name: "mamba", Kind: StateGroup, BlockSize: 16, TransferBytesPerBlock: &b, PrefixCacheable: &yes, CheckpointBlocks: true},
		}}
	})
)

// changes lists what differs between two worlds: per worker the counters
// that moved, as deltas (w1.Free-2), and per handoff the facts that
// changed, with their new value (h0.Dst=reserved). Arrays are listed per
// element, named by side or resource.
func changes(before, after *World) []string {
	var out []string
	for k := 0; k < after.NumWorkers(); k++ {
		out = append(out, fieldChanges("w"+strconv.Itoa(k)+".", reflect.ValueOf(before.W[k]), reflect.ValueOf(after.W[k]), true)...)
	}
	for h := 0; h < after.NumHandoffs(); h++ {
		out = append(out, fieldChanges("h"+strconv.Itoa(h)+".", reflect.ValueOf(before.H[h]), reflect.ValueOf(after.H[h]), false)...)
	}
	slices.Sort(out)
	return out
}

func fieldChanges(prefix string, a, b reflect.Value, deltas bool) []string {
	var out []string
	show := func(v reflect.Value) string { return strings.ReplaceAll(fmt.Sprint(v.Interface()), " ", "_") }
	for i := 0; i < a.NumField(); i++ {
		name := prefix + a.Type().Field(i).Name
		fa, fb := a.Field(i), b.Field(i)
		switch {
		case fa.Kind() == reflect.Array:
			for j := 0; j < fa.Len(); j++ {
				if !fa.Index(j).Equal(fb.Index(j)) {
					idx := strconv.Itoa(j)
					switch fa.Len() {
					case 2:
						idx = Side(j).String()
					case int(NumRes):
						idx = strings.ReplaceAll(Res(j).String(), " ", "_")
					}
					out = append(out, name+"["+idx+"]="+show(fb.Index(j)))
				}
			}
		case deltas && fa.CanInt():
			if d := fb.Int() - fa.Int(); d != 0 {
				out = append(out, fmt.Sprintf("%s%+d", name, d))
			}
		case deltas && fa.CanUint():
			if d := int64(fb.Uint()) - int64(fa.Uint()); d != 0 {
				out = append(out, fmt.Sprintf("%s%+d", name, d))
			}
		case !fa.Equal(fb):
			out = append(out, name+"="+show(fb))
		}
	}
	return out
}

// opCase is one operation on a prepared world: the effects it must record,
// in order, and every change it must make (changes' notation, with wP and
// wD for the prefill and decode worker, =P and =D for their indices and
// =BITD for the decode worker's bit).
type opCase struct {
	name  string
	cfg   func(*testing.T, bool) *Config // nil: vllm1
	setup []func(*Tx)
	op    func(*Tx)
	eff   []Effect
	diff  string
	// answer, for an ApplyCommand op: the command the core applied and
	// its answer ("release applied", "cancel no-op").
	answer string
}

// applied is what ApplyCommand returned in the op of an opCase.
var applied string

func applyCmd(side Side) func(*Tx) {
	return func(tx *Tx) {
		c, ok := tx.ApplyCommand(0, side)
		applied = c.String() + map[bool]string{true: " applied", false: " no-op"}[ok]
	}
}

func opCases() []opCase {
	src, dst := SourceSide, DestinationSide
	held := func(h int, side Side, r Res) Effect {
		return Effect{Kind: EffEnd, H: int8(h), Side: side, Res: r, Life: Held}
	}
	begin := func(h int, side Side, r Res) Effect { return Effect{Kind: EffBegin, H: int8(h), Side: side, Res: r} }
	return []opCase{
		// ---- Routers and the frontend ----
		{name: "RoutePrefill", op: func(tx *Tx) { tx.RoutePrefill(0, pw(tx)) },
			eff:  []Effect{begin(0, src, ResPrefillBooking)},
			diff: "h0.Prefill=P h0.ComputeLoad=true h0.Life[prefill_booking]=held wP.Owned+1 wP.PrefillTokens+48"},
		{name: "DeliverRequest", op: func(tx *Tx) { tx.DeliverRequest(0) }, diff: "h0.RequestDelivered=true"},
		{name: "RouteDecode", op: func(tx *Tx) { tx.RouteDecode(0, dw(tx)) },
			eff:  []Effect{begin(0, dst, ResDecodeBooking)},
			diff: "h0.Decode=D h0.Life[decode_booking]=held wD.BookedBlocks+3"},
		{name: "ClientCancel/unrouted", op: func(tx *Tx) { tx.ClientCancel(0) }, diff: "h0.Cancelled=true"},
		{name: "ClientCancel/prefill-routed", setup: upTo(0, stRouted), op: func(tx *Tx) { tx.ClientCancel(0) },
			diff: "h0.Cancelled=true h0.CancelPending[source]=true"},
		{name: "ClientCancel/both-routed", setup: upTo(0, stDecodeRouted), op: func(tx *Tx) { tx.ClientCancel(0) },
			diff: "h0.Cancelled=true h0.CancelPending[source]=true h0.CancelPending[destination]=true"},
		{name: "CancelDelivered", setup: upTo(0, stDecodeRouted, func(tx *Tx) { tx.ClientCancel(0) }), op: func(tx *Tx) { tx.CancelDelivered(0, dst) },
			diff: "h0.CancelPending[destination]=false"},
		{name: "NoShow", op: func(tx *Tx) { tx.NoShow(0) }, diff: "h0.NoShow=true"},

		// ---- Acceptance and completion ----
		{name: "AcceptRequest", setup: upTo(0, stRouted), op: func(tx *Tx) { tx.AcceptRequest(0, src) },
			eff:  []Effect{{Kind: EffAccept}},
			diff: "h0.Accepted[source]=true h0.InFlight[source]=true wP.InFlight+1"},
		{name: "AcceptRequest/twice", setup: upTo(0, stComputing), op: func(tx *Tx) { tx.AcceptRequest(0, src) },
			eff: []Effect{{Kind: EffAccept, WasInFlight: true}}},
		{name: "AcceptRequest/unrouted", setup: upTo(0, stRouted), op: func(tx *Tx) { tx.AcceptRequest(0, dst) },
			eff: []Effect{{Kind: EffAccept, Side: dst}}},
		{name: "Complete", setup: upTo(0, stDecodeRouted), op: func(tx *Tx) { tx.Complete(0, dst) },
			eff:  []Effect{{Kind: EffComplete, Side: dst, WasInFlight: true}},
			diff: "h0.InFlight[destination]=false wD.InFlight-1"},
		{name: "Complete/not-in-flight", setup: upTo(0, stRouted), op: func(tx *Tx) { tx.Complete(0, src) },
			eff: []Effect{{Kind: EffComplete}}},

		// ---- Prefill compute ----
		{name: "StartPrefill", setup: upTo(0, stRouted, func(tx *Tx) { tx.AcceptRequest(0, src) }), op: func(tx *Tx) { tx.StartPrefill(0, src) },
			eff:  []Effect{{Kind: EffPrefillStart}, begin(0, src, ResCompute)},
			diff: "h0.Compute=running h0.Src=active h0.Life[compute]=held wP.Free-3 wP.Active+3"},
		{name: "StartPrefill/after-reservation", setup: upTo(0, stRouted, path(0)[stDecodeRouted-1], path(0)[stReserved-1]),
			op:   func(tx *Tx) { tx.StartPrefill(0, src) },
			eff:  []Effect{{Kind: EffPrefillStart, EverReserved: true}, begin(0, src, ResCompute)},
			diff: "h0.Compute=running h0.Src=active h0.Life[compute]=held wP.Free-3 wP.Active+3"},
		{name: "StartPrefill/twice", setup: upTo(0, stComputing), op: func(tx *Tx) { tx.StartPrefill(0, src) },
			eff: []Effect{{Kind: EffPrefillStart}, {Kind: EffBegin, Res: ResCompute, Life: Ended}}},
		{name: "StartPrefill/unrouted", op: func(tx *Tx) { tx.StartPrefill(0, src) }},
		{name: "StartPrefill/queued", cfg: smallPool2, setup: upTo(0, stComputing, path(1)[0]), op: func(tx *Tx) { tx.StartPrefill(1, src) },
			eff:  []Effect{{Kind: EffPrefillStart, H: 1}, begin(1, src, ResCompute)},
			diff: "h1.Compute=queued h1.Life[compute]=held"},
		{name: "StartPrefill/evicts-cache", cfg: smallPool2,
			// Handoff 0's released blocks are kept cache: 2 free blocks do
			// not make room for handoff 1, so its 3 kept blocks are evicted
			// whole (no Removed: the index never advertised them).
			setup: upTo(0, stComputing, pinQuiet, released, path(1)[0]), op: func(tx *Tx) { tx.StartPrefill(1, src) },
			eff:  []Effect{{Kind: EffPrefillStart, H: 1}, begin(1, src, ResCompute)},
			diff: "h1.Compute=running h1.Src=active h1.Life[compute]=held h0.SrcKept=false wP.Kept-3 wP.Active+3"},
		{name: "StartPrefill/evicts-advertised", cfg: smallPool2,
			setup: upTo(0, stPinned, released, path(1)[0]), op: func(tx *Tx) { tx.StartPrefill(1, src) },
			eff:  []Effect{{Kind: EffPrefillStart, H: 1}, begin(1, src, ResCompute), {Kind: EffRemoved}},
			diff: "h1.Compute=running h1.Src=active h1.Life[compute]=held h0.SrcKept=false h0.SrcIndexed=false wP.Kept-3 wP.Active+3 wP.StoredBlocks-3"},
		{name: "StartPrefill/anonymous-cache-first", cfg: conf(spec.SourceFirst, VLLM, 2, 2, func(c *Config) {
			for i := range c.Workers {
				if c.Workers[i].Role == PrefillWorker {
					c.Workers[i].Capacity = 6
				}
			}
		}),
			// Anonymous cache goes before kept cache: 2 free and 1 cached
			// block fit, and handoff 0's kept blocks stay.
			setup: upTo(0, stPinned, released, path(1)[0], func(tx *Tx) { tx.W.W[pw(tx)].Free--; tx.W.W[pw(tx)].Cached++ }),
			op:    func(tx *Tx) { tx.StartPrefill(1, src) },
			eff:   []Effect{{Kind: EffPrefillStart, H: 1}, begin(1, src, ResCompute)},
			diff:  "h1.Compute=running h1.Src=active h1.Life[compute]=held wP.Free-2 wP.Cached-1 wP.Active+3"},
		{name: "AdmitPrefill/still-full", cfg: smallPool2, setup: upTo(0, stComputing, path(1)[0], startPrefill(1)), op: func(tx *Tx) { tx.AdmitPrefill(1) }},
		{name: "AdmitPrefill/room-freed", cfg: smallPool2, setup: upTo(0, stComputing, path(1)[0], startPrefill(1), func(tx *Tx) { tx.StopPrefill(0, src) }),
			op:   func(tx *Tx) { tx.AdmitPrefill(1) },
			diff: "h1.Compute=running h1.Src=active wP.Free-3 wP.Active+3"},
		{name: "AdmitPrefill/not-queued", setup: upTo(0, stComputing, func(tx *Tx) { tx.StopPrefill(0, src) }), op: func(tx *Tx) { tx.AdmitPrefill(0) }},
		{name: "FinishCompute", setup: upTo(0, stComputing), op: func(tx *Tx) { tx.FinishCompute(0) },
			eff: []Effect{{Kind: EffComputeDone}}, diff: "h0.Compute=done"},
		{name: "FinishCompute/queued", cfg: smallPool2, setup: upTo(0, stComputing, path(1)[0], startPrefill(1)), op: func(tx *Tx) { tx.FinishCompute(1) }},
		{name: "StopPrefill/running", setup: upTo(0, stComputing), op: func(tx *Tx) { tx.StopPrefill(0, src) },
			eff:  []Effect{held(0, src, ResCompute)},
			diff: "h0.Compute=none h0.Src=none h0.Life[compute]=ended wP.Active-3 wP.Free+3"},
		{name: "StopPrefill/queued", cfg: smallPool2, setup: upTo(0, stComputing, path(1)[0], startPrefill(1)), op: func(tx *Tx) { tx.StopPrefill(1, src) },
			eff:  []Effect{held(1, src, ResCompute)},
			diff: "h1.Compute=none h1.Life[compute]=ended"},
		{name: "StopPrefill/never-started", setup: upTo(0, stRouted), op: func(tx *Tx) { tx.StopPrefill(0, src) },
			eff: []Effect{{Kind: EffEnd, Res: ResCompute}}},
		{name: "StopPrefill/done", setup: upTo(0, stComputing, func(tx *Tx) { tx.FinishCompute(0) }), op: func(tx *Tx) { tx.StopPrefill(0, src) },
			eff: []Effect{held(0, src, ResCompute)}, diff: "h0.Life[compute]=ended"},

		// ---- Source pin and registration ----
		{name: "PinSource", setup: upTo(0, stComputing, func(tx *Tx) { tx.FinishCompute(0) }), op: func(tx *Tx) { tx.PinSource(0, src) },
			eff:  []Effect{held(0, src, ResCompute), begin(0, src, ResSourceLease)},
			diff: "h0.Src=pinned h0.Life[compute]=ended h0.Life[source_lease]=held wP.Active-3 wP.Pinned+3"},
		{name: "PinSource/window", cfg: windowed1, setup: upTo(0, stComputing, func(tx *Tx) { tx.FinishCompute(0) }), op: func(tx *Tx) { tx.PinSource(0, src) },
			eff:  []Effect{held(0, src, ResCompute), begin(0, src, ResSourceLease)},
			diff: "h0.Src=pinned h0.Life[compute]=ended h0.Life[source_lease]=held wP.Active-6 wP.Pinned+4 wP.Cached+2"},
		{name: "PinSource/checkpoint", cfg: checkpointed1, setup: upTo(0, stComputing, func(tx *Tx) { tx.FinishCompute(0) }), op: func(tx *Tx) { tx.PinSource(0, src) },
			eff:  []Effect{held(0, src, ResCompute), begin(0, src, ResSourceLease)},
			diff: "h0.Src=pinned h0.Life[compute]=ended h0.Life[source_lease]=held wP.Active-5 wP.Pinned+4 wP.Cached+1"},
		{name: "PinSource/early", setup: upTo(0, stComputing), op: func(tx *Tx) { tx.PinSource(0, src) },
			eff: []Effect{{Kind: EffPinEarly}}},
		{name: "PinSource/twice", setup: upTo(0, stPinned), op: func(tx *Tx) { tx.PinSource(0, src) },
			eff: []Effect{{Kind: EffBegin, Res: ResSourceLease, Life: Ended}}},
		{name: "PinSource/after-release", setup: upTo(0, stPinned, released), op: func(tx *Tx) { tx.PinSource(0, src) },
			eff: []Effect{{Kind: EffBegin, Res: ResSourceLease, Life: Ended}}},
		{name: "RegisterSource", setup: upTo(0, stComputing), op: func(tx *Tx) { tx.RegisterSource(0, src) }, diff: "h0.SrcReg=valid"},
		{name: "RegisterSource/fenced", setup: upTo(0, stPinned, fenceSource), op: func(tx *Tx) { tx.RegisterSource(0, src) }},
		{name: "FenceSource", setup: upTo(0, stPinned), op: fenceSource, diff: "h0.SrcReg=fenced"},
		{name: "FenceSource/unregistered", setup: upTo(0, stComputing), op: fenceSource},
		{name: "ReleaseSource/mid-transfer", setup: upTo(0, stPulling), op: func(tx *Tx) { tx.ReleaseSource(0, src, CauseAbort) },
			eff:  []Effect{{Kind: EffPinEnd, Reg: RegValid, Xfer: XferRunning, Cause: CauseAbort}, held(0, src, ResSourceLease)},
			diff: "h0.Tainted=true h0.Src=none h0.SrcReg=closed h0.Life[source_lease]=ended h0.SrcKept=true wP.Pinned-3 wP.Kept+3"},
		{name: "ReleaseSource/fenced", setup: upTo(0, stPulling, fenceSource), op: func(tx *Tx) { tx.ReleaseSource(0, src, CauseExpiry) },
			eff:  []Effect{{Kind: EffPinEnd, Reg: RegFenced, Xfer: XferRunning, Cause: CauseExpiry}, held(0, src, ResSourceLease)},
			diff: "h0.Src=none h0.Life[source_lease]=ended h0.SrcKept=true wP.Pinned-3 wP.Kept+3"},
		{name: "ReleaseSource/after-reads", setup: upTo(0, stReceived), op: func(tx *Tx) { tx.ReleaseSource(0, src, CauseReaderAck) },
			eff:  []Effect{{Kind: EffPinEnd, Reg: RegValid, Xfer: XferDone, Cause: CauseReaderAck}, held(0, src, ResSourceLease)},
			diff: "h0.Acked=true h0.Src=none h0.SrcReg=closed h0.Life[source_lease]=ended h0.SrcKept=true wP.Pinned-3 wP.Kept+3"},
		{name: "ReleaseSource/not-pinned", setup: upTo(0, stComputing), op: func(tx *Tx) { tx.ReleaseSource(0, src, CauseAbort) },
			eff: []Effect{{Kind: EffEnd, Res: ResSourceLease}}},
		{name: "PublishCached", setup: upTo(0, stComputing, pinQuiet), op: publishCached,
			diff: "h0.SrcIndexed=true wP.StoredBlocks+3"},
		{name: "PublishCached/released", setup: upTo(0, stComputing, pinQuiet, released), op: publishCached,
			diff: "h0.SrcIndexed=true wP.StoredBlocks+3"},
		{name: "PublishCached/twice", setup: upTo(0, stPinned), op: publishCached},
		{name: "PublishCached/destination", setup: upTo(0, stReceived), op: func(tx *Tx) { tx.PublishCached(0, dst) },
			eff: []Effect{{Kind: EffRoleMismatch, Side: dst}}},
		{name: "Evict/source", setup: upTo(0, stComputing, pinQuiet, released), op: func(tx *Tx) { tx.Evict(0, src) },
			diff: "h0.SrcKept=false wP.Kept-3 wP.Free+3"},
		{name: "Evict/source-advertised", setup: upTo(0, stPinned, released), op: func(tx *Tx) { tx.Evict(0, src) },
			eff:  []Effect{{Kind: EffRemoved}},
			diff: "h0.SrcKept=false h0.SrcIndexed=false wP.Kept-3 wP.Free+3 wP.StoredBlocks-3"},
		{name: "Evict/destination-advertised", setup: upTo(0, stActivated, func(tx *Tx) { tx.ReleaseActive(0, dst) }), op: func(tx *Tx) { tx.Evict(0, dst) },
			eff:  []Effect{{Kind: EffRemoved, Side: dst}},
			diff: "h0.DstKept=false h0.Published=false wD.Kept-2 wD.Free+2 wD.StoredBlocks-2"},
		{name: "Evict/not-kept", setup: upTo(0, stActivated), op: func(tx *Tx) { tx.Evict(0, dst) }},
		{name: "ReportComputeDone", setup: upTo(0, stComputing, func(tx *Tx) { tx.FinishCompute(0) }), op: func(tx *Tx) { tx.ReportComputeDone(0, src) },
			eff: []Effect{{Kind: EffLoadFall}}, diff: "h0.ComputeLoad=false wP.PrefillTokens-48"},
		{name: "ReportComputeDone/twice", setup: upTo(0, stPinned), op: func(tx *Tx) { tx.ReportComputeDone(0, src) },
			eff: []Effect{{Kind: EffLoadFall, LoadFallen: true}}},
		{name: "AnnouncePinned", setup: upTo(0, stRouted), op: func(tx *Tx) { tx.AnnouncePinned(0, src) }, diff: "h0.Announced=true"},
		{name: "ReportSourceOutcome/released", setup: upTo(0, stPinned, released), op: func(tx *Tx) { tx.ReportSourceOutcome(0, src, true) },
			eff:  []Effect{{Kind: EffOwnershipEnd}, held(0, src, ResPrefillBooking)},
			diff: "h0.Life[prefill_booking]=ended h0.Outcome[source]=ok wP.Owned-1"},
		{name: "ReportSourceOutcome/pinned", setup: upTo(0, stPinned), op: func(tx *Tx) { tx.ReportSourceOutcome(0, src, true) },
			eff:  []Effect{{Kind: EffOwnershipEnd, SourcePinned: true}, held(0, src, ResPrefillBooking)},
			diff: "h0.Life[prefill_booking]=ended h0.Outcome[source]=ok wP.Owned-1"},
		{name: "ReportSourceOutcome/failed-computing", setup: upTo(0, stComputing), op: func(tx *Tx) { tx.ReportSourceOutcome(0, src, false) },
			eff:  []Effect{{Kind: EffOwnershipEnd}, held(0, src, ResPrefillBooking)},
			diff: "h0.ComputeLoad=false h0.Life[prefill_booking]=ended h0.Outcome[source]=failed h0.SourceFailed=true wP.Owned-1 wP.PrefillTokens-48"},
		{name: "ReportSourceOutcome/twice", setup: upTo(0, stPinned, released, func(tx *Tx) { tx.ReportSourceOutcome(0, src, true) }),
			op:  func(tx *Tx) { tx.ReportSourceOutcome(0, src, true) },
			eff: []Effect{{Kind: EffOwnershipEnd}, {Kind: EffEnd, Res: ResPrefillBooking, Life: Ended}}},

		// ---- Transfer ----
		{name: "StartTransfer/pull", setup: upTo(0, stReserved), op: func(tx *Tx) { tx.StartTransfer(0, dst, dst) },
			eff:  []Effect{{Kind: EffTransferStart, Reg: RegValid, PagesReserved: true, EverReserved: true}},
			diff: "h0.Xfer=running h0.Runner=destination"},
		{name: "StartTransfer/push", setup: upTo(0, stReserved), op: func(tx *Tx) { tx.StartTransfer(0, src, src) },
			eff:  []Effect{{Kind: EffTransferStart, Reg: RegValid, PagesReserved: true, EverReserved: true}},
			diff: "h0.Xfer=running"},
		{name: "StartTransfer/unreserved", setup: upTo(0, stDecodeRouted), op: func(tx *Tx) { tx.StartTransfer(0, dst, dst) },
			eff:  []Effect{{Kind: EffTransferStart}},
			diff: "h0.Xfer=running h0.Runner=destination"},
		{name: "StartTransfer/again", setup: upTo(0, stPulling), op: func(tx *Tx) { tx.StartTransfer(0, src, src) }},
		{name: "CompleteTransfer", setup: upTo(0, stPulling), op: func(tx *Tx) { tx.CompleteTransfer(0) },
			eff: []Effect{{Kind: EffRead, SourcePinned: true}, {Kind: EffWrite, PagesReserved: true}}, diff: "h0.Xfer=done"},
		{name: "CompleteTransfer/source-fenced", setup: upTo(0, stPulling, fenceSource), op: func(tx *Tx) { tx.CompleteTransfer(0) },
			eff: []Effect{{Kind: EffWrite, PagesReserved: true}}, diff: "h0.Xfer=failed"},
		{name: "CompleteTransfer/destination-fenced", setup: upTo(0, stPulling, fenceDestination), op: func(tx *Tx) { tx.CompleteTransfer(0) },
			eff: []Effect{{Kind: EffRead, SourcePinned: true}}, diff: "h0.Xfer=failed"},
		{name: "CompleteTransfer/not-running", setup: upTo(0, stReserved), op: func(tx *Tx) { tx.CompleteTransfer(0) }},
		{name: "FailTransfer", setup: upTo(0, stPulling), op: func(tx *Tx) { tx.FailTransfer(0) }, diff: "h0.Xfer=failed"},
		{name: "FailTransfer/done", setup: upTo(0, stReceived), op: func(tx *Tx) { tx.FailTransfer(0) }},
		// A hung transfer neither completes nor fails on its own; fenced,
		// it ends failed, and the hang is over.
		{name: "HangTransfer", setup: upTo(0, stPulling), op: func(tx *Tx) { tx.HangTransfer(0) }, diff: "h0.Hung=true"},
		{name: "HangTransfer/not-running", setup: upTo(0, stReceived), op: func(tx *Tx) { tx.HangTransfer(0) }},
		{name: "FailTransfer/hung", setup: upTo(0, stPulling, hang), op: func(tx *Tx) { tx.FailTransfer(0) }},
		{name: "CompleteTransfer/hung-then-fenced", setup: upTo(0, stPulling, hang, fenceDestination), op: func(tx *Tx) { tx.CompleteTransfer(0) },
			eff: []Effect{{Kind: EffRead, SourcePinned: true}}, diff: "h0.Xfer=failed h0.Hung=false"},

		// ---- Destination reservation ----
		{name: "RequestReservation", setup: upTo(0, stPinned, func(tx *Tx) { tx.RouteDecode(0, dw(tx)) }), op: func(tx *Tx) { tx.RequestReservation(0, dst) },
			diff: "h0.Pending=true"},
		{name: "RequestReservation/reserved", setup: upTo(0, stReserved), op: func(tx *Tx) { tx.RequestReservation(0, dst) }},
		{name: "RequestReservation/after-release", setup: upTo(0, stReserved, releaseDestination), op: func(tx *Tx) { tx.RequestReservation(0, dst) }},
		{name: "WithdrawReservation", setup: upTo(0, stDecodeRouted), op: func(tx *Tx) { tx.WithdrawReservation(0, dst) }, diff: "h0.Pending=false"},
		{name: "Reserve/vllm", setup: upTo(0, stDecodeRouted), op: func(tx *Tx) { tx.Reserve(0) },
			eff:  []Effect{begin(0, dst, ResDestReservation)},
			diff: "h0.Pending=false h0.Dst=reserved h0.Life[destination_reservation]=held wD.Prefix-1 wD.Active+1 wD.Free-2 wD.Reserved+2"},
		{name: "Reserve/sglang", cfg: sglang1, setup: upTo(0, stDecodeRouted), op: func(tx *Tx) { tx.Reserve(0) },
			eff: []Effect{begin(0, dst, ResDestReservation)},
			diff: "h0.Pending=false h0.Dst=reserved h0.Running=true h0.Life[destination_reservation]=held " +
				"wD.Prefix-1 wD.Active+1 wD.Free-2 wD.Reserved+2 wD.SlotsUsed+1 wD.HeadroomUsed+512"},
		{name: "Reserve/prefix-lost", cfg: oneSlot2,
			// The decode worker restarted before handoff 1 reached it: its
			// prefix is gone, so nothing is locked and all 3 blocks are reserved.
			setup: []func(*Tx){restartDecode, path(1)[0], path(1)[1], path(1)[2], path(1)[3]}, op: func(tx *Tx) { tx.Reserve(1) },
			eff:  []Effect{begin(1, dst, ResDestReservation)},
			diff: "h1.Pending=false h1.Dst=reserved h1.Life[destination_reservation]=held wD.Free-3 wD.Reserved+3"},
		{name: "Refuse", cfg: trtllm1, setup: upTo(0, stDecodeRouted), op: func(tx *Tx) { tx.Refuse(0) }, diff: "h0.Pending=false"},
		{name: "RegisterDestination", setup: upTo(0, stDecodeRouted), op: func(tx *Tx) { tx.RegisterDestination(0, dst) }, diff: "h0.DstReg=valid"},
		{name: "RegisterDestination/fenced", setup: upTo(0, stReserved, fenceDestination), op: func(tx *Tx) { tx.RegisterDestination(0, dst) }},
		{name: "FenceDestination", setup: upTo(0, stReserved), op: fenceDestination, diff: "h0.DstReg=fenced"},
		{name: "FenceDestination/unregistered", setup: upTo(0, stDecodeRouted), op: fenceDestination},
		{name: "ReleaseDestination/vllm", setup: upTo(0, stReserved), op: releaseDestination,
			eff:  []Effect{{Kind: EffPagesFreed, Reg: RegValid, Cause: CauseAbort}, held(0, dst, ResDestReservation)},
			diff: "h0.Dst=none h0.DstReg=closed h0.Life[destination_reservation]=ended wD.Reserved-2 wD.Free+2 wD.Active-1 wD.Prefix+1"},
		{name: "ReleaseDestination/sglang", cfg: sglang1, setup: upTo(0, stReserved), op: releaseDestination,
			eff: []Effect{{Kind: EffPagesFreed, Reg: RegValid, Cause: CauseAbort}, held(0, dst, ResDestReservation)},
			diff: "h0.Dst=none h0.DstReg=closed h0.Running=false h0.Life[destination_reservation]=ended " +
				"wD.Reserved-2 wD.Free+2 wD.Active-1 wD.Prefix+1 wD.SlotsUsed-1 wD.HeadroomUsed-512"},
		{name: "ReleaseDestination/fenced-mid-transfer", setup: upTo(0, stPulling, fenceDestination),
			op:   func(tx *Tx) { tx.ReleaseDestination(0, dst, CauseExpiry) },
			eff:  []Effect{{Kind: EffPagesFreed, Reg: RegFenced, Xfer: XferRunning, Cause: CauseExpiry}, held(0, dst, ResDestReservation)},
			diff: "h0.Dst=none h0.Life[destination_reservation]=ended wD.Reserved-2 wD.Free+2 wD.Active-1 wD.Prefix+1"},
		{name: "ReleaseDestination/not-reserved", setup: upTo(0, stDecodeRouted), op: releaseDestination,
			eff: []Effect{{Kind: EffEnd, Side: dst, Res: ResDestReservation}}},

		// ---- Activation, decode and Stored ----
		{name: "ActivateDestination/vllm", setup: upTo(0, stReceived), op: activate,
			eff:  []Effect{{Kind: EffActivate, Xfer: XferDone, PagesReserved: true}, held(0, dst, ResDestReservation)},
			diff: "h0.Activated=true h0.Dst=active h0.DstReg=closed h0.Running=true h0.Life[destination_reservation]=ended wD.Reserved-2 wD.Active+2 wD.SlotsUsed+1"},
		// The command path: the activation is queued at the decode worker's
		// scheduler core, and takes effect only when the core applies it.
		{name: "QueueCommand/activate", setup: upTo(0, stReceived), op: func(tx *Tx) { tx.QueueCommand(0, dst, dst, CmdActivate, CauseOther) },
			diff: "h0.Cmds[destination]=[activate]"},
		{name: "QueueCommand/activate-from-source", setup: upTo(0, stReceived), op: func(tx *Tx) { tx.QueueCommand(0, src, dst, CmdActivate, CauseOther) },
			eff: []Effect{{Kind: EffRoleMismatch, Side: src}}},
		{name: "QueueCommand/again", setup: upTo(0, stPinned, func(tx *Tx) { tx.QueueCommand(0, src, src, CmdRelease, CauseReaderAck) }),
			// The core keys its commands by handoff: the same command
			// queued again is that command.
			op: func(tx *Tx) { tx.QueueCommand(0, src, src, CmdRelease, CauseAbort) }},
		{name: "ApplyCommand/activate", setup: upTo(0, stReceived, func(tx *Tx) { tx.QueueCommand(0, dst, dst, CmdActivate, CauseOther) }),
			op: applyCmd(dst), answer: "activate applied",
			eff:  []Effect{{Kind: EffActivate, Xfer: XferDone, PagesReserved: true}, held(0, dst, ResDestReservation)},
			diff: "h0.Cmds[destination]=[] h0.Activated=true h0.Dst=active h0.DstReg=closed h0.Running=true h0.Life[destination_reservation]=ended wD.Reserved-2 wD.Active+2 wD.SlotsUsed+1"},
		{name: "ApplyCommand/activate-no-op", setup: upTo(0, stReceived, func(tx *Tx) { tx.QueueCommand(0, dst, dst, CmdActivate, CauseOther) }, func(tx *Tx) { tx.ReleaseDestination(0, dst, CauseAbort) }),
			// The reservation ended before the core applied the command.
			op: applyCmd(dst), answer: "activate no-op",
			diff: "h0.Cmds[destination]=[]"},
		// A release applies at the core with the cause it was sent with,
		// whatever happened in between; the pin holds until then.
		{name: "ApplyCommand/release-source", setup: upTo(0, stPinned, func(tx *Tx) { tx.QueueCommand(0, src, src, CmdRelease, CauseExpiry) }),
			op: applyCmd(src), answer: "release applied",
			eff:  []Effect{{Kind: EffPinEnd, Reg: RegValid, Cause: CauseExpiry}, held(0, src, ResSourceLease)},
			diff: "h0.Cmds[source]=[] h0.Src=none h0.SrcReg=closed h0.SrcKept=true h0.Life[source_lease]=ended wP.Pinned-3 wP.Kept+3"},
		{name: "ApplyCommand/release-source-twice", setup: upTo(0, stPinned, released, func(tx *Tx) { tx.QueueCommand(0, src, src, CmdRelease, CauseAbort) }),
			// The pin already ended: the core finds nothing and says so,
			// and nothing ends twice.
			op: applyCmd(src), answer: "release no-op",
			diff: "h0.Cmds[source]=[]"},
		{name: "ApplyCommand/release-destination", setup: upTo(0, stReserved, func(tx *Tx) { tx.QueueCommand(0, dst, dst, CmdRelease, CauseAbort) }),
			op: applyCmd(dst), answer: "release applied",
			eff:  []Effect{{Kind: EffPagesFreed, Reg: RegValid, Cause: CauseAbort}, held(0, dst, ResDestReservation)},
			diff: "h0.Cmds[destination]=[] h0.Dst=none h0.DstReg=closed h0.Life[destination_reservation]=ended wD.Reserved-2 wD.Free+2 wD.Active-1 wD.Prefix+1"},
		{name: "ApplyCommand/cancel-prefill", setup: upTo(0, stComputing, func(tx *Tx) { tx.QueueCommand(0, src, src, CmdCancel, CauseAbort) }),
			op: applyCmd(src), answer: "cancel applied",
			eff:  []Effect{held(0, src, ResCompute)},
			diff: "h0.Cmds[source]=[] h0.Compute=none h0.Src=none h0.Life[compute]=ended wP.Active-3 wP.Free+3"},
		{name: "ApplyCommand/cancel-after-compute", setup: upTo(0, stComputing, func(tx *Tx) { tx.QueueCommand(0, src, src, CmdCancel, CauseAbort) }, path(0)[stPinned-1]),
			// Compute finished and the blocks are held before the core
			// reached the cancel: it stops nothing, and the role must
			// release what is held.
			op: applyCmd(src), answer: "cancel no-op",
			diff: "h0.Cmds[source]=[]"},
		{name: "ApplyCommand/withdraw", setup: upTo(0, stDecodeRouted, func(tx *Tx) { tx.QueueCommand(0, dst, dst, CmdCancel, CauseAbort) }),
			op: applyCmd(dst), answer: "cancel applied",
			diff: "h0.Cmds[destination]=[] h0.Pending=false"},
		{name: "ApplyCommand/withdraw-after-reserve", setup: upTo(0, stDecodeRouted, func(tx *Tx) { tx.QueueCommand(0, dst, dst, CmdCancel, CauseAbort) }, func(tx *Tx) { tx.Reserve(0) }),
			// The core reserved before it reached the withdrawal: the
			// reservation stays, and the role must release it.
			op: applyCmd(dst), answer: "cancel no-op",
			diff: "h0.Cmds[destination]=[]"},
		// The delay fault: a core falls behind for a handoff, and keeps up
		// again once it applied what waited.
		{name: "Delay", setup: upTo(0, stPinned), op: func(tx *Tx) { tx.Delay(0, src) }, diff: "h0.Slow[source]=true"},
		{name: "ApplyCommand/catches-up", setup: upTo(0, stPinned, func(tx *Tx) { tx.Delay(0, src); tx.QueueCommand(0, src, src, CmdRelease, CauseAbort) }),
			op: applyCmd(src), answer: "release applied",
			eff:  []Effect{{Kind: EffPinEnd, Reg: RegValid, Cause: CauseAbort}, held(0, src, ResSourceLease)},
			diff: "h0.Cmds[source]=[] h0.Slow[source]=false h0.Src=none h0.SrcReg=closed h0.SrcKept=true h0.Life[source_lease]=ended wP.Pinned-3 wP.Kept+3"},
		{name: "ApplyCommand/oldest-first", setup: upTo(0, stComputing, func(tx *Tx) { tx.QueueCommand(0, src, src, CmdCancel, CauseAbort) }, path(0)[stPinned-1], func(tx *Tx) {
			tx.QueueCommand(0, src, src, CmdRelease, CauseAbort)
		}),
			op: applyCmd(src), answer: "cancel no-op",
			diff: "h0.Cmds[source]=[release(abort)]"},
		{name: "ActivateDestination/sglang", cfg: sglang1, setup: upTo(0, stReceived), op: activate,
			eff:  []Effect{{Kind: EffActivate, Xfer: XferDone, PagesReserved: true}, held(0, dst, ResDestReservation)},
			diff: "h0.Activated=true h0.Dst=active h0.DstReg=closed h0.Life[destination_reservation]=ended wD.Reserved-2 wD.Active+2"},
		{name: "ActivateDestination/fenced-registration", setup: upTo(0, stReceived, fenceDestination), op: activate,
			eff:  []Effect{{Kind: EffActivate, Xfer: XferDone, PagesReserved: true}, held(0, dst, ResDestReservation)},
			diff: "h0.Activated=true h0.Dst=active h0.Running=true h0.Life[destination_reservation]=ended wD.Reserved-2 wD.Active+2 wD.SlotsUsed+1"},
		{name: "ActivateDestination/tainted", setup: upTo(0, stPulling, func(tx *Tx) { tx.ReleaseSource(0, src, CauseAbort) }), op: activate,
			eff:  []Effect{{Kind: EffActivate, Xfer: XferRunning, Tainted: true, PagesReserved: true}, held(0, dst, ResDestReservation)},
			diff: "h0.Dst=active h0.DstReg=closed h0.Running=true h0.Life[destination_reservation]=ended wD.Reserved-2 wD.Active+2 wD.SlotsUsed+1"},
		{name: "ActivateDestination/transfer-running", setup: upTo(0, stPulling), op: activate,
			// Pages reserved, nothing read yet: the activation is not one
			// from a completed transfer, so it is not recorded as such.
			eff:  []Effect{{Kind: EffActivate, Xfer: XferRunning, PagesReserved: true}, held(0, dst, ResDestReservation)},
			diff: "h0.Dst=active h0.DstReg=closed h0.Running=true h0.Life[destination_reservation]=ended wD.Reserved-2 wD.Active+2 wD.SlotsUsed+1"},
		{name: "ActivateDestination/unreserved", setup: upTo(0, stDecodeRouted), op: activate,
			eff: []Effect{{Kind: EffActivate}}},
		{name: "ActivateDestination/no-free-slot", cfg: oneSlot2, setup: append(upTo(0, stActivated), path(1)[:stReceived]...),
			// Handoff 0 holds the only slot: handoff 1 activates but waits to run.
			op:   func(tx *Tx) { tx.ActivateDestination(1, dst) },
			eff:  []Effect{{Kind: EffActivate, H: 1, Xfer: XferDone, PagesReserved: true}, held(1, dst, ResDestReservation)},
			diff: "h1.Activated=true h1.Dst=active h1.DstReg=closed h1.Life[destination_reservation]=ended wD.Reserved-2 wD.Active+2"},
		{name: "Promote", cfg: oneSlot2, setup: append(upTo(0, stActivated), append(path(1)[:stActivated], func(tx *Tx) { tx.ReleaseActive(0, dst) })...),
			op:   func(tx *Tx) { tx.Promote(1) },
			diff: "h1.Running=true wD.SlotsUsed+1"},
		{name: "Promote/no-free-slot", cfg: oneSlot2, setup: append(upTo(0, stActivated), path(1)[:stActivated]...),
			op: func(tx *Tx) { tx.Promote(1) }},
		{name: "PublishStored", setup: upTo(0, stReceived, activate), op: publish,
			eff: []Effect{{Kind: EffStored, Xfer: XferDone, PagesActive: true}}, diff: "h0.Published=true wD.StoredBlocks+2"},
		{name: "PublishStored/twice", setup: upTo(0, stActivated), op: publish,
			eff: []Effect{{Kind: EffStored, Xfer: XferDone, PagesActive: true, AlreadyPublished: true}}},
		{name: "PublishStored/reserved", setup: upTo(0, stPulling), op: publish,
			eff: []Effect{{Kind: EffStored, Xfer: XferRunning}}, diff: "h0.Published=true wD.StoredBlocks+2"},
		{name: "ReleaseActive/vllm", setup: upTo(0, stActivated), op: func(tx *Tx) { tx.ReleaseActive(0, dst) },
			diff: "h0.Dst=none h0.DstKept=true h0.Running=false wD.Active-3 wD.Kept+2 wD.Prefix+1 wD.SlotsUsed-1"},
		{name: "ReleaseActive/sglang", cfg: sglang1, setup: upTo(0, stActivated), op: func(tx *Tx) { tx.ReleaseActive(0, dst) },
			diff: "h0.Dst=none h0.DstKept=true h0.Running=false wD.Active-3 wD.Kept+2 wD.Prefix+1 wD.SlotsUsed-1 wD.HeadroomUsed-512"},
		{name: "ReleaseActive/not-active", setup: upTo(0, stReserved), op: func(tx *Tx) { tx.ReleaseActive(0, dst) },
			eff: []Effect{{Kind: EffEnd, Side: dst, Res: ResDestReservation, Life: Ended}}},
		{name: "ReportDecodeOutcome/ok", setup: upTo(0, stDecodeRouted), op: func(tx *Tx) { tx.ReportDecodeOutcome(0, dst, true) },
			eff:  []Effect{held(0, dst, ResDecodeBooking)},
			diff: "h0.Life[decode_booking]=ended h0.Outcome[destination]=ok wD.BookedBlocks-3"},
		{name: "ReportDecodeOutcome/failed", setup: upTo(0, stDecodeRouted), op: func(tx *Tx) { tx.ReportDecodeOutcome(0, dst, false) },
			eff:  []Effect{held(0, dst, ResDecodeBooking)},
			diff: "h0.Life[decode_booking]=ended h0.Outcome[destination]=failed wD.BookedBlocks-3"},
		{name: "ReportDecodeOutcome/twice", setup: upTo(0, stDecodeRouted, func(tx *Tx) { tx.ReportDecodeOutcome(0, dst, false) }),
			op:  func(tx *Tx) { tx.ReportDecodeOutcome(0, dst, true) },
			eff: []Effect{{Kind: EffEnd, Side: dst, Res: ResDecodeBooking, Life: Ended}}, diff: "h0.Outcome[destination]=ok"},

		// ---- Timers and messages ----
		{name: "Arm", op: func(tx *Tx) { tx.Arm(0, TimerBootstrap) }, diff: "h0.Timers=2"},
		{name: "Disarm", setup: []func(*Tx){func(tx *Tx) { tx.Arm(0, TimerLease); tx.Arm(0, TimerHeartbeat) }},
			op: func(tx *Tx) { tx.Disarm(0, TimerLease) }, diff: "h0.Timers=4"},
		{name: "Send", op: func(tx *Tx) { tx.Send(0, dst, MsgDestinationReserved) }, diff: "h0.Ch[destination]={1_[DestinationReserved_-_-_-]}"},
		{name: "Lose", setup: []func(*Tx){func(tx *Tx) { tx.Send(0, src, MsgLeaseRenewed); tx.Send(0, src, MsgReaderCompleted) }},
			op: func(tx *Tx) { tx.Lose(0, src, MsgLeaseRenewed) }, diff: "h0.Ch[source]={1_[ReaderCompleted_-_-_-]}"},
		{name: "PeerRestartNoticed", setup: upTo(0, stDecodeRouted, restartPrefill), op: func(tx *Tx) { tx.PeerRestartNoticed(0, dst) },
			diff: "h0.PeerGone[destination]=false"},

		// ---- Background load ----
		{name: "FreeBackground", cfg: background1, op: func(tx *Tx) { tx.FreeBackground(dw(tx)) },
			diff: "wD.Active-4 wD.Cached+4 wD.Background-4 wD.SlotsUsed-1 wD.BackgroundSlot-1"},
		{name: "OccupyBackground", cfg: background1, setup: []func(*Tx){func(tx *Tx) { tx.FreeBackground(dw(tx)) }},
			op:   func(tx *Tx) { tx.OccupyBackground(dw(tx)) },
			diff: "wD.Free-4 wD.Active+4 wD.Background+4 wD.SlotsUsed+1 wD.BackgroundSlot+1"},

		// ---- Restart ----
		{name: "Restart/prefill-mid-transfer", setup: upTo(0, stPulling, armAll, func(tx *Tx) { tx.ClientCancel(0) }), op: restartPrefill,
			eff: []Effect{{Kind: EffPinEnd, Reg: RegFenced, Xfer: XferRunning, Cause: CauseAbort}, held(0, src, ResSourceLease),
				{Kind: EffRemoved}, {Kind: EffOwnershipEnd}, held(0, src, ResPrefillBooking)},
			diff: "h0.SrcReg=fenced h0.Src=none h0.SrcIndexed=false h0.Life[source_lease]=ended h0.Life[prefill_booking]=ended h0.InFlight[source]=false " +
				"h0.CancelPending[source]=false h0.Timers=44 h0.Outcome[source]=forgotten h0.SourceFailed=true h0.PeerGone[destination]=true " +
				"wP.Gen+1 wP.Pinned-3 wP.Free+3 wP.InFlight-1 wP.Owned-1 wP.StoredBlocks-3"},
		{name: "Restart/prefill-computing", setup: upTo(0, stComputing), op: restartPrefill,
			eff: []Effect{held(0, src, ResCompute), {Kind: EffOwnershipEnd}, held(0, src, ResPrefillBooking)},
			diff: "h0.Compute=none h0.Src=none h0.Life[compute]=ended h0.Life[prefill_booking]=ended h0.InFlight[source]=false h0.ComputeLoad=false " +
				"h0.Outcome[source]=forgotten h0.SourceFailed=true wP.Gen+1 wP.Active-3 wP.Free+3 wP.InFlight-1 wP.Owned-1 wP.PrefillTokens-48"},
		{name: "Restart/prefill-queued", cfg: smallPool2, setup: upTo(0, stComputing, path(1)[0], startPrefill(1)), op: restartPrefill,
			eff: []Effect{held(0, src, ResCompute), {Kind: EffOwnershipEnd}, held(0, src, ResPrefillBooking),
				held(1, src, ResCompute), {Kind: EffOwnershipEnd, H: 1}, held(1, src, ResPrefillBooking)},
			diff: "h0.Compute=none h0.Src=none h0.Life[compute]=ended h0.Life[prefill_booking]=ended h0.InFlight[source]=false h0.ComputeLoad=false " +
				"h0.Outcome[source]=forgotten h0.SourceFailed=true " +
				"h1.Compute=none h1.Life[compute]=ended h1.Life[prefill_booking]=ended h1.ComputeLoad=false h1.Outcome[source]=forgotten h1.SourceFailed=true " +
				"wP.Gen+1 wP.Active-3 wP.Free+3 wP.InFlight-1 wP.Owned-2 wP.PrefillTokens-96"},
		// A release still queued in the prefill worker's core dies with
		// the process, and the core starts out keeping up.
		{name: "Restart/prefill-queued-release", setup: upTo(0, stPinned, func(tx *Tx) { tx.Delay(0, src); tx.QueueCommand(0, src, src, CmdRelease, CauseReaderAck) }),
			op:  restartPrefill,
			eff: []Effect{{Kind: EffPinEnd, Reg: RegFenced, Cause: CauseAbort}, held(0, src, ResSourceLease), {Kind: EffRemoved}, {Kind: EffOwnershipEnd}, held(0, src, ResPrefillBooking)},
			diff: "h0.Cmds[source]=[] h0.Slow[source]=false h0.SrcReg=fenced h0.Src=none h0.SrcIndexed=false h0.Life[source_lease]=ended h0.Life[prefill_booking]=ended h0.InFlight[source]=false " +
				"h0.Outcome[source]=forgotten h0.SourceFailed=true wP.Gen+1 wP.Pinned-3 wP.Free+3 wP.InFlight-1 wP.Owned-1 wP.StoredBlocks-3"},
		{name: "Restart/prefill-after-outcome", setup: upTo(0, stComputing, pinQuiet, released, func(tx *Tx) { tx.ReportSourceOutcome(0, src, false); tx.Complete(0, src) }),
			op:   restartPrefill,
			diff: "h0.SrcKept=false wP.Gen+1 wP.Kept-3 wP.Free+3"},
		{name: "Restart/prefill-after-publish", setup: upTo(0, stPinned, released, func(tx *Tx) { tx.ReportSourceOutcome(0, src, false); tx.Complete(0, src) }),
			op:   restartPrefill,
			eff:  []Effect{{Kind: EffRemoved}},
			diff: "h0.SrcKept=false h0.SrcIndexed=false wP.Gen+1 wP.Kept-3 wP.Free+3 wP.StoredBlocks-3"},
		// An activation command still queued in the scheduler core dies
		// with the process.
		{name: "Restart/decode-reserved", cfg: sglang1, setup: upTo(0, stReserved, armAll, func(tx *Tx) { tx.ClientCancel(0); tx.QueueCommand(0, dst, dst, CmdActivate, CauseOther) }), op: restartDecode,
			eff: []Effect{held(0, dst, ResDestReservation), held(0, dst, ResDecodeBooking)},
			diff: "h0.Cmds[destination]=[] h0.DstReg=fenced h0.Dst=none h0.Running=false h0.InFlight[destination]=false h0.CancelPending[destination]=false h0.Timers=19 " +
				"h0.Life[destination_reservation]=ended h0.Life[decode_booking]=ended h0.Outcome[destination]=forgotten h0.PeerGone[source]=true h0.PrefixGone=BITD " +
				"wD.Gen+1 wD.Free+3 wD.Active-1 wD.Reserved-2 wD.SlotsUsed-1 wD.HeadroomUsed-512 wD.InFlight-1 wD.BookedBlocks-3"},
		{name: "Restart/decode-active", setup: upTo(0, stActivated), op: restartDecode,
			eff: []Effect{{Kind: EffRemoved, Side: dst}, held(0, dst, ResDecodeBooking)},
			diff: "h0.Dst=none h0.Running=false h0.Published=false h0.InFlight[destination]=false h0.Life[decode_booking]=ended " +
				"h0.Outcome[destination]=forgotten h0.PeerGone[source]=true h0.PrefixGone=BITD " +
				"wD.Gen+1 wD.Free+3 wD.Active-3 wD.SlotsUsed-1 wD.InFlight-1 wD.BookedBlocks-3 wD.StoredBlocks-2"},
		{name: "Restart/decode-after-outcome", setup: upTo(0, stActivated, func(tx *Tx) {
			tx.ReleaseActive(0, dst)
			tx.ReportDecodeOutcome(0, dst, true)
			tx.Complete(0, dst)
		}), op: restartDecode,
			eff:  []Effect{{Kind: EffRemoved, Side: dst}},
			diff: "h0.Published=false h0.DstKept=false h0.PrefixGone=BITD wD.Gen+1 wD.Free+3 wD.Kept-2 wD.Prefix-1 wD.StoredBlocks-2"},
		{name: "Restart/prefill-after-destination-outcome", setup: upTo(0, stDecodeRouted, func(tx *Tx) {
			tx.WithdrawReservation(0, dst)
			tx.ReportDecodeOutcome(0, dst, false)
			tx.Complete(0, dst)
		}), op: restartPrefill,
			// The destination already ended: no peer is left to tell.
			eff: []Effect{{Kind: EffPinEnd, Reg: RegFenced, Cause: CauseAbort}, held(0, src, ResSourceLease),
				{Kind: EffRemoved}, {Kind: EffOwnershipEnd}, held(0, src, ResPrefillBooking)},
			diff: "h0.SrcReg=fenced h0.Src=none h0.SrcIndexed=false h0.Life[source_lease]=ended h0.Life[prefill_booking]=ended h0.InFlight[source]=false " +
				"h0.Outcome[source]=forgotten h0.SourceFailed=true wP.Gen+1 wP.Pinned-3 wP.Free+3 wP.InFlight-1 wP.Owned-1 wP.StoredBlocks-3"},
		{name: "Restart/decode-after-source-outcome", setup: upTo(0, stReceived, func(tx *Tx) {
			tx.ReleaseSource(0, src, CauseReaderAck)
			tx.ReportSourceOutcome(0, src, true)
			tx.Complete(0, src)
		}), op: restartDecode,
			// The source already ended: no peer is left to tell.
			eff: []Effect{held(0, dst, ResDestReservation), held(0, dst, ResDecodeBooking)},
			diff: "h0.Dst=none h0.DstReg=fenced h0.InFlight[destination]=false h0.Life[destination_reservation]=ended h0.Life[decode_booking]=ended " +
				"h0.Outcome[destination]=forgotten h0.PrefixGone=BITD " +
				"wD.Gen+1 wD.Free+3 wD.Active-1 wD.Reserved-2 wD.InFlight-1 wD.BookedBlocks-3"},
		{name: "Restart/decode-no-prefill", cfg: conf(spec.DestinationFirst, SGLang, 1, 2, nil), setup: []func(*Tx){path(0)[stDecodeRouted-1]}, op: restartDecode,
			eff: []Effect{held(0, dst, ResDecodeBooking)},
			diff: "h0.Pending=false h0.InFlight[destination]=false h0.Life[decode_booking]=ended h0.Outcome[destination]=forgotten h0.PrefixGone=BITD " +
				"wD.Gen+1 wD.Free+1 wD.Prefix-1 wD.InFlight-1 wD.BookedBlocks-3"},
		{name: "Restart/decode-prefix-of-one-handoff", cfg: conf(spec.SourceFirst, VLLM, 2, 2, func(c *Config) {
			for i := range c.Workers {
				if c.Workers[i].Role == DecodeWorker {
					c.Workers[i].PrefixHit = []Tokens{16, 0}
				}
			}
		}), op: restartDecode,
			// Only handoff 0 had a prefix there to lose.
			diff: "h0.PrefixGone=BITD wD.Gen+1 wD.Free+1 wD.Prefix-1"},
		{name: "PinSource/after-restart", setup: upTo(0, stComputing, func(tx *Tx) { tx.FinishCompute(0) }, restartPrefill), op: func(tx *Tx) { tx.PinSource(0, src) },
			// The restart took the finished blocks: there is nothing to pin.
			eff: []Effect{{Kind: EffPinEarly}}},
		{name: "Reserve/exactly-fits", cfg: conf(spec.SourceFirst, VLLM, 1, 2, func(c *Config) { setBackground(c, 9, 0) }), setup: upTo(0, stDecodeRouted),
			op:   func(tx *Tx) { tx.Reserve(0) },
			eff:  []Effect{begin(0, dst, ResDestReservation)},
			diff: "h0.Pending=false h0.Dst=reserved h0.Life[destination_reservation]=held wD.Prefix-1 wD.Active+1 wD.Free-2 wD.Reserved+2"},
		{name: "Restart/decode-background", cfg: background1, setup: upTo(0, stPinned), op: restartDecode,
			// Handoff 0 is not on the decode worker yet: it only loses its prefix there.
			diff: "h0.PrefixGone=BITD wD.Gen+1 wD.Free+5 wD.Prefix-1 wD.Active-4 wD.SlotsUsed-1 wD.Background-4 wD.BackgroundSlot-1"},
	}
}

// Steps the op tables share.
var (
	fenceSource        = func(tx *Tx) { tx.FenceSource(0, SourceSide) }
	fenceDestination   = func(tx *Tx) { tx.FenceDestination(0, DestinationSide) }
	hang               = func(tx *Tx) { tx.HangTransfer(0) }
	releaseDestination = func(tx *Tx) { tx.ReleaseDestination(0, DestinationSide, CauseAbort) }
	activate           = func(tx *Tx) { tx.ActivateDestination(0, DestinationSide) }
	publish            = func(tx *Tx) { tx.PublishStored(0, DestinationSide) }
	publishCached      = func(tx *Tx) { tx.PublishCached(0, SourceSide) }
	// pinQuiet is the pin step of path without the publish the tables
	// make in it: the physics of source blocks the index never advertised.
	pinQuiet = func(tx *Tx) {
		tx.FinishCompute(0)
		tx.PinSource(0, SourceSide)
		tx.RegisterSource(0, SourceSide)
		tx.ReportComputeDone(0, SourceSide)
		tx.AnnouncePinned(0, SourceSide)
	}
	restartPrefill = func(tx *Tx) { tx.Restart(pw(tx)) }
	restartDecode  = func(tx *Tx) { tx.Restart(dw(tx)) }
	armAll         = func(tx *Tx) {
		for t := Timer(0); t < NumTimers; t++ {
			tx.Arm(0, t)
		}
	}
)

func startPrefill(h int) func(*Tx) { return func(tx *Tx) { tx.StartPrefill(h, SourceSide) } }

// orders are the two ways of listing the roles: worker 0 prefill, or
// worker 0 decode. A worker index compared with 0 where -1 is meant shows
// in one of them only.
var orders = []struct {
	name        string
	decodeFirst bool
}{{"prefill-listed-first", false}, {"decode-listed-first", true}}

// prepared runs the setup steps on a new world of the configuration.
func prepared(t *testing.T, mk func(*testing.T, bool) *Config, decodeFirst bool, setup []func(*Tx)) World {
	t.Helper()
	if mk == nil {
		mk = vllm1
	}
	w := NewWorld(mk(t, decodeFirst))
	for _, s := range setup {
		tx := Tx{W: &w}
		s(&tx)
	}
	return w
}

// roles replaces the role placeholders of an expected change list.
func roles(w *World, s string) []string {
	p, d := w.cfg.d.prefill[0], w.cfg.d.decode[0]
	r := strings.NewReplacer("wP.", "w"+strconv.Itoa(p)+".", "wD.", "w"+strconv.Itoa(d)+".",
		"=BITD", "="+strconv.Itoa(1<<d), "=P", "="+strconv.Itoa(p), "=D", "="+strconv.Itoa(d))
	out := strings.Fields(r.Replace(s))
	slices.Sort(out)
	return out
}

func TestOps_EffectsAndChanges(t *testing.T) {
	for _, order := range orders {
		t.Run(order.name, func(t *testing.T) {
			for _, tc := range opCases() {
				t.Run(tc.name, func(t *testing.T) {
					w := prepared(t, tc.cfg, order.decodeFirst, tc.setup)
					before := w
					tx := Tx{W: &w}
					applied = ""
					tc.op(&tx)
					if applied != tc.answer {
						t.Errorf("answer: got %q, want %q", applied, tc.answer)
					}
					if got := tx.J.Effects(); !slices.Equal(got, tc.eff) {
						t.Errorf("effects:\n got %+v\nwant %+v", got, tc.eff)
					}
					if got, want := changes(&before, &w), roles(&w, tc.diff); !slices.Equal(got, want) {
						t.Errorf("changes:\n got %v\nwant %v", got, want)
					}
				})
			}
		})
	}
}

// A command of one side sent to the other role's worker records the
// mismatch and changes nothing, on a world where the right command would
// have changed something; a command for a side not yet routed does nothing.
func TestOps_CommandsReachOnlyTheirRole(t *testing.T) {
	src, dst := SourceSide, DestinationSide
	for _, order := range orders {
		for _, tc := range []struct {
			name  string
			setup []func(*Tx)
			op    func(tx *Tx, side Side)
			right Side
		}{
			{"StartPrefill", upTo(0, stRouted), func(tx *Tx, s Side) { tx.StartPrefill(0, s) }, src},
			{"StopPrefill", upTo(0, stComputing), func(tx *Tx, s Side) { tx.StopPrefill(0, s) }, src},
			{"PinSource", upTo(0, stComputing, func(tx *Tx) { tx.FinishCompute(0) }), func(tx *Tx, s Side) { tx.PinSource(0, s) }, src},
			{"RegisterSource", upTo(0, stComputing), func(tx *Tx, s Side) { tx.RegisterSource(0, s) }, src},
			{"FenceSource", upTo(0, stPinned), func(tx *Tx, s Side) { tx.FenceSource(0, s) }, src},
			{"ReleaseSource", upTo(0, stPinned), func(tx *Tx, s Side) { tx.ReleaseSource(0, s, CauseAbort) }, src},
			{"ReportComputeDone", upTo(0, stComputing), func(tx *Tx, s Side) { tx.ReportComputeDone(0, s) }, src},
			{"AnnouncePinned", upTo(0, stRouted), func(tx *Tx, s Side) { tx.AnnouncePinned(0, s) }, src},
			{"ReportSourceOutcome", upTo(0, stRouted), func(tx *Tx, s Side) { tx.ReportSourceOutcome(0, s, true) }, src},
			{"StartTransfer/push", upTo(0, stReserved), func(tx *Tx, s Side) { tx.StartTransfer(0, s, src) }, src},
			{"StartTransfer/pull", upTo(0, stReserved), func(tx *Tx, s Side) { tx.StartTransfer(0, s, dst) }, dst},
			{"RequestReservation", upTo(0, stPinned, func(tx *Tx) { tx.RouteDecode(0, dw(tx)) }), func(tx *Tx, s Side) { tx.RequestReservation(0, s) }, dst},
			{"WithdrawReservation", upTo(0, stDecodeRouted), func(tx *Tx, s Side) { tx.WithdrawReservation(0, s) }, dst},
			{"RegisterDestination", upTo(0, stDecodeRouted), func(tx *Tx, s Side) { tx.RegisterDestination(0, s) }, dst},
			{"FenceDestination", upTo(0, stReserved), func(tx *Tx, s Side) { tx.FenceDestination(0, s) }, dst},
			{"ReleaseDestination", upTo(0, stReserved), func(tx *Tx, s Side) { tx.ReleaseDestination(0, s, CauseAbort) }, dst},
			{"ActivateDestination", upTo(0, stReceived), func(tx *Tx, s Side) { tx.ActivateDestination(0, s) }, dst},
			{"PublishStored", upTo(0, stReceived, activate), func(tx *Tx, s Side) { tx.PublishStored(0, s) }, dst},
			{"ReleaseActive", upTo(0, stActivated), func(tx *Tx, s Side) { tx.ReleaseActive(0, s) }, dst},
			{"ReportDecodeOutcome", upTo(0, stDecodeRouted), func(tx *Tx, s Side) { tx.ReportDecodeOutcome(0, s, true) }, dst},
		} {
			t.Run(order.name+"/"+tc.name, func(t *testing.T) {
				wrong := tc.right.Other()
				w := prepared(t, nil, order.decodeFirst, tc.setup)
				before := w
				tx := Tx{W: &w}
				tc.op(&tx, wrong)
				if want := []Effect{{Kind: EffRoleMismatch, Side: wrong}}; !slices.Equal(tx.J.Effects(), want) {
					t.Errorf("effects %+v, want %+v", tx.J.Effects(), want)
				}
				if w != before {
					t.Errorf("a misdirected command changed %v", changes(&before, &w))
				}
				// The right command does change the world: the test above
				// would catch a misdirected command that acts.
				w = before
				tx = Tx{W: &w}
				tc.op(&tx, tc.right)
				if w == before {
					t.Errorf("the command changes nothing even when it reaches its role")
				}
				// A command to a side that was never routed does nothing.
				w = prepared(t, nil, order.decodeFirst, nil)
				before = w
				tx = Tx{W: &w}
				tc.op(&tx, tc.right)
				if w != before || tx.J.N != 0 {
					t.Errorf("a command to an unrouted side recorded %+v and changed %v", tx.J.Effects(), changes(&before, &w))
				}
			})
		}
	}
}

// The predicates the environment asks before it moves: each on a world
// where it must say yes and on worlds where one condition says no.
func TestOps_Predicates(t *testing.T) {
	stopFirst := func(tx *Tx) { tx.StopPrefill(0, SourceSide) }
	pending1 := []func(*Tx){path(1)[0], path(1)[1], path(1)[2], path(1)[3]}
	for _, order := range orders {
		for _, tc := range []struct {
			name  string
			cfg   func(*testing.T, bool) *Config
			setup []func(*Tx)
			ask   func(tx *Tx) bool
			want  bool
		}{
			{"CanAdmitPrefill/full", smallPool2, upTo(0, stComputing, path(1)[0], startPrefill(1)), func(tx *Tx) bool { return tx.CanAdmitPrefill(1) }, false},
			{"CanAdmitPrefill/room", smallPool2, upTo(0, stComputing, path(1)[0], startPrefill(1), stopFirst), func(tx *Tx) bool { return tx.CanAdmitPrefill(1) }, true},
			{"CanAdmitPrefill/running", smallPool2, upTo(0, stComputing), func(tx *Tx) bool { return tx.CanAdmitPrefill(0) }, false},

			{"CanReserve/vllm", vllm1, upTo(0, stDecodeRouted), func(tx *Tx) bool { return tx.CanReserve(0) }, true},
			{"CanReserve/not-pending", vllm1, upTo(0, stDecodeRouted, func(tx *Tx) { tx.WithdrawReservation(0, DestinationSide) }), func(tx *Tx) bool { return tx.CanReserve(0) }, false},
			{"CanReserve/engine-cannot", trtllm1, upTo(0, stDecodeRouted), func(tx *Tx) bool { return tx.CanReserve(0) }, false},
			{"CanReserve/pages-do-not-fit", fullDecode1, upTo(0, stDecodeRouted), func(tx *Tx) bool { return tx.CanReserve(0) }, false},
			{"CanReserve/pages-exactly-fit", conf(spec.SourceFirst, VLLM, 1, 2, func(c *Config) { setBackground(c, 9, 0) }), upTo(0, stDecodeRouted), func(tx *Tx) bool { return tx.CanReserve(0) }, true},
			{"CanReserve/pages-fit-by-eviction", fullDecode1, upTo(0, stDecodeRouted, func(tx *Tx) { tx.FreeBackground(dw(tx)) }), func(tx *Tx) bool { return tx.CanReserve(0) }, true},
			// vLLM takes no slot at reservation: one slot, two reservations.
			{"CanReserve/vllm-ignores-slots", oneSlot2, upTo(0, stReserved, pending1...), func(tx *Tx) bool { return tx.CanReserve(1) }, true},
			{"CanReserve/sglang-slots-full", oneSlotSGLang2, upTo(0, stReserved, pending1...), func(tx *Tx) bool { return tx.CanReserve(1) }, false},
			{"CanReserve/sglang-slot-freed", oneSlotSGLang2, upTo(0, stReserved, append(pending1, releaseDestination)...), func(tx *Tx) bool { return tx.CanReserve(1) }, true},
			// Headroom binds: the worker has the headroom of one handoff only.
			{"CanReserve/headroom-exactly-fits", headroomSGLang2, upTo(0, stDecodeRouted), func(tx *Tx) bool { return tx.CanReserve(0) }, true},
			{"CanReserve/headroom-full", headroomSGLang2, upTo(0, stReserved, pending1...), func(tx *Tx) bool { return tx.CanReserve(1) }, false},
			{"CanReserve/headroom-freed", headroomSGLang2, upTo(0, stReserved, append(pending1, releaseDestination)...), func(tx *Tx) bool { return tx.CanReserve(1) }, true},
			{"CanReserve/vllm-ignores-headroom", headroomVLLM2, upTo(0, stReserved, pending1...), func(tx *Tx) bool { return tx.CanReserve(1) }, true},

			{"CanRefuse/trtllm", trtllm1, upTo(0, stDecodeRouted), func(tx *Tx) bool { return tx.CanRefuse(0) }, true},
			{"CanRefuse/not-pending", trtllm1, upTo(0, stPinned), func(tx *Tx) bool { return tx.CanRefuse(0) }, false},
			{"CanRefuse/engine-reserves", vllm1, upTo(0, stDecodeRouted), func(tx *Tx) bool { return tx.CanRefuse(0) }, false},

			{"CanPromote/slot-taken", oneSlot2, append(upTo(0, stActivated), path(1)[:stActivated]...), func(tx *Tx) bool { return tx.CanPromote(1) }, false},
			{"CanPromote/slot-freed", oneSlot2, append(upTo(0, stActivated), append(path(1)[:stActivated], func(tx *Tx) { tx.ReleaseActive(0, DestinationSide) })...), func(tx *Tx) bool { return tx.CanPromote(1) }, true},
			{"CanPromote/running", vllm1, upTo(0, stActivated), func(tx *Tx) bool { return tx.CanPromote(0) }, false},
			{"CanPromote/not-active", vllm1, upTo(0, stReceived), func(tx *Tx) bool { return tx.CanPromote(0) }, false},

			{"CanOccupyBackground/occupied", background1, nil, func(tx *Tx) bool { return tx.CanOccupyBackground(dw(tx)) }, false},
			{"CanOccupyBackground/freed", background1, []func(*Tx){freeBackground}, func(tx *Tx) bool { return tx.CanOccupyBackground(dw(tx)) }, true},
			{"CanOccupyBackground/one-block", conf(spec.SourceFirst, VLLM, 1, 2, func(c *Config) { setBackground(c, 1, 0) }), []func(*Tx){freeBackground}, func(tx *Tx) bool { return tx.CanOccupyBackground(dw(tx)) }, true},
			{"CanOccupyBackground/none-configured", vllm1, nil, func(tx *Tx) bool { return tx.CanOccupyBackground(dw(tx)) }, false},
			{"CanOccupyBackground/slots-full", backgroundOneSlotSGLang, upTo(0, stDecodeRouted, freeBackground, path(0)[stReserved-1]), func(tx *Tx) bool { return tx.CanOccupyBackground(dw(tx)) }, false},
			{"CanOccupyBackground/slots-exactly-fit", backgroundOneSlotSGLang, []func(*Tx){freeBackground}, func(tx *Tx) bool { return tx.CanOccupyBackground(dw(tx)) }, true},
			{"CanOccupyBackground/blocks-do-not-fit", fullDecode1, upTo(0, stDecodeRouted, freeBackground, path(0)[stReserved-1]), func(tx *Tx) bool { return tx.CanOccupyBackground(dw(tx)) }, false},

			{"TransferWouldSucceed", vllm1, upTo(0, stPulling), func(tx *Tx) bool { return tx.TransferWouldSucceed(0) }, true},
			{"TransferWouldSucceed/source-fenced", vllm1, upTo(0, stPulling, fenceSource), func(tx *Tx) bool { return tx.TransferWouldSucceed(0) }, false},
			{"TransferWouldSucceed/destination-fenced", vllm1, upTo(0, stPulling, fenceDestination), func(tx *Tx) bool { return tx.TransferWouldSucceed(0) }, false},
		} {
			t.Run(order.name+"/"+tc.name, func(t *testing.T) {
				w := prepared(t, tc.cfg, order.decodeFirst, tc.setup)
				tx := Tx{W: &w}
				if got := tc.ask(&tx); got != tc.want {
					t.Errorf("got %v, want %v (%s)", got, tc.want, w.DescribeWorker(dw(&tx)))
				}
			})
		}
	}
}

var (
	freeBackground = func(tx *Tx) { tx.FreeBackground(dw(tx)) }
	oneSlotSGLang2 = conf(spec.SourceFirst, SGLang, 2, 1, nil)
	// headroomSGLang2 and headroomVLLM2: two handoffs, headroom for one.
	headroomSGLang2 = conf(spec.SourceFirst, SGLang, 2, 2, bindingHeadroom)
	headroomVLLM2   = conf(spec.SourceFirst, VLLM, 2, 2, bindingHeadroom)
	// fullDecode1: 10 background blocks leave the decode worker 1 free
	// block, one short of a reservation, until the background ends.
	fullDecode1 = conf(spec.SourceFirst, VLLM, 1, 2, func(c *Config) { setBackground(c, 10, 0) })
	// backgroundOneSlotSGLang: one slot, taken by background load at first.
	backgroundOneSlotSGLang = conf(spec.SourceFirst, SGLang, 1, 1, func(c *Config) { setBackground(c, 2, 1) })
)

func setBackground(c *Config, blocks Blocks, slots int) {
	for i := range c.Workers {
		if c.Workers[i].Role == DecodeWorker {
			c.Workers[i].BackgroundBlocks, c.Workers[i].BackgroundSlots, c.Workers[i].BackgroundAtStart = blocks, slots, true
		}
	}
}

// Headroom binds admission: with the headroom of one handoff, the second
// reservation waits for the first to end, and the world stays clean
// throughout (judged by every invariant on every step).
func TestOps_HeadroomBindsAdmission(t *testing.T) {
	for _, order := range orders {
		t.Run(order.name, func(t *testing.T) {
			h := newHistory(t, shapedConfig(t, spec.SourceFirst, SGLang, 2, 2, order.decodeFirst, bindingHeadroom))
			h.clean(upTo(0, stReserved)...)
			h.clean(path(1)[:stDecodeRouted]...)
			tx := Tx{W: &h.w}
			if tx.CanReserve(1) {
				t.Fatalf("a second reservation admitted past the headroom: %s", h.w.DescribeWorker(dw(&tx)))
			}
			h.clean(func(tx *Tx) { fenceDestination(tx); releaseDestination(tx) })
			if !tx.CanReserve(1) {
				t.Fatalf("the headroom freed by the first reservation does not admit the second: %s", h.w.DescribeWorker(dw(&tx)))
			}
			h.clean(func(tx *Tx) { tx.Reserve(1) })
			if got := h.w.W[dw(&tx)].HeadroomUsed; got != 512 {
				t.Fatalf("headroom in use %d, want 512", got)
			}
		})
	}
}

func TestOps_ReceiveAndLose(t *testing.T) {
	w := NewWorld(testConfig(t, spec.SourceFirst, VLLM, 1, 2))
	tx := Tx{W: &w}
	tx.Send(0, SourceSide, MsgLeaseRenewed)
	tx.Send(0, SourceSide, MsgReaderCompleted)
	if i := tx.Receive(0, SourceSide, MsgCancelled); i != -1 || w.H[0].Ch[SourceSide].N != 2 {
		t.Fatalf("receiving a fact not in flight gave %d and left %d in flight", i, w.H[0].Ch[SourceSide].N)
	}
	// Out of order: the newer fact first.
	if i := tx.Receive(0, SourceSide, MsgReaderCompleted); i != 1 {
		t.Fatalf("the second fact in flight was found at %d, want 1", i)
	}
	if i := tx.Receive(0, SourceSide, MsgLeaseRenewed); i != 0 || w.H[0].Ch[SourceSide].N != 0 {
		t.Fatalf("the remaining fact was found at %d, %d left in flight", i, w.H[0].Ch[SourceSide].N)
	}
	if tx.J.N != 0 {
		t.Fatalf("the transport recorded effects: %+v", tx.J.Effects())
	}
}

// effectFlags is, for each boolean of an Effect, the kinds that record it:
// one meaning per field (its comment in ops.go), whatever the kind, so
// that an invariant reading a field reads the fact it names.
var effectFlags = map[string][]EffectKind{
	"AfterOutcome":      {EffBegin},
	"WasInFlight":       {EffAccept, EffComplete},
	"EverReserved":      {EffPrefillStart, EffTransferStart},
	"PagesReserved":     {EffTransferStart, EffWrite, EffActivate},
	"SourcePinned":      {EffOwnershipEnd, EffRead},
	"LoadFallen":        {EffLoadFall},
	"ActivationPending": {EffPinEnd},
	"Tainted":           {EffActivate},
	"PagesActive":       {EffStored},
	"AlreadyPublished":  {EffStored},
}

// Every boolean of an Effect is a named fact listed above, and the
// operations set it only on the kinds listed for it: a field that meant
// one thing for one kind and another for the next (a generic A or B)
// fails here.
func TestEffect_EachFlagMeansOneThing(t *testing.T) {
	typ := reflect.TypeFor[Effect]()
	fields := map[string]bool{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Type.Kind() != reflect.Bool {
			continue
		}
		fields[f.Name] = true
		if _, ok := effectFlags[f.Name]; !ok {
			t.Errorf("Effect.%s: a boolean with no listed meaning and kinds", f.Name)
		}
	}
	for name := range effectFlags {
		if !fields[name] {
			t.Errorf("effectFlags lists %s, which is not a boolean of Effect", name)
		}
	}
	for _, order := range orders {
		for _, tc := range opCases() {
			w := prepared(t, tc.cfg, order.decodeFirst, tc.setup)
			tx := Tx{W: &w}
			tc.op(&tx)
			for _, e := range tx.J.Effects() {
				v := reflect.ValueOf(e)
				for name := range fields {
					if !v.FieldByName(name).Bool() {
						continue
					}
					if !slices.Contains(effectFlags[name], e.Kind) {
						t.Errorf("%s/%s: effect kind %d sets %s, which only %v record", order.name, tc.name, e.Kind, name, effectFlags[name])
					}
				}
			}
		}
	}
}
