package model

// Cause is why a side ends what it holds, as the environment knows it from
// the event that drove the step (not from what the tables claim).
type Cause uint8

const (
	// CauseOther is any reason the lifecycle does not allow for a release.
	CauseOther Cause = iota
	// CauseReaderAck is reader completion: the reader's acknowledgement, or
	// the end of its own writes seen by a pushing source.
	CauseReaderAck
	// CauseAbort is a cancel or abort by the client, either side, a failed
	// transfer or a peer restart.
	CauseAbort
	// CauseExpiry is the owner's own deadline.
	CauseExpiry
	// CauseDecodeDone is the end of decode.
	CauseDecodeDone
)

var causeNames = [...]string{"other", "reader-ack", "abort", "expiry", "decode-done"}

func (c Cause) String() string { return causeNames[c] }

// EffectKind names a physical fact recorded during a step. Step invariants
// judge the effects; the operations only do the physics.
type EffectKind uint8

const (
	_ EffectKind = iota
	// EffBegin: Res began; Life is its state before; AfterOutcome.
	EffBegin
	// EffEnd: Res ended; Life is its state before.
	EffEnd
	// EffAccept: Side counted the request in flight; WasInFlight.
	EffAccept
	// EffComplete: Side counted the request out; WasInFlight.
	EffComplete
	// EffPrefillStart: prefill dispatched; EverReserved.
	EffPrefillStart
	// EffComputeDone: the scheduler finished the prefill.
	EffComputeDone
	// EffLoadFall: prefill compute load fell; LoadFallen.
	EffLoadFall
	// EffPinEnd: the source pin ended; Reg and Xfer at that moment, Cause,
	// ActivationPending.
	EffPinEnd
	// EffPagesFreed: reserved destination pages were freed; Reg and Xfer.
	EffPagesFreed
	// EffTransferStart: Reg is the destination registration;
	// PagesReserved, EverReserved.
	EffTransferStart
	// EffRead: the transfer read through a valid source registration;
	// SourcePinned.
	EffRead
	// EffWrite: the transfer wrote through a valid destination
	// registration; PagesReserved.
	EffWrite
	// EffActivate: the destination activated; Xfer, Tainted,
	// PagesReserved.
	EffActivate
	// EffStored: Stored published; Xfer, PagesActive, AlreadyPublished.
	EffStored
	// EffRoleMismatch: a Side command reached a worker of the other role.
	EffRoleMismatch
	// EffOwnershipEnd: the prefill router freed request ownership;
	// SourcePinned.
	EffOwnershipEnd
	// EffPinEarly: a pin of blocks whose compute had not finished.
	EffPinEarly
	// EffRemoved: Removed published for the blocks of Side that the KV
	// index advertised, because they were evicted or their worker restarted.
	EffRemoved
)

// Effect is one physical fact of a step. Each field means one thing
// whatever the kind: a kind records the fields its comment names and
// leaves the others zero, so that an invariant reading a field cannot
// mistake one kind's fact for another's.
type Effect struct {
	Kind  EffectKind
	H     int8
	Side  Side
	Res   Res
	Life  Life
	Reg   Reg
	Xfer  Xfer
	Cause Cause
	// AfterOutcome: Side had already reported its terminal outcome to
	// its router when Res began.
	AfterOutcome bool
	// WasInFlight: Side counted the request in flight before the step.
	WasInFlight bool
	// EverReserved: the destination has reserved for the attempt, now or
	// before.
	EverReserved bool
	// PagesReserved: the destination pages are reserved for the attempt
	// now (not yet active, not freed).
	PagesReserved bool
	// SourcePinned: the source blocks are still pinned for the attempt.
	SourcePinned bool
	// LoadFallen: the prefill compute load had already fallen.
	LoadFallen bool
	// ActivationPending: the destination's activation command was sent
	// and not yet applied.
	ActivationPending bool
	// Tainted: the source blocks were released while the transfer read.
	Tainted bool
	// PagesActive: the destination pages hold the activated request.
	PagesActive bool
	// AlreadyPublished: Stored was published for the handoff before.
	AlreadyPublished bool
}

// MaxEffects bounds the effects of one step.
const MaxEffects = 48

// Journal is the effects of one step, in order. The step invariants read
// them in place (&j.E[i]) rather than by value: every step half scans
// the journal on every transition the checker explores.
type Journal struct {
	N int
	E [MaxEffects]Effect
	// Stale: the step delivered a fact (or its duplicate) to a record
	// that had already finished, the step AttemptIsolation judges. The
	// step that applies a move says so, so that whoever judges or counts
	// the step need not ask again.
	Stale bool
}

func (j *Journal) add(e Effect) {
	if j.N == MaxEffects {
		panic("model: journal overflow")
	}
	j.E[j.N] = e
	j.N++
}

