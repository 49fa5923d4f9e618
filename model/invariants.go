package model

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/handoffcheck/handoffcheck/spec"
)

// The invariant names of docs/lifecycle.md section 4. They are stable
// identifiers: reports, tests and users refer to them.
const (
	NameTransferNeedsReservation     = "TransferNeedsReservation"
	NameSourcePinnedUntilRead        = "SourcePinnedUntilRead"
	NameNoActivationFromInvalidKv    = "NoActivationFromInvalidKv"
	NameDestinationHeldWhileWritten  = "DestinationHeldWhileWritten"
	NameFailedTransferNeverActivates = "FailedTransferNeverActivates"
	NameReservationCountsAtOnce      = "ReservationCountsAtOnce"
	NameNoStoredBeforeActivation     = "NoStoredBeforeActivation"
	NameAtomicPrefillPin             = "AtomicPrefillPin"
	NameComputeLoadIndependent       = "ComputeLoadIndependent"
	NameReleaseNeedsReaderAck        = "ReleaseNeedsReaderAck"
	NameExactlyOnceRelease           = "ExactlyOnceRelease"
	NameBlockCategoriesDisjoint      = "BlockCategoriesDisjoint"
	NameCapacityRespected            = "CapacityRespected"
	NameDestinationFirstGate         = "DestinationFirstGate"
	NameAttemptIsolation             = "AttemptIsolation"
	NameRoleCommands                 = "RoleCommands"
	NameRouterCleanup                = "RouterCleanup"
	NameInFlightAccounting           = "InFlightAccounting"
	NameOutcomeTruthful              = "OutcomeTruthful"
	NameIndexMatchesCache            = "IndexMatchesCache"
	NameQuiescence                   = "Quiescence"
	NameEventuallyDrained            = "EventuallyDrained"
	// NameFaultFreeCompletion is a progress check beyond docs/lifecycle.md's
	// list: when the environment caused no fault at all, every handoff
	// succeeds. Without it a protocol that safely fails every handoff (one
	// that never registers its blocks, say) would pass.
	NameFaultFreeCompletion = "FaultFreeCompletion"
)

// InvariantKind says what an invariant judges.
type InvariantKind uint8

const (
	// SafetyStep invariants judge the effects of every step.
	SafetyStep InvariantKind = iota + 1
	// SafetyState invariants judge every reachable state.
	SafetyState
	// SafetyStepAndState invariants have a step half and a state half.
	SafetyStepAndState
	// Progress invariants judge quiescent states or the explored graph.
	Progress
)

var invariantKindNames = [...]string{"", "safety (step)", "safety (state)", "safety (step and state)", "progress"}

func (k InvariantKind) String() string { return invariantKindNames[k] }

// Invariant is one invariant of the domain contract: its name, what it
// demands, and the functions that judge it.
type Invariant struct {
	Name    string
	Kind    InvariantKind
	Meaning string
	// Elsewhere says what judges an invariant that has neither a step nor
	// a state half: it needs more than one step's effects or one state.
	Elsewhere string
	// Trigger is what exercises the invariant: a report names those
	// whose trigger never fired in a run (they held vacuously).
	Trigger Trigger
	step    func(*World, *Journal) *Violation
	state   func(*World, *Records, *allHoldings) *Violation
}

// HasStep reports whether the invariant judges every step's effects.
func (inv *Invariant) HasStep() bool { return inv.step != nil }

// HasState reports whether the invariant judges every reachable state.
func (inv *Invariant) HasState() bool { return inv.state != nil }

// JudgeStep runs the invariant's step half on a step's effects and the
// world after it (nil when it has none).
func (inv *Invariant) JudgeStep(w *World, j *Journal) *Violation {
	if inv.step == nil {
		return nil
	}
	return inv.step(w, j)
}

// JudgeState runs the invariant's state half on a world (nil when it has none).
func (inv *Invariant) JudgeState(w *World, rec *Records) *Violation {
	if inv.state == nil {
		return nil
	}
	hs := w.holdingsAll()
	return inv.state(w, rec, &hs)
}

