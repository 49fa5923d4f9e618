package model

// Side is one of the two roles of a handoff. Per-handoff facts are indexed
// by the side they belong to.
type Side uint8

const (
	// SourceSide is the prefill side.
	SourceSide Side = iota
	// DestinationSide is the decode side.
	DestinationSide
)

// Other is the peer side.
func (s Side) Other() Side { return 1 - s }

func (s Side) String() string {
	if s == SourceSide {
		return "source"
	}
	return "destination"
}

// Res names a resource whose lifetime ExactlyOnceRelease follows.
type Res uint8

const (
	// ResCompute is the prefill compute blocks of the request.
	ResCompute Res = iota
	// ResSourceLease is the pinned source KV and its lease.
	ResSourceLease
	// ResDestReservation is the destination reservation (slot, snapshot, pages, headroom).
	ResDestReservation
	// ResPrefillBooking is the prefill router's request ownership.
	ResPrefillBooking
	// ResDecodeBooking is the decode router's selection-time booking.
	ResDecodeBooking
	// NumRes is the number of tracked resources.
	NumRes
)

var resNames = [...]string{"compute", "source lease", "destination reservation", "prefill booking", "decode booking"}

func (r Res) String() string { return resNames[r] }

// Life is where a resource is in its one life: never begun, held, ended.
type Life uint8

const (
	// Never means the resource was never begun.
	Never Life = iota
	// Held means the resource is held now.
	Held
	// Ended means the resource was released, once; it may not come back.
	Ended
)

var lifeNames = [...]string{"never", "held", "ended"}

func (l Life) String() string { return lifeNames[l] }

// Reg is the state of a transfer registration (docs/lifecycle.md section 7).
type Reg uint8

const (
	// RegNone means no registration was made for the attempt.
	RegNone Reg = iota
	// RegValid lets a transfer read (source) or write (destination).
	RegValid
	// RegFenced makes every read or write through it fail.
	RegFenced
	// RegClosed is deregistered together with the release of its memory.
	RegClosed
)

var regNames = [...]string{"none", "valid", "fenced", "closed"}

func (r Reg) String() string { return regNames[r] }

// Xfer is the state of the attempt's transfer.
type Xfer uint8

const (
	// XferNone means no transfer was started.
	XferNone Xfer = iota
	// XferRunning means reads and writes may still happen.
	XferRunning
	// XferDone means every block was read and written.
	XferDone
	// XferFailed means the transfer failed, timed out or hit a fence.
	XferFailed
)

var xferNames = [...]string{"none", "running", "done", "failed"}

func (x Xfer) String() string { return xferNames[x] }

// Finished reports whether no read or write can happen any more.
func (x Xfer) Finished() bool { return x == XferDone || x == XferFailed }

// Compute is the prefill compute of the attempt.
type Compute uint8

const (
	// ComputeNone means no prefill was dispatched (or it was stopped).
	ComputeNone Compute = iota
	// ComputeQueued means dispatched, waiting for prefill blocks.
	ComputeQueued
	// ComputeRunning means blocks allocated, computing.
	ComputeRunning
	// ComputeDone means the prefill produced its KV.
	ComputeDone
)

var computeNames = [...]string{"none", "queued", "running", "done"}

func (c Compute) String() string { return computeNames[c] }

// SrcHold is what the prefill worker physically holds for the attempt.
type SrcHold uint8

const (
	// SrcNone holds nothing.
	SrcNone SrcHold = iota
	// SrcActive holds the compute blocks (category active).
	SrcActive
	// SrcPinned holds the blocks that will move (category pinned_source).
	SrcPinned
)

var srcHoldNames = [...]string{"none", "active", "pinned"}

func (s SrcHold) String() string { return srcHoldNames[s] }

// DstHold is what the decode worker physically holds for the attempt.
type DstHold uint8

const (
	// DstNone holds nothing (the prefix, if any, is plain cache).
	DstNone DstHold = iota
	// DstReserved holds the locked prefix (active) and the delta pages
	// (reserved_destination).
	DstReserved
	// DstActive holds the prefix and the received pages as active blocks.
	DstActive
)

var dstHoldNames = [...]string{"none", "reserved", "active"}

func (s DstHold) String() string { return dstHoldNames[s] }

// Outcome is the terminal outcome a side reported to its router.
type Outcome uint8

const (
	// OutcomeNone means no terminal outcome yet.
	OutcomeNone Outcome = iota
	// OutcomeOK means released (source) or decoded (destination).
	OutcomeOK
	// OutcomeFailed means aborted, cancelled, refused or expired.
	OutcomeFailed
	// OutcomeForgotten means the owner restarted and its stream broke.
	OutcomeForgotten
)