// Effects is the recorded effects.
func (j *Journal) Effects() []Effect { return j.E[:j.N] }

// Tx applies operations to a world and records their effects.
type Tx struct {
	W *World
	J Journal
}

func (tx *Tx) h(h int) *Handoff { return &tx.W.H[h] }

func (tx *Tx) begin(h int, r Res, side Side) {
	x := tx.h(h)
	tx.J.add(Effect{Kind: EffBegin, H: int8(h), Side: side, Res: r, Life: x.Life[r], AfterOutcome: x.Outcome[side] != OutcomeNone})
	x.Life[r] = Held
}

func (tx *Tx) end(h int, r Res, side Side) {
	x := tx.h(h)
	tx.J.add(Effect{Kind: EffEnd, H: int8(h), Side: side, Res: r, Life: x.Life[r]})
	if x.Life[r] == Held {
		x.Life[r] = Ended
	}
}

// command checks that a command of side reaches a worker of the role that
// side needs (RoleCommands). A misdirected command does nothing: the worker
// it reached has nothing of the other role to act on.
func (tx *Tx) command(h int, side, want Side) bool {
	if side != want {
		tx.J.add(Effect{Kind: EffRoleMismatch, H: int8(h), Side: side})
		return false
	}
	return tx.h(h).Worker(want) >= 0
}

// alloc takes n blocks into a category, from free first, then by evicting
// anonymous cache, then by evicting kept cache: a whole handoff-side's
// kept blocks at a time, in handoff order, the surplus going to free (and
// Removed published for what the index advertised). It reports false
// when the worker cannot.
func (tx *Tx) alloc(w int, n Blocks, into *Blocks) bool {
	k := &tx.W.W[w]
	if !tx.canAlloc(w, n) {
		return false
	}
	for h := 0; h < tx.W.NumHandoffs() && k.Free+k.Cached < n; h++ {
		for s := SourceSide; s <= DestinationSide && k.Free+k.Cached < n; s++ {
			if tx.keeps(h, s) == w && tx.kept(h, s) > 0 {
				tx.evictKept(h, s)
			}
		}
	}
	take := min(k.Free, n)
	k.Free -= take
	k.Cached -= n - take
	*into += n
	return true
}

func (tx *Tx) canAlloc(w int, n Blocks) bool {
	k := &tx.W.W[w]
	return k.Free+k.Cached+k.Kept >= n
}

// keeps is the worker whose cache keeps a side's released blocks of
// handoff h, or -1.
func (tx *Tx) keeps(h int, s Side) int {
	x := tx.h(h)
	if (s == SourceSide && x.SrcKept) || (s == DestinationSide && x.DstKept) {
		return x.Worker(s)
	}
	return -1
}

// kept is how many blocks a side of handoff h keeps in its worker's cache
// once released: the source's pinned blocks, the destination's received ones.
func (tx *Tx) kept(h int, s Side) Blocks {
	if s == SourceSide {
		return tx.W.cfg.d.source[h].PinnedBlocks
	}
	x := tx.h(h)
	return tx.W.reserve(h, int(x.Decode))
}

// indexed reports whether the KV index advertises a side's blocks of h.
func (tx *Tx) indexed(h int, s Side) *bool {
	if s == SourceSide {
		return &tx.h(h).SrcIndexed
	}
	return &tx.h(h).Published
}

// unindex publishes Removed for a side's blocks of h when the index
// advertises them: the flag clears and the worker's index shrinks.
func (tx *Tx) unindex(h int, s Side) {
	if p := tx.indexed(h, s); *p {
		*p = false
		tx.W.W[tx.h(h).Worker(s)].StoredBlocks -= tx.kept(h, s)
		tx.J.add(Effect{Kind: EffRemoved, H: int8(h), Side: s})
	}
}

// evictKept evicts the blocks a side of h keeps in its worker's cache:
// they become free, and Removed is published for them if advertised.
func (tx *Tx) evictKept(h int, s Side) {
	x := tx.h(h)
	k := &tx.W.W[x.Worker(s)]
	n := tx.kept(h, s)
	k.Kept -= n
	k.Free += n
	if s == SourceSide {
		x.SrcKept = false
	} else {
		x.DstKept = false
	}
	tx.unindex(h, s)
}

// CanEvict reports whether a side of h keeps blocks in its worker's cache.
func (tx *Tx) CanEvict(h int, s Side) bool { return tx.keeps(h, s) >= 0 }

// Evict is the worker's cache evicting the blocks a side of h keeps there
// (the environment's choice): Removed is published for them if advertised.
func (tx *Tx) Evict(h int, s Side) {
	if tx.CanEvict(h, s) {
		tx.evictKept(h, s)
	}
}

// ---- Routers and the frontend (the environment's side) ----