// Invariants is the registry of every invariant, the safety invariants in
// docs/lifecycle.md section 4 order, then the progress invariants. The lists
// below and StepViolations/StateViolations derive from it; the explorer's
// fast paths, CheckStep and CheckState, are tested against it.
var Invariants = []Invariant{
	{Name: NameTransferNeedsReservation, Kind: SafetyStep, step: TransferNeedsReservation,
		Trigger: Trigger{Fires: KindFired(EffTransferStart) | KindFired(EffWrite), Never: "no transfer started"},
		Meaning: "a transfer starts only after the destination reserved for the attempt, and writes only through the attempt's registration into pages reserved for it"},
	{Name: NameSourcePinnedUntilRead, Kind: SafetyStep, step: SourcePinnedUntilRead,
		Trigger: Trigger{Fires: KindFired(EffRead) | KindFired(EffPinEnd), Never: "no read through a source registration, no source pin ended"},
		Meaning: "a read through a valid source registration always finds the blocks pinned for the attempt; a pin ends only when no read can use its registration"},
	{Name: NameNoActivationFromInvalidKv, Kind: SafetyStep, step: NoActivationFromInvalidKv,
		Trigger: Trigger{Fires: KindFired(EffActivate), Never: "no destination activated"},
		Meaning: "the destination activates only from a completed transfer whose source stayed pinned throughout"},
	{Name: NameDestinationHeldWhileWritten, Kind: SafetyStep, step: DestinationHeldWhileWritten,
		Trigger: Trigger{Fires: KindFired(EffPagesFreed), Never: "no reserved destination pages freed"},
		Meaning: "destination pages are never freed while a transfer may still write into them"},
	{Name: NameFailedTransferNeverActivates, Kind: SafetyStep, step: FailedTransferNeverActivates,
		Trigger: Trigger{Fires: TrigFailedTransfer, Never: "no side acted on a failed transfer"},
		Meaning: "a failed, timed-out or fenced transfer never activates the destination"},
	{Name: NameReservationCountsAtOnce, Kind: SafetyState, state: reservationCountsAtOnce,
		Trigger: Trigger{Fires: BeganFired(ResDestReservation), Never: "no destination reserved"},
		Meaning: "reserved destination pages, slots and headroom count in kv_used and admission from the step they are reserved"},
	{Name: NameNoStoredBeforeActivation, Kind: SafetyStepAndState, step: NoStoredBeforeActivation, state: noStoredState,
		Trigger: Trigger{Fires: KindFired(EffActivate) | KindFired(EffStored), Never: "no destination activated, nothing Stored"},
		Meaning: "no Stored for a handoff's pages before its receive completion; after it, the new blocks are stored exactly once"},
	{Name: NameAtomicPrefillPin, Kind: SafetyStepAndState, step: AtomicPrefillPinStep, state: atomicPrefillPin,
		Trigger: Trigger{Fires: KindFired(EffComputeDone) | KindFired(EffPinEarly), Never: "no prefill compute finished"},
		Meaning: "finished prefill blocks are pinned for the handoff or released, never left as plain active blocks, and never pinned before compute finished"},
	{Name: NameComputeLoadIndependent, Kind: SafetyStepAndState, step: ComputeLoadIndependent, state: computeLoadState,
		Trigger: Trigger{Fires: KindFired(EffPrefillStart) | KindFired(EffComputeDone) | KindFired(EffLoadFall), Never: "no prefill dispatched"},
		Meaning: "prefill compute load is counted from dispatch to compute completion and falls once, while the pinned occupancy stays"},
	{Name: NameReleaseNeedsReaderAck, Kind: SafetyStep, step: ReleaseNeedsReaderAck,
		Trigger: Trigger{Fires: KindFired(EffPinEnd), Never: "no source pin ended"},
		Meaning: "the source pin is released only after reader completion, abort or cancel, or lease expiry; activation alone never releases it"},
	{Name: NameExactlyOnceRelease, Kind: SafetyStep, step: ExactlyOnceRelease,
		Trigger: Trigger{Fires: KindFired(EffBegin) | KindFired(EffEnd), Never: "nothing began or ended"},
		Meaning: "every lease, reservation and booking ends exactly once, is never resurrected, and nothing begins after the attempt's terminal outcome"},
	{Name: NameBlockCategoriesDisjoint, Kind: SafetyState, state: blockCategoriesDisjoint,
		Trigger: Trigger{Unconditional: "every worker's pool in every state"},
		Meaning: "per worker the block categories are disjoint, never negative, sum to capacity, and each equals what the handoffs hold in it"},
	{Name: NameCapacityRespected, Kind: SafetyState, state: capacityRespected,
		Trigger: Trigger{Unconditional: "every worker's limits in every state"},
		Meaning: "no pool, request-slot count or admission headroom goes beyond its limit"},
	{Name: NameDestinationFirstGate, Kind: SafetyStep, step: DestinationFirstGate,
		Trigger: Trigger{Fires: KindFired(EffPrefillStart), Never: "no prefill dispatched", Inapplicable: notDestinationFirst, Unless: "a policy other than destination-first"},
		Meaning: "under destination-first, prefill is never dispatched for an attempt before the destination reserved for it"},
	{Name: NameAttemptIsolation, Kind: SafetyStep,
		Elsewhere: "the checker, on a fact delivered to a terminal record, with the worlds before and after (AttemptIsolation)",
		Trigger:   Trigger{Fires: TrigStaleDelivery, Never: "no fact reached a finished record"},
		Meaning:   "a fact delivered to a record that can no longer use it (terminal, forgotten, an older incarnation) changes nothing but the channel it was taken from"},
	{Name: NameRoleCommands, Kind: SafetyStep, step: RoleCommands,
		Trigger: Trigger{Unconditional: "every command a role machine issues"},
		Meaning: "source commands reach only prefill workers and destination commands only decode workers"},
	{Name: NameRouterCleanup, Kind: SafetyStepAndState, step: RouterCleanupStep, state: routerCleanup,
		Trigger: Trigger{Fires: BeganFired(ResPrefillBooking) | BeganFired(ResDecodeBooking) | KindFired(EffOwnershipEnd) | EndedFired(ResPrefillBooking) | EndedFired(ResDecodeBooking), Never: "no router booked a request"},
		Meaning: "a finished side has told its router the terminal outcome it ended with, so the router's booking is freed; router ledgers match the handoffs"},
	{Name: NameInFlightAccounting, Kind: SafetyStepAndState, step: InFlightAccountingStep, state: inFlightAccounting,
		Trigger: Trigger{Fires: KindFired(EffAccept) | KindFired(EffComplete) | KindFired(EffPrefillStart) | BeganFired(ResDestReservation), Never: "no request accepted"},
		Meaning: "a request is counted in flight once on acceptance and out once on completion; a worker's count equals the requests it owns"},
	{Name: NameOutcomeTruthful, Kind: SafetyState, state: outcomeTruthful,
		Trigger: Trigger{Fires: EndedFired(ResPrefillBooking) | EndedFired(ResDecodeBooking), Never: "no side told its router an outcome"},
		Meaning: "the outcome a side reports to its router says what physically happened: success only after a completed, acknowledged transfer (source) or an activation from valid KV (destination); failure only if nothing of the attempt activated"},
	{Name: NameIndexMatchesCache, Kind: SafetyState, state: indexMatchesCache,
		Trigger: Trigger{Fires: BeganFired(ResSourceLease) | KindFired(EffStored) | KindFired(EffRemoved), Never: "no source pinned, nothing Stored or Removed"},
		Meaning: "the KV index advertises a block of a worker only while that worker holds it as valid, cached or active KV, and advertises a source's computed blocks from compute completion on, as any computed KV: eviction and restart publish Removed for what was Stored, and nothing is Removed that was not Stored"},
	{Name: NameQuiescence, Kind: Progress,
		Elsewhere: "the checker, on every state where no protocol, timer or delivery move is enabled (Quiescence)",
		Trigger:   Trigger{Fires: TrigQuiescent, Never: "no quiescent state reached"},
		Meaning:   "where nothing but faults can happen, every placed record is terminal and everything is released"},
	{Name: NameEventuallyDrained, Kind: Progress,
		Elsewhere: "the checker, on the explored graph of the moves the system makes on its own; conform, on an unfinished attempt whose every explanation ends where those moves only loop",
		Trigger:   Trigger{Fires: TrigLiveness, Never: "the explored graph was not judged"},
		Meaning:   "from every reachable state a fully drained state can be reached without a fault or an early timer"},
	{Name: NameFaultFreeCompletion, Kind: Progress,
		Elsewhere: "the checker, on every quiescent state reached without any fault (FaultFreeCompletion)",
		Trigger:   Trigger{Fires: TrigFaultFreeQuiescent, Never: "no quiescent state reached without a fault", Inapplicable: exemptEngine, Unless: "an engine that cannot reserve (exempt)"},
		Meaning:   "without any fault, every handoff ends in success on both sides (an engine that cannot reserve is exempt)"},
}

func init() {
	for i := range Invariants {
		if inv := &Invariants[i]; !inv.wellFormed() {
			panic(fmt.Sprintf("model: invariant %q: a name, a meaning, halves that match its kind %v and a trigger (or why it is unconditional) are needed", inv.Name, inv.Kind))
		}
	}
}

// wellFormed reports whether a registry entry can be used: a name, a
// meaning, and halves that match its kind.
func (inv *Invariant) wellFormed() bool {
	return inv.Name != "" && inv.Meaning != "" && inv.consistent() && inv.Trigger.wellFormed()
}

// consistent reports whether the invariant's halves are those its kind
// says. One judged elsewhere has neither.
func (inv *Invariant) consistent() bool {
	step, state := inv.HasStep(), inv.HasState()
	if inv.Elsewhere != "" {
		return !step && !state && inv.Kind != SafetyState && inv.Kind != SafetyStepAndState
	}
	switch inv.Kind {
	case SafetyStep:
		return step && !state
	case SafetyState:
		return !step && state
	case SafetyStepAndState:
		return step && state
	}
	return false
}

// LookupInvariant finds a registered invariant by name.
func LookupInvariant(name string) (*Invariant, bool) {
	for i := range Invariants {
		if Invariants[i].Name == name {
			return &Invariants[i], true
		}
	}
	return nil, false
}

func invariantNames(keep func(*Invariant) bool) []string {
	var out []string
	for i := range Invariants {
		if keep(&Invariants[i]) {
			out = append(out, Invariants[i].Name)
		}
	}
	return out
}

// SafetyInvariants lists the safety invariants in docs/lifecycle.md order.
var SafetyInvariants = invariantNames(func(inv *Invariant) bool { return inv.Kind != Progress })

// ProgressInvariants lists the progress invariants.
var ProgressInvariants = invariantNames(func(inv *Invariant) bool { return inv.Kind == Progress })

// Violation is an invariant that does not hold, with what was seen.
type Violation struct {
	Invariant string
	Handoff   int // -1 when not about one handoff
	Worker    int // -1 when not about one worker
	Detail    string
	// Check names which check inside the invariant failed: the pattern of
	// its Detail, before the figures are filled in. An invariant makes
	// several checks; tests and mutation reports tell them apart by it.
	Check string
}

func (v *Violation) Error() string {
	where := ""
	if v.Handoff >= 0 {
		where += fmt.Sprintf(" handoff %d", v.Handoff)
	}
	if v.Worker >= 0 {
		where += fmt.Sprintf(" worker %d", v.Worker)
	}
	if where == "" {
		return v.Invariant + ": " + v.Detail
	}
	return v.Invariant + ":" + where + ": " + v.Detail
}

func violate(name string, h, w int, format string, args ...any) *Violation {
	return &Violation{Invariant: name, Handoff: h, Worker: w, Detail: fmt.Sprintf(format, args...), Check: format}
}