var outcomeNames = [...]string{"none", "ok", "failed", "forgotten"}

func (o Outcome) String() string { return outcomeNames[o] }

// Timer names a deadline of one side of a handoff.
type Timer uint8

const (
	// TimerLease is the source lease.
	TimerLease Timer = iota
	// TimerBootstrap is the source's wait for a reservation.
	TimerBootstrap
	// TimerHeartbeat is the destination's periodic lease renewal.
	TimerHeartbeat
	// TimerReservation is the destination's wait for its KV.
	TimerReservation
	// TimerPush is the deadline of a push the source runs.
	TimerPush
	// TimerPull is the deadline of a pull the destination runs.
	TimerPull
	// NumTimers is the number of timers.
	NumTimers
)

var timerNames = [...]string{"lease", "bootstrap", "heartbeat", "reservation", "push-deadline", "pull-deadline"}

func (t Timer) String() string { return timerNames[t] }

// Side is the side that owns the timer.
func (t Timer) Side() Side {
	if t == TimerLease || t == TimerBootstrap || t == TimerPush {
		return SourceSide
	}
	return DestinationSide
}

// Handoff is everything the world knows about one handoff attempt: where
// it was routed, what each router booked, what each worker physically
// holds for it, its registrations and transfer, its timers and the
// messages in flight. It knows nothing of protocol states.
type Handoff struct {
	// Prefill and Decode are the worker indices the routers chose, or -1.
	Prefill, Decode int8

	// The frontend.
	RequestDelivered bool // the prefill request reached the source worker
	Announced        bool // the source answered with transfer parameters
	NoShow           bool // decode will never be routed
	Cancelled        bool // the client aborted
	CancelPending    [2]bool
	SourceFailed     bool // the frontend learned the source failed

	// Routers: prefill compute load (the lifetimes of the bookings are in Life).
	ComputeLoad bool

	// Source worker.
	Compute Compute
	Src     SrcHold
	SrcReg  Reg

	// Destination worker.
	Pending   bool // a reservation request waits for capacity
	Dst       DstHold
	DstReg    Reg
	Running   bool // holds a running decode slot
	Published bool // the KV index advertises the destination's received blocks now
	// PrefixGone has bit w set when decode worker w restarted and lost this
	// handoff's prefix: a later reservation there locks nothing.
	PrefixGone uint8

	// Transfer.
	Xfer    Xfer
	Tainted bool // the source blocks left while the transfer could read them
	// Hung: the transfer neither completes nor fails on its own; it ends,
	// failed, only once a registration it uses is no longer valid.
	Hung   bool
	Runner Side // who runs the transfer: destination pulls, source pushes
	// Cmds: the commands waiting in each side's scheduler core (the
	// command path); each takes effect when the core applies it.
	Cmds [2]CmdQueue
	// Slow: the side's scheduler core fell behind (the delay fault): the
	// commands it gets for the handoff wait until it applies them.
	Slow [2]bool

	// What physically happened, for OutcomeTruthful: the source's pin
	// ended on the reader's acknowledgement (Acked), and the destination
	// activated from a completed transfer of valid KV (Activated). Both
	// are history: they outlive the blocks they speak of.
	Acked, Activated bool

	// The KV index and the cache after release: the source's released
	// pinned blocks sit in its worker's cache, not evicted (SrcKept); the
	// destination's received blocks do after ReleaseActive (DstKept); the
	// index advertises the source's blocks (SrcIndexed: from compute
	// completion on, while they are pinned and then cached).
	SrcKept, DstKept, SrcIndexed bool

	// Timers armed, one bit per Timer.
	Timers uint8

	Life     [NumRes]Life
	Accepted [2]bool // the side counted the request in flight once
	InFlight [2]bool
	Outcome  [2]Outcome
	PeerGone [2]bool // the side's peer restarted; a health check will tell
	Ch       [2]Channel
}

// Armed reports whether a timer is armed.
func (h *Handoff) Armed(t Timer) bool { return h.Timers&(1<<t) != 0 }

// Worker returns the worker index of a side, or -1.
func (h *Handoff) Worker(s Side) int {
	if s == SourceSide {
		return int(h.Prefill)
	}
	return int(h.Decode)
}