// RoutePrefill is the prefill router choosing worker w: it books request
// ownership and compute load at dispatch.
func (tx *Tx) RoutePrefill(h, w int) {
	x := tx.h(h)
	x.Prefill = int8(w)
	tx.begin(h, ResPrefillBooking, SourceSide)
	x.ComputeLoad = true
	k := &tx.W.W[w]
	k.Owned++
	k.PrefillTokens += tx.W.cfg.d.source[h].TransferredTokens
}

// DeliverRequest marks the prefill request as arrived at its worker.
func (tx *Tx) DeliverRequest(h int) { tx.h(h).RequestDelivered = true }

// RouteDecode is the decode router choosing worker w: it books the
// request's estimated blocks at selection time.
func (tx *Tx) RouteDecode(h, w int) {
	x := tx.h(h)
	x.Decode = int8(w)
	tx.begin(h, ResDecodeBooking, DestinationSide)
	tx.W.W[w].BookedBlocks += tx.W.cfg.d.estimate[h]
}

// ClientCancel is the client aborting: the frontend stops routing and will
// cancel both request streams that exist.
func (tx *Tx) ClientCancel(h int) {
	x := tx.h(h)
	x.Cancelled = true
	x.CancelPending[SourceSide] = x.Prefill >= 0
	x.CancelPending[DestinationSide] = x.Decode >= 0
}

// CancelDelivered clears a pending client cancel of a side.
func (tx *Tx) CancelDelivered(h int, s Side) { tx.h(h).CancelPending[s] = false }

// NoShow is the frontend never routing decode.
func (tx *Tx) NoShow(h int) { tx.h(h).NoShow = true }

// ---- Source worker ----

// AcceptRequest counts the request in flight on the side's worker.
func (tx *Tx) AcceptRequest(h int, side Side) {
	x := tx.h(h)
	w := x.Worker(side)
	tx.J.add(Effect{Kind: EffAccept, H: int8(h), Side: side, WasInFlight: x.InFlight[side]})
	if x.InFlight[side] || w < 0 {
		return
	}
	x.InFlight[side] = true
	x.Accepted[side] = true
	tx.W.W[w].InFlight++
}

// Complete counts the request out of the side's worker.
func (tx *Tx) Complete(h int, side Side) {
	x := tx.h(h)
	w := x.Worker(side)
	tx.J.add(Effect{Kind: EffComplete, H: int8(h), Side: side, WasInFlight: x.InFlight[side]})
	if !x.InFlight[side] || w < 0 {
		return
	}
	x.InFlight[side] = false
	tx.W.W[w].InFlight--
}

// StartPrefill dispatches the prefill: its compute blocks are allocated now,
// or it queues until the prefill pool has room.
func (tx *Tx) StartPrefill(h int, side Side) {
	if !tx.command(h, side, SourceSide) {
		return
	}
	x := tx.h(h)
	tx.J.add(Effect{Kind: EffPrefillStart, H: int8(h), EverReserved: x.Life[ResDestReservation] != Never})
	if x.Compute != ComputeNone {
		tx.J.add(Effect{Kind: EffBegin, H: int8(h), Side: SourceSide, Res: ResCompute, Life: Ended})
		return
	}
	tx.begin(h, ResCompute, SourceSide)
	x.Compute = ComputeQueued
	if !tx.W.cfg.DeferAdmission {
		tx.AdmitPrefill(h)
	}
}

// CanAdmitPrefill reports whether a queued prefill fits in the pool now.
func (tx *Tx) CanAdmitPrefill(h int) bool {
	x := tx.h(h)
	return x.Compute == ComputeQueued && tx.canAlloc(int(x.Prefill), tx.W.cfg.d.source[h].ComputeBlocks)
}

// AdmitPrefill allocates a queued prefill's compute blocks when they fit.
func (tx *Tx) AdmitPrefill(h int) {
	x := tx.h(h)
	if x.Compute != ComputeQueued {
		return
	}
	k := &tx.W.W[x.Prefill]
	if tx.alloc(int(x.Prefill), tx.W.cfg.d.source[h].ComputeBlocks, &k.Active) {
		x.Compute = ComputeRunning
		x.Src = SrcActive
	}
}

// FinishCompute is the prefill scheduler finishing the forward pass.
func (tx *Tx) FinishCompute(h int) {
	x := tx.h(h)
	if x.Compute != ComputeRunning {
		return
	}
	x.Compute = ComputeDone
	tx.J.add(Effect{Kind: EffComputeDone, H: int8(h)})
}

// StopPrefill aborts a dispatched prefill and frees its compute blocks.
func (tx *Tx) StopPrefill(h int, side Side) {
	if !tx.command(h, side, SourceSide) {
		return
	}
	x := tx.h(h)
	switch x.Compute {
	case ComputeNone, ComputeDone:
		tx.end(h, ResCompute, SourceSide)
		return
	}
	if x.Src == SrcActive {
		k := &tx.W.W[x.Prefill]
		n := tx.W.cfg.d.source[h].ComputeBlocks
		k.Active -= n
		k.Free += n
		x.Src = SrcNone
	}
	x.Compute = ComputeNone
	tx.end(h, ResCompute, SourceSide)
}

