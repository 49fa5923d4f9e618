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

type bitw struct {
	w [HandoffWords]uint64
	n uint
}

func (b *bitw) put(v uint64, width uint) {
	v &= 1<<width - 1
	i, off := b.n/64, b.n%64
	b.w[i] |= v << off
	if off+width > 64 {
		b.w[i+1] |= v >> (64 - off)
	}
	b.n += width
}

func (b *bitw) flag(v bool) {
	if v {
		b.put(1, 1)
	} else {
		b.put(0, 1)
	}
}

type bitr struct {
	w [HandoffWords]uint64
	n uint
}

func (b *bitr) get(width uint) uint64 {
	i, off := b.n/64, b.n%64
	v := b.w[i] >> off
	if off+width > 64 {
		v |= b.w[i+1] << (64 - off)
	}
	b.n += width
	return v & (1<<width - 1)
}

func (b *bitr) flag() bool { return b.get(1) == 1 }

// PackHandoff encodes handoff h. remap renames worker indices (for symmetry
// reduction; identity when nil). extra carries bits the caller owns, such
// as the role machines' states; they are placed first so that they
// dominate the order of packed handoffs.
func (w *World) PackHandoff(h int, remap *[MaxWorkers]int8, extra uint64, extraBits uint) [HandoffWords]uint64 {
	x := &w.H[h]
	var b bitw
	b.put(extra, extraBits)
	pw, dw := x.Prefill, x.Decode
	gone := x.PrefixGone
	if remap != nil {
		if pw >= 0 {
			pw = remap[pw]
		}
		if dw >= 0 {
			dw = remap[dw]
		}
		gone = 0
		for k := 0; k < MaxWorkers; k++ {
			if x.PrefixGone&(1<<k) != 0 {
				gone |= 1 << remap[k]
			}
		}
	}
	b.put(uint64(pw+1), 3)
	b.put(uint64(dw+1), 3)
	b.flag(x.RequestDelivered)
	b.flag(x.Announced)
	b.flag(x.NoShow)
	b.flag(x.Cancelled)
	b.flag(x.CancelPending[0])
	b.flag(x.CancelPending[1])
	b.flag(x.SourceFailed)
	b.flag(x.ComputeLoad)
	b.put(uint64(x.Compute), 2)
	b.put(uint64(x.Src), 2)
	b.put(uint64(x.SrcReg), 2)
	b.flag(x.Pending)
	b.put(uint64(x.Dst), 2)
	b.put(uint64(x.DstReg), 2)
	b.flag(x.Running)
	b.flag(x.Published)
	b.put(uint64(gone), MaxWorkers)
	b.put(uint64(x.Xfer), 2)
	b.flag(x.Tainted)
	b.put(uint64(x.Runner), 1)
	b.put(uint64(x.Timers), uint(NumTimers))
	for _, l := range x.Life {
		b.put(uint64(l), 2)
	}
	for s := 0; s < 2; s++ {
		b.flag(x.Accepted[s])
		b.flag(x.InFlight[s])
		b.put(uint64(x.Outcome[s]), 2)
		b.flag(x.PeerGone[s])
		b.put(uint64(x.Ch[s].N), 3)
		for i := 0; i < ChannelCap; i++ {
			b.put(uint64(x.Ch[s].M[i]), 3)
		}
	}
	if b.n > 64*HandoffWords {
		panic("model: packed handoff overflows its words")
	}
	return b.w
}

// unpackHandoff decodes what PackHandoff encoded and returns the extra bits.
func unpackHandoff(x *Handoff, words [HandoffWords]uint64, extraBits uint) uint64 {
	b := bitr{w: words}
	extra := b.get(extraBits)
	x.Prefill = int8(b.get(3)) - 1
	x.Decode = int8(b.get(3)) - 1
	x.RequestDelivered = b.flag()
	x.Announced = b.flag()
	x.NoShow = b.flag()
	x.Cancelled = b.flag()
	x.CancelPending[0] = b.flag()
	x.CancelPending[1] = b.flag()
	x.SourceFailed = b.flag()
	x.ComputeLoad = b.flag()
	x.Compute = Compute(b.get(2))
	x.Src = SrcHold(b.get(2))
	x.SrcReg = Reg(b.get(2))
	x.Pending = b.flag()
	x.Dst = DstHold(b.get(2))
	x.DstReg = Reg(b.get(2))
	x.Running = b.flag()
	x.Published = b.flag()
	x.PrefixGone = uint8(b.get(MaxWorkers))
	x.Xfer = Xfer(b.get(2))
	x.Tainted = b.flag()
	x.Runner = Side(b.get(1))
	x.Timers = uint8(b.get(uint(NumTimers)))
	for i := range x.Life {
		x.Life[i] = Life(b.get(2))
	}
	for s := 0; s < 2; s++ {
		x.Accepted[s] = b.flag()
		x.InFlight[s] = b.flag()
		x.Outcome[s] = Outcome(b.get(2))
		x.PeerGone[s] = b.flag()
		x.Ch[s].N = uint8(b.get(3))
		for i := 0; i < ChannelCap; i++ {
			x.Ch[s].M[i] = Msg(b.get(3))
		}
	}
	return extra
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
func Unpack(c *Config, handoffs [][HandoffWords]uint64, workers []uint64, extraBits uint, extra []uint64) World {
	var w World
	w.cfg = c
	for h := range c.Handoffs {
		extra[h] = unpackHandoff(&w.H[h], handoffs[h], extraBits)
	}
	for k := range c.Workers {
		v := workers[k]
		wk := &w.W[k]
		wk.Gen = Generation(v)
		wk.Cached = Blocks(uint8(v >> 8))
		wk.Background = Blocks(uint8(v >> 16))
		wk.BackgroundSlot = int8(uint8(v >> 24))
	}
	w.Recount()
	return w
}

// Recount recomputes every derived counter of every worker from the
// handoffs and the independent worker facts.
func (w *World) Recount() {
	for k := 0; k < w.NumWorkers(); k++ {
		wk := &w.W[k]
		s := w.holdingsOn(k)
		wk.Active, wk.Pinned, wk.Reserved, wk.Prefix = s.active, s.pinned, s.reserved, s.prefix
		wk.SlotsUsed, wk.HeadroomUsed, wk.InFlight = s.slots, s.headroom, s.inFlight
		wk.Owned, wk.PrefillTokens, wk.BookedBlocks, wk.StoredBlocks = s.owned, s.prefillTokens, s.booked, s.stored
		wk.Free = w.cfg.Workers[k].Capacity - wk.Cached - wk.Prefix - wk.Active - wk.Pinned - wk.Reserved
	}
}