// Records is what only the protocol knows and some invariants need: which
// role records have reached a terminal state. The model reads it as data;
// it never interprets protocol states itself.
type Records struct {
	Terminal [MaxHandoffs][2]bool
	// Ended is, for a terminal record, the outcome its terminal state
	// stands for (ok, failed, forgotten): what the side must have told its
	// router.
	Ended [MaxHandoffs][2]Outcome
}

// ---- Step invariants: judged on the effects of every step ----

// TransferNeedsReservation: a transfer starts only after the destination
// reserved for the attempt and writes only through the registration made
// for it, into pages reserved for it.
func TransferNeedsReservation(w *World, j *Journal) *Violation {
	for i := range j.Effects() {
		e := &j.E[i]
		switch {
		case e.Kind == EffTransferStart && !e.EverReserved:
			return violate(NameTransferNeedsReservation, int(e.H), -1, "transfer started before the destination reserved for the attempt")
		case e.Kind == EffTransferStart && e.Reg == RegNone:
			return violate(NameTransferNeedsReservation, int(e.H), -1, "transfer started with no destination registration to write through")
		case e.Kind == EffTransferStart && e.Reg == RegValid && !e.PagesReserved:
			return violate(NameTransferNeedsReservation, int(e.H), -1, "transfer started through a registration whose pages are not reserved for the attempt")
		case e.Kind == EffWrite && !e.PagesReserved:
			return violate(NameTransferNeedsReservation, int(e.H), -1, "transfer wrote into pages not reserved for the attempt")
		}
	}
	return nil
}

// SourcePinnedUntilRead: a read through a valid source registration always
// finds the blocks held for the attempt; a pin ends only with its
// registration fenced or closed while no read can still use it.
func SourcePinnedUntilRead(w *World, j *Journal) *Violation {
	for i := range j.Effects() {
		e := &j.E[i]
		switch {
		case e.Kind == EffPinEnd && e.Reg == RegValid && !e.Xfer.Finished():
			return violate(NameSourcePinnedUntilRead, int(e.H), -1,
				"pin released while its registration was still valid and the transfer %s: a read may find freed blocks", e.Xfer)
		case e.Kind == EffRead && !e.SourcePinned:
			return violate(NameSourcePinnedUntilRead, int(e.H), -1, "a read through a valid registration found the blocks no longer pinned")
		}
	}
	return nil
}

// NoActivationFromInvalidKv: the destination activates only from a
// completed transfer whose source stayed pinned throughout.
func NoActivationFromInvalidKv(w *World, j *Journal) *Violation {
	for i := range j.Effects() {
		e := &j.E[i]
		if e.Kind != EffActivate || e.Xfer == XferFailed {
			continue
		}
		switch {
		case !e.PagesReserved:
			return violate(NameNoActivationFromInvalidKv, int(e.H), -1, "activated with no reserved pages")
		case e.Xfer != XferDone:
			return violate(NameNoActivationFromInvalidKv, int(e.H), -1, "activated while the transfer was %s", e.Xfer)
		case e.Tainted:
			return violate(NameNoActivationFromInvalidKv, int(e.H), -1, "activated from a transfer whose source blocks were released while it read")
		}
	}
	return nil
}

// DestinationHeldWhileWritten: destination pages are never freed while a
// transfer may still write into them.
func DestinationHeldWhileWritten(w *World, j *Journal) *Violation {
	for i := range j.Effects() {
		e := &j.E[i]
		if e.Kind == EffPagesFreed && e.Reg == RegValid && !e.Xfer.Finished() {
			return violate(NameDestinationHeldWhileWritten, int(e.H), -1,
				"reserved pages freed while their registration was valid and the transfer %s", e.Xfer)
		}
	}
	return nil
}

// FailedTransferNeverActivates: a failed, timed-out or fenced transfer
// never activates the destination.
func FailedTransferNeverActivates(w *World, j *Journal) *Violation {
	for i := range j.Effects() {
		e := &j.E[i]
		if e.Kind == EffActivate && e.Xfer == XferFailed {
			return violate(NameFailedTransferNeverActivates, int(e.H), -1, "activated from a failed transfer")
		}
	}
	return nil
}

// NoStoredBeforeActivation: no Stored for a handoff's pages before its
// receive completion; after it, the new blocks are stored once.
func NoStoredBeforeActivation(w *World, j *Journal) *Violation {
	for i := range j.Effects() {
		e := &j.E[i]
		if e.Kind != EffStored {
			continue
		}
		switch {
		case e.AlreadyPublished:
			return violate(NameNoStoredBeforeActivation, int(e.H), -1, "Stored published a second time")
		case !e.PagesActive || e.Xfer != XferDone:
			return violate(NameNoStoredBeforeActivation, int(e.H), -1, "Stored published before receive completion (transfer %s)", e.Xfer)
		}
	}
	return nil
}

// ComputeLoadIndependent: prefill compute load falls at compute completion
// while the pinned occupancy stays, and falls only once.
func ComputeLoadIndependent(w *World, j *Journal) *Violation {
	for i := range j.Effects() {
		e := &j.E[i]
		x := &w.H[e.H]
		switch {
		case e.Kind == EffLoadFall && e.LoadFallen:
			return violate(NameComputeLoadIndependent, int(e.H), -1, "compute load fell twice")
		case e.Kind == EffComputeDone && x.ComputeLoad:
			return violate(NameComputeLoadIndependent, int(e.H), -1, "compute finished but the prefill router still counts its compute load")
		case e.Kind == EffComputeDone && x.Src != SrcPinned && x.Life[ResPrefillBooking] == Held:
			return violate(NameComputeLoadIndependent, int(e.H), -1, "compute finished but the pinned occupancy did not stay (source holds %s)", x.Src)
		}
	}
	return nil
}

// ReleaseNeedsReaderAck: the source pin is released only after reader
// completion, abort/cancel, or lease expiry; activation alone never
// releases it.
func ReleaseNeedsReaderAck(w *World, j *Journal) *Violation {
	for i := range j.Effects() {
		e := &j.E[i]
		if e.Kind != EffPinEnd {
			continue
		}
		switch {
		case e.Cause == CauseReaderAck && e.Xfer != XferDone:
			return violate(NameReleaseNeedsReaderAck, int(e.H), -1, "released on a reader acknowledgement while the reads had not completed (transfer %s)", e.Xfer)
		case e.Cause == CauseReaderAck && e.ActivationPending:
			return violate(NameReleaseNeedsReaderAck, int(e.H), -1, "released on a reader acknowledgement while the destination's activation command was not yet applied")
		case e.Cause != CauseReaderAck && e.Cause != CauseAbort && e.Cause != CauseExpiry:
			return violate(NameReleaseNeedsReaderAck, int(e.H), -1, "pin released on %s, not on reader completion, abort or expiry", e.Cause)
		}
	}
	return nil
}

// ExactlyOnceRelease: every lease, reservation and booking ends exactly
// once, is never resurrected, and nothing begins after the attempt's
// terminal outcome.
func ExactlyOnceRelease(w *World, j *Journal) *Violation {
	for i := range j.Effects() {
		e := &j.E[i]
		switch {
		case e.Kind == EffEnd && e.Life == Never:
			return violate(NameExactlyOnceRelease, int(e.H), -1, "%s released but it was never held", e.Res)
		case e.Kind == EffEnd && e.Life == Ended:
			return violate(NameExactlyOnceRelease, int(e.H), -1, "%s released twice", e.Res)
		case e.Kind == EffBegin && e.Life == Ended:
			return violate(NameExactlyOnceRelease, int(e.H), -1, "%s began again after it ended", e.Res)
		case e.Kind == EffBegin && e.Life == Held:
			return violate(NameExactlyOnceRelease, int(e.H), -1, "%s began twice", e.Res)
		case e.Kind == EffBegin && e.AfterOutcome:
			return violate(NameExactlyOnceRelease, int(e.H), -1, "%s began after the %s reported its terminal outcome", e.Res, e.Side)
		}
	}
	return nil
}