// PinSource moves the finished compute blocks that will move into
// pinned_source and frees the rest to the cache (a window group drops the
// blocks below its window).
func (tx *Tx) PinSource(h int, side Side) {
	if !tx.command(h, side, SourceSide) {
		return
	}
	x := tx.h(h)
	if x.Src == SrcPinned || x.Life[ResSourceLease] != Never {
		tx.J.add(Effect{Kind: EffBegin, H: int8(h), Side: SourceSide, Res: ResSourceLease, Life: Ended})
		return
	}
	if x.Src != SrcActive || x.Compute != ComputeDone {
		tx.J.add(Effect{Kind: EffPinEarly, H: int8(h)})
		return
	}
	q := &tx.W.cfg.d.source[h]
	k := &tx.W.W[x.Prefill]
	k.Active -= q.ComputeBlocks
	k.Pinned += q.PinnedBlocks
	k.Cached += q.ComputeBlocks - q.PinnedBlocks
	x.Src = SrcPinned
	tx.end(h, ResCompute, SourceSide)
	tx.begin(h, ResSourceLease, SourceSide)
}

// RegisterSource makes the attempt's read registration.
func (tx *Tx) RegisterSource(h int, side Side) {
	if !tx.command(h, side, SourceSide) {
		return
	}
	if x := tx.h(h); x.SrcReg == RegNone {
		x.SrcReg = RegValid
	}
}

// FenceSource fences the attempt's read registration: every later read fails.
func (tx *Tx) FenceSource(h int, side Side) {
	if !tx.command(h, side, SourceSide) {
		return
	}
	if x := tx.h(h); x.SrcReg == RegValid {
		x.SrcReg = RegFenced
	}
}

// ReleaseSource deregisters the attempt and returns the pinned blocks to
// the cache, where they stay the handoff's (kept) until evicted. Reads that could still come would now find freed blocks: the
// effect records what the registration and transfer were at that moment.
func (tx *Tx) ReleaseSource(h int, side Side, cause Cause) {
	if !tx.command(h, side, SourceSide) {
		return
	}
	x := tx.h(h)
	if x.Src != SrcPinned {
		tx.end(h, ResSourceLease, SourceSide)
		return
	}
	tx.J.add(Effect{Kind: EffPinEnd, H: int8(h), Reg: x.SrcReg, Xfer: x.Xfer, Cause: cause, ActivationPending: x.Cmds[DestinationSide].Has(CmdActivate)})
	if x.SrcReg == RegValid && x.Xfer == XferRunning {
		x.Tainted = true
	}
	x.Acked = cause == CauseReaderAck
	n := tx.W.cfg.d.source[h].PinnedBlocks
	k := &tx.W.W[x.Prefill]
	k.Pinned -= n
	k.Kept += n
	x.SrcKept = true
	x.Src = SrcNone
	if x.SrcReg == RegValid {
		x.SrcReg = RegClosed
	}
	tx.end(h, ResSourceLease, SourceSide)
}

// PublishCached publishes Stored for the source's computed blocks that
// will move: like any computed KV they are valid in its worker's cache
// from compute completion on (pinned, then cached after the release). It
// is physics only: it advertises them whatever the worker holds
// (IndexMatchesCache judges that).
func (tx *Tx) PublishCached(h int, side Side) {
	if !tx.command(h, side, SourceSide) {
		return
	}
	x := tx.h(h)
	if x.SrcIndexed {
		return
	}
	x.SrcIndexed = true
	tx.W.W[x.Prefill].StoredBlocks += tx.W.cfg.d.source[h].PinnedBlocks
}

// ReportComputeDone tells the prefill router compute finished: its
// active_prefill_tokens fall.
func (tx *Tx) ReportComputeDone(h int, side Side) {
	if !tx.command(h, side, SourceSide) {
		return
	}
	x := tx.h(h)
	tx.J.add(Effect{Kind: EffLoadFall, H: int8(h), LoadFallen: !x.ComputeLoad})
	if x.ComputeLoad {
		x.ComputeLoad = false
		tx.W.W[x.Prefill].PrefillTokens -= tx.W.cfg.d.source[h].TransferredTokens
	}
}

// AnnouncePinned answers the frontend with the transfer parameters.
func (tx *Tx) AnnouncePinned(h int, side Side) {
	if tx.command(h, side, SourceSide) {
		tx.h(h).Announced = true
	}
}

