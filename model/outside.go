package model

// A simulated cluster is larger than a world: many requests share a few
// workers. The simulator steps one handoff at a time in a world of that
// handoff and its two workers, whose counters are the whole workers'. What
// the other requests hold there is given as the world's outside holdings,
// so that every state invariant still compares a worker's counters with
// everything held on it: the world's handoff exactly, the rest as summed
// by the simulator from the handoffs' own holdings.

// Holdings is what some handoffs hold on one worker: blocks per category,
// slots, headroom, in-flight requests and the router ledgers. It is the
// figure the state invariants compare with the worker's counters.
type Holdings struct{ h holdings }

// Plus is a + b.
func (a Holdings) Plus(b Holdings) Holdings {
	x, y := a.h, b.h
	return Holdings{holdings{
		active: x.active + y.active, pinned: x.pinned + y.pinned, reserved: x.reserved + y.reserved,
		prefix: x.prefix + y.prefix, kept: x.kept + y.kept, slots: x.slots + y.slots,
		headroom: x.headroom + y.headroom, inFlight: x.inFlight + y.inFlight, owned: x.owned + y.owned,
		prefillTokens: x.prefillTokens + y.prefillTokens, booked: x.booked + y.booked, stored: x.stored + y.stored,
	}}
}

// Minus is a − b.
func (a Holdings) Minus(b Holdings) Holdings {
	x, y := a.h, b.h
	return Holdings{holdings{
		active: x.active - y.active, pinned: x.pinned - y.pinned, reserved: x.reserved - y.reserved,
		prefix: x.prefix - y.prefix, kept: x.kept - y.kept, slots: x.slots - y.slots,
		headroom: x.headroom - y.headroom, inFlight: x.inFlight - y.inFlight, owned: x.owned - y.owned,
		prefillTokens: x.prefillTokens - y.prefillTokens, booked: x.booked - y.booked, stored: x.stored - y.stored,
	}}
}

// Zero reports whether nothing is held.
func (a Holdings) Zero() bool { return a.h == holdings{} }

// Pinned is the pinned_source blocks held.
func (a Holdings) Pinned() Blocks { return a.h.pinned }

// Reserved is the reserved_destination blocks held.
func (a Holdings) Reserved() Blocks { return a.h.reserved }

// Used is the blocks held that no cache may evict: active, pinned_source
// and reserved_destination (kv_used).
func (a Holdings) Used() Blocks { return a.h.active + a.h.pinned + a.h.reserved }

// HandoffHoldings is what handoff h holds on each worker of the world,
// without background load or outside holdings.
func (w *World) HandoffHoldings(h int) (out [MaxWorkers]Holdings) {
	var hs [MaxWorkers]holdings
	w.addHoldings(&hs, h, w.cfg.Engine.Traits().HeadroomAtReservation)
	for k := range hs {
		out[k] = Holdings{hs[k]}
	}
	return out
}

// SetOutside says what requests outside the world hold on worker k: the
// state invariants count it as held there. Only a simulator that steps a
// window of a larger cluster sets it; it stays zero for an explored world.
func (c *Config) SetOutside(k int, o Holdings) { c.outside[k] = o.h }

// NewWorldWith is a world of a prepared configuration whose workers start
// with the given counters (a simulator's window onto workers that other
// requests share) and whose handoffs start unplaced.
func NewWorldWith(c *Config, workers []Worker) World {
	w := NewWorld(c)
	copy(w.W[:], workers)
	return w
}

// Rebind points the world at another prepared configuration of the same
// shape: a simulator prices a request's decode side only once the decode
// router chose its worker, after the request's world was made.
func (w *World) Rebind(c *Config) {
	if !c.d.ok || len(c.Workers) != len(w.cfg.Workers) || len(c.Handoffs) != len(w.cfg.Handoffs) {
		panic("model: Rebind to an unprepared configuration or one of another shape")
	}
	w.cfg = c
}

// HandoffDrained reports whether handoff h holds, books, waits for or
// counts nothing any more: what Drained asks of every handoff.
func (w *World) HandoffDrained(h int) bool {
	x := &w.H[h]
	if x.Src != SrcNone || x.Dst != DstNone || x.Pending || x.Cmds[0].Len() != 0 || x.Cmds[1].Len() != 0 || x.ComputeLoad || x.Timers != 0 ||
		x.InFlight[0] || x.InFlight[1] || x.Compute == ComputeQueued || x.Compute == ComputeRunning || x.Xfer == XferRunning {
		return false
	}
	for _, l := range x.Life {
		if l == Held {
			return false
		}
	}
	return true
}

// SharedActive is n active blocks that two requests' KV share on a
// worker, counted once: a destination that adopted another request's
// canonical blocks at activation freed its duplicates
// (EngineTraits.Duplicates). A driver adds it to the sum of what its
// worker holds while the sharing lasts, so that every world onto the
// worker still sums its counters; it is negative active, and never
// exceeds what the sharers hold.
func SharedActive(n Blocks) Holdings { return Holdings{holdings{active: -n}} }

// SharedKept is n blocks a request's kept cache holds fewer than its
// world says: it shared them with another request's active KV when it
// released, and they stayed active with that request, so only its own
// blocks went to the cache. A driver adds it to the sum of what its
// worker holds until the cache evicts the request's blocks; it is
// negative kept, and never exceeds what the request keeps.
func SharedKept(n Blocks) Holdings { return Holdings{holdings{kept: -n}} }

// Active is the active blocks held.
func (a Holdings) Active() Blocks { return a.h.active }

// Kept is the released blocks kept in the cache as a handoff's.
func (a Holdings) Kept() Blocks { return a.h.kept }

// Prefix is the cached prefix blocks held, lockable by a reservation.
func (a Holdings) Prefix() Blocks { return a.h.prefix }