// DestinationFirstGate: under destination-first, prefill is never
// dispatched for an attempt before the destination reserved for it.
func DestinationFirstGate(w *World, j *Journal) *Violation {
	if w.cfg.Policy != spec.DestinationFirst {
		return nil
	}
	for i := range j.Effects() {
		e := &j.E[i]
		if e.Kind == EffPrefillStart && !e.EverReserved {
			return violate(NameDestinationFirstGate, int(e.H), -1, "prefill dispatched before the destination reserved")
		}
	}
	return nil
}

// RoleCommands: source commands reach only prefill workers and destination
// commands only decode workers.
func RoleCommands(w *World, j *Journal) *Violation {
	for i := range j.Effects() {
		e := &j.E[i]
		if e.Kind == EffRoleMismatch {
			return violate(NameRoleCommands, int(e.H), -1, "a %s-role machine issued a command of the other role", e.Side)
		}
	}
	return nil
}

// RouterCleanupStep: the prefill router frees request ownership at source
// release, not while the source is still pinned. (The state half is RouterCleanup.)
func RouterCleanupStep(w *World, j *Journal) *Violation {
	for i := range j.Effects() {
		e := &j.E[i]
		if e.Kind == EffOwnershipEnd && e.SourcePinned {
			return violate(NameRouterCleanup, int(e.H), -1, "prefill router freed request ownership while the source was still pinned")
		}
	}
	return nil
}

// InFlightAccountingStep: up once on acceptance, down once on completion.
// (The state half is InFlightAccounting.)
func InFlightAccountingStep(w *World, j *Journal) *Violation {
	for i := range j.Effects() {
		e := &j.E[i]
		switch {
		case e.Kind == EffAccept && e.WasInFlight:
			return violate(NameInFlightAccounting, int(e.H), -1, "%s counted the request in flight twice", e.Side)
		case e.Kind == EffComplete && !e.WasInFlight:
			return violate(NameInFlightAccounting, int(e.H), -1, "%s counted out a request that was not in flight", e.Side)
		}
	}
	return nil
}

// AtomicPrefillPinStep: a pin only takes blocks whose compute finished.
// (The state half is AtomicPrefillPin.)
func AtomicPrefillPinStep(w *World, j *Journal) *Violation {
	for i := range j.Effects() {
		e := &j.E[i]
		if e.Kind == EffPinEarly {
			return violate(NameAtomicPrefillPin, int(e.H), -1, "pinned blocks whose compute had not finished")
		}
	}
	return nil
}

// StepInvariants are the step halves of the registry, judged on every
// step in this order.
var StepInvariants = stepHalves()

func stepHalves() []func(*World, *Journal) *Violation {
	var out []func(*World, *Journal) *Violation
	for i := range Invariants {
		if Invariants[i].step != nil {
			out = append(out, Invariants[i].step)
		}
	}
	return out
}

// CheckStep is the explorer's fast path for the step halves: it runs every
// step half of the registry, in registry order, on a step's effects and the
// world after it, and returns the first violation. The calls are direct so
// that nothing escapes to the heap on the hot path; a test holds the calls
// to exactly the registry's step halves.
func CheckStep(w *World, j *Journal) *Violation {
	if j.N == 0 {
		return nil
	}
	if v := TransferNeedsReservation(w, j); v != nil {
		return v
	}
	if v := SourcePinnedUntilRead(w, j); v != nil {
		return v
	}
	if v := NoActivationFromInvalidKv(w, j); v != nil {
		return v
	}
	if v := DestinationHeldWhileWritten(w, j); v != nil {
		return v
	}
	if v := FailedTransferNeverActivates(w, j); v != nil {
		return v
	}
	if v := NoStoredBeforeActivation(w, j); v != nil {
		return v
	}
	if v := AtomicPrefillPinStep(w, j); v != nil {
		return v
	}
	if v := ComputeLoadIndependent(w, j); v != nil {
		return v
	}
	if v := ReleaseNeedsReaderAck(w, j); v != nil {
		return v
	}
	if v := ExactlyOnceRelease(w, j); v != nil {
		return v
	}
	if v := DestinationFirstGate(w, j); v != nil {
		return v
	}
	if v := RoleCommands(w, j); v != nil {
		return v
	}
	if v := RouterCleanupStep(w, j); v != nil {
		return v
	}
	return InFlightAccountingStep(w, j)
}

// StepClear reports, in one pass over a step's effects, that no step half
// objects to it: when it returns true, CheckStep returns nil. It is the
// step halves' conditions for a violation, joined by effect kind, so that
// a step (nearly all of them) is judged in one pass instead of one per
// half; a step it does not clear is judged by CheckStep, which alone says
// which half objects first. It may refuse a step CheckStep would pass (it
// never does on purpose), never the other way round:
// TestStepClear_NeverClearsAViolation and the explorer's test on every
// transition of sample configurations hold it to CheckStep.
func StepClear(w *World, j *Journal) bool {
	for i := 0; i < j.N; i++ {
		e := &j.E[i]
		switch e.Kind {
		case EffTransferStart: // TransferNeedsReservation
			if !e.EverReserved || e.Reg == RegNone || (e.Reg == RegValid && !e.PagesReserved) {
				return false
			}
		case EffWrite: // TransferNeedsReservation
			if !e.PagesReserved {
				return false
			}
		case EffPinEnd: // SourcePinnedUntilRead, ReleaseNeedsReaderAck
			if e.Reg == RegValid && !e.Xfer.Finished() {
				return false
			}
			switch e.Cause {
			case CauseReaderAck:
				if e.Xfer != XferDone || e.ActivationPending {
					return false
				}
			case CauseAbort, CauseExpiry:
			default:
				return false
			}
		case EffRead: // SourcePinnedUntilRead
			if !e.SourcePinned {
				return false
			}
		case EffActivate: // NoActivationFromInvalidKv, FailedTransferNeverActivates
			if e.Xfer != XferDone || !e.PagesReserved || e.Tainted {
				return false
			}
		case EffPagesFreed: // DestinationHeldWhileWritten
			if e.Reg == RegValid && !e.Xfer.Finished() {
				return false
			}
		case EffStored: // NoStoredBeforeActivation
			if e.AlreadyPublished || !e.PagesActive || e.Xfer != XferDone {
				return false
			}
		case EffPinEarly, EffRoleMismatch: // AtomicPrefillPin, RoleCommands
			return false
		case EffLoadFall: // ComputeLoadIndependent
			if e.LoadFallen {
				return false
			}
		case EffComputeDone: // ComputeLoadIndependent
			if x := &w.H[e.H]; x.ComputeLoad || (x.Src != SrcPinned && x.Life[ResPrefillBooking] == Held) {
				return false
			}
		case EffEnd: // ExactlyOnceRelease
			if e.Life == Never || e.Life == Ended {
				return false
			}
		case EffBegin: // ExactlyOnceRelease
			if e.Life == Ended || e.Life == Held || e.AfterOutcome {
				return false
			}
		case EffPrefillStart: // DestinationFirstGate
			if !e.EverReserved && w.cfg.Policy == spec.DestinationFirst {
				return false
			}
		case EffOwnershipEnd: // RouterCleanup
			if e.SourcePinned {
				return false
			}
		case EffAccept: // InFlightAccounting
			if e.WasInFlight {
				return false
			}
		case EffComplete: // InFlightAccounting
			if !e.WasInFlight {
				return false
			}
		}
	}
	return true
}

// StepViolations runs every step half of the registry and returns every
// violation, in registry order (CheckStep stops at the first).
func StepViolations(w *World, j *Journal) []*Violation {
	var out []*Violation
	for i := range Invariants {
		if v := Invariants[i].JudgeStep(w, j); v != nil {
			out = append(out, v)
		}
	}
	return out
}

// ---- State invariants: judged on every reachable state ----