// ReportSourceOutcome is the source's terminal outcome reaching the prefill
// router over the request stream: request ownership ends, and compute load
// if it was still counted.
func (tx *Tx) ReportSourceOutcome(h int, side Side, ok bool) {
	if !tx.command(h, side, SourceSide) {
		return
	}
	x := tx.h(h)
	tx.releasePrefillBooking(h)
	if ok {
		x.Outcome[SourceSide] = OutcomeOK
	} else {
		x.Outcome[SourceSide] = OutcomeFailed
		x.SourceFailed = true
	}
}

func (tx *Tx) releasePrefillBooking(h int) {
	x := tx.h(h)
	tx.J.add(Effect{Kind: EffOwnershipEnd, H: int8(h), SourcePinned: x.Src == SrcPinned})
	held := x.Life[ResPrefillBooking] == Held
	tx.end(h, ResPrefillBooking, SourceSide)
	k := &tx.W.W[x.Prefill]
	if held {
		k.Owned--
	}
	if x.ComputeLoad {
		x.ComputeLoad = false
		k.PrefillTokens -= tx.W.cfg.d.source[h].TransferredTokens
	}
}

// ---- Transfer ----

// StartTransfer starts the attempt's transfer, run by the given side: the
// destination pulls, the source pushes.
func (tx *Tx) StartTransfer(h int, side, runner Side) {
	if !tx.command(h, side, runner) {
		return
	}
	x := tx.h(h)
	if x.Xfer != XferNone {
		return
	}
	tx.J.add(Effect{Kind: EffTransferStart, H: int8(h), Reg: x.DstReg, PagesReserved: x.Dst == DstReserved, EverReserved: x.Life[ResDestReservation] != Never})
	x.Xfer = XferRunning
	x.Runner = runner
}

// TransferWouldSucceed reports whether completing the transfer now reads
// and writes through valid registrations.
func (tx *Tx) TransferWouldSucceed(h int) bool {
	x := tx.h(h)
	return x.SrcReg == RegValid && x.DstReg == RegValid
}

// CompleteTransfer performs the reads and writes of a running transfer. It
// fails when either registration is no longer valid; the effects record
// what a read or write through a valid registration actually found.
func (tx *Tx) CompleteTransfer(h int) {
	x := tx.h(h)
	if x.Xfer != XferRunning {
		return
	}
	if x.SrcReg == RegValid {
		tx.J.add(Effect{Kind: EffRead, H: int8(h), SourcePinned: x.Src == SrcPinned})
	}
	if x.DstReg == RegValid {
		tx.J.add(Effect{Kind: EffWrite, H: int8(h), PagesReserved: x.Dst == DstReserved})
	}
	if tx.TransferWouldSucceed(h) {
		x.Xfer = XferDone
	} else {
		x.Xfer = XferFailed
	}
	x.Hung = false
}

// CanCompleteTransfer reports whether a running transfer can end now: on
// its own unless it hung; a hung one only by failing on a registration
// that is no longer valid.
func (tx *Tx) CanCompleteTransfer(h int) bool {
	x := tx.h(h)
	return x.Xfer == XferRunning && (!x.Hung || !tx.TransferWouldSucceed(h))
}

// HangTransfer is a running transfer hanging: from now on it neither
// completes nor fails on its own; whoever waits on it needs a deadline.
func (tx *Tx) HangTransfer(h int) {
	if x := tx.h(h); x.Xfer == XferRunning {
		x.Hung = true
	}
}

// FailTransfer is the transfer failing on its own (network, timeout).
// A hung transfer does not fail on its own.
func (tx *Tx) FailTransfer(h int) {
	if x := tx.h(h); x.Xfer == XferRunning && !x.Hung {
		x.Xfer = XferFailed
	}
}

// ---- Destination worker ----

// RequestReservation queues the request for a reservation.
func (tx *Tx) RequestReservation(h int, side Side) {
	if !tx.command(h, side, DestinationSide) {
		return
	}
	x := tx.h(h)
	if x.Dst == DstNone && x.Life[ResDestReservation] == Never {
		x.Pending = true
	}
}

// WithdrawReservation takes a queued reservation request back.
func (tx *Tx) WithdrawReservation(h int, side Side) {
	if tx.command(h, side, DestinationSide) {
		tx.h(h).Pending = false
	}
}

func (tx *Tx) engine() *EngineTraits { return tx.W.cfg.Engine.Traits() }

// CanReserve reports whether the decode scheduler can grant the queued
// reservation now: the engine reserves at all, the delta pages fit and,
// for an engine that takes them at reservation, a request slot and the
// admission headroom.
func (tx *Tx) CanReserve(h int) bool {
	x := tx.h(h)
	e := tx.engine()
	if !e.CanReserve || !x.Pending || x.Decode < 0 {
		return false
	}
	d := int(x.Decode)
	if !tx.canAlloc(d, tx.W.reserve(h, d)) {
		return false
	}
	k := &tx.W.W[d]
	wc := &tx.W.cfg.Workers[d]
	if e.SlotAtReservation && int(k.SlotsUsed) >= wc.Slots {
		return false
	}
	if e.HeadroomAtReservation && k.HeadroomUsed+tx.W.cfg.Handoffs[h].HeadroomTokens > wc.Headroom {
		return false
	}
	return true
}

