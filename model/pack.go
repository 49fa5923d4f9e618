package model

// Packing gives every world a canonical, compact encoding: two 64-bit
// words per handoff and one per worker. Only independent facts are packed;
// every counter that is a function of them (pool categories, admission,
// in-flight counts, router ledgers, the KV index) is recomputed on
// unpacking, and the state invariants check on every new state that the
// live counters equal that recomputation. The checker builds its
// fingerprints and symmetry reduction on these words.

// HandoffWords is the number of words a packed handoff takes.
const HandoffWords = 2

// Layout of a packed handoff. Word 0 holds the caller's extra bits (at
// most ExtraBits, the role machines' states), the worker indices, and the
// flags; word 1 holds the outcomes and the two channels. The worker
// indices and the PrefixGone mask sit at fixed places so that a renaming of
// workers can patch a packed handoff without packing it again.
const (
	ExtraBits      = 8
	offPrefill     = 8
	offDecode      = 11
	offPrefixGone  = 35
	workerIdxMask  = 7
	prefixGoneMask = 1<<MaxWorkers - 1
)

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func packChannel(c *Channel) uint64 {
	return uint64(c.N) | uint64(c.M[0])<<3 | uint64(c.M[1])<<6 | uint64(c.M[2])<<9 | uint64(c.M[3])<<12
}

// unpackChannel is packChannel's inverse, its messages written out as
// there: a loop over them costs twice the instructions of the four shifts,
// for every channel of every state unpacked.
func unpackChannel(c *Channel, v uint64) {
	c.N = uint8(v & 7)
	c.M = [ChannelCap]Msg{Msg(v >> 3 & 7), Msg(v >> 6 & 7), Msg(v >> 9 & 7), Msg(v >> 12 & 7)}
}

// PackHandoff encodes handoff h with extra bits of the caller's own (the
// role machines' states) in the low ExtraBits of word 0.
func (w *World) PackHandoff(h int, extra uint64) [HandoffWords]uint64 {
	w0, w1 := w.PackHandoffWords(h, extra)
	return [HandoffWords]uint64{w0, w1}
}

// PackHandoffWords is PackHandoff with the two words as two results. The
// checker packs a handoff for nearly every successor it makes: two
// results come back in registers, while an array result comes back
// through memory, written as two words and read back as one wide load
// that the processor cannot forward from those two stores (a stall of
// about a dozen cycles each time).
func (w *World) PackHandoffWords(h int, extra uint64) (uint64, uint64) {
	x := &w.H[h]
	// Each word is made of a few partial words ORed together at the end:
	// one long chain of ORs would make each wait for the one before.
	a := extra&(1<<ExtraBits-1) |
		uint64(x.Prefill+1)<<offPrefill | uint64(x.Decode+1)<<offDecode |
		b2u(x.RequestDelivered)<<14 | b2u(x.Announced)<<15 | b2u(x.NoShow)<<16 | b2u(x.Cancelled)<<17
	b := b2u(x.CancelPending[0])<<18 | b2u(x.CancelPending[1])<<19 | b2u(x.SourceFailed)<<20 | b2u(x.ComputeLoad)<<21 |
		uint64(x.Compute)<<22 | uint64(x.Src)<<24 | uint64(x.SrcReg)<<26 | b2u(x.Pending)<<28
	c := uint64(x.Dst)<<29 | uint64(x.DstReg)<<31 | b2u(x.Running)<<33 | b2u(x.Published)<<34 |
		uint64(x.PrefixGone)<<offPrefixGone | uint64(x.Xfer)<<40 | b2u(x.Tainted)<<42 | uint64(x.Runner)<<43
	d := uint64(x.Timers&15)<<44 |
		uint64(x.Life[0])<<48 | uint64(x.Life[1])<<50 | uint64(x.Life[2])<<52 | uint64(x.Life[3])<<54 | uint64(x.Life[4])<<56
	e := b2u(x.Accepted[0])<<58 | b2u(x.Accepted[1])<<59 | b2u(x.InFlight[0])<<60 | b2u(x.InFlight[1])<<61 |
		b2u(x.PeerGone[0])<<62 | b2u(x.PeerGone[1])<<63
	f := uint64(x.Outcome[0]) | uint64(x.Outcome[1])<<2 | packChannel(&x.Ch[0])<<4 | packChannel(&x.Ch[1])<<19
	g := b2u(x.Acked)<<34 | b2u(x.Activated)<<35 | b2u(x.Hung)<<36 | uint64(x.Timers>>4)<<37 |
		b2u(x.SrcKept)<<39 | b2u(x.DstKept)<<40 | b2u(x.SrcIndexed)<<41
	i := packCmds(&x.Cmds[0])<<42 | packCmds(&x.Cmds[1])<<51 | b2u(x.Slow[0])<<60 | b2u(x.Slow[1])<<61
	return (a | b) | (c | (d | e)), f | (g | i)
}

// RemapHandoff renames the worker indices inside a packed handoff.
func RemapHandoff(words *[HandoffWords]uint64, remap *[MaxWorkers]int8) {
	w0 := words[0]
	if p := w0 >> offPrefill & workerIdxMask; p != 0 {
		w0 = w0&^(workerIdxMask<<offPrefill) | uint64(remap[p-1]+1)<<offPrefill
	}
	if d := w0 >> offDecode & workerIdxMask; d != 0 {
		w0 = w0&^(workerIdxMask<<offDecode) | uint64(remap[d-1]+1)<<offDecode
	}
	if g := w0 >> offPrefixGone & prefixGoneMask; g != 0 {
		var m uint64
		for k := 0; k < MaxWorkers; k++ {
			if g&(1<<k) != 0 {
				m |= 1 << remap[k]
			}
		}
		w0 = w0&^(prefixGoneMask<<offPrefixGone) | m<<offPrefixGone
	}
	words[0] = w0
}