// holdings is what the handoffs hold on a worker, computed from the
// handoffs alone, to compare with the worker's own counters.
type holdings struct {
	active, pinned, reserved, prefix, kept Blocks
	slots                                  int16
	headroom                               Tokens
	inFlight, owned                        int16
	prefillTokens                          Tokens
	booked, stored                         Blocks
}

// holdingsAll computes what the handoffs hold on every worker, in one
// pass, on top of what the configuration says is held outside the world
// (Config.SetOutside) and the background load.
func (w *World) holdingsAll() (hs [MaxWorkers]holdings) {
	c := w.cfg
	nW := w.NumWorkers()
	headroom := c.Engine.Traits().HeadroomAtReservation
	for k := 0; k < nW; k++ {
		hs[k] = c.outside[k]
		hs[k].active += w.W[k].Background
		hs[k].slots += w.W[k].BackgroundSlot
	}
	for h := 0; h < w.NumHandoffs(); h++ {
		w.addHoldings(&hs, h, headroom)
	}
	return hs
}

// addHoldings adds what handoff h holds on every worker to hs.
func (w *World) addHoldings(hs *[MaxWorkers]holdings, h int, headroom bool) {
	c := w.cfg
	x := &w.H[h]
	q := &c.d.source[h]
	if x.Prefill >= 0 {
		s := &hs[x.Prefill]
		switch x.Src {
		case SrcActive:
			s.active += q.ComputeBlocks
		case SrcPinned:
			s.pinned += q.PinnedBlocks
		}
		if x.SrcKept {
			s.kept += q.PinnedBlocks
		}
		if x.SrcIndexed {
			s.stored += q.PinnedBlocks
		}
		if x.InFlight[SourceSide] {
			s.inFlight++
		}
		if x.Life[ResPrefillBooking] == Held {
			s.owned++
		}
		if x.ComputeLoad {
			s.prefillTokens += q.TransferredTokens
		}
	}
	for i := 0; i < c.d.nDecode; i++ {
		k := c.d.decode[i]
		lk := w.locked(h, k)
		if int(x.Decode) == k && x.Dst != DstNone {
			hs[k].active += lk
			if x.Dst == DstReserved {
				hs[k].reserved += w.reserve(h, k)
			} else {
				hs[k].active += w.reserve(h, k)
			}
		} else {
			hs[k].prefix += lk
		}
	}
	if x.Decode >= 0 {
		k := int(x.Decode)
		s := &hs[k]
		if x.Running {
			s.slots++
		}
		if headroom && x.Dst != DstNone {
			s.headroom += c.Handoffs[h].HeadroomTokens
		}
		if x.InFlight[DestinationSide] {
			s.inFlight++
		}
		if x.Life[ResDecodeBooking] == Held {
			s.booked += c.d.estimate[h]
		}
		if x.Published {
			s.stored += w.reserve(h, k)
		}
		if x.DstKept {
			s.kept += w.reserve(h, k)
		}
	}
}

type allHoldings = [MaxWorkers]holdings

// BlockCategoriesDisjoint: per worker the categories free, cached, active,
// pinned_source and reserved_destination are disjoint, never negative,
// sum to capacity, and each equals what the handoffs hold in it (nothing
// counted twice).
func BlockCategoriesDisjoint(w *World) *Violation {
	hs := w.holdingsAll()
	return blockCategoriesDisjoint(w, nil, &hs)
}

func blockCategoriesDisjoint(w *World, _ *Records, hs *allHoldings) *Violation {
	for k := 0; k < w.NumWorkers(); k++ {
		wk := &w.W[k]
		cp := w.cfg.Workers[k].Capacity
		// A negative free pool is an overcommitted one: CapacityRespected
		// names it (judging it here too would shadow that check for good).
		if wk.Cached < 0 || wk.Kept < 0 || wk.Prefix < 0 || wk.Active < 0 || wk.Pinned < 0 || wk.Reserved < 0 {
			return violate(NameBlockCategoriesDisjoint, -1, k, "a category is negative: %s", describePool(wk))
		}
		if sum := wk.Free + wk.Cached + wk.Kept + wk.Prefix + wk.Active + wk.Pinned + wk.Reserved; sum != cp {
			return violate(NameBlockCategoriesDisjoint, -1, k, "categories sum to %d, capacity is %d: %s", int64(sum), int64(cp), describePool(wk))
		}
		s := &hs[k]
		switch {
		case s.active != wk.Active:
			return violate(NameBlockCategoriesDisjoint, -1, k, "active is %d but the requests hold %d", int64(wk.Active), int64(s.active))
		case s.pinned != wk.Pinned:
			return violate(NameBlockCategoriesDisjoint, -1, k, "pinned_source is %d but the handoffs pin %d", int64(wk.Pinned), int64(s.pinned))
		case s.prefix != wk.Prefix:
			return violate(NameBlockCategoriesDisjoint, -1, k, "cached prefix is %d but the unlocked prefixes are %d", int64(wk.Prefix), int64(s.prefix))
		case s.kept != wk.Kept:
			return violate(NameBlockCategoriesDisjoint, -1, k, "kept cache is %d but the handoffs keep %d", int64(wk.Kept), int64(s.kept))
		}
	}
	return nil
}

// ReservationCountsAtOnce: reserved destination pages count in kv_used and
// admission from the step they are reserved.
func ReservationCountsAtOnce(w *World) *Violation {
	hs := w.holdingsAll()
	return reservationCountsAtOnce(w, nil, &hs)
}

func reservationCountsAtOnce(w *World, _ *Records, hs *allHoldings) *Violation {
	for k := 0; k < w.NumWorkers(); k++ {
		if w.cfg.Workers[k].Role != DecodeWorker {
			continue
		}
		wk := &w.W[k]
		s := &hs[k]
		switch {
		case s.reserved != wk.Reserved:
			return violate(NameReservationCountsAtOnce, -1, k, "reserved_destination is %d but the reservations hold %d", int64(wk.Reserved), int64(s.reserved))
		case s.slots != wk.SlotsUsed:
			return violate(NameReservationCountsAtOnce, -1, k, "%d request slots in use but the requests hold %d", wk.SlotsUsed, s.slots)
		case s.headroom != wk.HeadroomUsed:
			return violate(NameReservationCountsAtOnce, -1, k, "headroom in use is %d but the reservations hold %d", int64(wk.HeadroomUsed), int64(s.headroom))
		}
	}
	return nil
}

// CapacityRespected: no pool, slot count or headroom goes beyond its limit.
func CapacityRespected(w *World) *Violation { return capacityRespected(w, nil, nil) }

func capacityRespected(w *World, _ *Records, _ *allHoldings) *Violation {
	for k := 0; k < w.NumWorkers(); k++ {
		wk := &w.W[k]
		wc := &w.cfg.Workers[k]
		switch {
		case wk.Free < 0:
			return violate(NameCapacityRespected, -1, k, "pool overcommitted by %d blocks", -int64(wk.Free))
		case wc.Role == DecodeWorker && int(wk.SlotsUsed) > wc.Slots:
			return violate(NameCapacityRespected, -1, k, "%d request slots in use, limit %d", wk.SlotsUsed, wc.Slots)
		case wk.HeadroomUsed > wc.Headroom:
			return violate(NameCapacityRespected, -1, k, "headroom %d in use, limit %d", int64(wk.HeadroomUsed), int64(wc.Headroom))
		case wk.SlotsUsed < 0 || wk.HeadroomUsed < 0 || wk.InFlight < 0:
			return violate(NameCapacityRespected, -1, k, "an admission counter went negative")
		}
	}
	return nil
}

// AtomicPrefillPin: there is no state where prefill compute has finished
// and its blocks are neither pinned for the handoff nor released through it.
func AtomicPrefillPin(w *World) *Violation { return atomicPrefillPin(w, nil, nil) }