// Reserve is the decode scheduler granting the reservation: it locks the
// prefix snapshot, reserves the page-aligned delta (reserved_destination),
// and, as the engine does, a request slot and headroom. All of it counts
// at once (ReservationCountsAtOnce).
func (tx *Tx) Reserve(h int) {
	x := tx.h(h)
	e := tx.engine()
	d := int(x.Decode)
	k := &tx.W.W[d]
	lk := tx.W.locked(h, d)
	k.Prefix -= lk
	k.Active += lk
	tx.alloc(d, tx.W.reserve(h, d), &k.Reserved)
	if e.SlotAtReservation {
		k.SlotsUsed++
		x.Running = true
	}
	if e.HeadroomAtReservation {
		k.HeadroomUsed += tx.W.cfg.Handoffs[h].HeadroomTokens
	}
	x.Pending = false
	x.Dst = DstReserved
	tx.begin(h, ResDestReservation, DestinationSide)
}

// CanRefuse reports whether an engine that cannot reserve has a queued
// reservation request to turn down.
func (tx *Tx) CanRefuse(h int) bool { return !tx.engine().CanReserve && tx.h(h).Pending }

// Refuse is an engine that cannot reserve for a handoff turning it down.
func (tx *Tx) Refuse(h int) { tx.h(h).Pending = false }

// RegisterDestination makes the attempt's write registration.
func (tx *Tx) RegisterDestination(h int, side Side) {
	if !tx.command(h, side, DestinationSide) {
		return
	}
	if x := tx.h(h); x.DstReg == RegNone {
		x.DstReg = RegValid
	}
}

// FenceDestination fences the attempt's write registration.
func (tx *Tx) FenceDestination(h int, side Side) {
	if !tx.command(h, side, DestinationSide) {
		return
	}
	if x := tx.h(h); x.DstReg == RegValid {
		x.DstReg = RegFenced
	}
}

// ReleaseDestination deregisters the attempt, frees the reserved pages,
// unlocks the prefix snapshot and frees slot and headroom.
func (tx *Tx) ReleaseDestination(h int, side Side, cause Cause) {
	if !tx.command(h, side, DestinationSide) {
		return
	}
	x := tx.h(h)
	if x.Dst != DstReserved {
		tx.end(h, ResDestReservation, DestinationSide)
		return
	}
	tx.J.add(Effect{Kind: EffPagesFreed, H: int8(h), Reg: x.DstReg, Xfer: x.Xfer, Cause: cause})
	d := int(x.Decode)
	k := &tx.W.W[d]
	r, lk := tx.W.reserve(h, d), tx.W.locked(h, d)
	k.Reserved -= r
	k.Free += r
	k.Active -= lk
	k.Prefix += lk
	tx.freeAdmission(h)
	if x.DstReg == RegValid {
		x.DstReg = RegClosed
	}
	x.Dst = DstNone
	tx.end(h, ResDestReservation, DestinationSide)
}

func (tx *Tx) freeAdmission(h int) {
	x := tx.h(h)
	k := &tx.W.W[x.Decode]
	if x.Running {
		k.SlotsUsed--
		x.Running = false
	}
	if tx.engine().HeadroomAtReservation {
		k.HeadroomUsed -= tx.W.cfg.Handoffs[h].HeadroomTokens
	}
}

// ActivateDestination turns the reserved pages into active ones; the
// reservation ends by activation. A request that holds no slot yet takes a
// running slot when one is free, or waits for one.
func (tx *Tx) ActivateDestination(h int, side Side) {
	if !tx.command(h, side, DestinationSide) {
		return
	}
	tx.activate(h)
}

// activate turns the reserved pages into active ones.
func (tx *Tx) activate(h int) {
	x := tx.h(h)
	tx.J.add(Effect{Kind: EffActivate, H: int8(h), Xfer: x.Xfer, Tainted: x.Tainted, PagesReserved: x.Dst == DstReserved})
	if x.Dst != DstReserved {
		return
	}
	d := int(x.Decode)
	k := &tx.W.W[d]
	r := tx.W.reserve(h, d)
	k.Reserved -= r
	k.Active += r
	x.Dst = DstActive
	x.Activated = x.Xfer == XferDone && !x.Tainted
	if x.DstReg == RegValid {
		x.DstReg = RegClosed
	}
	tx.end(h, ResDestReservation, DestinationSide)
	tx.Promote(h)
}