// unpackHandoff decodes what PackHandoff encoded and returns the extra bits.
func unpackHandoff(x *Handoff, words [HandoffWords]uint64) uint64 {
	w0, w1 := words[0], words[1]
	bit := func(i uint) bool { return w0>>i&1 == 1 }
	x.Prefill = int8(w0>>offPrefill&7) - 1
	x.Decode = int8(w0>>offDecode&7) - 1
	x.RequestDelivered, x.Announced, x.NoShow, x.Cancelled = bit(14), bit(15), bit(16), bit(17)
	x.CancelPending[0], x.CancelPending[1], x.SourceFailed, x.ComputeLoad = bit(18), bit(19), bit(20), bit(21)
	x.Compute = Compute(w0 >> 22 & 3)
	x.Src = SrcHold(w0 >> 24 & 3)
	x.SrcReg = Reg(w0 >> 26 & 3)
	x.Pending = bit(28)
	x.Dst = DstHold(w0 >> 29 & 3)
	x.DstReg = Reg(w0 >> 31 & 3)
	x.Running, x.Published = bit(33), bit(34)
	x.PrefixGone = uint8(w0 >> offPrefixGone & prefixGoneMask)
	x.Xfer = Xfer(w0 >> 40 & 3)
	x.Tainted = bit(42)
	x.Runner = Side(w0 >> 43 & 1)
	x.Timers = uint8(w0 >> 44 & 15)
	for i := range x.Life {
		x.Life[i] = Life(w0 >> (48 + 2*uint(i)) & 3)
	}
	x.Accepted[0], x.Accepted[1], x.InFlight[0], x.InFlight[1] = bit(58), bit(59), bit(60), bit(61)
	x.PeerGone[0], x.PeerGone[1] = bit(62), bit(63)
	x.Outcome[0] = Outcome(w1 & 3)
	x.Outcome[1] = Outcome(w1 >> 2 & 3)
	unpackChannel(&x.Ch[0], w1>>4)
	unpackChannel(&x.Ch[1], w1>>19)
	x.Acked, x.Activated, x.Hung = w1>>34&1 == 1, w1>>35&1 == 1, w1>>36&1 == 1
	x.Timers |= uint8(w1>>37&3) << 4
	x.SrcKept, x.DstKept, x.SrcIndexed = w1>>39&1 == 1, w1>>40&1 == 1, w1>>41&1 == 1
	unpackCmds(&x.Cmds[0], w1>>42)
	unpackCmds(&x.Cmds[1], w1>>51)
	x.Slow[0], x.Slow[1] = w1>>60&1 == 1, w1>>61&1 == 1
	return w0 & (1<<ExtraBits - 1)
}

// PackWorker encodes the independent facts of worker k: its generation,
// its anonymous cache and its background load.
func (w *World) PackWorker(k int) uint64 {
	wk := &w.W[k]
	return uint64(wk.Gen) | uint64(wk.Cached)<<8 | uint64(wk.Background)<<16 | uint64(uint8(wk.BackgroundSlot))<<24
}

// Unpack rebuilds a world from packed words: handoffs[h] for each handoff
// and workers[k] for each worker, in index order. It returns the extra bits
// of each handoff. Every derived counter is recomputed.
func Unpack(c *Config, handoffs [][HandoffWords]uint64, workers []uint64, extra []uint64) World {
	var w World
	UnpackTo(&w, c, handoffs, workers, extra)
	return w
}

// UnpackTo is Unpack into a world the caller holds, whatever it held
// before.
func UnpackTo(w *World, c *Config, handoffs [][HandoffWords]uint64, workers []uint64, extra []uint64) {
	*w = World{cfg: c}
	for h := range c.Handoffs {
		extra[h] = unpackHandoff(&w.H[h], handoffs[h])
	}
	for k := range c.Workers {
		v := workers[k]
		wk := &w.W[k]
		wk.Gen = Generation(v)
		wk.Cached = Blocks(uint8(v >> 8))
		wk.Background = Blocks(uint8(v >> 16))
		wk.BackgroundSlot = int16(uint8(v >> 24))
	}
	w.Recount()
}

// Recount recomputes every derived counter of every worker from the
// handoffs and the independent worker facts.
func (w *World) Recount() {
	hs := w.holdingsAll()
	for k := 0; k < w.NumWorkers(); k++ {
		wk := &w.W[k]
		s := &hs[k]
		wk.Active, wk.Pinned, wk.Reserved, wk.Prefix, wk.Kept = s.active, s.pinned, s.reserved, s.prefix, s.kept
		wk.SlotsUsed, wk.HeadroomUsed, wk.InFlight = s.slots, s.headroom, s.inFlight
		wk.Owned, wk.PrefillTokens, wk.BookedBlocks, wk.StoredBlocks = s.owned, s.prefillTokens, s.booked, s.stored
		wk.Free = w.cfg.Workers[k].Capacity - wk.Cached - wk.Kept - wk.Prefix - wk.Active - wk.Pinned - wk.Reserved
	}
}