func atomicPrefillPin(w *World, _ *Records, _ *allHoldings) *Violation {
	for h := 0; h < w.NumHandoffs(); h++ {
		if x := &w.H[h]; x.Compute == ComputeDone && x.Src == SrcActive {
			return violate(NameAtomicPrefillPin, h, int(x.Prefill), "compute finished but its blocks are still plain active blocks")
		}
	}
	return nil
}

// ComputeLoadState: compute load is counted from dispatch to compute
// completion and the prefill router's ledger matches it.
func ComputeLoadState(w *World) *Violation {
	hs := w.holdingsAll()
	return computeLoadState(w, nil, &hs)
}

func computeLoadState(w *World, _ *Records, hs *allHoldings) *Violation {
	for h := 0; h < w.NumHandoffs(); h++ {
		x := &w.H[h]
		if (x.Compute == ComputeQueued || x.Compute == ComputeRunning) && x.Life[ResPrefillBooking] == Held && !x.ComputeLoad {
			return violate(NameComputeLoadIndependent, h, int(x.Prefill), "compute load fell before compute finished")
		}
	}
	for k := 0; k < w.NumWorkers(); k++ {
		if s := &hs[k]; s.prefillTokens != w.W[k].PrefillTokens {
			return violate(NameComputeLoadIndependent, -1, k, "active_prefill_tokens is %d but the handoffs count %d", int64(w.W[k].PrefillTokens), int64(s.prefillTokens))
		}
	}
	return nil
}

// NoStoredState: the KV index holds exactly the blocks the handoffs
// advertise (published once per activated handoff, or by the source for
// its released blocks, and not Removed since); no reused prefix block is
// republished.
func NoStoredState(w *World) *Violation {
	hs := w.holdingsAll()
	return noStoredState(w, nil, &hs)
}

func noStoredState(w *World, _ *Records, hs *allHoldings) *Violation {
	for h := 0; h < w.NumHandoffs(); h++ {
		// Receive completion makes the new blocks valid: they must be
		// stored (once) by the end of the step that activates them.
		if x := &w.H[h]; x.Dst == DstActive && !x.Published {
			return violate(NameNoStoredBeforeActivation, h, int(x.Decode), "activated pages were never published as Stored")
		}
	}
	for k := 0; k < w.NumWorkers(); k++ {
		if s := &hs[k]; s.stored != w.W[k].StoredBlocks {
			return violate(NameNoStoredBeforeActivation, -1, k, "the KV index got %d Stored blocks, the handoffs published %d", int64(w.W[k].StoredBlocks), int64(s.stored))
		}
	}
	return nil
}

// InFlightAccounting: a worker's in-flight count equals the requests it
// owns; a side that holds anything is in flight; a terminal record is not.
func InFlightAccounting(w *World, rec *Records) *Violation {
	hs := w.holdingsAll()
	return inFlightAccounting(w, rec, &hs)
}

func inFlightAccounting(w *World, rec *Records, hs *allHoldings) *Violation {
	for k := 0; k < w.NumWorkers(); k++ {
		if s := &hs[k]; s.inFlight != w.W[k].InFlight {
			return violate(NameInFlightAccounting, -1, k, "in-flight count is %d but it owns %d requests", w.W[k].InFlight, s.inFlight)
		}
	}
	for h := 0; h < w.NumHandoffs(); h++ {
		x := &w.H[h]
		switch {
		case (x.Src != SrcNone || x.Compute == ComputeQueued) && !x.InFlight[SourceSide]:
			return violate(NameInFlightAccounting, h, int(x.Prefill), "the source holds the request but does not count it in flight")
		case (x.Dst != DstNone || x.Pending) && !x.InFlight[DestinationSide]:
			return violate(NameInFlightAccounting, h, int(x.Decode), "the destination holds the request but does not count it in flight")
		}
		if rec == nil {
			continue
		}
		for s := SourceSide; s <= DestinationSide; s++ {
			if rec.Terminal[h][s] && x.InFlight[s] {
				return violate(NameInFlightAccounting, h, x.Worker(s), "the %s finished but still counts the request in flight", s)
			}
		}
	}
	return nil
}

// RouterCleanup: a finished side has produced a terminal outcome, so its
// router booking is freed; the prefill router's ledgers match the handoffs.
func RouterCleanup(w *World, rec *Records) *Violation {
	hs := w.holdingsAll()
	return routerCleanup(w, rec, &hs)
}

func routerCleanup(w *World, rec *Records, hs *allHoldings) *Violation {
	for k := 0; k < w.NumWorkers(); k++ {
		s := &hs[k]
		switch {
		case s.owned != w.W[k].Owned:
			return violate(NameRouterCleanup, -1, k, "prefill router owns %d requests here but the handoffs hold %d bookings", w.W[k].Owned, s.owned)
		case s.booked != w.W[k].BookedBlocks:
			return violate(NameRouterCleanup, -1, k, "decode router books %d blocks here but the handoffs hold %d", int64(w.W[k].BookedBlocks), int64(s.booked))
		}
	}
	if rec == nil {
		return nil
	}
	for h := 0; h < w.NumHandoffs(); h++ {
		x := &w.H[h]
		if rec.Terminal[h][SourceSide] && x.Prefill >= 0 && x.Life[ResPrefillBooking] == Held {
			return violate(NameRouterCleanup, h, int(x.Prefill), "the source finished without a terminal outcome: the prefill router still owns the request")
		}
		if rec.Terminal[h][DestinationSide] && x.Decode >= 0 && x.Life[ResDecodeBooking] == Held {
			return violate(NameRouterCleanup, h, int(x.Decode), "the destination finished without a terminal decode outcome: the decode router still books it")
		}
		// The outcome a router learned must be how the side ended: a
		// failed handoff reported as done would be billed and counted as
		// a success, a success reported as failed retried.
		for s := SourceSide; s <= DestinationSide; s++ {
			if rec.Terminal[h][s] && x.Worker(s) >= 0 && rec.Ended[h][s] != OutcomeNone && x.Outcome[s] != rec.Ended[h][s] {
				return violate(NameRouterCleanup, h, x.Worker(s), "the %s ended as %s but its router was told %s", s, rec.Ended[h][s], x.Outcome[s])
			}
		}
	}
	return nil
}

// OutcomeTruthful: the terminal outcome a side reported to its router
// says what physically happened, judged on the world, not on the label of
// the terminal state (RouterCleanup holds the report to the label; a table
// whose failure path ends in a success state passes that).
func OutcomeTruthful(w *World) *Violation { return outcomeTruthful(w, nil, nil) }

func outcomeTruthful(w *World, _ *Records, _ *allHoldings) *Violation {
	for h := 0; h < w.NumHandoffs(); h++ {
		x := &w.H[h]
		switch {
		case x.Outcome[SourceSide] == OutcomeOK && x.Xfer != XferDone:
			return violate(NameOutcomeTruthful, h, x.Worker(SourceSide), "the source reported a successful release but the transfer is %s", x.Xfer)
		case x.Outcome[SourceSide] == OutcomeOK && !x.Acked:
			return violate(NameOutcomeTruthful, h, x.Worker(SourceSide), "the source reported a successful release but its pin did not end on the reader's acknowledgement")
		case x.Outcome[DestinationSide] == OutcomeOK && !x.Activated:
			return violate(NameOutcomeTruthful, h, x.Worker(DestinationSide), "the destination reported success but never activated from a completed, valid transfer")
		case x.Outcome[DestinationSide] == OutcomeFailed && (x.Activated || x.Published):
			return violate(NameOutcomeTruthful, h, x.Worker(DestinationSide), "the destination reported failure but the attempt activated from a completed transfer")
		}
	}
	return nil
}

// IndexMatchesCache: the KV index advertises a handoff's blocks only while
// their worker holds them as valid KV: the source's while they are pinned
// or kept in its cache, the destination's received blocks while they are
// active or kept in its cache. And it does advertise the source's pinned
// blocks: computed KV is published at compute under normal cache
// semantics, the pin only keeps it from being evicted. (The destination's
// counterpart, its received blocks stored by activation, is
// NoStoredBeforeActivation's. That nothing is Removed that was not Stored
// holds by construction: Removed is published only for advertised blocks,
// and the index then stops advertising them.)
func IndexMatchesCache(w *World) *Violation { return indexMatchesCache(w, nil, nil) }