// CanPromote reports whether an activated request waits for a free slot.
func (tx *Tx) CanPromote(h int) bool {
	x := tx.h(h)
	if x.Dst != DstActive || x.Running {
		return false
	}
	return int(tx.W.W[x.Decode].SlotsUsed) < tx.W.cfg.Workers[x.Decode].Slots
}

// Promote gives an activated request a running slot when one is free.
func (tx *Tx) Promote(h int) {
	if tx.CanPromote(h) {
		x := tx.h(h)
		tx.W.W[x.Decode].SlotsUsed++
		x.Running = true
	}
}

// PublishStored publishes Stored for the newly valid blocks; the reused
// prefix is already in the index and is not republished.
func (tx *Tx) PublishStored(h int, side Side) {
	if !tx.command(h, side, DestinationSide) {
		return
	}
	x := tx.h(h)
	tx.J.add(Effect{Kind: EffStored, H: int8(h), Xfer: x.Xfer, PagesActive: x.Dst == DstActive, AlreadyPublished: x.Published})
	if x.Published {
		return
	}
	x.Published = true
	tx.W.W[x.Decode].StoredBlocks += tx.W.reserve(h, int(x.Decode))
}

// ReleaseActive ends decode: the received blocks stay in the cache as the
// handoff's (kept) until evicted, the prefix goes back to prefix cache, slot and headroom are freed.
func (tx *Tx) ReleaseActive(h int, side Side) {
	if !tx.command(h, side, DestinationSide) {
		return
	}
	x := tx.h(h)
	if x.Dst != DstActive {
		tx.J.add(Effect{Kind: EffEnd, H: int8(h), Side: DestinationSide, Res: ResDestReservation, Life: Ended})
		return
	}
	d := int(x.Decode)
	k := &tx.W.W[d]
	r, lk := tx.W.reserve(h, d), tx.W.locked(h, d)
	k.Active -= r + lk
	k.Kept += r
	k.Prefix += lk
	x.DstKept = true
	tx.freeAdmission(h)
	x.Dst = DstNone
}

// ReportDecodeOutcome is the destination's terminal outcome reaching the
// decode router: its selection-time booking ends.
func (tx *Tx) ReportDecodeOutcome(h int, side Side, ok bool) {
	if !tx.command(h, side, DestinationSide) {
		return
	}
	tx.releaseDecodeBooking(h)
	if ok {
		tx.h(h).Outcome[DestinationSide] = OutcomeOK
	} else {
		tx.h(h).Outcome[DestinationSide] = OutcomeFailed
	}
}

func (tx *Tx) releaseDecodeBooking(h int) {
	x := tx.h(h)
	held := x.Life[ResDecodeBooking] == Held
	tx.end(h, ResDecodeBooking, DestinationSide)
	if held {
		tx.W.W[x.Decode].BookedBlocks -= tx.W.cfg.d.estimate[h]
	}
}

// ---- Timers and messages ----

// Arm arms a timer of the handoff.
func (tx *Tx) Arm(h int, t Timer) { tx.h(h).Timers |= 1 << t }

// Disarm stops a timer of the handoff.
func (tx *Tx) Disarm(h int, t Timer) { tx.h(h).Timers &^= 1 << t }

// Send puts a fact in flight to the side `to`.
func (tx *Tx) Send(h int, to Side, m Msg) { tx.h(h).Ch[to].Send(m) }

// Receive takes a fact in flight to the side `to` off the transport, to be
// delivered. It returns where the fact was in flight (0: the oldest, more:
// delivered out of order), or -1 when no such fact is in flight.
func (tx *Tx) Receive(h int, to Side, m Msg) int {
	ch := &tx.h(h).Ch[to]
	i := ch.Index(m)
	if i >= 0 {
		ch.Take(i)
	}
	return i
}

// Lose is the transport dropping a fact in flight to the side `to`.
func (tx *Tx) Lose(h int, to Side, m Msg) { tx.Receive(h, to, m) }

// PeerRestartNoticed is the side learning from a health check that its
// peer restarted.
func (tx *Tx) PeerRestartNoticed(h int, s Side) { tx.h(h).PeerGone[s] = false }

// ---- Background load ----

// FreeBackground ends the background requests of a decode worker.
func (tx *Tx) FreeBackground(w int) {
	k := &tx.W.W[w]
	k.Active -= k.Background
	k.Cached += k.Background
	k.Background = 0
	k.SlotsUsed -= k.BackgroundSlot
	k.BackgroundSlot = 0
}

// CanOccupyBackground reports whether background requests could take the
// worker's configured background load now (it is free and fits).
func (tx *Tx) CanOccupyBackground(w int) bool {
	k := &tx.W.W[w]
	wc := &tx.W.cfg.Workers[w]
	return k.Background == 0 && wc.BackgroundBlocks > 0 && tx.canAlloc(w, wc.BackgroundBlocks) &&
		int(k.SlotsUsed)+wc.BackgroundSlots <= wc.Slots
}