// Worker is one worker's physical pool, admission limits and the router
// ledgers kept about it.
type Worker struct {
	Gen Generation
	// Physical categories (docs/lifecycle.md section 2). Cached is evictable
	// anonymous cache; Kept is evictable cache that belongs to a handoff
	// (its released blocks, SrcKept and DstKept); Prefix is cached prefix
	// blocks of handoffs that a reservation may lock; all three are the
	// category cached.
	Free, Cached, Kept, Prefix, Active, Pinned, Reserved Blocks
	// Admission limits, never counted as blocks.
	SlotsUsed    int16
	HeadroomUsed Tokens
	// Background requests occupying capacity.
	Background     Blocks
	BackgroundSlot int16
	// In-flight requests owned by the worker. The counters are wide
	// enough for a simulated worker with hundreds of requests.
	InFlight int16
	// Router ledgers: prefill compute load and ownership, decode booking.
	PrefillTokens Tokens
	Owned         int16
	BookedBlocks  Blocks
	// KV index: blocks of handoffs on this worker published as Stored and
	// not yet Removed.
	StoredBlocks Blocks
}

// KVUsed is kv_used = active + pinned_source + reserved_destination.
func (w *Worker) KVUsed() Blocks { return w.Active + w.Pinned + w.Reserved }

// World is the reference physical world: value semantics, fixed size.
type World struct {
	cfg *Config
	H   [MaxHandoffs]Handoff
	W   [MaxWorkers]Worker
}

// NewWorld is the initial world of a prepared configuration: every pool
// free but for prefix caches and background load.
func NewWorld(c *Config) World {
	if !c.d.ok {
		panic("model: NewWorld on an unprepared config")
	}
	var w World
	w.cfg = c
	for h := range c.Handoffs {
		w.H[h].Prefill, w.H[h].Decode = -1, -1
	}
	for i, wc := range c.Workers {
		k := &w.W[i]
		k.Prefix = c.d.initCache[i]
		if wc.BackgroundAtStart {
			k.Background = wc.BackgroundBlocks
			k.BackgroundSlot = int16(wc.BackgroundSlots)
			k.Active = wc.BackgroundBlocks
			k.SlotsUsed = int16(wc.BackgroundSlots)
		}
		k.Free = wc.Capacity - k.Prefix - k.Active
	}
	return w
}

// Config is the configuration the world was made from.
func (w *World) Config() *Config { return w.cfg }

// NumHandoffs is the number of handoffs.
func (w *World) NumHandoffs() int { return len(w.cfg.Handoffs) }

// NumWorkers is the number of workers.
func (w *World) NumWorkers() int { return len(w.cfg.Workers) }

// Role is a worker's role.
func (w *World) Role(i int) WorkerRole { return w.cfg.Workers[i].Role }

// locked is the prefix a reservation of h locks on decode worker d.
func (w *World) locked(h, d int) Blocks {
	if w.H[h].PrefixGone&(1<<d) != 0 {
		return 0
	}
	return w.cfg.d.locked[h][d]
}

// reserve is the delta a reservation of h reserves on decode worker d.
func (w *World) reserve(h, d int) Blocks {
	return w.cfg.DestQuote(h, d, w.H[h].PrefixGone&(1<<d) != 0).ReservedBlocks
}

// Drained reports whether nothing is held, booked, pending or counted for
// any handoff: every pool is back to cache or free, every ledger at zero.
func (w *World) Drained() bool {
	for h := 0; h < w.NumHandoffs(); h++ {
		// An armed timer is held too: a deadline left behind fires later,
		// on whatever then carries the attempt's name.
		if !w.HandoffDrained(h) {
			return false
		}
	}
	for i := 0; i < w.NumWorkers(); i++ {
		k := &w.W[i]
		if k.Pinned != 0 || k.Reserved != 0 || k.Active != k.Background || k.InFlight != 0 ||
			k.PrefillTokens != 0 || k.Owned != 0 || k.BookedBlocks != 0 || k.HeadroomUsed != 0 || k.SlotsUsed != k.BackgroundSlot {
			return false
		}
	}
	return true
}

// SourceStranded reports whether the source's KV is stranded as the
// handoff design means it: prefill compute finished and its blocks stay
// pinned while decode still waits (for a route, capacity or a
// reservation), on an attempt that can still succeed. Source-first
// engines strand here by design; destination-first ones reserve before
// prefill runs, so their sources pin only while the transfer reads.
// Blocks held for an attempt that can no longer succeed are a different
// figure (StrandedBlockSeconds).
func (x *Handoff) SourceStranded() bool {
	return x.Src == SrcPinned && x.Dst == DstNone && !x.Activated &&
		!x.Cancelled && x.Xfer != XferFailed &&
		x.Outcome[SourceSide] == OutcomeNone && x.Outcome[DestinationSide] == OutcomeNone
}