func indexMatchesCache(w *World, _ *Records, _ *allHoldings) *Violation {
	for h := 0; h < w.NumHandoffs(); h++ {
		x := &w.H[h]
		switch {
		case x.SrcIndexed && x.Src != SrcPinned && !x.SrcKept:
			return violate(NameIndexMatchesCache, h, x.Worker(SourceSide), "the index advertises the source's blocks but the worker holds them neither pinned nor cached (source holds %s)", x.Src)
		case x.Src == SrcPinned && !x.SrcIndexed:
			return violate(NameIndexMatchesCache, h, x.Worker(SourceSide), "the source's computed blocks are pinned but the index does not advertise them: computed KV is published at compute")
		case x.Published && x.Dst != DstActive && !x.DstKept:
			return violate(NameIndexMatchesCache, h, x.Worker(DestinationSide), "the index advertises the destination's received blocks but the worker holds them neither active nor cached (destination holds %s)", x.Dst)
		}
	}
	return nil
}

// CheckState is the explorer's fast path for the state halves: it runs
// every state half of the registry on a world, with what the handoffs hold
// computed once, and returns the first violation. The calls are direct so
// that nothing escapes to the heap on the hot path; a test holds the calls
// to exactly the registry's state halves.
func CheckState(w *World, rec *Records) *Violation {
	hs := w.holdingsAll()
	if v := reservationCountsAtOnce(w, rec, &hs); v != nil {
		return v
	}
	if v := blockCategoriesDisjoint(w, rec, &hs); v != nil {
		return v
	}
	if v := capacityRespected(w, rec, &hs); v != nil {
		return v
	}
	if v := atomicPrefillPin(w, rec, &hs); v != nil {
		return v
	}
	if v := computeLoadState(w, rec, &hs); v != nil {
		return v
	}
	if v := noStoredState(w, rec, &hs); v != nil {
		return v
	}
	if v := inFlightAccounting(w, rec, &hs); v != nil {
		return v
	}
	if v := routerCleanup(w, rec, &hs); v != nil {
		return v
	}
	if v := outcomeTruthful(w, rec, &hs); v != nil {
		return v
	}
	return indexMatchesCache(w, rec, &hs)
}

// StateClearFrom reports that the state halves pass on world w, one step
// from world p, on which they all passed (prec and rec are the two
// worlds' records): when it returns true, CheckState(w, rec) returns nil.
// A step changes one handoff or a few and the workers they hold something
// on; the rest of the world passed in p and passes unchanged in w. So
// only a changed handoff is judged on its own, and a changed worker is
// judged against what it held in p: its counters must move by what the
// changed handoffs (and its background load) moved, since in p they
// equalled what the handoffs held. It is exact: false means CheckState
// reports a violation. TestStateClearFrom_EqualsCheckState, here and on
// every transition of sample configurations, holds it to CheckState.
func StateClearFrom(p, w *World, prec, rec *Records) bool {
	if p.cfg != w.cfg {
		return false
	}
	headroom := w.cfg.Engine.Traits().HeadroomAtReservation
	// What the changed handoffs hold in w, and what they held in p.
	var now, was allHoldings
	for h := 0; h < w.NumHandoffs(); h++ {
		same := SameHandoff(&p.H[h], &w.H[h])
		if same && prec.Terminal[h] == rec.Terminal[h] && prec.Ended[h] == rec.Ended[h] {
			continue
		}
		if !handoffClear(w, rec, h) {
			return false
		}
		if !same {
			w.addHoldings(&now, h, headroom)
			p.addHoldings(&was, h, headroom)
		}
	}
	for k := 0; k < w.NumWorkers(); k++ {
		if !sameWorker(&p.W[k], &w.W[k]) || !sameHoldings(&now[k], &was[k]) {
			if !workerClearFrom(p, w, k, &now[k], &was[k]) {
				return false
			}
		}
	}
	return true
}

// handoffClear reports whether the state halves' judgements of handoff h
// alone pass: those of AtomicPrefillPin, ComputeLoadIndependent,
// NoStoredBeforeActivation, InFlightAccounting, RouterCleanup,
// OutcomeTruthful and IndexMatchesCache that read one handoff.
func handoffClear(w *World, rec *Records, h int) bool {
	x := &w.H[h]
	switch {
	case x.Compute == ComputeDone && x.Src == SrcActive,
		(x.Compute == ComputeQueued || x.Compute == ComputeRunning) && x.Life[ResPrefillBooking] == Held && !x.ComputeLoad,
		x.Dst == DstActive && !x.Published,
		(x.Src != SrcNone || x.Compute == ComputeQueued) && !x.InFlight[SourceSide],
		(x.Dst != DstNone || x.Pending) && !x.InFlight[DestinationSide],
		rec.Terminal[h][SourceSide] && x.Prefill >= 0 && x.Life[ResPrefillBooking] == Held,
		rec.Terminal[h][DestinationSide] && x.Decode >= 0 && x.Life[ResDecodeBooking] == Held,
		x.Outcome[SourceSide] == OutcomeOK && (x.Xfer != XferDone || !x.Acked),
		x.Outcome[DestinationSide] == OutcomeOK && !x.Activated,
		x.Outcome[DestinationSide] == OutcomeFailed && (x.Activated || x.Published),
		x.SrcIndexed && x.Src != SrcPinned && !x.SrcKept,
		x.Src == SrcPinned && !x.SrcIndexed,
		x.Published && x.Dst != DstActive && !x.DstKept:
		return false
	}
	for s := SourceSide; s <= DestinationSide; s++ {
		if rec.Terminal[h][s] && (x.InFlight[s] || x.Worker(s) >= 0 && rec.Ended[h][s] != OutcomeNone && x.Outcome[s] != rec.Ended[h][s]) {
			return false
		}
	}
	return true
}

// workerClearFrom reports whether the state halves' judgements of worker
// k pass in w, given that they passed in p: its own counters are judged
// as BlockCategoriesDisjoint and CapacityRespected judge them, and each
// counter the halves hold to what the handoffs hold must have moved from
// p by what the changed handoffs moved (now is what they hold in w, was
// what they held in p) and, for active blocks and slots, by the
// background load's change. In p each such counter equalled what the
// handoffs held; integer arithmetic wraps alike on both sides, so the
// comparison of the moves is the comparison of the values.
func workerClearFrom(p, w *World, k int, now, was *holdings) bool {
	wk, pk := &w.W[k], &p.W[k]
	wc := &w.cfg.Workers[k]
	switch {
	case wk.Cached < 0 || wk.Kept < 0 || wk.Prefix < 0 || wk.Active < 0 || wk.Pinned < 0 || wk.Reserved < 0,
		wk.Free+wk.Cached+wk.Kept+wk.Prefix+wk.Active+wk.Pinned+wk.Reserved != wc.Capacity,
		wk.Free < 0,
		wc.Role == DecodeWorker && int(wk.SlotsUsed) > wc.Slots,
		wk.HeadroomUsed > wc.Headroom,
		wk.SlotsUsed < 0 || wk.HeadroomUsed < 0 || wk.InFlight < 0:
		return false
	case wk.Active-pk.Active != now.active-was.active+wk.Background-pk.Background,
		wk.Pinned-pk.Pinned != now.pinned-was.pinned,
		wk.Prefix-pk.Prefix != now.prefix-was.prefix,
		wk.Kept-pk.Kept != now.kept-was.kept,
		wk.PrefillTokens-pk.PrefillTokens != now.prefillTokens-was.prefillTokens,
		wk.StoredBlocks-pk.StoredBlocks != now.stored-was.stored,
		wk.InFlight-pk.InFlight != now.inFlight-was.inFlight,
		wk.Owned-pk.Owned != now.owned-was.owned,
		wk.BookedBlocks-pk.BookedBlocks != now.booked-was.booked:
		return false
	case wc.Role != DecodeWorker:
		// ReservationCountsAtOnce judges decode workers only.
		return true
	}
	return wk.Reserved-pk.Reserved == now.reserved-was.reserved &&
		wk.SlotsUsed-pk.SlotsUsed == now.slots-was.slots+wk.BackgroundSlot-pk.BackgroundSlot &&
		wk.HeadroomUsed-pk.HeadroomUsed == now.headroom-was.headroom
}