// OccupyBackground is other requests taking decode capacity.
func (tx *Tx) OccupyBackground(w int) {
	k := &tx.W.W[w]
	wc := &tx.W.cfg.Workers[w]
	tx.alloc(w, wc.BackgroundBlocks, &k.Active)
	k.Background = wc.BackgroundBlocks
	k.SlotsUsed += int16(wc.BackgroundSlots)
	k.BackgroundSlot = int16(wc.BackgroundSlots)
}

// ---- Restart ----

// Restart is worker w's process restarting: its memory is gone, so every
// block returns to free at once and its registrations are fenced; its
// generation increases; its in-flight requests, admission and background
// load vanish; Removed is published for every block of it the KV index
// advertised, and its cache keeps nothing; the routers learn a terminal outcome for every handoff it
// owned because its request streams break; and each live peer will learn
// of it from a health check.
func (tx *Tx) Restart(w int) {
	k := &tx.W.W[w]
	for h := 0; h < tx.W.NumHandoffs(); h++ {
		x := tx.h(h)
		if int(x.Prefill) == w {
			tx.restartSource(h)
		}
		if int(x.Decode) == w {
			tx.restartDestination(h)
		}
	}
	wc := &tx.W.cfg.Workers[w]
	k.Gen++
	k.Free = wc.Capacity
	k.Cached, k.Kept, k.Prefix, k.Active, k.Pinned, k.Reserved = 0, 0, 0, 0, 0, 0
	k.SlotsUsed, k.HeadroomUsed, k.Background, k.BackgroundSlot, k.InFlight = 0, 0, 0, 0, 0
	// The KV index dropped everything the worker had (the handoffs
	// published Removed above); a handoff routed here later finds no prefix.
	k.StoredBlocks = 0
	for h := 0; h < tx.W.NumHandoffs(); h++ {
		x := tx.h(h)
		if wc.Role == DecodeWorker && tx.W.cfg.d.locked[h][w] > 0 {
			x.PrefixGone |= 1 << w
		}
	}
}

func (tx *Tx) restartSource(h int) {
	x := tx.h(h)
	if x.SrcReg == RegValid {
		x.SrcReg = RegFenced
	}
	if x.Src == SrcPinned {
		tx.J.add(Effect{Kind: EffPinEnd, H: int8(h), Reg: x.SrcReg, Xfer: x.Xfer, Cause: CauseAbort})
		tx.end(h, ResSourceLease, SourceSide)
	}
	if x.Compute == ComputeQueued || x.Compute == ComputeRunning {
		tx.end(h, ResCompute, SourceSide)
		x.Compute = ComputeNone
	}
	x.Src = SrcNone
	x.Cmds[SourceSide] = CmdQueue{} // the scheduler core's queue dies with the process
	x.Slow[SourceSide] = false
	tx.unindex(h, SourceSide)
	x.SrcKept = false
	x.InFlight[SourceSide] = false
	x.CancelPending[SourceSide] = false
	x.Timers &^= 1<<TimerLease | 1<<TimerBootstrap | 1<<TimerPush
	if x.Life[ResPrefillBooking] == Held {
		tx.releasePrefillBooking(h)
	}
	if x.Outcome[SourceSide] == OutcomeNone {
		x.Outcome[SourceSide] = OutcomeForgotten
		x.SourceFailed = true
		if x.Decode >= 0 && x.Outcome[DestinationSide] == OutcomeNone {
			x.PeerGone[DestinationSide] = true
		}
	}
}

func (tx *Tx) restartDestination(h int) {
	x := tx.h(h)
	x.Cmds[DestinationSide] = CmdQueue{} // the scheduler core's queue dies with the process
	x.Slow[DestinationSide] = false
	if x.DstReg == RegValid {
		x.DstReg = RegFenced
	}
	if x.Dst == DstReserved {
		tx.end(h, ResDestReservation, DestinationSide)
	}
	x.Dst = DstNone
	x.Pending = false
	x.Running = false
	tx.unindex(h, DestinationSide)
	x.DstKept = false
	x.InFlight[DestinationSide] = false
	x.CancelPending[DestinationSide] = false
	x.Timers &^= 1<<TimerHeartbeat | 1<<TimerReservation | 1<<TimerPull
	if x.Life[ResDecodeBooking] == Held {
		tx.releaseDecodeBooking(h)
	}
	if x.Outcome[DestinationSide] == OutcomeNone {
		x.Outcome[DestinationSide] = OutcomeForgotten
		if x.Prefill >= 0 && x.Outcome[SourceSide] == OutcomeNone {
			x.PeerGone[SourceSide] = true
		}
	}
}