// StateViolations runs every state half of the registry and returns every
// violation, in registry order (CheckState stops at the first).
func StateViolations(w *World, rec *Records) []*Violation {
	hs := w.holdingsAll()
	var out []*Violation
	for i := range Invariants {
		if st := Invariants[i].state; st != nil {
			if v := st(w, rec, &hs); v != nil {
				out = append(out, v)
			}
		}
	}
	return out
}

// AttemptIsolation: a fact delivered to a record that can no longer use
// it (a terminal or forgotten attempt, an older incarnation) changes
// nothing but the channel it was taken from.
func AttemptIsolation(before, after *World, h int, to Side, index int) *Violation {
	// The world before with the fact taken, compared with the world
	// after: handoff h apart, so that only its record is copied.
	want := before.H[h]
	want.Ch[to].Take(index)
	if !SameHandoff(&want, &after.H[h]) || !SameBut(before, after, h) {
		return violate(NameAttemptIsolation, h, after.H[h].Worker(to), "a stale fact to the %s changed the world", to)
	}
	return nil
}

// sameWorker reports whether two workers are equal. Their bytes are
// compared first, eight at a time and without a branch: the comparison Go
// makes of a struct with padding (Gen is one byte, the counters four)
// goes field by field, a call to the runtime's memory comparison costs
// more than these few loads, and the search asks this of every worker of
// nearly every new state. Equal bytes are equal fields; bytes that differ
// may differ only in padding, so then the fields decide.
//
// The eight words are written out, as in SameHandoff: Go does not unroll
// a loop, and its counter and bounds checks cost about as much as the
// loads themselves.
func sameWorker(a, b *Worker) bool {
	const n = unsafe.Sizeof(Worker{})
	if n != 64 {
		return *a == *b
	}
	// Bytes, read as words: a worker is aligned for its int32 fields
	// only.
	pa, pb := (*[64]byte)(unsafe.Pointer(a)), (*[64]byte)(unsafe.Pointer(b))
	le := binary.LittleEndian
	d := (le.Uint64(pa[0:]) ^ le.Uint64(pb[0:])) |
		(le.Uint64(pa[8:]) ^ le.Uint64(pb[8:])) |
		(le.Uint64(pa[16:]) ^ le.Uint64(pb[16:])) |
		(le.Uint64(pa[24:]) ^ le.Uint64(pb[24:]))
	e := (le.Uint64(pa[32:]) ^ le.Uint64(pb[32:])) |
		(le.Uint64(pa[40:]) ^ le.Uint64(pb[40:])) |
		(le.Uint64(pa[48:]) ^ le.Uint64(pb[48:])) |
		(le.Uint64(pa[56:]) ^ le.Uint64(pb[56:]))
	return d|e == 0 || *a == *b
}

// sameHoldings reports whether two holdings are equal, as sameWorker
// does for workers: Go compares the struct (padded after slots) with a
// call that goes field by field, for every worker of nearly every new
// state (StateClearFrom).
func sameHoldings(a, b *holdings) bool {
	const n = unsafe.Sizeof(holdings{})
	if n != 44 {
		return *a == *b
	}
	pa, pb := (*[44]byte)(unsafe.Pointer(a)), (*[44]byte)(unsafe.Pointer(b))
	le := binary.LittleEndian
	d := (le.Uint64(pa[0:]) ^ le.Uint64(pb[0:])) |
		(le.Uint64(pa[8:]) ^ le.Uint64(pb[8:])) |
		(le.Uint64(pa[16:]) ^ le.Uint64(pb[16:]))
	e := (le.Uint64(pa[24:]) ^ le.Uint64(pb[24:])) |
		(le.Uint64(pa[32:]) ^ le.Uint64(pb[32:])) |
		(le.Uint64(pa[36:]) ^ le.Uint64(pb[36:])) // the last eight, overlapping
	return d|e == 0 || *a == *b
}

// SameHandoff reports whether two handoff records are equal, their bytes
// read eight at a time without a branch (the checker's canonical form
// asks it too): Go compares a record this size
// with a call to the runtime's memory comparison, which costs more than
// these loads on the records the search compares for nearly every step
// and new state. A record has no padding (TestHandoff_NoPadding), so
// equal bytes are equal fields; a record of another size than today's is
// compared as usual.
func SameHandoff(a, b *Handoff) bool {
	const n = unsafe.Sizeof(Handoff{})
	if n != 62 {
		return *a == *b
	}
	pa, pb := (*[62]byte)(unsafe.Pointer(a)), (*[62]byte)(unsafe.Pointer(b))
	le := binary.LittleEndian
	d := (le.Uint64(pa[0:]) ^ le.Uint64(pb[0:])) |
		(le.Uint64(pa[8:]) ^ le.Uint64(pb[8:])) |
		(le.Uint64(pa[16:]) ^ le.Uint64(pb[16:])) |
		(le.Uint64(pa[24:]) ^ le.Uint64(pb[24:]))
	e := (le.Uint64(pa[32:]) ^ le.Uint64(pb[32:])) |
		(le.Uint64(pa[40:]) ^ le.Uint64(pb[40:])) |
		(le.Uint64(pa[48:]) ^ le.Uint64(pb[48:])) |
		(le.Uint64(pa[54:]) ^ le.Uint64(pb[54:])) // the last eight, overlapping
	return d|e == 0
}

// SameBut reports whether two worlds are equal but perhaps for handoff h.
func SameBut(a, b *World, h int) bool {
	if a.cfg != b.cfg {
		return false
	}
	for k := range a.W {
		if !sameWorker(&a.W[k], &b.W[k]) {
			return false
		}
	}
	for i := range a.H {
		if i != h && !SameHandoff(&a.H[i], &b.H[i]) {
			return false
		}
	}
	return true
}

// FaultFreeCompletion: in a quiescent state reached without any fault of
// the environment (no loss, duplicate, reordering, cancel, abort, transfer
// failure, restart, early timer, no-show or background load), every
// handoff ended in success on both sides: the source released after the
// reads and the destination decoded. An engine that cannot reserve
// (EngineTraits.ExemptFromFaultFreeCompletion) is exempt: it fails every
// handoff cleanly by design.
func FaultFreeCompletion(w *World) *Violation {
	if w.cfg.Engine.Traits().ExemptFromFaultFreeCompletion() {
		return nil
	}
	for h := 0; h < w.NumHandoffs(); h++ {
		x := &w.H[h]
		for s := SourceSide; s <= DestinationSide; s++ {
			if x.Outcome[s] != OutcomeOK {
				return violate(NameFaultFreeCompletion, h, x.Worker(s), "no fault happened, yet the %s ended %s", s, x.Outcome[s])
			}
		}
	}
	return nil
}

// Quiescence: in a state where no protocol, timer or delivery step is
// enabled, every placed record is terminal and everything is released.
// The checker calls it on such states only.
func Quiescence(w *World, rec *Records) *Violation {
	for h := 0; h < w.NumHandoffs(); h++ {
		x := &w.H[h]
		for s := SourceSide; s <= DestinationSide; s++ {
			if x.Worker(s) >= 0 && !rec.Terminal[h][s] {
				return violate(NameQuiescence, h, x.Worker(s), "nothing can happen any more but the %s is not terminal", s)
			}
		}
	}
	if !w.Drained() {
		return violate(NameQuiescence, -1, -1, "nothing can happen any more but resources are still held: %s", w.DescribeHeld())
	}
	return nil
}
